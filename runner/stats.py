"""Summary statistics of timing samples: pure functions, no I/O.

Medians and quartiles use linear interpolation between order statistics
(numpy's default). The confidence interval of the median is distribution-free:
the pair of order statistics (x_(l), x_(u)) whose binomial(n, 1/2) coverage is at
least the requested level (Conover, Practical Nonparametric Statistics, 3rd ed.,
sec. 3.2). It needs no normality assumption, which timing samples rarely meet.
"""
import math

import numpy as np


def _binomial_cdf(k, n):
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    total = 0.0
    log_half_n = n * math.log(0.5)
    for i in range(0, k + 1):
        total += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n)
    return total


def median_ci(sorted_values, level=0.95):
    """Distribution-free confidence interval of the median, or None when n is too small.

    ``sorted_values`` must be sorted ascending. Returns [low, high] in the samples' unit.
    """
    n = len(sorted_values)
    alpha = 1.0 - level
    # largest l (1-based) with P(X <= l - 1) <= alpha / 2; the interval is x_(l) .. x_(n + 1 - l)
    lower = 0
    for rank in range(1, n // 2 + 1):
        if _binomial_cdf(rank - 1, n) <= alpha / 2:
            lower = rank
        else:
            break
    if lower == 0:
        return None
    return [float(sorted_values[lower - 1]), float(sorted_values[n - lower])]


def summarize(samples):
    """Summary of a flat list of samples (seconds): n, median, q1, q3, iqr, mean, min, max, ci95.

    Raises ValueError on an empty list.
    """
    if not samples:
        raise ValueError("no samples to summarize")
    values = np.sort(np.asarray(samples, dtype=np.float64))
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


def summarize_repeats(repeats):
    """Summary over all samples of several repeats, plus each repeat's own median.

    ``repeats`` is a list of lists of seconds. The spread of the repeat medians shows
    drift between repeats that a pooled median hides.
    """
    pooled = [s for rep in repeats for s in rep]
    summary = summarize(pooled)
    summary["repeat_medians"] = [float(np.median(rep)) for rep in repeats if rep]
    return summary
