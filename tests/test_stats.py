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


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        stats.summarize([])
