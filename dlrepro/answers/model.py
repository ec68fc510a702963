"""The answer model: one object per question, built once from what the store read, rendered by every view.

  BundleAnswer  bundles -> their jobs (answers.measured.prepare'd), the published cells they measured with their
                verdicts and what gave none, the rankings, fraction of peak then and now, the fastest and slowest
                framework per configuration; ``dlrepro check``'s gate (``failing``, ``exit_status``)
  Comparison    bundle B against bundle A -> per configuration faster / slower / no change / cannot tell
                (answers.regression), what differs between the two bundles beyond the configurations (host, device
                models, framework versions), the advice when the repeats cannot give a verdict, the gate
  StudyAnswer   answers.study: a study record and its bundles

Builders are pure: they take bundle.json bodies and tables as the store read them (dlrepro.answers.gather reads
them) and use the specs and references each bundle recorded, never today's files, so a report rebuilt after a spec
edit says what it said. Every verdict rule lives in a sibling module; the views (dlrepro.views, the
terminal's dlrepro.cli.render) render these objects and decide nothing. ``to_json`` gives each as plain data.
"""

import json
from dataclasses import dataclass, field

import pandas as pd

from dlrepro.answers import configkey, cost, efficiency, measured, published, ranking, regression, verdicts
from dlrepro.errors import DlreproError
from dlrepro.inputs.references import Reference

FAIL_ON = ("slower", "faster", "change", "unproven", "never")
CHECK_FAIL_ON = ("never", "change")
# which verdicts fail under --fail-on: bundle vs bundle, and cells vs the published values (accuracy "lower" is
# worse, as "slower" is); "change" against the published values also fails on a ranking that does not hold.
# "cannot tell" and "not comparable" fail only under "unproven": slower, or not shown to be no slower (a strict gate)
FAILING = {
    "slower": {"slower", "lower"},
    "faster": {"faster", "higher"},
    "change": {"slower", "faster", "lower", "higher"},
    "unproven": {"slower", "lower", verdicts.CANNOT_TELL, verdicts.NOT_COMPARABLE},
    "never": set(),
}


def records(frame):
    """A DataFrame's rows as JSON-ready dicts (missing values None)."""
    return [] if frame is None else json.loads(frame.to_json(orient="records"))


@dataclass
class Recorded:
    """What the bundles recorded about their specs: {spec name: [Reference]} and {spec name: resolved spec dict};
    the first bundle of a spec wins (merged bundles of one spec carry one spec file)."""

    references: dict
    specs: dict


def recorded(bodies):
    """Recorded of bundle.json ``bodies``: a bundle is judged by the references it was run with, whatever the spec
    says today."""
    refs, specs = {}, {}
    for body in bodies:
        resolved = body["spec"]["resolved"]
        specs.setdefault(resolved["name"], resolved)
        mine = refs.setdefault(resolved["name"], {})
        for ref in resolved.get("references") or []:
            mine.setdefault(ref["id"], Reference.model_validate(ref))
    return Recorded({name: list(found.values()) for name, found in refs.items()}, specs)


@dataclass
class Fastest:
    """The fastest and slowest framework of one configuration group at one mini-batch (throughput in samples/s,
    energy in J per sample where measured)."""

    spec: str
    variant: str
    device_name: str
    mode: str
    unit: str
    batch_size: int
    best: str
    best_rate: float
    worst: str = None  # None when one framework was measured
    worst_rate: float = None
    best_joules: float = None  # J per sample
    worst_joules: float = None
    caveats: list = field(default_factory=list)  # why the order is not a full-protocol, like-for-like one
    best_window: float = None  # its energy window over its measured window where they differ (measured.energy_window)
    worst_window: float = None
    setting: str = ""  # what sets this order apart from the group's others: 'bf16', '1 thread', ... ('': nothing)


LIKE = ("precision", "layout", "threads", "ranks")  # set side by side only at the same value of each


def _setting(values, varies):
    """'bf16, NHWC, 1 thread, 2 ranks': the values of LIKE's columns that vary in the group (``varies``)."""
    words = {"precision": "%s", "layout": "%s", "threads": "%s threads", "ranks": "%s ranks"}
    shown = []
    for column, value in zip(LIKE, values):
        if column in varies and not pd.isna(value):
            shown.append((words[column] % value).replace("1 threads", "1 thread").replace("1 ranks", "1 rank"))
    return ", ".join(shown)


def fastest(summary):
    """Fastest per (spec, variant, device model, mode, mini-batch, precision, layout, threads, ranks), by samples/s
    of the ok jobs: like with like, never bf16 against fp32; each order's ``setting`` names the LIKE values that
    vary within its (spec, variant, device model, mode), its caveats a smoke pass among them and frameworks timed
    differently (answers.measured.mixed_timers)."""
    found = []
    ok = summary[(summary["status"] == "ok") & summary["throughput"].notna()]
    for (spec, variant, device, mode), group in ok.groupby(
        [c for c in configkey.SIDE_BY_SIDE if c != "batch_size"], sort=True, dropna=False
    ):
        varies = {c for c in LIKE if group[c].nunique(dropna=False) > 1}
        for (batch, *like), rows in group.groupby(["batch_size", *LIKE], sort=True, dropna=False):
            rows = rows.sort_values("throughput", ascending=False)
            best, worst = rows.iloc[0], rows.iloc[-1]
            energy = [
                None if pd.isna(r["energy_j_per_sample"]) else float(r["energy_j_per_sample"]) for r in (best, worst)
            ]
            caveats = (
                ["smoke pass"] if any(measured.smoke(r, "seconds_per_minibatch") for _, r in rows.iterrows()) else []
            )
            mixed = measured.mixed_timers(rows)
            if mixed:
                caveats.append("timed differently: %s" % mixed)
            found.append(
                Fastest(
                    spec,
                    variant,
                    device,
                    mode,
                    group["throughput_unit"].iloc[0],
                    int(batch),
                    best["framework"],
                    float(best["throughput"]),
                    worst["framework"] if len(rows) > 1 else None,
                    float(worst["throughput"]) if len(rows) > 1 else None,
                    energy[0],
                    energy[1] if len(rows) > 1 else None,
                    caveats,
                    best_window=measured.energy_window(best),
                    worst_window=measured.energy_window(worst) if len(rows) > 1 else None,
                    setting=_setting(like, varies),
                )
            )
    return found


@dataclass
class BundleAnswer:
    """The answers of one or more bundles. ``summary``: answers.measured.prepare'd rows with each job's
    ``fraction_of_peak_label`` (answers.efficiency.fraction_label); ``cells``:
    answers.published.CELL_COLUMNS; ``left_out``: LEFT_OUT_COLUMNS; ``rankings``: answers.ranking.COLUMNS;
    ``efficiency``: answers.efficiency.PUBLISHED_COLUMNS; ``then_and_now``: THEN_AND_NOW_COLUMNS; ``not_measured``:
    {status: jobs} of the jobs that did not finish ok; ``nothing``: for one bundle, why no job gave a cell and what to
    run (answers.published.nothing_compared), else None; ``timers``: timer_notes; ``prices``: the price rows the
    summary's cost per 1M samples rests on (answers.cost), ``price_per_hour`` the reader's own price (USD per
    device-hour, None: the price table's)."""

    bodies: list
    summary: pd.DataFrame
    samples: pd.DataFrame
    cells: pd.DataFrame
    left_out: pd.DataFrame
    rankings: pd.DataFrame
    efficiency: pd.DataFrame
    then_and_now: pd.DataFrame
    fastest: list
    not_measured: dict
    nothing: str = None
    timers: dict = field(default_factory=dict)
    prices: list = field(default_factory=list)
    price_per_hour: float = None

    @property
    def ids(self):
        return [b["id"] for b in self.bodies]

    @property
    def smoke(self):
        """The ids of the bundles run with --quick (a smoke pass: few iterations a job)."""
        return [b["id"] for b in self.bodies if (b.get("options") or {}).get("quick")]

    def failing(self, fail_on):
        """(cells, rankings) that fail ``dlrepro check`` under ``fail_on`` (CHECK_FAIL_ON): a cell that differs in a
        direction of FAILING[fail_on]; with "change" also a ranking that does not hold."""
        _choice(fail_on, CHECK_FAIL_ON)
        cells = self.cells[(self.cells["verdict"] == verdicts.DIFFERS) & self.cells["direction"].isin(FAILING[fail_on])]
        rankings = (
            self.rankings[self.rankings["verdict"] == verdicts.DOES_NOT_HOLD]
            if fail_on == "change"
            else self.rankings.iloc[0:0]
        )
        return cells, rankings

    def exit_status(self, fail_on):
        """2 when nothing was compared, 1 when a cell or ranking fails under ``fail_on``, else 0."""
        if self.nothing:
            return 2
        cells, rankings = self.failing(fail_on)
        return 1 if len(cells) or len(rankings) else 0

    def to_json(self, fail_on="never"):
        """The check's machine-readable result: every cell, ranking and left-out row, which fail under ``fail_on``."""
        cells, rankings = self.failing(fail_on)
        return {
            "schema": "dlrepro.check/2",
            "bundles": self.ids,
            "specs": sorted(set(self.summary["spec"].dropna())),
            "fail_on": fail_on,
            "exit_status": self.exit_status(fail_on),
            "failed": bool(len(cells) or len(rankings)),
            "failing_cells": records(cells),
            "failing_rankings": records(rankings),
            "cells": records(self.cells),
            "rankings": records(self.rankings),
            "left_out": records(self.left_out),
            "nothing_compared": self.nothing,
            "timed_differently": [
                {"spec": spec, "mode": mode, "notes": notes} for (spec, mode), notes in sorted(self.timers.items())
            ],
        }


def _choice(value, choices):
    if value not in choices:
        raise DlreproError("--fail-on: expected one of %s (got %r)" % (", ".join(choices), value))


def bundle_answer(bodies, summary, samples, price_per_hour=None):
    """The BundleAnswer of bundles with bundle.json ``bodies`` and their merged ``summary`` and ``samples`` tables
    (dlrepro.store.tables.merge); costs from ``price_per_hour`` (USD per device-hour) when given, else
    from the price table (answers.cost)."""
    found = recorded(bodies)
    summary = cost.priced(efficiency.labelled(measured.prepare(summary, bodies)), bodies, price_per_hour)
    cells = published.against_published(summary, found.references)
    left = published.left_out(summary, found.references, cells)
    nothing = None
    if len(bodies) == 1 and not len(cells):
        spec = bodies[0]["spec"]["name"]
        nothing = published.nothing_compared(bodies[0]["id"], spec, summary, found.references.get(spec, []), left)
    other = summary[summary["status"] != "ok"]["status"].value_counts()
    return BundleAnswer(
        bodies,
        summary,
        samples,
        cells,
        left,
        ranking.ranking(cells),
        efficiency.published_efficiency(summary, found.references, found.specs),
        efficiency.then_and_now(summary),
        fastest(summary),
        {str(k): int(v) for k, v in other.items()},
        nothing,
        timer_notes(summary),
        [] if price_per_hour is not None else cost.sources(summary),
        price_per_hour,
    )


def timer_notes(summary):
    """{(spec, mode): ['alexnet-s b128 on NVIDIA H200: PyTorch by device_events; JAX by host_sync', ...]}: the
    frameworks set side by side (one variant, device model and mini-batch) whose jobs were timed differently
    (answers.measured.mixed_timers); a view says so under the table."""
    notes = {}
    ok = summary[summary["status"] == "ok"]
    for (spec, variant, device, mode, batch), rows in ok.groupby(configkey.SIDE_BY_SIDE, dropna=False, sort=True):
        mixed = measured.mixed_timers(rows)
        if mixed:
            notes.setdefault((spec, mode), []).append("%s b%s on %s: %s" % (variant, batch, device, mixed))
    return notes


@dataclass
class Side:
    """One bundle of a comparison as the reader needs to know it: id, host name, CPU model, GPU models, the
    framework versions its jobs ran ({framework: [versions]}) and its host's configkey.fingerprint."""

    bundle: str
    host: str
    cpu: str
    gpus: list
    versions: dict
    fingerprint: tuple = ()


def side(body, summary):
    host = body.get("host") or {}
    versions = {f: sorted(set(g["framework_version"].dropna())) for f, g in summary.groupby("framework")}
    return Side(
        body["id"],
        host.get("hostname"),
        (host.get("cpu") or {}).get("model"),
        sorted({g["name"] for g in host.get("gpus") or []}),
        versions,
        configkey.fingerprint(body),
    )


def differences(a, b):
    """What differs between two Sides beyond the compared configurations, one phrase each ('host vm-a / vm-b',
    'CPU AMD EPYC 7B13 / AMD EPYC 9B14', 'ISA avx avx2 fma / avx avx2 avx512_bf16 avx512f fma', 'GPUs 1 x NVIDIA
    H200 / 2 x NVIDIA H200', 'PyTorch versions 2.11.0 / 2.13.0': the host name, then each part of the host
    fingerprint): a comparison never pairs them silently."""
    found = []
    parts = [(name, x, y) for (name, x), (_, y) in zip(a.fingerprint, b.fingerprint)]
    for what, x, y in [("host", a.host, b.host)] + parts:
        if x != y:
            found.append("%s %s / %s" % (what, x, y))
    for framework in sorted(set(a.versions) & set(b.versions)):
        if a.versions[framework] != b.versions[framework]:
            found.append(
                "%s versions %s / %s"
                % (
                    framework,
                    ", ".join(a.versions[framework]) or "unknown",
                    ", ".join(b.versions[framework]) or "unknown",
                )
            )
    return found


def repeats_needed(alpha):
    """The fewest repeats a side that let the rank test give p < alpha and the change interval exist (the
    advice when a comparison's repeats cannot give a verdict)."""
    n = 2
    while regression.smallest_p(n, n) >= alpha or not regression.interval_rank(n, n, alpha)[0]:
        n += 1
    return n


@dataclass
class Comparison:
    """Bundle B against bundle A: ``cells`` answers.regression.REGRESSION_COLUMNS; ``sides`` (A, B); ``differs``:
    what differs between them beyond the configurations (hosts, devices, versions, and configurations whose two
    sides were timed differently: not comparable); ``varying``: the configuration columns whose values differ between
    rows (a view shows them, e.g. precision; "timer" when a configuration's sides were timed differently);
    ``advice``: what to rerun when the repeats cannot give a verdict; ``nothing``: why no configuration was
    compared; ``smoke``: the sides run with --quick, as ("A", bundle id) pairs (a smoke pass: every change is an
    indication, every verdict "cannot tell")."""

    spec: str
    sides: tuple
    cells: pd.DataFrame
    min_effect: float
    alpha: float
    differs: list = field(default_factory=list)
    varying: list = field(default_factory=list)
    advice: str = None
    nothing: str = None
    smoke: list = field(default_factory=list)

    def failing(self, fail_on):
        """The configurations that fail under ``fail_on`` (FAIL_ON)."""
        _choice(fail_on, FAIL_ON)
        return self.cells[self.cells["verdict"].isin(FAILING[fail_on])]

    def exit_status(self, fail_on):
        """2 when the bundles share no configuration, 1 when one fails under ``fail_on``, else 0."""
        return 2 if self.nothing else 1 if len(self.failing(fail_on)) else 0

    def to_json(self, fail_on="slower"):
        failing = self.failing(fail_on)
        return {
            "schema": "dlrepro.compare/2",
            "spec": self.spec,
            "a": self.sides[0].__dict__,
            "b": self.sides[1].__dict__,
            "differs": self.differs,
            "min_effect": self.min_effect,
            "alpha": self.alpha,
            "fail_on": fail_on,
            "exit_status": self.exit_status(fail_on),
            "failed": bool(len(failing)),
            "failing_cells": records(failing),
            "cells": records(self.cells),
            "advice": self.advice,
            "nothing_compared": self.nothing,
            "smoke": [{"side": side, "bundle": bid} for side, bid in self.smoke],
        }


def _nothing_shared(cells, a, b):
    """Why bundles ``a`` and ``b`` (ids) share no configuration: the key columns in which no row of A has a value of
    B's ('memory_layout (A NHWC, B NCHW)'), or, where none sets them apart, a question about the baseline."""
    only = [cells.loc[cells["verdict"] == side] for side in (verdicts.ONLY_IN_A, verdicts.ONLY_IN_B)]
    apart = []
    for column in configkey.CONFIGURATION:
        values = [set(rows[column].astype("string").fillna("none")) for rows in only]
        if values[0] and values[1] and not values[0] & values[1]:
            apart.append("%s (A %s, B %s)" % (column, ", ".join(sorted(values[0])), ", ".join(sorted(values[1]))))
    if apart:
        return "%s and %s share no configuration: every job of one differs from every job of the other in %s" % (
            a,
            b,
            "; ".join(apart),
        )
    return (
        "%s and %s share no configuration (spec, variant, framework, device, batch size, ...): is A the right "
        "baseline?" % (a, b)
    )


UNRECORDED = configkey.UNRECORDED  # a bundle from before runner.measure recorded its timer
KEY_SHOWN = (
    "precision",
    "layout",
    "memory_layout",
    "cudnn_autotune",
    "threads",
    "thread_pools",
    "gradients",
    "ranks",
    "mode",
    "framework_version",
)


def comparison(body_a, body_b, tables_a, tables_b, min_effect=0.05, alpha=0.01):
    """The Comparison of bundle B (``body_b``, ``tables_b`` = (summary, samples)) against A. Raises DlreproError
    for bundles of two specs, ValueError for min_effect < 0 or alpha outside (0, 0.5)."""
    specs = [body_a["spec"]["name"], body_b["spec"]["name"]]
    if specs[0] != specs[1]:
        raise DlreproError(
            "%s is a bundle of spec %s, %s of spec %s: compare bundles of one spec"
            % (body_a["id"], specs[0], body_b["id"], specs[1])
        )
    cells = regression.against_bundle(
        tables_a[1], tables_b[1], min_effect, alpha, (configkey.fingerprint(body_a), configkey.fingerprint(body_b))
    )
    sides = (side(body_a, tables_a[0]), side(body_b, tables_b[0]))
    shared = ~cells["verdict"].isin([verdicts.ONLY_IN_A, verdicts.ONLY_IN_B])
    nothing = None if shared.any() else _nothing_shared(cells, body_a["id"], body_b["id"])
    smoke = [
        (name, body["id"]) for name, body in (("A", body_a), ("B", body_b)) if (body.get("options") or {}).get("quick")
    ]
    if smoke:  # a smoke pass's change is an indication, never a verdict
        why = " and ".join("%s is a smoke pass (--quick)" % name for name, _ in smoke)
        told = shared & cells["verdict"].ne(verdicts.CANNOT_TELL)
        cells.loc[told, "reason"] = why
        cells.loc[shared & ~told, "reason"] = why + "; " + cells.loc[shared & ~told, "reason"].fillna("")
        cells.loc[shared, "verdict"] = verdicts.CANNOT_TELL
    judged = cells[shared]
    stuck = judged[(judged["verdict"] == verdicts.CANNOT_TELL) & judged["n_a"].notna()]
    advice = None
    if smoke:
        advice = "rerun %s without --quick (%d repeats or more), then compare" % (
            " and ".join(bid for _, bid in smoke),
            repeats_needed(alpha),
        )
    elif len(stuck) and any(regression.smallest_p(int(a), int(b)) >= alpha for a, b in zip(stuck["n_a"], stuck["n_b"])):
        advice = "%d vs %d repeats cannot give p < %g: run both with --repeats %d or more" % (
            int(stuck["n_a"].min()),
            int(stuck["n_b"].min()),
            alpha,
            repeats_needed(alpha),
        )
    varying = [c for c in KEY_SHOWN if c != "framework_version" and cells[c].astype("string").nunique(dropna=False) > 1]
    paired = cells["framework_version_b"].notna() & (cells["framework_version_b"] != cells["framework_version"])
    if paired.any() or (cells.groupby("framework")["framework_version"].nunique() > 1).any():
        varying.append("framework_version")  # an upgrade, or two versions of one framework: shown beside it
    timers = judged[["timer_a", "timer_b"]].fillna(UNRECORDED)
    timed = timers[timers["timer_a"] != timers["timer_b"]]
    differs = differences(*sides)
    if len(timed):
        varying.append("timer")
        differs.append(
            "timer %s: %d of %d configurations timed differently (on a GPU, two different quantities: "
            "docs/gpu.md): %s, never faster or slower"
            % (
                ", ".join(sorted({"%s / %s" % pair for pair in zip(timed["timer_a"], timed["timer_b"])})),
                len(timed),
                len(judged),
                verdicts.NOT_COMPARABLE,
            )
        )
    return Comparison(specs[1], sides, cells, min_effect, alpha, differs, varying, advice, nothing, smoke)
