"""Measured against published: the verdict of one published value beside the job that measured its
configuration, for a spec's references (``against_published``, ``invoke compare BUNDLE``) and for a study's
tables (answers.cells) alike.

A cell: ratio = measured / published, both in the measured unit (answers.measured), against the
reference's ``tolerance`` (lower, upper ratio) or the metric's DEFAULT_TOLERANCE:
  REPRODUCES   inside the tolerance, on the same hardware (answers.hardware.same_hardware), not a smoke pass;
  DIFFERS      outside it, same hardware; ``direction`` says how: faster / slower (times, rates),
               higher / lower (accuracy);
  OTHER_HARDWARE  a time or rate measured on other hardware: the ratio is shown, never judged (an
               accuracy carries across hardware and is judged wherever it was measured);
  CANNOT_COMPARE  with the reason: the job measured another quantity, or a smoke pass ("trained 1 of 3
               epochs", a timing without a repeat-level interval), whose value is shown.
"""
from dataclasses import dataclass

import pandas as pd

from dlrepro.results.answers import hardware, measured, verdicts

# our framework -> its names in the studies' tables, the closest first (DLF names its MXNet rows by API;
# our MXNet adapter is Gluon). Lua Torch (DLBench) is not PyTorch, Keras(*) rows are not the plain framework.
FRAMEWORK_NAMES = {
    "torch": ("PyTorch",), "tensorflow": ("TensorFlow", "Tensorflow"),
    "mxnet": ("MXNet(Gluon)", "MXNet", "MXNet(Module API)"),
    "cntk": ("CNTK",), "caffe2": ("Caffe2",), "caffe": ("Caffe",), "jax": (),
}
DEFAULT_TOLERANCE = {"time": (0.9, 1.1), "rate": (0.9, 1.1), "accuracy": (0.98, 1.02)}
TO_MEASURED_UNIT = {"s": 1.0, "min": 60.0, "percent": 0.01, "fraction": 1.0, "images/s": 1.0}
UNIT = {"time": "s", "rate": "images/s", "accuracy": "fraction"}
CELL_COLUMNS = ["spec", "variant", "batch_size", "framework", "measured_framework_version", "device", "threads",
                "measured_hardware", "metric", "unit", "measured", "ci95_low", "ci95_high", "published", "ratio",
                "lower", "upper", "verdict", "direction", "why", "smoke", "reference_id", "reference_kind",
                "published_framework", "published_version", "published_hardware", "source", "bundle_id", "job_id"]


@dataclass
class Judged:
    """One published value beside one summary row: values in the measured unit (s, images/s, fraction)."""
    published: float
    verdict: str  # verdicts.CELL
    measured: float = None  # shown whenever the job measured the quantity, a smoke pass's included
    ratio: float = None  # measured / published
    lower: float = None  # the tolerance on the ratio
    upper: float = None
    direction: str = None  # of a ratio outside the tolerance: faster / slower, higher / lower
    why: str = None  # of OTHER_HARDWARE and CANNOT_COMPARE
    smoke: str = None  # answers.measured.smoke: why the value is a smoke pass
    interval: tuple = None  # the measured value's repeat-level 95% interval, or None


def direction(kind, ratio, lower, upper):
    """None inside [lower, upper]; else 'higher' / 'lower' (accuracy) or 'faster' / 'slower' (times, rates)."""
    if lower <= ratio <= upper:
        return None
    if kind == "accuracy":
        return "higher" if ratio > upper else "lower"
    return "faster" if (ratio < lower if kind == "time" else ratio > upper) else "slower"


def judge(row, ref):
    """The verdict of published reference ``ref`` (dlrepro.references.Reference, one value) beside summary
    row ``row`` (dict, Series or namedtuple) of its configuration: a Judged (module docstring)."""
    kind = measured.metric_kind(ref.metric)
    published = ref.value * TO_MEASURED_UNIT[ref.unit]
    value = measured.raw(row, ref.metric)
    if value is None:
        epochs = measured.get(row, "epochs")
        return Judged(published, verdicts.CANNOT_COMPARE, why="the job measured another quantity (%s, %s)" % (
            measured.get(row, "quantity"), "%d epochs" % epochs if epochs is not None else
            "mode %s" % measured.get(row, "mode")))
    lower, upper = (ref.tolerance.lower, ref.tolerance.upper) if ref.tolerance else DEFAULT_TOLERANCE[kind]
    found = Judged(published, verdicts.REPRODUCES, value, value / published, lower, upper,
                   smoke=measured.smoke(row, ref.metric), interval=measured.interval(row, ref.metric))
    found.direction = direction(kind, found.ratio, lower, upper)
    if kind != "accuracy" and not hardware.same_hardware(ref.hardware, measured.get(row, "device"),
                                                         measured.get(row, "device_name"), ref.gpus,
                                                         measured.get(row, "ranks")):
        found.verdict, found.why = verdicts.OTHER_HARDWARE, "measured on %s, published on %s" % (
            measured.get(row, "device_name"), ref.hardware)
    elif found.smoke:
        found.verdict, found.why = verdicts.CANNOT_COMPARE, "smoke pass: %s" % found.smoke
    elif found.direction:
        found.verdict = verdicts.DIFFERS
    return found


def framework_name(framework, names_present):
    """The name a study's table gives our ``framework`` among ``names_present`` (FRAMEWORK_NAMES), or None."""
    for name in FRAMEWORK_NAMES.get(framework, ()):
        if name in names_present:
            return name
    return None


def against_published(summary, references=None):
    """One row per (measured job, matching published reference): CELL_COLUMNS, ``verdict`` and the rest as
    ``judge`` gives them.

    ``summary``: a summary table (dlrepro.tables). ``references``: {spec name: [Reference]}; by default each
    spec's current references (specs/<name>.yaml). A reference matches a job of its spec, variant and batch
    size whose framework is the reference's (FRAMEWORK_NAMES); a job that measured another quantity (another
    mode) gives no cell."""
    if references is None:
        from dlrepro import spec as specmod
        references = {name: specmod.load(name).references for name in summary["spec"].dropna().unique()}
    cells = []
    for row in summary.itertuples(index=False):
        refs = [r for r in references.get(row.spec, ()) if r.variant == row.variant and r.batch_size == row.batch_size
                and measured.metric_kind(r.metric) and not isinstance(r.value, list)]
        names = {}
        for r in refs:
            names.setdefault((r.metric, r.hardware, r.kind), set()).add(r.framework)
        for ref in refs:
            if ref.framework != framework_name(row.framework, names[(ref.metric, ref.hardware, ref.kind)]) \
                    or measured.raw(row, ref.metric) is None:
                continue
            judged = judge(row, ref)
            low, high = judged.interval or (None, None)
            cells.append({
                "spec": row.spec, "variant": row.variant, "batch_size": row.batch_size, "framework": row.framework,
                "measured_framework_version": row.framework_version, "device": row.device,
                "threads": row.threads if row.device == "cpu" else None, "measured_hardware": row.device_name,
                "metric": ref.metric, "unit": UNIT[measured.metric_kind(ref.metric)], "measured": judged.measured,
                "ci95_low": low, "ci95_high": high, "published": judged.published, "ratio": judged.ratio,
                "lower": judged.lower, "upper": judged.upper, "verdict": judged.verdict,
                "direction": judged.direction, "why": judged.why, "smoke": judged.smoke, "reference_id": ref.id,
                "reference_kind": ref.kind, "published_framework": ref.framework,
                "published_version": ref.framework_version, "published_hardware": ref.hardware, "source": ref.source,
                "bundle_id": row.bundle_id, "job_id": row.job_id,
            })
    return pd.DataFrame(cells, columns=CELL_COLUMNS)
