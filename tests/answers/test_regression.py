"""Bundle against bundle: the verdict rule (faster / slower / no change / cannot tell), its test, its interval
and the configurations it pairs (dlrepro.answers.regression)."""

from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dlrepro import REPO_ROOT
from dlrepro.answers import regression
from dlrepro.answers.verdicts import CANNOT_TELL, FASTER, NO_CHANGE, ONLY_IN_A, ONLY_IN_B, SLOWER
from dlrepro.store import tables

ALEXNET = REPO_ROOT / "results" / "alexnet-20261130T031432Z-74e68a2e"


def test_five_separated_repeats_a_side_with_ties_are_slower():
    # audit finding 2: +49.5%, every repeat of B above every one of A, two ties on each side; scipy's default
    # switched to the asymptotic test (p = 0.0117 > 0.01) and the old rule said "no change"
    a, b = [1.0, 1.0, 1.01, 1.02, 1.03], [1.5, 1.5, 1.51, 1.52, 1.53]
    assert stats.mannwhitneyu(a, b).pvalue == pytest.approx(0.0117, abs=1e-4)
    found = regression.judge(a, b)
    assert (found.verdict, found.p_value, found.test) == (SLOWER, 2 / 252, "Mann-Whitney U (exact permutation, ties)")
    assert found.change == pytest.approx(1.51 / 1.01 - 1)
    assert found.reason == "+49.5%, p = 0.0079 < 0.01, 5 vs 5 repeats"
    # the 98.4% interval of b/a - 1: 2nd smallest and 2nd largest of the 25 ratios (P(U <= 1) = 2/252 <= 0.01)
    ratios = sorted(y / x for x in a for y in b)
    assert (found.change_low, found.change_high) == pytest.approx((ratios[1] - 1, ratios[-2] - 1))
    assert found.coverage == pytest.approx(1 - 4 / 252)
    assert found.rests_on.repeats == [5, 5] and found.rests_on.p_value == found.p_value


def test_a_noisy_twenty_percent_is_cannot_tell_not_no_change():
    a = [1.0, 1.3, 0.8, 1.1, 0.9, 1.2]
    b = [1.2 * x for x in (1.3, 0.8, 1.0, 0.85, 1.15, 1.1)]
    found = regression.judge(a, b)
    assert found.verdict == CANNOT_TELL and found.change == pytest.approx(0.2)
    assert found.p_value == pytest.approx(67 / 462) and found.reason == "+20.0%, p = 0.15 >= 0.01, 6 vs 6 repeats"
    assert found.change_low == pytest.approx(-0.15) and found.change_high == pytest.approx(0.65)


def test_no_change_needs_the_interval_inside_the_band():
    a = [1.0, 1.01, 0.99, 1.0, 1.005, 0.995]
    found = regression.judge(a, [1.01, 1.0, 1.0, 1.02, 0.99, 1.005])
    assert found.verdict == NO_CHANGE and found.coverage == pytest.approx(1 - 14 / 924)
    assert found.reason == "+0.2%, 98.5% interval -1.0% to +2.0% inside -4.8% to +5.0%, 6 vs 6 repeats"
    # a real +2% (p < 0.01) whose interval lies inside +-5% is no change of the size asked about
    tight = regression.judge(a, [1.02 * x for x in (1.0, 1.001, 0.999, 1.0005, 1.0002, 0.9995)])
    assert tight.p_value < 0.01 and tight.verdict == NO_CHANGE
    # the same +2% with noise: its interval reaches past 5%, so it is not shown to be small
    wide = regression.judge(a, [1.02 * x for x in (1.0, 1.06, 0.96, 1.03, 0.98, 1.0)])
    assert wide.verdict == CANNOT_TELL and wide.change_high > 0.05
    assert wide.reason.endswith("reaches past -4.8% to +5.0%, 6 vs 6 repeats")


def test_too_few_repeats_can_tell_nothing():
    found = regression.judge([1.0, 1.0, 1.0], [1.3, 1.3, 1.3])
    assert (found.verdict, found.p_value, found.change_low) == (CANNOT_TELL, 0.1, None)
    assert found.reason == "+30.0%, p = 0.1: 3 vs 3 repeats cannot give p < 0.01"
    same = regression.judge([1.0] * 4, [1.0] * 4, unit="epochs")
    assert same.verdict == CANNOT_TELL
    assert same.reason == "+0.0%: 4 vs 4 epochs give no 98% interval to show it inside -4.8% to +5.0%"
    assert regression.interval_rank(4, 4, 0.01) == (0, None) and regression.interval_rank(4, 5, 0.01)[0] == 1
    assert regression.smallest_p(5, 5) == pytest.approx(0.0079, abs=1e-4) and regression.smallest_p(4, 5) > 0.01
    # a --quick bundle against itself: one repeat a side, tied (scipy's permutation test refuses a side of one)
    quick = regression.judge([1.602], [1.602])
    assert (quick.verdict, quick.p_value, quick.test) == (CANNOT_TELL, 1.0, "Mann-Whitney U (exact, one unit a side)")
    assert quick.reason == "+0.0%: 1 vs 1 repeats give no 98% interval to show it inside -4.8% to +5.0%"
    assert regression.judge([1.0], [2.0, 2.0, 2.0]).reason == "+100.0%, p = 0.5: 1 vs 3 repeats cannot give p < 0.01"
    broken = regression.judge([1.0, float("nan"), 1.0], [1.0, 1.0, 1.0])
    assert broken.verdict == CANNOT_TELL and broken.reason.startswith("a unit is not a positive finite number")
    with pytest.raises(ValueError, match="alpha in"):
        regression.judge([1.0], [1.0], alpha=0.5)


def test_the_null_distribution_of_u_is_exact():
    counts = regression._u_counts(5, 5)
    assert sum(counts) == comb(10, 5) and counts[:5] == [1, 1, 2, 3, 5] and counts == counts[::-1]
    assert sum(regression._u_counts(3, 9)) == comb(12, 3)
    # against scipy's exact p-value of a tie-free U: P(U <= u) = p_less
    x, y = [0.1, 0.4, 0.5, 0.9], [0.2, 0.3, 0.6, 0.7, 0.8, 1.0]
    u = stats.mannwhitneyu(x, y).statistic
    p_less = stats.mannwhitneyu(x, y, alternative="less", method="exact").pvalue
    assert sum(regression._u_counts(4, 6)[: int(u) + 1]) / comb(10, 4) == pytest.approx(p_less)


seconds = st.floats(min_value=0.5, max_value=2.0, allow_nan=False)
sides = st.lists(seconds, min_size=2, max_size=7)


@settings(max_examples=60, deadline=None)
@given(
    a=sides,
    d=st.floats(min_value=0.0, max_value=1.0),
    sign=st.sampled_from([1, -1]),
    min_effect=st.sampled_from([0.0, 0.02, 0.05, 0.1]),
)
def test_an_effect_beyond_the_minimum_is_never_no_change(a, d, sign, min_effect):
    factor = (1 + min_effect + d + 1e-9) ** sign  # B: every repeat of A scaled, so the medians differ by it
    found = regression.judge(a, [x * factor for x in a], min_effect)
    assert found.verdict != NO_CHANGE


@settings(max_examples=60, deadline=None)
@given(a=sides, order=st.randoms(use_true_random=False), min_effect=st.sampled_from([0.0, 0.05]))
def test_identical_samples_are_never_faster_or_slower(a, order, min_effect):
    b = list(a)
    order.shuffle(b)
    assert regression.judge(a, b, min_effect).verdict in (NO_CHANGE, CANNOT_TELL)


SWAPPED = {FASTER: SLOWER, SLOWER: FASTER, NO_CHANGE: NO_CHANGE, CANNOT_TELL: CANNOT_TELL}


@settings(max_examples=80, deadline=None)
@given(a=sides, b=sides, min_effect=st.sampled_from([0.0, 0.05]), alpha=st.sampled_from([0.01, 0.05]))
def test_the_verdict_is_antisymmetric(a, b, min_effect, alpha):
    ab, ba = regression.judge(a, b, min_effect, alpha), regression.judge(b, a, min_effect, alpha)
    assert ba.verdict == SWAPPED[ab.verdict] and ba.p_value == ab.p_value
    if ab.change_low is not None:
        assert (1 + ba.change_low) * (1 + ab.change_high) == pytest.approx(1)


@settings(max_examples=30, deadline=None)
@given(
    low=st.floats(min_value=1.0, max_value=1.5),
    spread=st.floats(min_value=0.0, max_value=0.04),
    n=st.integers(min_value=5, max_value=7),
)
def test_separated_repeats_with_a_large_effect_are_slower(low, spread, n):
    # every repeat of B at least 10% above every one of A, ties allowed: the exact test reaches 2 / C(2n, n)
    a = [low + spread * (i // 2) / n for i in range(n)]
    b = [max(a) * 1.1 + spread * (i // 2) / n for i in range(n)]
    found = regression.judge(a, b)
    assert found.verdict == SLOWER and found.p_value == pytest.approx(2 / comb(2 * n, n))


def _samples(rows_by_job, repeats=6):
    """Sample rows of one bundle: per (framework, version) its seconds, split into ``repeats`` equal repeats."""
    rows = [
        {
            "spec": "alexnet",
            "variant": "alexnet-s",
            "framework": f,
            "framework_version": v,
            "device": "cpu",
            "mode": "throughput",
            "batch_size": 16,
            "precision": "fp32",
            "threads": 2,
            "sample": "iteration",
            "seconds": s,
            "bundle_id": "b",
            "job_id": "alexnet-s.%s-%s.cpu.b16" % (f, v),
            "repeat": 1 + i * repeats // len(seconds),
        }
        for (f, v), seconds in rows_by_job.items()
        for i, s in enumerate(seconds)
    ]
    return tables.frame(rows, tables.SAMPLE_COLUMNS)


def test_a_regression_needs_evidence_and_the_minimum_effect():
    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 0.02, 48)
    a = _samples(
        {("torch", "2"): base, ("mxnet", "1"): base, ("jax", "1"): rng.normal(1.0, 0.002, 48), ("caffe", "1"): base}
    )
    b = _samples(
        {
            ("torch", "2"): rng.normal(1.10, 0.02, 48),
            ("mxnet", "1"): rng.normal(1.0, 0.02, 48),
            ("jax", "1"): rng.normal(1.02, 0.002, 48),
            ("cntk", "1"): base,
        }
    )
    rows = regression.against_bundle(a, b, min_effect=0.05, alpha=0.01).set_index("framework")
    assert rows.loc["torch", "verdict"] == SLOWER and rows.loc["torch", "change"] == pytest.approx(0.10, abs=0.02)
    assert rows.loc["torch", "n_a"] == rows.loc["torch", "n_b"] == 6  # repeats, not iterations
    assert rows.loc["torch", "p_value"] == pytest.approx(2 / 924)  # every repeat of B slower than every one of A
    assert rows.loc["torch", "test"] == "Mann-Whitney U (exact)" and rows.loc["torch", "unit"] == "repeats"
    assert rows.loc["mxnet", "verdict"] == NO_CHANGE and rows.loc["mxnet", "p_value"] > 0.01
    assert -0.05 < rows.loc["mxnet", "change_low"] < rows.loc["mxnet", "change_high"] < 0.05
    assert rows.loc["jax", "p_value"] < 0.01 and rows.loc["jax", "verdict"] == NO_CHANGE  # real but below 5 %
    assert rows.loc["caffe", "verdict"] == ONLY_IN_A and rows.loc["cntk", "verdict"] == ONLY_IN_B
    with pytest.raises(ValueError, match="alpha in"):
        regression.against_bundle(a, b, alpha=1.5)


def test_a_regression_is_judged_on_repeats_not_on_correlated_iterations():
    # B's six repeats drift around A's level: within each repeat the iterations agree closely, so pooled they look
    # like 48 independent samples over 5% slower (p < 0.01); over repeats the difference is noise, and a change
    # of over 5% that the repeats do not show is "cannot tell" (it was "no change" before)
    rng = np.random.default_rng(3)
    level_a = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
    level_b = [1.2, 1.0, 1.15, 0.95, 1.1, 0.98]
    a = _samples({("torch", "2"): np.concatenate([rng.normal(m, 0.001, 8) for m in level_a])})
    b = _samples({("torch", "2"): np.concatenate([rng.normal(m, 0.001, 8) for m in level_b])})
    (row,) = regression.against_bundle(a, b).itertuples()
    assert stats.mannwhitneyu(a["seconds"], b["seconds"]).pvalue < 0.01
    assert row.change > 0.05 and row.p_value > 0.1 and row.verdict == CANNOT_TELL
    assert row.reason == "%+.1f%%, p = %.2g >= 0.01, 6 vs 6 repeats" % (100 * row.change, row.p_value)


def test_versions_of_one_framework_are_never_pooled():
    one, slow = np.full(24, 1.0), np.full(24, 1.5)
    # one bundle with MXNet 1.9.1 and 0.12.0: each version is its own configuration, paired by version
    a = _samples({("mxnet", "1.9.1"): one, ("mxnet", "0.12.0"): slow})
    b = _samples({("mxnet", "1.9.1"): slow, ("mxnet", "0.12.0"): slow})
    rows = regression.against_bundle(a, b).set_index("framework_version")
    assert sorted(rows.index) == ["0.12.0", "1.9.1"] and (rows["n_a"] == 6).all()
    assert rows.loc["1.9.1", "change"] == pytest.approx(0.5) and rows.loc["0.12.0", "change"] == 0.0
    assert rows.loc["1.9.1", "framework_version_b"] == "1.9.1"
    # one version a side: B is an upgrade of A's framework, and the pair is what is compared
    (row,) = regression.against_bundle(
        _samples({("torch", "2.12"): one}), _samples({("torch", "2.13"): slow})
    ).itertuples()
    assert (row.framework_version, row.framework_version_b, row.change) == ("2.12", "2.13", 0.5)
    # two versions in A, one in B: only the equal version pairs, the other is only in A
    rows = regression.against_bundle(a, _samples({("mxnet", "1.9.1"): one}))
    assert sorted(zip(rows["framework_version"], rows["verdict"])) == [("0.12.0", ONLY_IN_A), ("1.9.1", NO_CHANGE)]


def test_bundles_of_older_tables_versions_still_compare():
    # tables v1 against v2 (H200, PyTorch 2.11): every configuration pairs; 3 repeats a side prove nothing
    old, newer = (
        tables.samples(REPO_ROOT / "results" / name)
        for name in ("alexnet-20261130T041002Z-d802ef07", "alexnet-20261130T043240Z-d802ef07")
    )
    rows = regression.against_bundle(old, newer)
    assert sorted(rows["batch_size"]) == [16, 32, 64, 128] and set(rows["verdict"]) == {CANNOT_TELL}
    assert set(rows["framework_version"]) == set(rows["framework_version_b"]) == {"2.11.0+cu130"}
    # a bundle whose results did not record the layout ran at the default: it pairs with one that records it
    samples = tables.samples(ALEXNET)
    assert samples["layout"].isna().all()
    rows = regression.against_bundle(samples, samples.assign(layout="default"))
    assert len(rows) == 7 and set(rows["verdict"]) == {CANNOT_TELL} and set(rows["n_a"]) == {3}
    assert set(rows["reason"]) == {"+0.0%: 3 vs 3 repeats give no 98% interval to show it inside -4.8% to +5.0%"}
