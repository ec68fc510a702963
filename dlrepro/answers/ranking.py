"""Whether a published order of frameworks carries over here: Kendall's tau-b (scipy.stats.kendalltau) between
the measured and the published values of one column of cells.

A ranking is made only between cells whose device class matches the published hardware's (a CPU run is not
ranked against a GPU table) and per CPU thread count. Its verdict (answers.verdicts):
  INCONCLUSIVE  n <= 3 (tau can only be +-1 or +-0.33), p above LEVEL, a smoke pass among its cells, or a
                framework with several cells (ambiguous);
  HOLDS         tau > 0 with p <= LEVEL;  DOES_NOT_HOLD  tau < 0 with p <= LEVEL;
  NOT_TESTABLE  the published values all tie: there is no order to reproduce.
The order is the published table's, or a third party's rerun, or a notebook's: never "the study's
conclusion", which is a claim of its manifest (answers.claims). Swapped pairs are named, those whose
repeat-level 95% intervals overlap marked "within noise", those without one "noise unknown".
"""

from itertools import combinations

import numpy as np
import pandas as pd
import scipy  # scipy.stats loads on first use: commands that rank nothing start without it

from dlrepro.answers import measured, verdicts
from dlrepro.inputs import hardware

LEVEL = 0.05  # the largest p-value of Kendall's tau that counts as evidence of an order
GROUP = [
    "spec",
    "variant",
    "batch_size",
    "metric",
    "published_hardware",
    "reference_kind",
    "source",
    "device",
    "threads",
    "measured_hardware",
]
COLUMNS = GROUP + ["n", "published_order", "measured_order", "tau", "p_value", "verdict", "why", "swapped", "sentence"]
WHOSE = {
    "published": "the published",
    "third_party_rerun": "a third-party rerun's",
    "notebook_measured": "the notebook's",
}


def _label(framework, version, versions_in_group):
    return "%s %s" % (framework, version) if versions_in_group > 1 else framework


def _order(values, descending):
    return ", ".join(values.sort_values(ascending=not descending).index)


def _noise(a, b):
    """' (within noise)' when two repeat-level 95% intervals overlap, ' (noise unknown)' when one is missing."""
    if pd.isna(a.ci95_low) or pd.isna(b.ci95_low):
        return " (noise unknown)"
    return " (within noise)" if a.ci95_low <= b.ci95_high and b.ci95_low <= a.ci95_high else ""


def _verdict(tau, p_value, n, items, tie):
    """(verdict, why) of one ranking."""
    if tie:
        return verdicts.NOT_TESTABLE, "the published values all tie: there is no order to reproduce"
    if items["jobs"].max() > 1:
        return verdicts.INCONCLUSIVE, "ambiguous: several jobs of %s" % ", ".join(items.index[items["jobs"] > 1])
    if items["smoke"].any():
        return verdicts.INCONCLUSIVE, "smoke pass: %s" % ", ".join(items.index[items["smoke"]])
    if n <= 3:
        return verdicts.INCONCLUSIVE, "n = %d: too few frameworks to rank" % n
    if not p_value <= LEVEL:
        return verdicts.INCONCLUSIVE, "p = %.2g above %g" % (p_value, LEVEL)
    return (verdicts.HOLDS, None) if tau > 0 else (verdicts.DOES_NOT_HOLD, None)


def ranking(cells):
    """One row per group (GROUP) of at least two frameworks with a measured value on the published
    hardware's device class: COLUMNS. ``cells``: answers.published.CELL_COLUMNS rows."""
    same_class = cells["device"] == cells["published_hardware"].map(hardware.reference_device)
    cells = cells[cells["measured"].notna() & same_class]
    rows = []
    for key, group in cells.groupby(GROUP, dropna=False, sort=True):
        g = dict(zip(GROUP, key))
        versions = group.groupby("framework")["measured_framework_version"].nunique()
        group = group.assign(
            label=[_label(f, v, versions[f]) for f, v in zip(group["framework"], group["measured_framework_version"])],
            is_smoke=group["smoke"].notna(),
        )
        items = group.groupby("label").agg(
            measured=("measured", "median"),
            published=("published", "first"),
            ci95_low=("ci95_low", "min"),
            ci95_high=("ci95_high", "max"),
            jobs=("job_id", "count"),
            smoke=("is_smoke", "any"),
        )
        if len(items) < 2:
            continue
        tie = items["published"].nunique() < 2
        tau, p_value = (np.nan, np.nan) if tie else scipy.stats.kendalltau(items["measured"], items["published"])
        descending = measured.metric_kind(g["metric"]) != "time"
        swapped = [
            "%s/%s%s" % (a, b, _noise(items.loc[a], items.loc[b]))
            for a, b in combinations(items.index, 2)
            if np.sign(items.loc[a, "measured"] - items.loc[b, "measured"])
            * np.sign(items.loc[a, "published"] - items.loc[b, "published"])
            < 0
        ]
        verdict, why = _verdict(tau, p_value, len(items), items, tie)
        best = "best" if measured.metric_kind(g["metric"]) == "accuracy" else "fastest"
        whose = WHOSE.get(g["reference_kind"], "the %s" % g["reference_kind"].replace("_", " "))
        threads = "" if pd.isna(g["threads"]) else ", %d threads" % g["threads"]
        order = (
            "all %.4g" % items["published"].iloc[0]
            if tie
            else "%s first: %s" % (best, _order(items["published"], descending))
        )
        sentence = "%s, batch %s, %s: %s order on %s (%s; %s) against here (%s%s: %s). " % (
            g["variant"],
            g["batch_size"],
            g["metric"],
            whose,
            g["published_hardware"],
            g["source"],
            order,
            g["measured_hardware"],
            threads,
            _order(items["measured"], descending),
        )
        if tie:
            sentence += "The published values all tie: there is no order to reproduce."
        else:
            sentence += "Kendall's tau = %.2f (p = %.2g, n = %d): %s%s%s." % (
                tau,
                p_value,
                len(items),
                verdict,
                " (%s)" % why if why else "",
                "; swapped: " + ", ".join(swapped) if swapped else "",
            )
        rows.append(
            dict(
                g,
                n=len(items),
                published_order=_order(items["published"], descending),
                measured_order=_order(items["measured"], descending),
                tau=tau,
                p_value=p_value,
                verdict=verdict,
                why=why,
                swapped=", ".join(swapped),
                sentence=sentence,
            )
        )
    return pd.DataFrame(rows, columns=COLUMNS)
