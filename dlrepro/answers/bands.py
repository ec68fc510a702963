"""Where a 95% interval lies against a stated band: the one rule behind every equivalence-type verdict.

A published cell reproduces, and a band, ratio or scaling claim holds, only when the whole interval of the measured
quantity lies inside the tolerance or band; it differs, or does not hold, only when the whole interval lies outside;
an interval across an edge cannot tell either way, and the interval is the reason (audit-run-path.md finding 5;
bundle-vs-bundle "no change" already needed its interval inside +-min_effect, answers.regression). Band edges are
closed, compared with a relative slack of EDGE so that a value exactly on an edge, rounded in binary, counts as on
it.
"""

INSIDE, OUTSIDE, ACROSS = "inside", "outside", "across"
EDGE = 1e-9  # relative slack at a band's edges: 1.05 / 1.00 is 1.0500000000000000444 in binary


def position(low, high, band):
    """INSIDE, OUTSIDE or ACROSS: the interval [low, high] against the closed ``band`` (lower, upper)."""
    lower, upper = band[0] * (1 - EDGE), band[1] * (1 + EDGE)
    if lower <= low and high <= upper:
        return INSIDE
    if high < lower or low > upper:
        return OUTSIDE
    return ACROSS


def side(band):
    """+1 / -1 when the band lies wholly above / below 1 (a direction is stated), else 0."""
    return 1 if band[0] > 1 else -1 if band[1] < 1 else 0


def ratio(numerator, denominator):
    """The interval of a ratio of two positive quantities from their intervals (low, high) each: (n_low / d_high,
    n_high / d_low), conservative (both ends at once); None when either has none."""
    if numerator is None or denominator is None:
        return None
    return numerator[0] / denominator[1], numerator[1] / denominator[0]


def words(low, high, band=()):
    """'0.8-1.25' of an interval, for a reason, and the ``band`` (lower, upper) it is set against as stated: the
    interval in 3 significant digits, more where 3 would show it on the wrong side of a band edge or its two ends
    as one (0.99975-1.00196 against 0.9995-1.0005 is '0.9998-1.002', not '1-1'). Returns (interval text, band
    text); an interval of None ends is ''."""
    if low is None or high is None:
        return "", "-".join("%.10g" % edge for edge in band)
    for digits in range(3, 10):
        texts = ["%.*g" % (digits, v) for v in (low, high)]
        shown = [float(t) for t in texts]
        if (shown[0] != shown[1] or low == high) and all(
            (float(t) < edge) == (v < edge) and (float(t) > edge) == (v > edge)
            for t, v in zip(texts, (low, high))
            for edge in band
        ):
            break
    return "%s-%s" % tuple(texts), "-".join("%.10g" % edge for edge in band)
