"""Summary statistics of timing samples (runner.stats): pure functions."""

import pytest

from runner import stats


def test_summary_of_known_samples():
    s = stats.summarize([0.5, 0.1, 0.4, 0.2, 0.3])
    assert s["n"] == 5 and s["median"] == pytest.approx(0.3)
    assert s["q1"] == pytest.approx(0.2) and s["q3"] == pytest.approx(0.4) and s["iqr"] == pytest.approx(0.2)
    assert s["min"] == 0.1 and s["max"] == 0.5 and s["mean"] == pytest.approx(0.3)
    assert s["ci95"] is None  # 5 samples cannot give 95 % coverage with order statistics


def test_median_ci_uses_binomial_order_statistics():
    # n = 10: P(X <= 1) = 11/1024 = 0.0107 <= 0.025 and P(X <= 2) = 0.0547 > 0.025, so x_(2) .. x_(9)
    values = list(range(1, 11))
    assert stats.median_ci(values) == [2.0, 9.0]
    # n = 24 (3 repeats of 8): x_(7) .. x_(18)
    assert stats.median_ci(list(range(1, 25))) == [7.0, 18.0]


def test_repeats_keep_their_own_medians():
    s = stats.summarize_repeats([[1.0, 2.0, 3.0], [10.0, 11.0, 12.0]])
    assert s["repeat_medians"] == [2.0, 11.0] and s["n"] == 6


def test_the_point_estimate_is_the_median_the_interval_is_of():
    # 9 repeats: pooled, the short repeats' many samples pull the median to 1.0; the repeat medians' is 3.0
    repeats = [[1.0] * 9] * 4 + [[3.0]] + [[5.0]] * 4
    s = stats.summarize_repeats(repeats)
    assert s["pooled_median"] == 1.0 and s["median"] == 3.0 and s["point_estimate"] == stats.POINT_ESTIMATE
    assert s["ci95"] == [1.0, 5.0] and s["ci95"][0] <= s["median"] <= s["ci95"][1] and s["n"] == 41
    epochs = stats.summarize_repeats([[4.0, 2.0, 9.0]], units="sample")  # a convergence run's epochs are its units
    assert epochs["median"] == epochs["pooled_median"] == 4.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_sample_that_is_not_a_number_is_refused_not_turned_into_a_bound(bad):
    repeats = [[0.1, 0.1], [0.1, bad]] + [[0.1, 0.1]] * 4
    with pytest.raises(
        stats.NonFiniteSample,
        match=r"sample 4 of 12 \(in measurement order\) is %s, not a finite "
        r"number of seconds" % bad,
    ):
        stats.summarize_repeats(repeats)


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        stats.summarize([])


def _simulated_repeats(rng, repeats=6, iterations=8, true_median=0.1, drift=0.004, noise=0.002, phi=0.7):
    """Seconds of ``repeats`` repeats: each repeat drifts by N(0, drift) (clocks, placement, background load) and
    its iterations follow an AR(1) process around it; everything symmetric, so the median is ``true_median``."""
    out = []
    for _ in range(repeats):
        level, e, rep = true_median + rng.normal(0, drift), 0.0, []
        for _ in range(iterations):
            e = phi * e + rng.normal(0, noise)
            rep.append(level + e)
        out.append(rep)
    return out


def test_the_interval_covers_the_true_median_when_repeats_drift():
    import numpy as np

    rng = np.random.RandomState(2026)
    trials, true_median = 2000, 0.1
    covered = pooled_covered = 0
    for _ in range(trials):
        repeats = _simulated_repeats(rng, true_median=true_median)
        low, high = stats.summarize_repeats(repeats)["ci95"]
        covered += low <= true_median <= high
        pooled = stats.median_ci(sorted(s for rep in repeats for s in rep))  # the interval before tables v4
        pooled_covered += pooled[0] <= true_median <= pooled[1]
    assert 0.92 <= covered / trials <= 0.98, covered / trials  # exact: 1 - 2 / 2**6 = 96.9%
    assert pooled_covered / trials < 0.80, pooled_covered / trials  # iterations pooled as if independent


def test_the_interval_needs_six_repeats_and_records_its_coverage():
    five = stats.summarize_repeats([[1.0, 2.0]] * 5)
    assert five["ci95"] is None and five["ci95_units"] == 5 and five["ci95_coverage"] is None
    six = stats.summarize_repeats([[1.0, 1.5], [2.0, 2.5], [3.0, 3.5], [4.0, 4.5], [5.0, 5.5], [6.0, 6.5]])
    assert six["ci95"] == [1.25, 6.25] and six["ci95_coverage"] == 0.96875  # min and max of the repeat medians
    epochs = stats.summarize_repeats([[9.0, 7.0, 8.0, 6.0, 10.0, 11.0]], units="sample")
    assert epochs["ci95"] == [6.0, 11.0] and epochs["ci95_units"] == 6


def test_the_interval_is_the_exact_binomial_one_at_every_size():
    import math

    def slow(n, level=0.95):  # the definition, term by term (what the suite computed before, in O(n^2))
        cdf = lambda k: sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n  # noqa: E731
        lower = 0
        for rank in range(1, n // 2 + 1):
            if cdf(rank - 1) <= (1 - level) / 2:
                lower = rank
        return lower

    for n in list(range(1, 60)) + [100, 257, 1000]:
        values = list(range(n))
        expected = slow(n)
        assert stats.median_ci(values) == (None if expected == 0 else [float(expected - 1), float(n - expected)]), n
