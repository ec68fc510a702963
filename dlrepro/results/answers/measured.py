"""What a summary row measured for a published metric, and whether that can carry a verdict.

One code path for the study tables (answers.cells), the claims (answers.claims) and the comparison with a
spec's references (answers.published). A row may be a dict, a pandas Series or a namedtuple of
``DataFrame.itertuples``: every column is read by name (``get``), never as an attribute, since on a
Series ``row.mode`` and ``row.median`` are methods.

Metrics (the published ones, dlrepro.references, and the claims' own):
  seconds_per_minibatch   the median seconds per training mini-batch of a throughput job (s)
  seconds_per_1000_images an inference job's timed pass over its images, per 1000 images (s)
  images_per_second       1000 / seconds_per_1000_images (images/s)
  test_accuracy           the test accuracy (fraction) at the end of the spec's schedule
  [training_]wall_time_N_epochs, total_seconds   a convergence job's training wall time (s)
  throughput              a throughput job's samples/s
"""
import functools
import re

import pandas as pd

from dlrepro import spec as specmod
from dlrepro.errors import DlreproError
from runner.contract import OPTION_DEFAULTS
from runner.stats import CI_METHOD, MIN_UNITS_95

REPEAT_LEVEL = (CI_METHOD, CI_METHOD.replace("repeat medians", "epochs"))  # tables v4 intervals that tell the noise


def get(row, name):
    """Column ``name`` of a row (dict, Series or namedtuple); None when absent or missing (NaN, NA)."""
    value = row.get(name) if isinstance(row, (dict, pd.Series)) else getattr(row, name, None)
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else value


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


@functools.lru_cache(maxsize=None)
def spec_epochs(spec_name, variant):
    """The epochs of a spec variant's convergence schedule (specs/), or None (no such spec, variant or schedule)."""
    try:
        found = specmod.load(spec_name).variants.get(variant)
    except DlreproError:
        return None
    return int(found.convergence.epochs) if found is not None and found.convergence is not None else None


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


def _epochs_needed(row, metric):
    """The epochs a convergence metric's value stands for: the ones it names, else the spec's schedule."""
    if metric not in ("test_accuracy", "total_seconds") and not epochs_named(metric):
        return None
    return epochs_named(metric) or spec_epochs(get(row, "spec"), get(row, "variant"))


def short_of(row, metric):
    """'trained 1 of 3 epochs' when a convergence metric's value comes from fewer (or more) epochs than it
    stands for (the metric's, else the spec's schedule); else None."""
    needed, trained = _epochs_needed(row, metric), get(row, "epochs")
    if needed is None or trained is None or int(trained) == needed:
        return None
    return "trained %d of %d epochs" % (int(trained), needed)


def value(row, metric):
    """The row's value for a published metric (``raw``), or None when it is not that value: another
    quantity, a failed job, or a convergence job that trained another number of epochs (``short_of``)."""
    return None if short_of(row, metric) else raw(row, metric)


def interval(row, metric):
    """The repeat-level 95% interval (low, high) of the row's value in the metric's unit, or None when the
    row has none (fewer than MIN_UNITS_95 repeats, a bundle from before tables v4, a one-pass measurement)."""
    low, high, method = get(row, "ci95_low"), get(row, "ci95_high"), get(row, "ci95_method")
    if low is None or high is None or method not in REPEAT_LEVEL or get(row, "mode") != "throughput":
        return None
    if metric == "seconds_per_minibatch":
        return float(low), float(high)
    if metric == "throughput":
        batch = float(get(row, "batch_size"))
        return batch / float(high), batch / float(low)
    return None


def smoke(row, metric):
    """Why the row's value is a smoke pass that can carry no verdict, or None: a convergence job short of
    its schedule ('trained 1 of 3 epochs'), or a timing without a repeat-level interval (a --quick job's one
    repeat, any job below MIN_UNITS_95 repeats)."""
    short = short_of(row, metric)
    if short:
        return short
    if metric in ("seconds_per_minibatch", "throughput") and interval(row, metric) is None:
        return "no repeat-level 95%% interval (fewer than %d repeats)" % MIN_UNITS_95
    return None


def pick(rows, threads=None):
    """The one row that stands for a cell, or for a tool in a claim, among ``rows`` (the ok summary rows of
    one tool, variant, batch size and GPU count: a DataFrame). The rule, in order: the thread count named
    (``threads``), else the largest measured (a CPU sweep is judged where the tools use the most cores); the
    default precision (runner.contract.OPTION_DEFAULTS: true fp32, as on the studies' GPUs) when several
    were measured. Returns (row, None), or (None, why): no row at the named threads, or several left
    (framework versions, or repeated measurements of one job in merged bundles), which is ambiguous."""
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
    return None, "ambiguous: %d jobs match (%s)" % (len(rows), "versions %s" % ", ".join(sorted(versions))
                                                      if len(versions) > 1 else ", ".join(rows["job_id"].astype(str)))
