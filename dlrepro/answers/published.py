"""Measured against published: the verdict of one published value beside the job that measured its
configuration, for a spec's references (``against_published``, ``dlrepro check BUNDLE``) and for a study's
tables (answers.cells) alike.

A cell: ratio = measured / published, both in the measured unit (answers.measured), against the
reference's ``tolerance`` (lower, upper ratio) or the metric's DEFAULT_TOLERANCE. In order:
  CANNOT_COMPARE  the job measured another quantity; or a smoke pass (answers.measured.smoke: a --quick job, a
               convergence job short of the epochs the value stands for), whose value is shown and never set as a
               ratio against the published full-protocol value;
  OTHER_HARDWARE  a time or rate measured on other hardware (inputs.hardware.same_hardware): the ratio is shown,
               never judged (an accuracy carries across hardware and is judged wherever it was measured);
  REPRODUCES   the 95% interval of the ratio (the measured value's interval over the published value) inside the
               tolerance (answers.bands);
  DIFFERS      the interval wholly outside it; ``direction`` says how: faster / slower (times, rates), higher /
               lower (accuracy);
  CANNOT_TELL  the interval across an edge of the tolerance, or no interval (too few repeats or seeds), with
               the reason.
What gives no cell is listed, not dropped (``left_out``): a framework measured here that a published table
has no number for, a tool of the table that the suite does not run, a tool with no job in the bundle, a job
that failed or measured another quantity, a configuration no reference covers.
"""

import re
from dataclasses import dataclass

import pandas as pd

from dlrepro.answers import bands, measured, verdicts
from dlrepro.inputs import hardware
from dlrepro.inputs.frameworks import FRAMEWORKS, display, of_study_name, study_names

DEFAULT_TOLERANCE = {"time": (0.9, 1.1), "rate": (0.9, 1.1), "accuracy": (0.98, 1.02)}
TO_MEASURED_UNIT = {"s": 1.0, "min": 60.0, "percent": 0.01, "fraction": 1.0, "images/s": 1.0}
UNIT = {"time": "s", "rate": "images/s", "accuracy": "fraction"}
CELL_COLUMNS = [
    "spec",
    "variant",
    "batch_size",
    "framework",
    "measured_framework_version",
    "device",
    "threads",
    "measured_hardware",
    "metric",
    "unit",
    "measured",
    "ci95_low",
    "ci95_high",
    "published",
    "ratio",
    "lower",
    "upper",
    "verdict",
    "direction",
    "why",
    "smoke",
    "no_interval",
    "ratio_interval",
    "tolerance",
    "seeds",
    "reference_id",
    "reference_kind",
    "published_framework",
    "published_version",
    "published_hardware",
    "source",
    "bundle_id",
    "job_id",
]


@dataclass
class Judged:
    """One published value beside one summary row: values in the measured unit (s, images/s, fraction)."""

    published: float
    verdict: str  # verdicts.CELL
    measured: float = None  # shown whenever the job measured the quantity, a smoke pass's included
    ratio: float = None  # measured / published; None for a smoke pass (never a ratio against a full protocol)
    lower: float = None  # the tolerance on the ratio
    upper: float = None
    direction: str = None  # of a ratio outside the tolerance: faster / slower, higher / lower
    why: str = None  # of CANNOT_TELL, OTHER_HARDWARE and CANNOT_COMPARE
    smoke: str = None  # answers.measured.smoke: why the value is a smoke pass
    interval: tuple = None  # the measured value's 95% interval (repeats or seeds), or None
    no_interval: str = None  # answers.measured.no_interval: why there is none
    rests_on: tuple = ("", "")  # (the ratio's 95% interval, the tolerance) as text (bands.words), of a verdict on the
    # tolerance (reproduces, differs, cannot tell on the same hardware)


def direction(kind, ratio, lower, upper):
    """None inside [lower, upper]; else 'higher' / 'lower' (accuracy) or 'faster' / 'slower' (times, rates)."""
    if bands.position(ratio, ratio, (lower, upper)) == bands.INSIDE:
        return None
    if kind == "accuracy":
        return "higher" if ratio > upper else "lower"
    return "faster" if (ratio < lower if kind == "time" else ratio > upper) else "slower"


def judge(row, ref):
    """The verdict of published reference ``ref`` (dlrepro.inputs.references.Reference, one value) beside summary
    row ``row`` (dict, Series or namedtuple, answers.measured.prepare'd) of its configuration: a Judged (module
    docstring)."""
    kind = measured.metric_kind(ref.metric)
    published = ref.value * TO_MEASURED_UNIT[ref.unit]
    value = measured.raw(row, ref.metric)
    if value is None:
        epochs = measured.get(row, "epochs")
        return Judged(
            published,
            verdicts.CANNOT_COMPARE,
            why="the job measured another quantity (%s, %s)"
            % (
                measured.get(row, "quantity"),
                "%d epochs" % epochs if epochs is not None else "mode %s" % measured.get(row, "mode"),
            ),
        )
    lower, upper = (ref.tolerance.lower, ref.tolerance.upper) if ref.tolerance else DEFAULT_TOLERANCE[kind]
    found = Judged(
        published,
        verdicts.CANNOT_COMPARE,
        value,
        lower=lower,
        upper=upper,
        smoke=measured.smoke(row, ref.metric),
        interval=measured.interval(row, ref.metric),
        no_interval=measured.no_interval(row, ref.metric),
    )
    if found.smoke:
        found.why = "smoke pass: %s" % found.smoke
        return found
    found.ratio = value / published
    found.direction = direction(kind, found.ratio, lower, upper)
    if kind != "accuracy" and not hardware.same_hardware(
        ref.hardware,
        measured.get(row, "device"),
        measured.get(row, "device_name"),
        ref.gpus,
        measured.get(row, "ranks"),
    ):
        found.verdict, found.why = (
            verdicts.OTHER_HARDWARE,
            "measured on %s, published on %s" % (measured.get(row, "device_name"), ref.hardware),
        )
        return found
    if found.interval is None:
        found.verdict, found.why = verdicts.CANNOT_TELL, "no 95%% interval: %s" % found.no_interval
        found.rests_on = ("", bands.words(None, None, (lower, upper))[1])
        return found
    low, high = found.interval[0] / published, found.interval[1] / published
    found.rests_on = bands.words(low, high, (lower, upper))
    where = bands.position(low, high, (lower, upper))
    if where == bands.INSIDE:
        found.verdict = verdicts.REPRODUCES
    elif where == bands.OUTSIDE:
        found.verdict = verdicts.DIFFERS
    else:
        found.verdict, found.why = (
            verdicts.CANNOT_TELL,
            "the 95%% interval of the ratio, %s, crosses the tolerance %s" % found.rests_on,
        )
    return found


def framework_name(framework, names_present):
    """The name a study's table gives our ``framework`` among ``names_present``
    (dlrepro.inputs.frameworks.study_names), or
    None."""
    for name in study_names(framework):
        if name in names_present:
            return name
    return None


def against_published(summary, references):
    """One row per (measured job, matching published reference): CELL_COLUMNS, ``verdict`` and the rest as
    ``judge`` gives them.

    ``summary``: a summary table (dlrepro.tables), answers.measured.prepare'd. ``references``: {spec name:
    [Reference]} as the bundles recorded them (answers.model.recorded_references). A reference matches a job of
    its spec, variant and batch size whose framework is the reference's (dlrepro.inputs.frameworks.study_names); a job
    that measured another quantity (another mode) gives no cell."""
    cells = []
    for row in summary.itertuples(index=False):
        refs = [
            r
            for r in references.get(row.spec, ())
            if r.variant == row.variant
            and r.batch_size == row.batch_size
            and measured.metric_kind(r.metric)
            and not isinstance(r.value, list)
        ]
        names = {}
        for r in refs:
            names.setdefault((r.metric, r.hardware, r.kind), set()).add(r.framework)
        for ref in refs:
            if (
                ref.framework != framework_name(row.framework, names[(ref.metric, ref.hardware, ref.kind)])
                or measured.raw(row, ref.metric) is None
            ):
                continue
            judged = judge(row, ref)
            low, high = judged.interval or (None, None)
            cells.append(
                {
                    "spec": row.spec,
                    "variant": row.variant,
                    "batch_size": row.batch_size,
                    "framework": row.framework,
                    "measured_framework_version": row.framework_version,
                    "device": row.device,
                    "threads": row.threads if row.device == "cpu" else None,
                    "measured_hardware": row.device_name,
                    "metric": ref.metric,
                    "unit": UNIT[measured.metric_kind(ref.metric)],
                    "measured": judged.measured,
                    "ci95_low": low,
                    "ci95_high": high,
                    "published": judged.published,
                    "ratio": judged.ratio,
                    "lower": judged.lower,
                    "upper": judged.upper,
                    "verdict": judged.verdict,
                    "direction": judged.direction,
                    "why": judged.why,
                    "smoke": judged.smoke,
                    "no_interval": judged.no_interval,
                    "ratio_interval": judged.rests_on[0],
                    "tolerance": judged.rests_on[1],
                    "seeds": measured.get(row, "seeds"),
                    "reference_id": ref.id,
                    "reference_kind": ref.kind,
                    "published_framework": ref.framework,
                    "published_version": ref.framework_version,
                    "published_hardware": ref.hardware,
                    "source": ref.source,
                    "bundle_id": row.bundle_id,
                    "job_id": row.job_id,
                }
            )
    return pd.DataFrame(cells, columns=CELL_COLUMNS)


LEFT_OUT_COLUMNS = [
    "spec",
    "variant",
    "batch_size",
    "framework",
    "published_framework",
    "reference_kind",
    "published_hardware",
    "metric",
    "table",
    "verdict",
    "reason",
    "why",
    "job_reason",
    "remedy",
]
# the reasons a framework or a published tool gives no cell (``left_out``), each a group a view folds it under
NO_NUMBER = "no published number in this table"
NO_TABLE = "no published number at this configuration"
NOT_OURS = "not run by this suite"
NO_JOB = "no job in this bundle"
OTHER_QUANTITY = "the job measured another quantity"
OTHER_NAME = "compared under another of its names"


def table_name(metric, kind, hardware):
    """'seconds per minibatch, third party rerun on NVIDIA GTX Titan X (Maxwell), ...': one published table, the
    references of one metric, kind and hardware."""
    return "%s, %s on %s" % (metric.replace("_", " "), kind.replace("_", " "), hardware)


def left_out(summary, references, cells):
    """What gives no cell of ``against_published`` (``cells``, from ``summary`` and ``references`` as there), one row
    per (configuration, published table, framework or published tool): LEFT_OUT_COLUMNS, ``reason`` one of
    NO_NUMBER, NO_TABLE, NOT_OURS, NO_JOB, OTHER_QUANTITY, OTHER_NAME or "the job was failed" / "skipped",
    ``why`` the sentence ("no published number for PyTorch in <table_name>", "Theano is not run by this suite"),
    ``verdict`` CANNOT_COMPARE, or NOT_RUN for a tool without a job and a job that did not finish. Only the
    configurations (spec, variant, batch size) the summary has jobs at are looked at."""
    found = []
    compared = {
        (c["framework"], c["variant"], c["batch_size"], c["metric"], c["published_hardware"], c["reference_kind"])
        for _, c in cells.iterrows()
    }
    for (spec, variant, batch), jobs in summary.groupby(["spec", "variant", "batch_size"], sort=True):
        frameworks = sorted(jobs["framework"].dropna().unique())
        refs = [
            r
            for r in references.get(spec, ())
            if r.variant == variant
            and r.batch_size == batch
            and measured.metric_kind(r.metric)
            and not isinstance(r.value, list)
        ]
        config = dict(spec=spec, variant=variant, batch_size=batch)
        if not refs:
            found += [
                dict(
                    config,
                    framework=f,
                    verdict=verdicts.CANNOT_COMPARE,
                    reason=NO_TABLE,
                    why="no published number for %s at %s, batch size %d" % (display(f), variant, batch),
                )
                for f in frameworks
            ]
            continue
        tables = {}
        for r in refs:
            tables.setdefault((r.metric, r.hardware, r.kind), set()).add(r.framework)
        for (metric, hw, kind), names in sorted(tables.items()):
            table = dict(
                config, metric=metric, published_hardware=hw, reference_kind=kind, table=table_name(metric, kind, hw)
            )
            matched = set()
            for f in frameworks:
                name = framework_name(f, names)
                if name is None:
                    found.append(
                        dict(
                            table,
                            framework=f,
                            verdict=verdicts.CANNOT_COMPARE,
                            reason=NO_NUMBER,
                            why="no published number for %s in %s" % (display(f), table["table"]),
                        )
                    )
                    continue
                matched.add(name)
                if (f, variant, batch, metric, hw, kind) in compared:
                    continue
                mine = jobs[jobs["framework"] == f]
                unfinished = mine[mine["status"] != "ok"]
                if len(unfinished):  # none of its jobs gave a cell: the first that did not finish says why
                    job = unfinished.iloc[0]
                    found.append(
                        dict(
                            table,
                            framework=f,
                            published_framework=name,
                            verdict=verdicts.NOT_RUN,
                            reason="the job was %s" % job["status"],
                            why="the %s job was %s: %s" % (display(f), job["status"], job["reason"]),
                            job_reason=job["reason"],
                            remedy=job.get("remedy"),
                        )
                    )
                else:
                    found.append(
                        dict(
                            table,
                            framework=f,
                            published_framework=name,
                            verdict=verdicts.CANNOT_COMPARE,
                            reason=OTHER_QUANTITY,
                            why="the %s job measured %s, not %s"
                            % (display(f), mine["quantity"].iloc[0], metric.replace("_", " ")),
                        )
                    )
            for tool in sorted(names - matched):
                ours = of_study_name(tool)
                if not ours:
                    found.append(
                        dict(
                            table,
                            published_framework=tool,
                            verdict=verdicts.CANNOT_COMPARE,
                            reason=NOT_OURS,
                            why="%s is not run by this suite" % tool,
                        )
                    )
                elif set(ours) & set(frameworks):
                    found.append(
                        dict(
                            table,
                            published_framework=tool,
                            verdict=verdicts.CANNOT_COMPARE,
                            reason=OTHER_NAME,
                            why="the table's %s: this bundle's %s is compared with its "
                            "%s row" % (tool, display(ours[0]), framework_name(ours[0], names)),
                        )
                    )
                else:
                    found.append(
                        dict(
                            table,
                            published_framework=tool,
                            verdict=verdicts.NOT_RUN,
                            reason=NO_JOB,
                            why="no %s job in this bundle" % tool,
                        )
                    )
    return pd.DataFrame(found, columns=LEFT_OUT_COLUMNS)


def _batches(values):
    return ", ".join(str(int(b)) for b in sorted(set(values)))


def nothing_compared(bundle_id, spec, summary, references, left):
    """Why no job of bundle ``bundle_id`` (its ``summary``) gave a cell against ``references`` (the spec's
    [Reference]; ``left`` = left_out's rows), and what to do, in one line: the jobs at a published configuration
    that did not finish (resume them, --retry-failed for failed ones), else what the bundle has and where the
    published numbers are, with a `dlrepro run` that would give cells; a spec without published numbers says so."""
    comparable = [
        r
        for r in references
        if measured.metric_kind(r.metric)
        and not isinstance(r.value, list)
        and r.batch_size is not None
        and r.variant is not None
    ]
    if not comparable:
        return (
            "spec %s has no published number to check a bundle against; compare two bundles instead "
            "(`dlrepro compare A B`)" % spec
        )
    unfinished = left[(left["verdict"] == verdicts.NOT_RUN) & left["framework"].notna()]
    if len(unfinished):
        said = []  # one clause per (status, reason): "the PyTorch, JAX jobs were skipped: dataset cifar10 ..."
        for (status, why), group in unfinished.groupby(["reason", "job_reason"], sort=True, dropna=False):
            names = sorted({display(f) for f in group["framework"]})
            said.append(
                "the %s job%s %s: %s"
                % (", ".join(names), "s were" if len(names) > 1 else " was", status.replace("the job was ", ""), why)
            )
        # older bundles recorded the checkout's `invoke TASK`: the same task as `dlrepro TASK`
        remedies = sorted({re.sub(r"`invoke ", "`dlrepro ", r) for r in unfinished["remedy"].dropna() if r})
        if remedies:  # e.g. a dataset to fetch: a resume alone would skip them again
            return "%s; remedy: %s, then `dlrepro run --resume %s`" % ("; ".join(said), "; ".join(remedies), bundle_id)
        failed = (unfinished["reason"] == "the job was failed").any()
        return "%s; run them again: `dlrepro run --resume %s%s`" % (
            "; ".join(said),
            bundle_id,
            " --retry-failed" if failed else "",
        )
    jobs = summary.dropna(subset=["batch_size"])
    has = "; ".join(
        "%s at %s, batch %s"
        % (", ".join(sorted(display(f) for f in g["framework"].unique())), v, _batches(g["batch_size"]))
        for v, g in jobs.groupby("variant", sort=True)
    )
    at = {}
    for r in comparable:
        at.setdefault((r.variant, r.batch_size), set()).add(r.framework)
    where = "; ".join(
        "%s, batch %d: %s" % (v, b, ", ".join(sorted(t for t in tools if t)) or "every tool")
        for (v, b), tools in sorted(at.items())
    )
    ours = {}
    for (v, b), tools in sorted(at.items()):
        runnable = sorted(f for f, names in FRAMEWORKS.items() if set(names.study_names) & tools)
        if runnable:
            ours = {"variant": v, "batch": b, "frameworks": runnable}
            break
    run = (
        "; e.g. `dlrepro run --spec=%s --variant=%s --batch-size=%d --framework=%s`"
        % (spec, ours["variant"], ours["batch"], ",".join(ours["frameworks"]))
        if ours
        else ""
    )
    return (
        "no job of %s is at a published configuration with a published number for its framework (its jobs: "
        "%s); spec %s's published numbers are at %s%s" % (bundle_id, has or "none", spec, where, run)
    )
