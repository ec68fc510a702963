"""``dlrepro compare``'s result either way, wired to the answer model: bundle against bundle is
dlrepro.results.answers.regression (faster, slower, no change, cannot tell, with what each rests on); measured
against published (a spec's ``references``: cells with their verdicts, rankings with Kendall's tau) is
dlrepro.results.answers.published and answers.ranking. This module holds the Comparison and --fail-on.
"""
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dlrepro.errors import DlreproError
from dlrepro.results import tables
from dlrepro.results.answers import published, ranking, regression, verdicts
from dlrepro.results.bundle import body as bundle_body, locate


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


FAIL_ON = ("slower", "faster", "change", "unproven", "never")
# which verdicts fail a comparison under --fail-on: bundle vs bundle, and cells vs the published values (accuracy
# "lower" is worse, as "slower" is); "change" against the published values also fails on a ranking that does not
# hold. "cannot tell" fails only under "unproven": slower, or not shown to be no slower (a strict gate)
FAILING = {"slower": {"slower", "lower"}, "faster": {"faster", "higher"},
           "change": {"slower", "faster", "lower", "higher"}, "unproven": {"slower", "lower", verdicts.CANNOT_TELL},
           "never": set()}


def _records(frame):
    """A DataFrame's rows as JSON-ready dicts (missing values None)."""
    return [] if frame is None else json.loads(frame.to_json(orient="records"))


@dataclass
class Comparison:
    """What ``dlrepro compare`` / ``check`` found: ``kind`` "published" (cells: answers.published.CELL_COLUMNS,
    rankings: answers.ranking.COLUMNS, left_out: answers.published.LEFT_OUT_COLUMNS)
    or "bundle" (cells: regression.REGRESSION_COLUMNS; rankings None), and the bundles compared (folders)."""
    kind: str
    bundle: Path
    cells: pd.DataFrame
    rankings: pd.DataFrame = None
    against: Path = None
    spec: str = None
    left_out: pd.DataFrame = None  # "published": what gave no cell, with the reason (answers.published.left_out)
    nothing: str = None  # "published" with no cell: why and what to do (answers.published.nothing_compared)

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
                "cells": _records(self.cells), "rankings": _records(self.rankings),
                "left_out": _records(self.left_out), "nothing_compared": self.nothing}


def run(bundle, against="published", min_effect=0.05, alpha=0.01):
    """Compare bundle ``bundle`` (folder or id) with its spec's published references, or, when ``against`` names
    another bundle (A), bundle vs bundle (``bundle`` is B, checked for regressions against A; ``min_effect`` and
    ``alpha`` as in ``regression.against_bundle``). Raises DlreproError for a folder that is not a bundle or
    bundles of two specs."""
    folder = locate(bundle)
    if against == "published":
        body = bundle_body(folder)
        summary, references, spec = tables.summary(folder), recorded_references([body]), body["spec"]["name"]
        cells = published.against_published(summary, references)
        left = published.left_out(summary, references, cells)
        nothing = None if len(cells) else published.nothing_compared(
            body.get("id") or folder.name, spec, summary, references.get(spec, []), left)
        return Comparison("published", folder, cells, ranking.ranking(cells), spec=spec, left_out=left,
                          nothing=nothing)
    base = locate(against)
    specs = [bundle_body(f)["spec"]["name"] for f in (base, folder)]
    if specs[0] != specs[1]:
        raise DlreproError("%s is a bundle of spec %s, %s of spec %s: compare bundles of one spec"
                           % (base.name, specs[0], folder.name, specs[1]))
    cells = regression.against_bundle(tables.samples(base), tables.samples(folder), min_effect, alpha)
    return Comparison("bundle", folder, cells, against=base, spec=specs[1])
