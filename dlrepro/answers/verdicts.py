"""The verdict vocabulary, written once: every word a regression, a claim or a published cell can get.

Views colour by these constants and sort by ``rank`` (ORDER); the rules that choose them are in the sibling modules
(regression, claims, cells). A verdict never claims more than its evidence: an unproven effect is
CANNOT_TELL, a smoke pass or too little data is INCONCLUSIVE, another device class is NOT_TESTABLE.
"""

from dataclasses import dataclass, field

# bundle against bundle (one job configuration measured in both)
FASTER = "faster"  # |change| >= min_effect and the test's p < alpha
SLOWER = "slower"
NO_CHANGE = "no change"  # the interval of the change lies inside +-min_effect
CANNOT_TELL = "cannot tell"  # anything else: too few repeats, overlapping evidence, p >= alpha
NOT_COMPARABLE = "not comparable"  # timed differently or on another host (answers.configkey), never judged
ONLY_IN_A = "only in A"
ONLY_IN_B = "only in B"
REGRESSION = (FASTER, SLOWER, NO_CHANGE, CANNOT_TELL, NOT_COMPARABLE, ONLY_IN_A, ONLY_IN_B)

# a stated conclusion of a study
HOLDS = "holds"
DIRECTION_ONLY = "direction holds, size does not"
DOES_NOT_HOLD = "does not hold"
INCONCLUSIVE = "inconclusive"  # noise unknown, a smoke pass, n too small, p above the stated level
NOT_TESTABLE = "not testable here"  # with the reason: another device class, a tool the suite does not run, ...
NOT_ASKED = "not asked"  # none of its runs was asked (study --run gave others), and the host's plan could test it
CLAIM = (HOLDS, DIRECTION_ONLY, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE, NOT_ASKED)
UNJUDGED = (NOT_TESTABLE, NOT_ASKED)  # a claim with no verdict on the evidence, only a reason

# a published cell of a study's table, or of a spec's references
REPRODUCES = "reproduces"  # the interval of measured / published inside the tolerance, on the same hardware
DIFFERS = "differs"  # the interval wholly outside it, on the same hardware
# (CANNOT_TELL, above: an interval across the tolerance's edge, or none, on the same hardware)
OTHER_HARDWARE = "other hardware"  # shown through a quantity that carries across hardware, never judged
CANNOT_COMPARE = "cannot be compared"  # with the reason
NOT_RUN = "not run"  # with the reason
CELL = (REPRODUCES, DIFFERS, CANNOT_TELL, OTHER_HARDWARE, CANNOT_COMPARE, NOT_RUN)

# the order a view lists verdicts in: answers first, then what could not be answered
ORDER = {word: i for i, word in enumerate(dict.fromkeys(CLAIM + REGRESSION + CELL))}


def rank(word):
    """Sort key of a verdict: ORDER, older words ('partly holds', from reports before this vocabulary) after the
    known ones."""
    return ORDER.get(word, 1.5 if str(word).startswith("partly") else len(ORDER))


@dataclass
class RestsOn:
    """What a verdict rests on, shown next to it: repeats per side, the interval (of the change, or of the
    measured value), the test and its p-value, the device class it applies to, and whether any of it is a
    smoke pass (a --quick job, or one below the repeats an interval needs)."""

    repeats: list = field(default_factory=list)  # repeats (or epochs, or seeds) per side / per tool
    unit: str = "repeat"  # what ``repeats`` counts: "repeat", "epoch" or "seed"
    interval: tuple = None  # (low, high), in the unit of the value it bounds
    test: str = None  # e.g. "Mann-Whitney U (exact)", "Kendall's tau-b", "band per tool"
    p_value: float = None
    device: str = None  # "cpu" or "cuda"
    smoke: bool = False
