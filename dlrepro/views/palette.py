"""One colour per framework and one per verdict, for every figure and table.

``colour``: a framework's, from its record (dlrepro.inputs.frameworks: the same colour in every figure). VERDICTS: a
word of
dlrepro.answers.verdicts -> its chip colour (green: an answer in favour, amber:
a partial one, red: against, blue: measured beside another device, grey: no answer).
"""

from dlrepro.answers import verdicts as v
from dlrepro.inputs.frameworks import colour  # noqa: F401 (a framework's colour: the figures read it here)

GREEN, AMBER, RED, GREY, BLUE = "#2e7d32", "#b26a00", "#c62828", "#757575", "#1565c0"
VERDICTS = {
    v.HOLDS: GREEN,
    v.DIRECTION_ONLY: AMBER,
    v.DOES_NOT_HOLD: RED,
    v.INCONCLUSIVE: GREY,
    v.NOT_TESTABLE: GREY,
    v.NOT_ASKED: GREY,
    v.FASTER: GREEN,
    v.SLOWER: RED,
    v.NO_CHANGE: BLUE,
    v.CANNOT_TELL: GREY,
    v.ONLY_IN_A: GREY,
    v.ONLY_IN_B: GREY,
    v.REPRODUCES: GREEN,
    v.DIFFERS: RED,
    v.OTHER_HARDWARE: BLUE,
    v.CANNOT_COMPARE: GREY,
    v.NOT_RUN: GREY,
}


def verdict_colour(word):
    """The chip colour of a verdict word; words outside the vocabulary (the older 'partly holds') are amber
    when they start 'partly', else grey."""
    return VERDICTS.get(word, AMBER if str(word).startswith("partly") else GREY)
