"""Bundle against bundle (regressions with a rank test and a minimum effect), and ``invoke compare``'s result
either way. Measured against published (a spec's ``references``: cells with their verdicts, rankings with
Kendall's tau) is dlrepro.results.answers.published and answers.ranking.

Against another bundle: per job configuration in both (REGRESSION_KEY), the timed iterations'
  (convergence jobs: epochs') medians and a two-sided Mann-Whitney U test (scipy.stats.mannwhitneyu) on the
  repeat medians (repeat-level variation: iterations within a repeat are not independent); a change is
  reported only when p < alpha and |median_b / median_a - 1| >= min_effect, so noise is not a change.
"""
import json
import re
from dataclasses import dataclass
from math import comb
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from dlrepro.errors import DlreproError
from dlrepro.results import tables
from dlrepro.results.answers import published, ranking, verdicts
from dlrepro.results.bundle import body as bundle_body, locate

GPU_WORDS = ("nvidia", "tesla", "geforce", "gtx", "titan", "quadro", "gpu")
REGRESSION_KEY = ["spec", "variant", "framework", "device", "mode", "batch_size", "precision", "threads", "ranks", "sample"]


def _model_tokens(name):
    """Words of a device name that name the model (they hold a digit): 'NVIDIA Tesla K80' -> {'k80'}."""
    return {w for w in re.split(r"[\s,()@]+", name.lower())
            if any(c.isdigit() for c in w) and not re.fullmatch(r"[\d.]+(gb|ghz|mhz)", w)}


def same_hardware(reference_hardware, device, device_name):
    """Whether the job ran on the published hardware: the same kind of device (a GPU reference names
    one: GPU_WORDS) and the measured device's model number ('H200', 'K80', 'i7-5960X') in the
    reference's hardware text. Conservative: unknown means different."""
    text = reference_hardware.lower()
    gpu_reference = any(w in text for w in GPU_WORDS) and "cpu-only" not in text
    if (device == "cuda") != gpu_reference or not isinstance(device_name, str):
        return False
    words = set(re.split(r"[\s,()]+", text))
    return any(token in words or token in text for token in _model_tokens(device_name))


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


REGRESSION_COLUMNS = REGRESSION_KEY + ["n_a", "n_b", "median_a", "median_b", "change", "p_value", "verdict"]


def _units(samples):
    """{configuration: (all seconds, unit values)} of a samples table: the unit of replication is a repeat of a
    throughput or inference job (its median) and an epoch of a convergence job (its seconds)."""
    timed = samples[samples["sample"].isin(["iteration", "epoch"])]
    timed = timed.assign(threads=timed["threads"].where(timed["device"] == "cpu"))  # a GPU job's host cores
    found = {}
    for key, g in timed.groupby(REGRESSION_KEY, dropna=False, sort=True):
        units = g["seconds"] if key[-1] == "epoch" else g.groupby(["bundle_id", "job_id", "repeat"], dropna=False)["seconds"].median()
        found[key] = (g["seconds"].to_numpy(), units.to_numpy())
    return found


def _smallest_p(n_a, n_b):
    """The smallest two-sided p-value an exact Mann-Whitney U test can give for samples of these sizes."""
    return min(1.0, 2.0 / comb(n_a + n_b, n_a))


def against_bundle(samples_a, samples_b, min_effect=0.05, alpha=0.01):
    """Bundle B against bundle A, job configuration by configuration (REGRESSION_KEY; CPU threads
    only for cpu jobs): REGRESSION_COLUMNS, ``change`` = median_b / median_a - 1 (medians of the timed
    iterations, or of a convergence job's epochs, in seconds). The decision uses repeat-level
    variation: a two-sided Mann-Whitney U test on the repeat medians (convergence jobs: the epochs;
    ``n_a``, ``n_b`` count them), since iterations within a repeat are not independent. Verdicts:
    "slower" / "faster" (p < alpha and |change| >= min_effect); "cannot tell (too few repeats)" when
    |change| >= min_effect but no p-value below alpha is possible with so few repeats; "no change"
    otherwise; "only in A", "only in B". Raises ValueError on min_effect < 0 or alpha outside (0, 1)."""
    if min_effect < 0 or not 0 < alpha < 1:
        raise ValueError("min_effect must be >= 0 and alpha in (0, 1) (got %s, %s)" % (min_effect, alpha))
    a, b = _units(samples_a), _units(samples_b)
    rows = []
    for key in sorted(set(a) | set(b), key=str):
        row = dict(zip(REGRESSION_KEY, key), n_a=len(a[key][1]) if key in a else 0,
                   n_b=len(b[key][1]) if key in b else 0)
        if key not in a or key not in b:
            rows.append(dict(row, verdict="only in A" if key in a else "only in B"))
            continue
        median_a, median_b = float(np.median(a[key][0])), float(np.median(b[key][0]))
        change = median_b / median_a - 1
        p_value = float(stats.mannwhitneyu(a[key][1], b[key][1], alternative="two-sided").pvalue)
        if abs(change) < min_effect:
            verdict = "no change"
        elif p_value < alpha:
            verdict = "slower" if change > 0 else "faster"
        elif _smallest_p(row["n_a"], row["n_b"]) >= alpha:
            verdict = "cannot tell (too few repeats)"
        else:
            verdict = "no change"
        rows.append(dict(row, median_a=median_a, median_b=median_b, change=change, p_value=p_value, verdict=verdict))
    return pd.DataFrame(rows, columns=REGRESSION_COLUMNS)


FAIL_ON = ("slower", "faster", "change", "never")
# which verdicts fail a comparison under --fail-on: bundle vs bundle, and the directions of the published cells that
# differ (accuracy "lower" is worse, as "slower" is); "change" against the published values also fails on a ranking
# that does not hold
FAILING = {"slower": {"slower", "lower"}, "faster": {"faster", "higher"},
           "change": {"slower", "faster", "lower", "higher"}, "never": set()}


def _records(frame):
    """A DataFrame's rows as JSON-ready dicts (missing values None)."""
    return [] if frame is None else json.loads(frame.to_json(orient="records"))


@dataclass
class Comparison:
    """What ``invoke compare`` found: ``kind`` "published" (cells: answers.published.CELL_COLUMNS, rankings:
    answers.ranking.COLUMNS)
    or "bundle" (cells: REGRESSION_COLUMNS; rankings None), and the bundles compared (folders)."""
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
        if self.kind == "published":
            cells = self.cells[(self.cells["verdict"] == verdicts.DIFFERS) & self.cells["direction"].isin(FAILING[fail_on])]
        else:
            cells = self.cells[self.cells["verdict"].isin(FAILING[fail_on])]
        rankings = self.rankings[self.rankings["verdict"] == verdicts.DOES_NOT_HOLD] \
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
    ``alpha`` as in ``against_bundle``). Raises DlreproError for a folder that is not a bundle or bundles of two
    specs."""
    folder = locate(bundle)
    if against == "published":
        body = bundle_body(folder)
        cells = published.against_published(tables.summary(folder), recorded_references([body]))
        return Comparison("published", folder, cells, ranking.ranking(cells), spec=body["spec"]["name"])
    base = locate(against)
    specs = [bundle_body(f)["spec"]["name"] for f in (base, folder)]
    if specs[0] != specs[1]:
        raise DlreproError("%s is a bundle of spec %s, %s of spec %s: compare bundles of one spec"
                           % (base.name, specs[0], folder.name, specs[1]))
    cells = against_bundle(tables.samples(base), tables.samples(folder), min_effect, alpha)
    return Comparison("bundle", folder, cells, against=base, spec=specs[1])
