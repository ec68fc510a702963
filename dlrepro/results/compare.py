"""Measured vs published, and bundle vs bundle: ratios with verdicts, rankings with Kendall's tau,
regressions with a rank test and a minimum effect.

Against published references (a spec's ``references``):
  one cell per measured job x matching reference (same spec, variant, batch size, metric, and a
  published framework that is the same framework: FRAMEWORK_NAMES). ratio = measured / published,
  both in the measured unit. A reference's ``tolerance`` (lower, upper ratio) or the metric's
  DEFAULT_TOLERANCE decides the verdict:
    timings (seconds, lower is better): ratio < lower "faster", > upper "slower", else "reproduces";
    rates (images/s, higher is better): ratio > upper "faster", < lower "slower";
    accuracy: "higher" / "lower" / "reproduces", whatever the hardware;
  a timing or rate measured on other hardware than the published one (answers.hardware.same_hardware: the
  same device model, variant included, and as many GPUs) is "not comparable (different hardware)": its
  ratio is shown, not judged.
Ranking: per spec, variant, batch size, metric, published hardware and measured device, the order
  of the frameworks measured vs published, Kendall's tau-b (scipy.stats.kendalltau); the study's
  conclusion "holds" when the order is the same (tau = 1), "partly holds" when tau > 0, else
  "does not hold" ("not ranked" when the published values all tie); swapped pairs are named,
  with those whose measured repeat-level 95% CIs overlap marked "within noise" (and "noise unknown" where a
  job has too few repeats for one).
Against another bundle: dlrepro.results.answers.regression (faster, slower, no change, cannot tell, with what
  each rests on); this module wires it to ``invoke compare`` (Comparison, FAIL_ON).
"""
import functools
import json
import re
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from dlrepro import spec as specmod
from dlrepro.errors import DlreproError
from dlrepro.results import tables
from dlrepro.results.answers import hardware, regression
from dlrepro.results.answers.verdicts import CANNOT_TELL
from dlrepro.results.bundle import body as bundle_body, locate
from runner.stats import CI_METHOD

# our framework -> its names in the studies' tables, the closest first (DLF names its MXNet rows by API;
# our MXNet adapter is Gluon). Lua Torch (DLBench) is not PyTorch, Keras(*) rows are not the plain framework.
FRAMEWORK_NAMES = {
    "torch": ("PyTorch",), "tensorflow": ("TensorFlow", "Tensorflow"), "mxnet": ("MXNet(Gluon)", "MXNet", "MXNet(Module API)"),
    "cntk": ("CNTK",), "caffe2": ("Caffe2",), "caffe": ("Caffe",), "jax": (),
}
DEFAULT_TOLERANCE = {"time": (0.9, 1.1), "rate": (0.9, 1.1), "accuracy": (0.98, 1.02)}
TO_MEASURED_UNIT = {"s": 1.0, "min": 60.0, "percent": 0.01, "fraction": 1.0, "images/s": 1.0}
CELL_COLUMNS = ["spec", "variant", "batch_size", "framework", "measured_framework_version", "device",
                "measured_hardware", "metric", "unit", "measured", "ci95_low", "ci95_high", "published", "ratio",
                "lower", "upper", "verdict", "reference_id", "reference_kind", "published_framework",
                "published_version", "published_hardware", "source", "bundle_id", "job_id"]


def repeat_level(row):
    """Whether a summary row's 95% CI is the repeat-level one (tables v4), so that it says what the noise is."""
    method = row["ci95_method"] if isinstance(row, (dict, pd.Series)) else row.ci95_method
    return isinstance(method, str) and method == CI_METHOD


def metric_kind(metric):
    """'time', 'rate' or 'accuracy' for a metric the suite measures, else None (not compared)."""
    if metric == "seconds_per_minibatch" or metric == "seconds_per_1000_images" or _epochs(metric):
        return "time"
    return {"images_per_second": "rate", "test_accuracy": "accuracy"}.get(metric)


def _epochs(metric):
    match = re.fullmatch(r"(?:training_)?wall_time_(\d+)_epochs", metric)
    return int(match.group(1)) if match else None


def measured_value(row, metric):
    """The summary row's value for a published metric, in the measured unit (s, images/s, fraction), or None."""
    if row.status != "ok":
        return None
    if metric == "seconds_per_minibatch":
        return row.median if row.mode == "throughput" and row.quantity == "seconds per mini-batch" else None
    if metric == "seconds_per_1000_images":
        return _value(row.seconds_per_1000_images)
    if metric == "images_per_second":
        return 1000.0 / row.seconds_per_1000_images if pd.notna(row.seconds_per_1000_images) else None
    if metric == "test_accuracy":  # a published accuracy is the end of the spec's schedule, not of a shorter run
        return _value(row.final_test_accuracy) if _spec_epochs(row.spec, row.variant) == _value(row.epochs) else None
    if _epochs(metric):
        return _value(row.total_seconds) if pd.notna(row.epochs) and row.epochs == _epochs(metric) else None
    return None


def _value(value):
    return None if pd.isna(value) else float(value)


@functools.lru_cache(maxsize=None)
def _spec_epochs(spec_name, variant):
    """The epochs of a spec variant's convergence schedule (specs/), or None (no such spec, variant or schedule)."""
    try:
        found = specmod.load(spec_name).variants.get(variant)
    except DlreproError:
        return None
    return float(found.convergence.epochs) if found is not None and found.convergence is not None else None


def verdict(kind, ratio, lower, upper, comparable):
    """The verdict of one cell: ratio = measured / published against its tolerance [lower, upper]."""
    if kind != "accuracy" and not comparable:
        return "not comparable (different hardware)"
    if lower <= ratio <= upper:
        return "reproduces"
    if kind == "accuracy":
        return "higher" if ratio > upper else "lower"
    faster = ratio < lower if kind == "time" else ratio > upper
    return "faster" if faster else "slower"


def _published_framework(framework, names_present):
    for name in FRAMEWORK_NAMES.get(framework, ()):
        if name in names_present:
            return name
    return None


def recorded_references(bodies):
    """{spec name: [Reference]} as the bundles (bundle.json bodies) recorded them in their resolved
    specs: a comparison uses the references a bundle was run with, whatever the spec says today."""
    from dlrepro.references import Reference

    found = {}
    for body in bodies:
        resolved = body["spec"]["resolved"]
        refs = found.setdefault(resolved["name"], {})
        for ref in resolved.get("references") or []:
            refs.setdefault(ref["id"], Reference.model_validate(ref))
    return {name: list(refs.values()) for name, refs in found.items()}


def against_published(summary, references=None):
    """One row per (measured job, matching published reference): CELL_COLUMNS.

    ``summary``: a summary table (dlrepro.tables). ``references``: {spec name: [Reference]}; by
    default each spec's current references (specs/<name>.yaml). Rows with no matching reference
    give no cell."""
    if references is None:
        from dlrepro import spec as specmod
        references = {name: specmod.load(name).references for name in summary["spec"].dropna().unique()}
    cells = []
    for row in summary.itertuples(index=False):
        refs = [r for r in references.get(row.spec, ()) if r.variant == row.variant and r.batch_size == row.batch_size
                and metric_kind(r.metric) and not isinstance(r.value, list)]
        names = {(r.metric, r.hardware, r.kind): set() for r in refs}
        for r in refs:
            names[(r.metric, r.hardware, r.kind)].add(r.framework)
        for ref in refs:
            if ref.framework != _published_framework(row.framework, names[(ref.metric, ref.hardware, ref.kind)]):
                continue
            measured = measured_value(row, ref.metric)
            if measured is None:
                continue
            kind = metric_kind(ref.metric)
            published = ref.value * TO_MEASURED_UNIT[ref.unit]
            lower, upper = (ref.tolerance.lower, ref.tolerance.upper) if ref.tolerance else DEFAULT_TOLERANCE[kind]
            ratio = measured / published
            comparable = hardware.same_hardware(ref.hardware, row.device, row.device_name, ref.gpus, row.ranks)
            timing = ref.metric == "seconds_per_minibatch" and repeat_level(row)  # the CI tells the noise
            cells.append({
                "spec": row.spec, "variant": row.variant, "batch_size": row.batch_size, "framework": row.framework,
                "measured_framework_version": row.framework_version, "device": row.device,
                "measured_hardware": row.device_name, "metric": ref.metric,
                "unit": {"time": "s", "rate": "images/s", "accuracy": "fraction"}[kind], "measured": measured,
                "ci95_low": row.ci95_low if timing else None, "ci95_high": row.ci95_high if timing else None,
                "published": published, "ratio": ratio, "lower": lower, "upper": upper,
                "verdict": verdict(kind, ratio, lower, upper, comparable), "reference_id": ref.id,
                "reference_kind": ref.kind, "published_framework": ref.framework,
                "published_version": ref.framework_version, "published_hardware": ref.hardware, "source": ref.source,
                "bundle_id": row.bundle_id, "job_id": row.job_id,
            })
    return pd.DataFrame(cells, columns=CELL_COLUMNS)


RANKING_GROUP = ["spec", "variant", "batch_size", "metric", "published_hardware", "reference_kind", "source", "device",
                 "measured_hardware"]
RANKING_COLUMNS = RANKING_GROUP + ["n", "published_order", "measured_order", "tau", "p_value", "verdict", "swapped",
                                   "sentence"]


def _label(framework, version, versions_in_group):
    return "%s %s" % (framework, version) if versions_in_group > 1 else framework


def _order(values, best_first_descending):
    return ", ".join(values.sort_values(ascending=not best_first_descending).index)


def _fmt(value):
    return "%.4g" % value


def _noise(a, b, metric):
    """" (within noise)" when the two repeat-level 95% CIs overlap; for seconds per mini-batch, " (noise
    unknown)" when either has none (fewer than 6 repeats, or a bundle from before tables v4); else ""."""
    if pd.isna(a.ci95_low) or pd.isna(b.ci95_low):
        return " (noise unknown)" if metric == "seconds_per_minibatch" else ""
    return " (within noise)" if a.ci95_low <= b.ci95_high and b.ci95_low <= a.ci95_high else ""


def ranking(cells):
    """Whether the study's ranking of frameworks holds here: one row per group (RANKING_GROUP) with at
    least two frameworks, RANKING_COLUMNS. Repeated measurements of one framework are combined by
    their median."""
    rows = []
    for key, group in cells.groupby(RANKING_GROUP, dropna=False, sort=True):
        g = dict(zip(RANKING_GROUP, key))
        versions = group.groupby("framework")["measured_framework_version"].nunique()
        group = group.assign(label=[_label(f, v, versions[f]) for f, v in
                                    zip(group["framework"], group["measured_framework_version"])])
        items = group.groupby("label").agg(measured=("measured", "median"), published=("published", "first"),
                                           ci95_low=("ci95_low", "min"), ci95_high=("ci95_high", "max"))
        if len(items) < 2:
            continue
        tau, p_value = stats.kendalltau(items["measured"], items["published"])
        descending = metric_kind(g["metric"]) != "time"
        swapped = []
        for a, b in combinations(items.index, 2):
            x, y = items.loc[a], items.loc[b]
            if np.sign(x.measured - y.measured) * np.sign(x.published - y.published) < 0:
                swapped.append("%s/%s%s" % (a, b, _noise(x, y, g["metric"])))
        best = "best" if metric_kind(g["metric"]) == "accuracy" else "fastest"
        tie = items["published"].nunique() < 2  # tau is undefined: there is no published order to reproduce
        sentence = "%s, batch %s, %s: published (%s, %s; %s) %s; here (%s): %s. " % (
            g["variant"], g["batch_size"], g["metric"], g["reference_kind"], g["published_hardware"], g["source"],
            "all %s" % _fmt(items["published"].iloc[0]) if tie else "%s first: %s" % (best, _order(items["published"], descending)),
            g["measured_hardware"], _order(items["measured"], descending))
        if tie:
            verdict = "not ranked"
            sentence += "The published values all tie: the study ranks nothing here."
        else:
            verdict = "holds" if tau >= 1 - 1e-12 else "partly holds" if tau > 0 else "does not hold"
            sentence += "Kendall's tau = %.2f (p = %.2g, n = %d): the study's conclusion %s here%s." % (
                tau, p_value, len(items), verdict, "; swapped: " + ", ".join(swapped) if swapped else "")
        rows.append(dict(g, n=len(items), published_order=_order(items["published"], descending),
                         measured_order=_order(items["measured"], descending), tau=tau, p_value=p_value,
                         verdict=verdict, swapped=", ".join(swapped), sentence=sentence))
    return pd.DataFrame(rows, columns=RANKING_COLUMNS)


FAIL_ON = ("slower", "faster", "change", "unproven", "never")
# which verdicts fail a comparison under --fail-on: bundle vs bundle, and cells vs the published values (accuracy
# "lower" is worse, as "slower" is); "change" against the published values also fails on a ranking that does not
# hold. "cannot tell" fails only under "unproven": slower, or not shown to be no slower (a strict gate)
FAILING = {"slower": {"slower", "lower"}, "faster": {"faster", "higher"},
           "change": {"slower", "faster", "lower", "higher"}, "unproven": {"slower", "lower", CANNOT_TELL},
           "never": set()}


def _records(frame):
    """A DataFrame's rows as JSON-ready dicts (missing values None)."""
    return [] if frame is None else json.loads(frame.to_json(orient="records"))


@dataclass
class Comparison:
    """What ``invoke compare`` found: ``kind`` "published" (cells: CELL_COLUMNS, rankings: RANKING_COLUMNS)
    or "bundle" (cells: regression.REGRESSION_COLUMNS; rankings None), and the bundles compared (folders)."""
    kind: str
    bundle: Path
    cells: pd.DataFrame
    rankings: pd.DataFrame = None
    against: Path = None
    spec: str = None

    def failing(self, fail_on):
        """The cells (and, against the published values with "change", the rankings that do not hold) that fail
        the comparison under ``fail_on`` (FAIL_ON); raises DlreproError for another value."""
        if fail_on not in FAIL_ON:
            raise DlreproError("--fail-on: expected one of %s (got %r)" % (", ".join(FAIL_ON), fail_on))
        cells = self.cells[self.cells["verdict"].isin(FAILING[fail_on])]
        rankings = self.rankings[self.rankings["verdict"] == "does not hold"] \
            if self.kind == "published" and fail_on == "change" else None
        return cells, rankings

    def to_json(self, fail_on):
        """The machine-readable result (``--json FILE``): what was compared, every cell and ranking, and which
        of them fail under ``fail_on``."""
        cells, rankings = self.failing(fail_on)
        return {"schema": "dlrepro.compare/1", "kind": self.kind, "spec": self.spec, "bundle": self.bundle.name,
                "against": self.against.name if self.against else "published", "fail_on": fail_on,
                "failed": bool(len(cells) or (rankings is not None and len(rankings))),
                "failing_cells": _records(cells), "failing_rankings": _records(rankings),
                "cells": _records(self.cells), "rankings": _records(self.rankings)}


def run(bundle, against="published", min_effect=0.05, alpha=0.01):
    """Compare bundle ``bundle`` (folder or id) with its spec's published references, or, when ``against`` names
    another bundle (A), bundle vs bundle (``bundle`` is B, checked for regressions against A; ``min_effect`` and
    ``alpha`` as in ``regression.against_bundle``). Raises DlreproError for a folder that is not a bundle or
    bundles of two specs."""
    folder = locate(bundle)
    if against == "published":
        body = bundle_body(folder)
        cells = against_published(tables.summary(folder), recorded_references([body]))
        return Comparison("published", folder, cells, ranking(cells), spec=body["spec"]["name"])
    base = locate(against)
    specs = [bundle_body(f)["spec"]["name"] for f in (base, folder)]
    if specs[0] != specs[1]:
        raise DlreproError("%s is a bundle of spec %s, %s of spec %s: compare bundles of one spec"
                           % (base.name, specs[0], folder.name, specs[1]))
    cells = regression.against_bundle(tables.samples(base), tables.samples(folder), min_effect, alpha)
    return Comparison("bundle", folder, cells, against=base, spec=specs[1])
