"""Bundle against bundle: for each job configuration measured in both, whether B is faster, slower, not
changed, or whether the measurements cannot tell (docs/verdicts.md, "Bundle against bundle").

The unit of replication is a repeat of a throughput or inference job (its median seconds per mini-batch:
iterations within a repeat are not independent) and an epoch of a convergence job (its seconds). On these
units, per configuration (answers.configkey.CONFIGURATION):

  change   median_b / median_a - 1, the medians of the units; the effect is how much longer the slower side
           takes than the faster one, max(b/a, a/b) - 1, so that swapping A and B swaps faster and slower;
  test     a two-sided Mann-Whitney U test (scipy.stats.mannwhitneyu): its exact distribution when no two
           units tie, else a permutation test of U (scipy.stats.PermutationMethod), which handles ties
           exactly: every split when there are at most PERMUTATIONS, else PERMUTATIONS random ones (seed 0);
  interval the distribution-free confidence interval of the ratio b/a (Hodges-Lehmann / Moses): order
           statistics k and N + 1 - k of the N = n_a * n_b ratios of a unit of B to a unit of A, k from the
           exact null distribution of U; at level 1 - 2 * alpha, so that "inside +-min_effect" is two
           one-sided tests at level alpha (Schuirmann's equivalence test); coverage at least that for any
           continuous distributions differing by a scale factor (the closed interval is conservative with ties).

Verdicts (dlrepro.answers.verdicts): FASTER / SLOWER when the effect >= min_effect (an effect of exactly
min_effect counts, within answers.bands.EDGE of rounding) and p < alpha;
NO_CHANGE when the effect < min_effect and the interval lies inside (1 / (1 + min_effect), 1 + min_effect);
CANNOT_TELL for anything else, with the reason (too few units for either, p >= alpha with a large effect,
an interval that reaches past the band, a unit that is not a positive finite number); NOT_COMPARABLE, never judged,
when the two sides were timed differently or ran on hosts of other fingerprints (answers.configkey.not_comparable
gives the reason: "timer changed (host_sync -> device_events)", "other host (ISA ...)"); ONLY_IN_A / ONLY_IN_B.
"""

import functools
import math
from dataclasses import dataclass
from math import comb

import numpy as np
import pandas as pd
import scipy  # scipy.stats loads on first use

from dlrepro.answers import configkey
from dlrepro.answers.bands import EDGE
from dlrepro.answers.configkey import CONFIGURATION, VERSION
from dlrepro.answers.verdicts import (
    CANNOT_TELL,
    FASTER,
    NO_CHANGE,
    NOT_COMPARABLE,
    ONLY_IN_A,
    ONLY_IN_B,
    SLOWER,
    RestsOn,
)

# a configuration is answers.configkey.CONFIGURATION; framework_version keeps two versions of one framework in a
# bundle apart (a bundle with one version a side pairs them: an upgrade)
REGRESSION_COLUMNS = CONFIGURATION + [
    "framework_version_b",
    "timer_a",
    "timer_b",
    "unit",
    "n_a",
    "n_b",
    "median_a",
    "median_b",
    "change",
    "change_low",
    "change_high",
    "interval_coverage",
    "test",
    "p_value",
    "verdict",
    "reason",
]
PERMUTATIONS = 9999


@dataclass
class Judgement:
    """One configuration's verdict and what it rests on. ``median_a`` / ``median_b``: medians of the units
    (seconds); ``change``: median_b / median_a - 1; ``change_low`` / ``change_high``: the interval of b/a - 1
    (None: too few units for one), of exact coverage ``coverage``; ``reason``: one line saying why."""

    verdict: str
    median_a: float
    median_b: float
    change: float
    change_low: float
    change_high: float
    coverage: float
    test: str
    p_value: float
    reason: str
    n_a: int
    n_b: int

    @property
    def rests_on(self):
        return RestsOn(
            repeats=[self.n_a, self.n_b],
            test=self.test,
            p_value=self.p_value,
            interval=None if self.change_low is None else (self.change_low, self.change_high),
        )


@functools.lru_cache(maxsize=None)
def _u_counts(m, n):
    """How many of the C(m + n, m) orderings of two tie-free samples of sizes m and n give U = u, for
    u = 0 .. m * n: the coefficients of the Gaussian binomial coefficient [m + n over m] in q, built as
    prod_i (1 - q^(n + i)) / (1 - q^i), exactly (Python integers)."""
    counts = [1]
    for i in range(1, m + 1):
        grown = counts + [0] * (n + i)
        for j, c in enumerate(counts):
            grown[j + n + i] -= c
        for j in range(i, len(grown)):
            grown[j] += grown[j - i]
        counts = grown[: i * n + 1]
    return counts


@functools.lru_cache(maxsize=None)
def interval_rank(n_a, n_b, alpha):
    """(k, coverage) of the 1 - 2 * alpha interval: the largest k with P(U <= k - 1) <= alpha under the null
    hypothesis, and the interval's exact coverage 1 - 2 * P(U <= k - 1); (0, None) when even k = 1 (the
    extreme ratios) misses, that is when C(n_a + n_b, n_a) < 1 / alpha."""
    total, below, k = comb(n_a + n_b, n_a), 0, 0
    for count in _u_counts(min(n_a, n_b), max(n_a, n_b)):
        if below + count > alpha * total:
            break
        below += count
        k += 1
    return (k, 1 - 2 * below / total) if k else (0, None)


def smallest_p(n_a, n_b):
    """The smallest two-sided p-value the test can give for these sizes: every unit of one side below every
    unit of the other, one split of C(n_a + n_b, n_a) on each side (ties within a side do not change it)."""
    return min(1.0, 2.0 / comb(n_a + n_b, n_a))


def rank_test(a, b):
    """(p, test name) of the two-sided Mann-Whitney U test of ``a`` against ``b``: exact without ties, else a
    permutation test. The sides are put in a fixed order first, so that the p-value does not depend on which
    is A (the random permutations would)."""
    x, y = sorted((a, b), key=lambda v: (len(v), tuple(np.sort(v))))
    if len(np.unique(np.concatenate([x, y]))) == len(x) + len(y):
        return float(scipy.stats.mannwhitneyu(x, y, method="exact").pvalue), "Mann-Whitney U (exact)"
    if len(x) < 2:  # scipy's permutation test needs two units a side; a side of one: the exact null, ties and all
        return float(scipy.stats.mannwhitneyu(x, y, method="exact").pvalue), "Mann-Whitney U (exact, one unit a side)"
    splits = comb(len(x) + len(y), len(x))
    method = scipy.stats.PermutationMethod(n_resamples=PERMUTATIONS, rng=0)
    p_value = float(scipy.stats.mannwhitneyu(x, y, method=method).pvalue)
    if splits <= PERMUTATIONS:
        return p_value, "Mann-Whitney U (exact permutation, ties)"
    return p_value, "Mann-Whitney U (%d random permutations, ties)" % PERMUTATIONS


def _pct(value):
    return "%+.1f%%" % (100 * value)


def judge(units_a, units_b, min_effect=0.05, alpha=0.01, unit="repeats"):
    """The Judgement of B's units against A's (1-d sequences of seconds, > 0; ``unit`` names them in the
    reason: "repeats" or "epochs"). Raises ValueError on min_effect < 0, alpha outside (0, 0.5) or an empty side."""
    if min_effect < 0 or not 0 < alpha < 0.5:
        raise ValueError("min_effect must be >= 0 and alpha in (0, 0.5) (got %s, %s)" % (min_effect, alpha))
    a, b = np.asarray(units_a, dtype=float), np.asarray(units_b, dtype=float)
    if not len(a) or not len(b):
        raise ValueError("a side has no units (%d vs %d)" % (len(a), len(b)))
    sizes = "%d vs %d %s" % (len(a), len(b), unit)
    if not (np.isfinite(a).all() and np.isfinite(b).all() and (a > 0).all() and (b > 0).all()):
        nan = float("nan")
        return Judgement(
            CANNOT_TELL,
            nan,
            nan,
            nan,
            None,
            None,
            None,
            None,
            None,
            "a unit is not a positive finite number of seconds, %s" % sizes,
            len(a),
            len(b),
        )
    median_a, median_b = float(np.median(a)), float(np.median(b))
    log_change, band = math.log(median_b) - math.log(median_a), math.log1p(min_effect)
    p_value, test = rank_test(a, b)
    k, coverage = interval_rank(len(a), len(b), alpha)
    low = high = None
    if k:  # on a log scale, so that swapping A and B negates the bounds exactly
        ratios = np.sort(np.subtract.outer(np.log(b), np.log(a)).ravel())
        log_low, log_high = ratios[k - 1], ratios[len(ratios) - k]
        low, high = float(np.expm1(log_low)), float(np.expm1(log_high))
    change = math.expm1(log_change)
    said = "%s, p = %.2g" % (_pct(change), p_value)
    band_text = "%s to %s" % (_pct(math.expm1(-band)), _pct(min_effect))
    shown = "%.1f%% interval %s to %s" % (100 * coverage, _pct(low), _pct(high)) if k else None
    large = abs(log_change) >= band * (1 - EDGE) and log_change != 0  # 105 / 100 is 1.04999... in binary
    if large and p_value < alpha:
        verdict, reason = SLOWER if log_change > 0 else FASTER, "%s < %s, %s" % (said, alpha, sizes)
    elif not large and k and -band < log_low and log_high < band:
        verdict, reason = NO_CHANGE, "%s, %s inside %s, %s" % (_pct(change), shown, band_text, sizes)
    elif large:
        verdict = CANNOT_TELL
        reason = (
            "%s: %s cannot give p < %s" % (said, sizes, alpha)
            if smallest_p(len(a), len(b)) >= alpha
            else "%s >= %s, %s" % (said, alpha, sizes)
        )
    elif not k:
        verdict, reason = (
            CANNOT_TELL,
            "%s: %s give no %g%% interval to show it inside %s"
            % (_pct(change), sizes, 100 * (1 - 2 * alpha), band_text),
        )
    else:
        verdict, reason = CANNOT_TELL, "%s, %s reaches past %s, %s" % (_pct(change), shown, band_text, sizes)
    return Judgement(
        verdict, median_a, median_b, change, low, high, coverage if k else None, test, p_value, reason, len(a), len(b)
    )


def _normalised(samples):
    """The timed rows of a samples table (iterations, repeat means and epochs), comparable."""
    return configkey.normalised(samples[samples["sample"].isin(["iteration", "repeat mean", "epoch"])])


def units(samples):
    """{configuration (CONFIGURATION values): unit values} of a samples table: a throughput or inference job's
    repeat medians (a pipelined_wall job's: its repeat means), a convergence job's epoch seconds."""
    found = {}
    for key, g in _normalised(samples).groupby(CONFIGURATION, dropna=False, sort=True):
        found[key] = (
            g["seconds"]
            if key[-1] == "epoch"
            else g.groupby(["bundle_id", "job_id", "repeat"], dropna=False)["seconds"].median()
        ).to_numpy()
    return found


def units_by_bundle(samples):
    """{bundle id: ``units`` of its rows} of a samples table of many bundles, from one grouping of all of them
    (grouping each bundle's rows on its own took most of a one-bundle site rebuild's history)."""
    rows = _normalised(samples)
    keys = ["bundle_id", *CONFIGURATION]
    epochs = rows["sample"] == "epoch"
    medians = rows[~epochs].groupby([*keys, "job_id", "repeat"], dropna=False, sort=True)["seconds"].median()
    found = {}
    for key, values in [
        *rows[epochs].groupby(keys, dropna=False, sort=True)["seconds"],
        *medians.groupby(level=list(range(len(keys))), dropna=False, sort=True),
    ]:
        found.setdefault(key[0], {})[key[1:]] = values.to_numpy()
    return found


def timers(samples):
    """{configuration (CONFIGURATION values): how its iterations were timed (configkey.timer_of: device_events,
    pipelined_wall, host_sync; several joined by ' + '; None where no row recorded one)}."""
    return {
        key: configkey.timer_of(g) for key, g in _normalised(samples).groupby(CONFIGURATION, dropna=False, sort=True)
    }


def _pairs(a, b):
    """(key in A or None, key in B or None) for every configuration: keys that differ only in framework_version
    pair when each bundle holds exactly one version of that configuration (B ran another version of it);
    otherwise only equal versions pair (versions are never pooled)."""

    def base(key):
        return str(key[:VERSION] + key[VERSION + 1 :])

    bases = {}
    for side, keys in ((0, a), (1, b)):
        for key in keys:
            bases.setdefault(base(key), ([], []))[side].append(key)
    for name in sorted(bases):
        in_a, in_b = bases[name]
        if len(in_a) == 1 and len(in_b) == 1:
            yield in_a[0], in_b[0]
            continue
        for key in sorted(set(in_a) | set(in_b), key=str):
            yield (key if key in in_a else None), (key if key in in_b else None)


def against_bundle(samples_a, samples_b, min_effect=0.05, alpha=0.01, hosts=(None, None)):
    """Bundle B against bundle A (samples tables, dlrepro.store.tables.SAMPLE_COLUMNS; any tables version),
    one row per configuration: REGRESSION_COLUMNS (seconds; ``change`` and its interval as fractions;
    ``framework_version`` A's, B's for a row only in B; ``framework_version_b`` B's; ``timer_a`` / ``timer_b``
    how each side's iterations were timed). ``hosts``: the sides' configkey.fingerprint (None: not looked at). A
    pair timed differently or on hosts of other fingerprints is NOT_COMPARABLE, its reason
    configkey.not_comparable's, its medians and sizes given, no test. Raises ValueError on min_effect < 0 or alpha
    outside (0, 0.5)."""
    if min_effect < 0 or not 0 < alpha < 0.5:
        raise ValueError("min_effect must be >= 0 and alpha in (0, 0.5) (got %s, %s)" % (min_effect, alpha))
    a, b = units(samples_a), units(samples_b)
    timer_a, timer_b = timers(samples_a), timers(samples_b)
    rows = []
    for key_a, key_b in _pairs(a, b):
        key = key_a if key_a is not None else key_b
        row = dict(
            zip(CONFIGURATION, key),
            framework_version_b=key_b[VERSION] if key_b is not None else None,
            timer_a=timer_a.get(key_a),
            timer_b=timer_b.get(key_b),
            unit="epochs" if key[-1] == "epoch" else "repeats",
            n_a=len(a[key_a]) if key_a is not None else 0,
            n_b=len(b[key_b]) if key_b is not None else 0,
        )
        if key_a is None or key_b is None:
            rows.append(dict(row, verdict=ONLY_IN_A if key_b is None else ONLY_IN_B))
            continue
        why = configkey.not_comparable(row["timer_a"], row["timer_b"], *hosts)
        if why:
            rows.append(
                dict(
                    row,
                    median_a=float(np.median(a[key_a])),
                    median_b=float(np.median(b[key_b])),
                    verdict=NOT_COMPARABLE,
                    reason=why,
                )
            )
            continue
        found = judge(a[key_a], b[key_b], min_effect, alpha, row["unit"])
        rows.append(
            dict(
                row,
                median_a=found.median_a,
                median_b=found.median_b,
                change=found.change,
                change_low=found.change_low,
                change_high=found.change_high,
                interval_coverage=found.coverage,
                test=found.test,
                p_value=found.p_value,
                verdict=found.verdict,
                reason=found.reason,
            )
        )
    # text columns stay text where every row's value is None: pandas would make an all-None column float64, and a
    # reason written into it later (a smoke pass's) would then fail
    return pd.DataFrame(rows, columns=REGRESSION_COLUMNS).astype({"reason": object, "test": object})
