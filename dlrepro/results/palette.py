"""One colour and one spelling per framework, and one colour per verdict, for every figure and table.

FRAMEWORKS: the suite's framework code -> (the name a reader knows, its colour); colours from matplotlib's
tab10, fixed so that a framework has the same colour in every figure of the project. VERDICTS: a word of
dlrepro.results.answers.verdicts -> its chip colour (green: an answer in favour, amber: a partial one,
red: against, grey: no answer).
"""
from dlrepro.results.answers import verdicts as v

FRAMEWORKS = {
    "torch": ("PyTorch", "#d62728"),
    "tensorflow": ("TensorFlow", "#ff7f0e"),
    "mxnet": ("MXNet", "#1f77b4"),
    "jax": ("JAX", "#9467bd"),
    "cntk": ("CNTK", "#2ca02c"),
    "caffe2": ("Caffe2", "#8c564b"),
    "caffe": ("Caffe", "#e377c2"),
}
OTHER = "#7f7f7f"

GREEN, AMBER, RED, GREY, BLUE = "#2e7d32", "#b26a00", "#c62828", "#757575", "#1565c0"
VERDICTS = {
    v.HOLDS: GREEN, v.DIRECTION_ONLY: AMBER, v.DOES_NOT_HOLD: RED, v.INCONCLUSIVE: GREY, v.NOT_TESTABLE: GREY,
    v.FASTER: GREEN, v.SLOWER: RED, v.NO_CHANGE: BLUE, v.CANNOT_TELL: GREY, v.ONLY_IN_A: GREY, v.ONLY_IN_B: GREY,
    v.REPRODUCES: GREEN, v.DIFFERS: RED, v.OTHER_HARDWARE: BLUE, v.CANNOT_COMPARE: GREY, v.NOT_RUN: GREY,
}


def name(framework):
    """The one spelling of a framework code ('torch' -> 'PyTorch'); an unknown code as given."""
    return FRAMEWORKS.get(framework, (framework, None))[0]


def colour(framework):
    """The framework's colour in every figure (grey for one outside the suite)."""
    return FRAMEWORKS.get(framework, (None, OTHER))[1]


def verdict_colour(word):
    """The chip colour of a verdict word; words outside the vocabulary (the older 'partly holds') are amber
    when they start 'partly', else grey."""
    return VERDICTS.get(word, AMBER if str(word).startswith("partly") else GREY)


def rank(word):
    """Sort key of a verdict: verdicts.ORDER, older words after the known ones."""
    return v.ORDER.get(word, 1.5 if str(word).startswith("partly") else len(v.ORDER))
