"""What a summary row measured for a published metric, its interval, and whether it can carry a verdict.

One code path for the study tables (answers.cells), the claims (answers.claims) and the comparison with a
spec's references (answers.published). A row may be a dict, a pandas Series or a namedtuple of
``DataFrame.itertuples``: every column is read by name (``get``), never as an attribute, since on a
Series ``row.mode`` and ``row.median`` are methods.

``prepare`` first puts into the summary what the bundles recorded about each job's protocol, so that the rules
read rows only: ``quick`` (the bundle ran with --quick), ``planned_epochs`` (the convergence schedule of the spec
as the bundle recorded it, not as specs/ says today), and the seed jobs of one convergence configuration collapsed
into one row (``seeds`` of them: the medians over seeds, with distribution-free 95% intervals in
``accuracy_low``/``accuracy_high`` and ``total_low``/``total_high``).

Metrics (the published ones, dlrepro.inputs.references, and the claims' own):
  seconds_per_minibatch   the median seconds per training mini-batch of a throughput job (s)
  seconds_per_1000_images an inference job's timed pass over its images, per 1000 images (s)
  images_per_second       1000 / seconds_per_1000_images (images/s)
  test_accuracy           the test accuracy (fraction) at the end of the spec's schedule
  [training_]wall_time_N_epochs, total_seconds   a convergence job's training wall time (s)
  throughput              a throughput job's samples/s

Two things keep a value from a verdict, each with its reason: a **smoke pass** (``smoke``: a --quick job, or a
convergence job that trained another number of epochs than the value stands for), whose value is shown but never
set as a ratio against a published full-protocol value; and **no interval** (``no_interval``: fewer repeats or
seeds than a 95% interval needs), whose value is shown and ratioed but neither reproduces nor differs.
"""

import re

import numpy as np
import pandas as pd

from dlrepro.inputs.frameworks import display
from runner.contract import OPTION_DEFAULTS
from runner.stats import CI_METHOD, CI_METHOD_MEANS, MIN_UNITS_95, median_ci, median_ci_coverage

# tables v4 intervals that tell the noise
REPEAT_LEVEL = (CI_METHOD, CI_METHOD_MEANS, CI_METHOD.replace("repeat medians", "epochs"))
PREPARED = ("quick", "planned_epochs", "seeds", "accuracy_low", "accuracy_high", "total_low", "total_high")
# a convergence configuration whose seed jobs are collapsed into one row (everything but the job and its seed)
SEED_KEY = [
    "bundle_id",
    "spec_sha256",
    "variant",
    "framework",
    "framework_version",
    "image_id",
    "host",
    "device",
    "device_name",
    "mode",
    "batch_size",
    "threads",
    "ranks",
    "precision",
    "layout",
    "status",
]


def get(row, name):
    """Column ``name`` of a row (dict, Series or namedtuple); None when absent or missing (NaN, NA)."""
    value = row.get(name) if isinstance(row, (dict, pd.Series)) else getattr(row, name, None)
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else value


def energy_window(row):
    """A row's energy counters' window over its measured window (a ratio) where they differ by more than one sampling
    period (tables' ``energy_window_differs``: its J/sample and mean power cover another stretch), else None."""
    if not get(row, "energy_window_differs"):
        return None
    return float(get(row, "energy_window_s")) / float(get(row, "measured_window_s"))


def epochs_named(metric):
    """The epochs a metric names ('training_wall_time_10_epochs' -> 10), else None."""
    match = re.fullmatch(r"(?:training_)?wall_time_(\d+)_epochs", metric)
    return int(match.group(1)) if match else None


def metric_kind(metric):
    """'time' (seconds, lower is better), 'rate' (higher is better) or 'accuracy' for a metric the suite
    measures, else None (not compared)."""
    if metric in ("seconds_per_minibatch", "seconds_per_1000_images", "total_seconds") or epochs_named(metric):
        return "time"
    return {"images_per_second": "rate", "throughput": "rate", "test_accuracy": "accuracy"}.get(metric)


def _planned_epochs(resolved, variant):
    found = ((resolved or {}).get("variants") or {}).get(variant) or {}
    epochs = (found.get("convergence") or {}).get("epochs")
    return int(epochs) if epochs else None


SEED_CI_METHOD = "median of seed medians, distribution-free (binomial order statistics)"
# a collapsed row's per-job figures: each the median over its seeds
OVER_SEEDS = (
    "median",
    "mean",
    "total_seconds",
    "final_test_accuracy",
    "final_perplexity",
    "throughput",
    "final_loss",
    "energy_j_per_sample",
    "mean_power_w",
    "cpu_seconds",
    "effective_parallelism",
    "achieved_flops",
    "fraction_of_peak",
)


def _seed_row(rows):
    """One row for the seed jobs ``rows`` of one convergence configuration: medians over the seeds (OVER_SEEDS),
    their distribution-free 95% intervals (runner.stats.median_ci: from MIN_UNITS_95 seeds on), the spread of the
    seeds' seconds per epoch (q1, q3, iqr over the seed medians; ci95 of their median, SEED_CI_METHOD), the job id
    without its seed. No column keeps one seed's figure under the collapsed row's name."""
    first = rows.iloc[0].copy()
    first["job_id"] = re.sub(r"\.s\d+$", "", str(first["job_id"]))
    first["seed"], first["seeds"] = pd.NA, len(rows)
    for column in OVER_SEEDS:
        values = rows[column].dropna() if column in rows else ()
        if column in rows:
            first[column] = float(values.median()) if len(values) else np.nan
    medians = sorted(rows["median"].dropna().astype(float))
    first["q1"], first["q3"] = (
        (float(np.quantile(medians, 0.25)), float(np.quantile(medians, 0.75))) if medians else (np.nan, np.nan)
    )
    first["iqr"] = first["q3"] - first["q1"]
    found = median_ci(medians)
    first["ci95_low"], first["ci95_high"] = found if found else (np.nan, np.nan)
    first["ci95_units"], first["ci95_method"] = len(medians), SEED_CI_METHOD if found else None
    first["ci95_coverage"] = median_ci_coverage(len(medians)) if found else np.nan
    first["n"] = int(rows["n"].dropna().sum()) if rows["n"].notna().any() else pd.NA
    for column, low, high in (
        ("final_test_accuracy", "accuracy_low", "accuracy_high"),
        ("total_seconds", "total_low", "total_high"),
    ):
        found = median_ci(sorted(rows[column].dropna().astype(float)))
        first[low], first[high] = found if found else (np.nan, np.nan)
    return first


def prepare(summary, bodies):
    """``summary`` (tables' summary rows of the bundles whose bundle.json ``bodies`` are given) with the PREPARED
    columns: ``quick`` from each bundle's recorded options, ``planned_epochs`` from each bundle's resolved spec,
    and the seed jobs of a convergence configuration (a ``seed`` column with more than one value) collapsed into one
    row whose ``seeds`` says how many (SEED_KEY). Pure: reads nothing but its arguments."""
    by_id = {b["id"]: b for b in bodies}
    specs = {b["spec"]["sha256"]: b["spec"]["resolved"] for b in bodies}
    out = summary.assign(
        quick=summary["bundle_id"].map(lambda i: bool((by_id.get(i, {}).get("options") or {}).get("quick"))),
        planned_epochs=[_planned_epochs(specs.get(s), v) for s, v in zip(summary["spec_sha256"], summary["variant"])],
        seeds=1,
        accuracy_low=np.nan,
        accuracy_high=np.nan,
        total_low=np.nan,
        total_high=np.nan,
    )
    if "seed" not in out or not len(out):
        return out.astype({"planned_epochs": "Int64", "seeds": "Int64"})
    seeded = (out["mode"] == "convergence") & out["seed"].notna() & (out["status"] == "ok")
    groups = out[seeded].groupby(SEED_KEY, dropna=False, sort=False)
    collapsed = [_seed_row(rows) for _, rows in groups if len(rows) > 1]
    many = groups["job_id"].transform("size") > 1
    kept = out.drop(index=many[many].index)
    joined = pd.concat([kept, pd.DataFrame(collapsed)], ignore_index=True) if collapsed else kept
    return joined.astype({"planned_epochs": "Int64", "seeds": "Int64"}).reset_index(drop=True)


def raw(row, metric):
    """The value the row measured for the metric's quantity, in its unit (module docstring), however many
    epochs it trained; None when the job is not ok or measured another quantity."""
    if get(row, "status") != "ok":
        return None
    if metric == "seconds_per_minibatch":
        timed = get(row, "mode") == "throughput" and get(row, "quantity") == "seconds per mini-batch"
        return _float(get(row, "median")) if timed else None
    if metric == "seconds_per_1000_images":
        return _float(get(row, "seconds_per_1000_images"))
    if metric == "images_per_second":
        seconds = get(row, "seconds_per_1000_images")
        return 1000.0 / seconds if seconds else None
    if metric == "throughput":
        return _float(get(row, "throughput")) if get(row, "mode") == "throughput" else None
    if metric == "test_accuracy":
        return _float(get(row, "final_test_accuracy"))
    if metric == "total_seconds" or epochs_named(metric):
        return _float(get(row, "total_seconds")) if get(row, "mode") == "convergence" else None
    return None


def _float(value):
    return None if value is None else float(value)


def short_of(row, metric):
    """'trained 1 of 3 epochs' when a convergence metric's value comes from fewer (or more) epochs than it
    stands for (the epochs the metric names, else the recorded spec's schedule: ``planned_epochs``); else None."""
    if metric not in ("test_accuracy", "total_seconds") and not epochs_named(metric):
        return None
    needed, trained = epochs_named(metric) or get(row, "planned_epochs"), get(row, "epochs")
    if needed is None or trained is None or int(trained) == int(needed):
        return None
    return "trained %d of %d epochs" % (int(trained), int(needed))


def smoke(row, metric):
    """Why the row's value is a smoke pass, whose value is shown but never judged or set as a ratio against a
    published full-protocol value, or None: a --quick job ('--quick: 3 iterations in 1 repeat'), or a convergence job
    short of the epochs its value stands for (short_of)."""
    if get(row, "quick"):
        mode = get(row, "mode")
        epochs, n, repeats = (int(get(row, c) or 1) for c in ("epochs", "n", "ci95_units"))
        if mode == "convergence":
            what = "%d epoch%s, each cut short" % (epochs, "s"[epochs == 1 :])
        elif mode == "throughput" and get(row, "n"):
            what = "%d iterations in %d repeat%s" % (n, repeats, "s"[repeats == 1 :])
        else:
            what = "a short pass"
        return "--quick: %s" % what
    return short_of(row, metric)


def value(row, metric):
    """The row's value for a published metric (``raw``), or None when it is not that value: another
    quantity, a failed job, or a smoke pass (``smoke``)."""
    return None if smoke(row, metric) else raw(row, metric)


def interval(row, metric):
    """The 95% interval (low, high) of the row's value in the metric's unit, or None: over a throughput job's
    repeats (tables v4: ``ci95_*``), over a convergence configuration's seeds (``prepare``); None for a job with
    fewer units than MIN_UNITS_95, an inference pass, or a bundle from before tables v4."""
    if metric in ("seconds_per_minibatch", "throughput"):
        low, high, method = get(row, "ci95_low"), get(row, "ci95_high"), get(row, "ci95_method")
        if low is None or high is None or method not in REPEAT_LEVEL or get(row, "mode") != "throughput":
            return None
        if metric == "seconds_per_minibatch":
            return float(low), float(high)
        rate, median = float(get(row, "throughput")), float(get(row, "median"))  # samples/s at the median's time
        return rate * median / float(high), rate * median / float(low)
    names = (
        ("accuracy_low", "accuracy_high")
        if metric == "test_accuracy"
        else ("total_low", "total_high")
        if metric == "total_seconds" or epochs_named(metric)
        else None
    )
    if names is None or get(row, "mode") != "convergence":
        return None
    low, high = get(row, names[0]), get(row, names[1])
    return None if low is None or high is None else (float(low), float(high))


def no_interval(row, metric):
    """Why the row's value has no 95% interval, in words ('3 repeats; a 95% interval needs 6'), or None when it
    has one (``interval``)."""
    if interval(row, metric) is not None:
        return None
    if get(row, "mode") == "convergence":
        seeds = int(get(row, "seeds") or 1)
        return "%d seed%s; a 95%% interval needs %d" % (seeds, "s"[seeds == 1 :], MIN_UNITS_95)
    if get(row, "mode") == "inference":
        return "one timed pass"
    units = get(row, "ci95_units")
    if units is None:
        return "a bundle from before repeat-level intervals"
    units = int(units)
    if units >= MIN_UNITS_95:
        return "no interval recorded for its %d repeats" % units
    return "%d repeat%s; a 95%% interval needs %d" % (units, "s"[units == 1 :], MIN_UNITS_95)


def pick(rows, threads=None):
    """The one row that stands for a cell, or for a tool in a claim, among ``rows`` (the ok summary rows of
    one tool, variant, batch size and GPU count: a DataFrame). The rule, in order: the thread count named
    (``threads``), else the largest measured; the default precision (runner.contract.OPTION_DEFAULTS: true fp32,
    as on the studies' GPUs) when several were measured. Returns (row, None), or (None, why): no row at the named
    threads, or several left (framework versions, or repeated measurements of one job in merged bundles), which
    is ambiguous."""
    if rows["threads"].notna().any():
        wanted = threads if threads is not None else rows["threads"].max()
        rows = rows[rows["threads"] == wanted]
        if rows.empty:
            return None, "no job at %d threads" % wanted
    if rows["precision"].nunique() > 1:
        rows = rows[rows["precision"] == OPTION_DEFAULTS["precision"]]
    if len(rows) == 1:
        return rows.iloc[0], None
    if rows.empty:
        return None, "no job at the default precision %s" % OPTION_DEFAULTS["precision"]
    versions = rows["framework_version"].dropna().unique()
    return None, "ambiguous: %d jobs match (%s)" % (
        len(rows),
        "versions %s" % ", ".join(sorted(versions)) if len(versions) > 1 else ", ".join(rows["job_id"].astype(str)),
    )


def common_threads(rows, frameworks):
    """The largest CPU thread count measured by every one of ``frameworks`` among ``rows`` (so that tools are set
    side by side at one count), else None (no thread counts, or none shared)."""
    if not rows["threads"].notna().any():
        return None
    counts = [set(rows[rows["framework"] == f]["threads"].dropna().astype(int)) for f in frameworks]
    shared = set.intersection(*counts) if counts and all(counts) else set()
    return max(shared) if shared else None


def mixed_timers(rows):
    """How the frameworks of ``rows`` (ok summary rows set side by side) were timed, when they were timed
    differently: 'PyTorch by device_events; JAX, MXNet by host_sync', else None (one timer, or none recorded).
    On a GPU the timers measure different quantities (runner.measure; docs/gpu.md): a host synchronisation around
    every iteration drains the launch queue that a pipelined loop keeps full."""
    if "timer" not in rows or not len(rows):
        return None
    found = rows[rows["timer"].notna()].groupby("timer")["framework"].agg(lambda f: sorted(set(f)))
    if len(found) < 2:
        return None
    return "; ".join(
        "%s by %s" % (", ".join(display(f) for f in frameworks), timer)
        for timer, frameworks in sorted(found.items(), key=lambda t: t[1])
    )
