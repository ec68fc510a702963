"""Summary statistics of timing samples: pure functions, no I/O.

Medians and quartiles use linear interpolation between order statistics (numpy's default).

The confidence interval of a job's median reflects repeat-to-repeat variation. The iterations
of one repeat are not independent (they share the repeat's clocks, caches, memory placement and
background load), so an interval over all iterations pooled is far too narrow: it treats 48
correlated samples as 48 independent ones. The unit of replication is the repeat: the interval
is the distribution-free interval of the median of the repeat medians, the pair of order
statistics (m_(l), m_(R+1-l)) of the R repeat medians whose binomial(R, 1/2) coverage is at least
the level (Conover, Practical Nonparametric Statistics, 3rd ed., sec. 3.2). It needs neither
normality nor independence within a repeat, only that repeats are exchangeable. At 95% it exists
from R = 6 repeats on (coverage 1 - 2/2^6 = 96.9%; R = 5 reaches only 93.75%), and its exact
coverage is recorded beside it (``ci95_coverage``). A convergence run's epochs are its units
(each epoch is one pass of its own). Computing it costs O(R log R) (a sort, then a linear scan of
the binomial distribution).

The point estimate the interval belongs to is the median of the repeat medians (``median``; for a
convergence run the median of its epochs, for one repeat its median): recorded with
``point_estimate`` = POINT_ESTIMATE. The median of every sample pooled is kept beside it
(``pooled_median``); results written before this have no ``point_estimate`` and their ``median`` is
the pooled one. A sample that is not a finite number (NaN, inf: a timer that failed) is refused
(NonFiniteSample) rather than turned into a NaN bound.
"""

import math

import numpy as np

CI_METHOD = "median of repeat medians, distribution-free (binomial order statistics)"
MIN_UNITS_95 = 6  # the fewest repeats (or epochs) that give a 95% distribution-free interval
POINT_ESTIMATE = "median of the ci95 units' medians"  # summary["point_estimate"]: what summary["median"] is
# a repeat of one sample, its mean iteration (runner.measure's pipelined_wall): a median of repeat means
CI_METHOD_MEANS = CI_METHOD.replace("repeat medians", "repeat means")
POINT_ESTIMATE_MEANS = "median of repeat means"


class NonFiniteSample(ValueError):
    """A timing sample is NaN or infinite."""


def _binomial_cdf_half(n):
    """[P(X <= k) for k = 0 .. n] for X ~ Binomial(n, 1/2), in O(n)."""
    k = np.arange(n + 1)
    log_pmf = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in k]) + n * math.log(
        0.5
    )
    return np.cumsum(np.exp(log_pmf))


def _lower_rank(n, level):
    """(l, exact coverage) of the distribution-free interval x_(l) .. x_(n + 1 - l) of the median of n iid
    values: the largest l <= n / 2 with P(X <= l - 1) <= (1 - level) / 2; l = 0 when none exists."""
    if n < 2:
        return 0, None
    cdf = _binomial_cdf_half(n)
    lower = int(np.searchsorted(cdf[: n // 2], (1.0 - level) / 2, side="right"))
    return lower, (1.0 - 2.0 * float(cdf[lower - 1]) if lower else None)


def median_ci(sorted_values, level=0.95):
    """Distribution-free confidence interval of the median of iid values, or None when n is too small.

    ``sorted_values`` must be sorted ascending. Returns [low, high] in the values' unit; its exact
    coverage is ``median_ci_coverage(len(sorted_values))``. O(n) after the sort.
    """
    lower, _ = _lower_rank(len(sorted_values), level)
    if lower == 0:
        return None
    return [float(sorted_values[lower - 1]), float(sorted_values[len(sorted_values) - lower])]


def median_ci_coverage(n, level=0.95):
    """The exact coverage (>= level) of ``median_ci`` for n values, or None when it gives no interval."""
    return _lower_rank(n, level)[1]


def summarize(samples):
    """Summary of a flat list of samples (seconds): n, median, q1, q3, iqr, mean, min, max, and ci95, the
    interval of the median valid when the samples are independent (``summarize_repeats`` replaces it for
    iterations of repeats, which are not).

    Raises ValueError on an empty list, NonFiniteSample on a NaN or infinite sample.
    """
    if not samples:
        raise ValueError("no samples to summarize")
    values = np.asarray(samples, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise NonFiniteSample(
            "sample %d of %d (in measurement order) is %r, not a finite number of seconds: "
            "the timer failed, so no median or interval can be given" % (bad[0] + 1, values.size, float(values[bad[0]]))
        )
    values = np.sort(values)
    q1, median, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
    return {
        "n": int(values.size),
        "median": median,
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "mean": float(values.mean()),
        "min": float(values[0]),
        "max": float(values[-1]),
        "ci95": median_ci(values),
    }


def units_of(sample):
    """``summarize_repeats``'s units for a throughput timing's ``sample`` kind ("iteration" or "repeat mean")."""
    return "repeat mean" if sample == "repeat mean" else "repeat"


def labels(units):
    """(ci95_method, point_estimate) of ``summarize_repeats``'s ``units``."""
    if units == "repeat mean":
        return CI_METHOD_MEANS, POINT_ESTIMATE_MEANS
    return (CI_METHOD if units == "repeat" else CI_METHOD.replace("repeat medians", "epochs")), POINT_ESTIMATE


def summarize_repeats(repeats, units="repeat"):
    """Summary over all samples of several repeats, each repeat's own median, and the 95% CI of the median
    over the repeat medians.

    ``repeats``: a list of lists of seconds. ``units``: "repeat" (each list is one repeat: throughput
    and inference jobs), "repeat mean" (each list is one repeat's one sample, its wall time over its
    iterations: runner.measure's pipelined_wall; labelled a median of repeat means, CI_METHOD_MEANS and
    POINT_ESTIMATE_MEANS, the same numbers: a median of means, not of iterations) or "sample" (each sample is
    its own unit: a convergence run's epochs).
    ``median`` (s) is the median of the units' medians (POINT_ESTIMATE, the estimator ``ci95`` is the
    interval of), ``pooled_median`` (s) that of every sample; n, q1, q3, iqr, mean, min and max are over every
    sample. ``ci95`` is [low, high] (s), or None with fewer than MIN_UNITS_95 units; ``ci95_coverage`` its
    exact coverage; ``ci95_units`` how many units it was computed from. Raises NonFiniteSample on a NaN or
    infinite sample.
    """
    pooled = [s for rep in repeats for s in rep]
    summary = summarize(pooled)
    summary["repeat_medians"] = [float(np.median(rep)) for rep in repeats if rep]
    unit_values = pooled if units == "sample" else summary["repeat_medians"]
    summary["pooled_median"] = summary["median"]
    summary["ci95_method"], summary["point_estimate"] = labels(units)
    summary["median"] = float(np.median(unit_values))
    summary["ci95"] = median_ci(sorted(unit_values))
    summary["ci95_coverage"] = median_ci_coverage(len(unit_values))
    summary["ci95_units"] = len(unit_values)
    return summary
