"""The study report, a view of a StudyAnswer (dlrepro.answers.study): study.md (figures beside it, in
figures/), a self-contained study.html (figures embedded as data URIs) and study.json (the answer as data),
rebuilt from the repository alone.

Reading order: the answer in one sentence, a smoke-pass banner where the study ran --quick, the verdict table (answers
first, coloured chips, what each verdict rests on), the untestable claims folded under one line per reason, the
paper's tables with a measured value (the others folded, one line each), the figures, then the details of the
bundles and how this was measured.

Committed layout of a study's reproduction (what `dlrepro study-report` reads and writes):
  results/studies/<study>-<stamp>.json      the record (found anywhere under results/, by study name)
  results/<bundle id>/                      every bundle it names (summary, samples, bundle.json)
  results/reports/<study>-<stamp>/          study.md, study.html, study.json and figures/*.png
A bundle the record names but results/ lacks is named as missing and its claims "cannot judge: bundle
missing"; ``write`` raises MissingBundles (after writing) unless allow_missing.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dlrepro.errors import DlreproError
from dlrepro.inputs.frameworks import display
from dlrepro.views import numbers, palette, plots, report, study_plots
from dlrepro.views.report import TEMPLATES, Report, Table, table_of

MISSING = "cannot judge: bundle missing"


class MissingBundles(DlreproError):
    """The record names bundles that results/ does not hold (the report is written, saying so): exit status 1,
    a report that fails to be whole, not an input the command could not use."""

    exit_code = 1


@dataclass
class Claim:
    """One row of the verdict table."""

    id: str
    text: str
    verdict: str
    colour: str
    evidence: str
    rests_on: str
    source: str
    said: str = ""  # the verdict with its scope (claims.Verdict.said): 'holds for the 3 tools measured; ...'


def rests_on(v, smoke):
    """What a claim verdict rests on, in words: '6 repeats, 95% interval per tool against the band, GPU'."""
    parts = []
    counted = [n for n in v.rests_on.repeats if n is not None]
    if counted:
        low, high = min(counted), max(counted)
        unit = v.rests_on.unit
        parts.append(numbers.count(high, unit) if low == high else "%d-%d %ss" % (low, high, unit))
    if v.rests_on.test:
        parts.append(v.rests_on.test + ("" if v.rests_on.p_value is None else ", p %.2g" % v.rests_on.p_value))
    if v.rests_on.device:
        parts.append({"cuda": "GPU", "cpu": "CPU", "any": "any device"}.get(v.rests_on.device, v.rests_on.device))
    if smoke or v.rests_on.smoke:
        parts.append("smoke pass")
    return ", ".join(parts)


TITLE_UNIT = re.compile(r"\((ms|s|min|%)\)\s*$")


def _unit(table, kind):
    """(unit word, to text) for a published table's values (converted to the measured unit: s, fraction,
    samples/s): the unit its title states, else ms below a second; percent for accuracies."""
    if kind == "accuracy":
        return "%", numbers.percent
    if kind == "rate":
        return "samples/s", numbers.rate
    stated = TITLE_UNIT.search(table.title)
    values = [c.published for c in table.cells.values()] + [c.measured for c in table.cells.values()]
    unit = stated.group(1) if stated and stated.group(1) != "%" else numbers.time_unit(values)
    scale = {"ms": 1e-3, "s": 1.0, "min": 60.0}[unit]
    return unit, lambda v: numbers.significant(None if v is None or pd.isna(v) else v / scale)


def _threads(cells):
    """', 2 threads' when the measured cells of a column share one CPU thread count, else ''."""
    counts = {c.threads for c in cells if c.measured is not None and c.threads is not None}
    return ", %d thread%s" % (counts.pop(), "s"[min(counts | {2}) == 1 :]) if len(counts) == 1 else ""


def _marked(text, mark):
    return " ".join(filter(None, [text, mark]))


def paper_table(t):
    """One published table in its own layout, per column: published | here | measured / published | outcome, each
    outcome's reason once as a numbered footnote (a table repeats one reason in most of its cells), and so the step
    semantics beside a measured value where its job or the study timed another step than the suite's default
    (Cell.step); its note says which tools were timed differently where they were."""
    unit, fmt = _unit(t, t.kind)
    header = ["tool"]
    for label in t.columns:
        column = [t.cells[(tool, label)] for tool in t.rows]
        header += [
            "%s published (%s)" % (label, unit),
            "%s here (%s%s)" % (label, unit, _threads(column)),
            "%s ratio" % label,
            "%s outcome" % label,
        ]
    cells = [[t.cells[(tool, label)] for label in t.columns] for tool in t.rows]
    marks, footnotes = report.numbered_notes([text for line in cells for c in line for text in (c.step, c.why)])
    marks = iter(marks)
    rows = [
        [tool]
        + [
            text
            for c in line
            for text in (
                fmt(c.published),
                _marked(fmt(c.measured), next(marks)),
                numbers.ratio(c.ratio),
                " ".join(filter(None, [c.outcome, next(marks)])),
            )
        ]
        for tool, line in zip(t.rows, cells)
    ]
    timed = (
        "Timed differently (on a GPU, two different quantities: docs/gpu.md): %s." % "; ".join(t.timers)
        if t.timers
        else None
    )
    note = " ".join(
        filter(None, [t.source + ("" if t.status == "published" else " (values not retrieved)"), t.note, timed])
    )
    return Table(t.title, header, rows, note, footnotes)


SMOKE_RATIO = "smoke pass: an indicative ratio of one repeat each, never a verdict"


def then_and_now(now, then, record, quick=False):
    """One published table measured at both version sets of a study run with --versions both, per column:
    published | at the published versions (then) | its outcome | at today's (now) | now / then. A row names what
    ran for its tool at each set ("TensorFlow 1.4.0 (published: 0.11.0rc0) -> 2.21.0"); a tool that ran the same
    version at both sets is folded into the note. The step semantics of a value (Cell.step) are a footnote beside it.
    Where either side is a smoke pass (``quick``: the whole study ran --quick) the ratio is shown as an indication
    ('5.4 (smoke)'), the reason once as a footnote, never a verdict."""
    unit, fmt = _unit(now, now.kind)
    header = ["tool (then -> now)"]
    for label in now.columns:
        header += [
            "%s published (%s)" % (label, unit),
            "%s then (%s)" % (label, unit),
            "%s then: outcome" % label,
            "%s now (%s)" % (label, unit),
            "%s now / then" % label,
        ]
    ran = _ran(record)
    notes, rows, same = [], [], []
    for tool in now.rows:
        text, unchanged = ran.get(tool, (tool, False))
        if unchanged:
            same.append(text.split(" -> ")[0])
            continue
        line = [text]
        for label in now.columns:
            was, is_ = then.cells.get((tool, label)), now.cells[(tool, label)]
            before = was.measured if was is not None else None
            smoke = quick or (was is not None and was.smoke) or is_.smoke
            ratio = is_.measured / before if before and is_.measured is not None else None
            notes += [was.step if was is not None else "", is_.step, SMOKE_RATIO if smoke and ratio is not None else ""]
            line += [
                fmt(is_.published),
                fmt(before),
                was.outcome if was is not None else "",
                fmt(is_.measured),
                numbers.ratio(ratio) + (" (smoke)" if smoke and ratio is not None else ""),
            ]
        rows.append(line)
    marks, footnotes = report.numbered_notes(notes)
    marks = iter(marks)
    for line in rows:
        for i in range(len(now.columns)):
            for place in (2, 4, 5):  # then, now, now / then
                line[place + 5 * i] = _marked(line[place + 5 * i], next(marks))
    return Table(
        now.title + ": then and now",
        header,
        rows,
        "then: the study's tools at their published versions (or "
        "the nearest the image matrix has); now: today's images; the same host, jobs and settings.%s"
        % (" The same version at both sets, not shown: %s." % ", ".join(same) if same else ""),
        footnotes,
    )


def then_and_now_points(answer):
    """[(row label, now / then, smoke)] of every published table of times measured at both version sets, in order:
    the figure of study_plots.then_vs_now ('Table 5: MXNet 0.12.0 (published: 0.9.3) -> 1.9.1, ResNet-50'). Columns
    whose cells hold the same measurements (one CPU job under a K80 and a P100 column) are one point, their labels
    joined ('K80, P100'); a tool at the same version at both sets has none."""
    ran, found = _ran(answer.record), {}
    for now, then in ((now, then) for now, then in _paired(answer) if now.kind == "time"):
        for tool in now.rows:
            text, unchanged = ran.get(tool, (tool, False))
            for label in [] if unchanged else now.columns:
                was, is_ = then.cells.get((tool, label)), now.cells[(tool, label)]
                if was is not None and was.measured and is_.measured is not None:
                    title = now.title.split(" - ")[0].split(" (")[0]  # 'Table 7', or the table's name
                    key = (title if title.startswith("Table") else now.name, text, was.measured, is_.measured)
                    found.setdefault(key, ([], bool(answer.smoke) or was.smoke or is_.smoke))[0].append(label)
    return [
        ("%s: %s, %s" % (title, text, ", ".join(labels)), measured / before, smoke)
        for (title, text, before, measured), (labels, smoke) in found.items()
    ]


def _paired(answer):
    """(today's table, the published versions' table) of each published table, by name."""
    then = {t.name: t for t in answer.published_tables}
    return [(t, then[t.name]) for t in answer.tables if t.name in then]


def _ran(record):
    """{tool: ("NAME THEN (published: X) -> NOW", whether THEN is NOW)} from the version sets a record's runs ran."""
    out = {}
    for entry in record["runs"].values():
        sets = entry.get("versions") or {}
        today = {c["tool"]: c["label"] for c in sets.get("today", [])}
        for c in sets.get("published", []):
            now = today.get(c["tool"], "")[len(c["tool"]) :].strip()
            then = c["label"][len(c["tool"]) :].strip().split(" (")[0]
            out.setdefault(c["tool"], ("%s -> %s" % (c["label"], now or "?"), then == now.split(" (")[0]))
    return out


def folded_line(t):
    """'Table 1 ...: 13 published values, none measured here (cannot be compared: CIFAR-10 ...; not run: ...)'."""
    published = sum(c.published is not None for c in t.cells.values())
    reasons = {}
    for c in t.cells.values():
        if c.reason:
            reasons.setdefault(c.reason, 0)
            reasons[c.reason] += 1
    said = "; ".join("%s (%d)" % (r, n) for r, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    return "%s: %s, none measured here%s." % (
        t.title,
        numbers.count(published, "published value"),
        " (%s)" % said if said else "",
    )


def environment(answer):
    """The differences that matter: the study's hardware and versions vs this host's."""
    rows = [["the study", answer.study.hardware, "", ""]]
    bodies = answer.bundle.bodies if answer.bundle else []
    for body in bodies[:1]:
        host = body["host"]
        summary = answer.bundle.summary
        gpus = "; ".join("%s (driver %s)" % (g["name"], g["driver"]) for g in host.get("gpus") or []) or "no GPU"
        rows.append(
            [
                "here",
                "%s, %d CPUs, %.0f GiB; %s"
                % (host["cpu"]["model"], host["cpu"]["logical_cpus"], host["memory_bytes"] / 2**30, gpus),
                ", ".join(
                    sorted(set((summary["framework"].map(display) + " " + summary["framework_version"]).dropna()))
                ),
                ", ".join(sorted(set(summary["precision"].dropna()))),
            ]
        )
    return table_of(
        "Environment: the study vs here",
        pd.DataFrame(rows, columns=["side", "hardware", "framework versions", "precision"]),
        "fp32 here is true fp32 (TF32 off), as on the studies' GPUs, which had no TF32.",
    )


def anchor(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _asked(asked):
    """'all devices, docker executor, the spec's frameworks, --versions both, --quick' from the record's options."""
    return ", ".join(
        [
            asked.get("device") or "all devices",
            "%s executor" % (asked.get("executor") or "default"),
            ", ".join(asked.get("frameworks") or []) or "the spec's frameworks",
        ]
        + (["--versions %s" % asked["versions"]] if asked.get("versions") else [])
        + (["--quick"] if asked.get("quick") else [])
    )


def context(answer):
    """Everything the study templates show of a StudyAnswer."""
    judged = [
        Claim(
            v.claim,
            v.text,
            v.verdict,
            palette.verdict_colour(v.verdict),
            v.evidence,
            rests_on(v, bool(answer.smoke)),
            v.source,
            v.said,
        )
        for v in answer.claims
    ]
    papers, folded = [], []
    for t in answer.tables:
        if any(c.measured is not None for c in t.cells.values()):
            papers.append((t, paper_table(t)))
        else:
            folded.append(
                (folded_line(t), paper_table(t) if any(c.published is not None for c in t.cells.values()) else None)
            )
    runs = pd.DataFrame(
        [
            [
                r["run"],
                r["spec"],
                ", ".join(r["variants"]),
                r["device"],
                r["state"],
                (r["bundle"] or "") + (" (missing)" if r["missing"] else ""),
                r["why_here"] or "",
                "; ".join(r["notes"]),
                r["what"],
            ]
            for r in answer.runs
        ],
        columns=[
            "run",
            "spec",
            "variants",
            "device",
            "state",
            "bundle",
            "why not here",
            "cut here",
            "what of the study",
        ],
    )
    details = report.context(answer.bundle) if answer.bundle else None
    unjudged = [d for d in answer.drift if not d.judged]
    drift = (
        table_of(
            "From the published versions to today's",
            pd.DataFrame(
                [[d.change, d.claim, d.published.verdict, d.today.verdict, d.text] for d in answer.drift if d.judged]
                + (
                    [
                        [
                            unjudged[0].change,
                            "%d claims: %s" % (len(unjudged), ", ".join(d.claim for d in unjudged)),
                            "",
                            "",
                            "no verdict at either set: not testable here, or not asked",
                        ]
                    ]
                    if unjudged
                    else []
                ),
                columns=["change", "claim", "at the published versions", "at today's", "stated"],
            ),
            "At the published versions (or the nearest the image matrix has): %s. Today's: %s."
            % (answer.drift[0].labels["published"], answer.drift[0].labels["today"])
            if answer.drift
            else "",
        )
        if answer.drift
        else None
    )
    return {
        "study": answer.study,
        "record": answer.record,
        "record_path": answer.record_path,
        "manifest_note": answer.manifest_note,
        "asked": _asked(answer.record.get("asked") or {}),
        "answer": answer.answer,
        "smoke": answer.smoke,
        "missing": answer.missing,
        "unretrieved": answer.unretrieved,
        "results_shown": answer.results_shown,
        "claims": judged,
        "untestable": answer.untestable,
        "cells": answer.counts,
        "why": answer.why,
        "environment": environment(answer),
        "papers": papers,
        "folded_tables": folded,
        "drift": drift,
        "then_and_now": [
            (then, then_and_now(now, then, answer.record, bool(answer.smoke)))
            for now, then in _paired(answer)
            if any(c.measured is not None for c in then.cells.values())
        ],
        "runs": table_of("Runs of the study on this host", runs),
        "details": details,
        "anchor": anchor,
        "figures": study_plots.all_plots(answer.study, answer.claims, answer.tables)
        + study_plots.then_vs_now(then_and_now_points(answer)),
        "figure_size": (plots.WIDTH_PX, plots.HEIGHT_PX),
    }


def write(answer, out, allow_missing=False, site=None):
    """Write study.html, study.md, study.json and figures/*.png of a StudyAnswer into folder ``out``; returns the
    paths (Report, its headline the one-sentence answer). Raises MissingBundles (after writing) when bundles the
    record names are missing, unless ``allow_missing``. ``site``: as views.report.write's."""
    out = Path(out)
    ctx = dict(context(answer), site=site)
    made = Report(out / "study.html", out / "study.md", headline=[answer.answer])
    made.figures = report.write_figures(out, ctx["figures"] + (ctx["details"] or {}).get("figures", []))
    made.html.write_text(TEMPLATES.get_template("study.html.j2").render(ctx, d=ctx["details"]))
    made.markdown.write_text(TEMPLATES.get_template("study.md.j2").render(ctx, d=ctx["details"]))
    (out / "study.json").write_text(json.dumps(answer.to_json(), indent=1, sort_keys=True, default=_plain) + "\n")
    if answer.missing and not allow_missing:
        raise MissingBundles(
            "%s names %d bundle%s not found under %s: %s"
            % (
                answer.record_path,
                len(answer.missing),
                "s"[len(answer.missing) == 1 :],
                answer.results_shown,
                ", ".join(sorted(answer.missing.values())),
            ),
            "commit or copy those bundles into %s, or pass --allow-missing to write the report without them "
            "(its claims then read '%s')" % (answer.results_shown, MISSING),
        )
    return made


def _plain(value):
    """JSON for what json cannot write itself: numpy and pandas scalars, NA as null."""
    if pd.isna(value):
        return None
    return value.item() if hasattr(value, "item") else str(value)
