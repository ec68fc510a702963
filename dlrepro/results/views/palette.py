"""One colour per framework and one per verdict, for every figure and table (names: dlrepro.frameworks).

FRAMEWORKS: the suite's framework code -> its colour, from matplotlib's tab10 (Chainer and Keras on PyTorch:
tab20's light orange and light blue; Keras on CNTK and on Theano its light green and light purple), fixed so that a framework has the same colour in every figure of the
project. VERDICTS: a word of dlrepro.results.answers.verdicts -> its chip colour (green: an answer in favour, amber:
a partial one, red: against, blue: measured beside another device, grey: no answer).
"""
from dlrepro.results.answers import verdicts as v

FRAMEWORKS = {"torch": "#d62728", "tensorflow": "#ff7f0e", "mxnet": "#1f77b4", "jax": "#9467bd", "cntk": "#2ca02c",
              "caffe2": "#8c564b", "caffe": "#e377c2", "chainer": "#ffbb78", "keras-tensorflow": "#bcbd22", "keras-jax": "#17becf",
              "keras-torch": "#aec7e8", "keras-cntk": "#98df8a",
              "keras-theano": "#c5b0d5", "torch7": "#ff9896"}
OTHER = "#7f7f7f"

GREEN, AMBER, RED, GREY, BLUE = "#2e7d32", "#b26a00", "#c62828", "#757575", "#1565c0"
VERDICTS = {
    v.HOLDS: GREEN, v.DIRECTION_ONLY: AMBER, v.DOES_NOT_HOLD: RED, v.INCONCLUSIVE: GREY, v.NOT_TESTABLE: GREY,
    v.NOT_ASKED: GREY,
    v.FASTER: GREEN, v.SLOWER: RED, v.NO_CHANGE: BLUE, v.CANNOT_TELL: GREY, v.ONLY_IN_A: GREY, v.ONLY_IN_B: GREY,
    v.REPRODUCES: GREEN, v.DIFFERS: RED, v.OTHER_HARDWARE: BLUE, v.CANNOT_COMPARE: GREY, v.NOT_RUN: GREY,
}


def colour(framework):
    """The framework's colour in every figure (grey for one outside the suite)."""
    return FRAMEWORKS.get(framework, OTHER)


def verdict_colour(word):
    """The chip colour of a verdict word; words outside the vocabulary (the older 'partly holds') are amber
    when they start 'partly', else grey."""
    return VERDICTS.get(word, AMBER if str(word).startswith("partly") else GREY)
