"""The study report: does the paper hold on the host that ran it? study.md (figures beside it, in figures/)
and a self-contained study.html (figures embedded as data URIs), rebuilt from the repository alone: a study
record (dlrepro.run.study) and the bundles it names, found under results/.

Reading order: the answer in one sentence ("On this study's host (2-CPU AMD EPYC, no GPU) 4 of DLBench's
22 claims could be tested: 1 holds, ..."), a smoke-pass banner where the jobs carry no repeat-level
interval, the verdict table (sorted by verdicts.ORDER, coloured chips, what each verdict rests on), the
untestable claims folded under one line per reason, the paper's tables (an empty one as one line), the
figures, then the details of the bundles and how this was measured.

Committed layout of a study's reproduction (what `dlrepro study-report` reads and writes):
  results/studies/<study>-<stamp>.json      the record (found anywhere under results/, by study name)
  results/<bundle id>/                      every bundle it names (summary, samples, bundle.json)
  results/reports/<study>-<stamp>/          study.md, study.html and figures/*.png
A bundle the record names but results/ lacks is named as missing and its claims "cannot judge: bundle
missing"; write() raises MissingBundles unless allow_missing. A record whose manifest's sha256 differs
from today's file is judged by the manifest as recorded (from git, at the record's commit), and the report
says so; if that cannot be had, write() refuses (DlreproError).
"""
import hashlib
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dlrepro import REPO_ROOT, names, spec as specmod, studies
from dlrepro.errors import DlreproError, SpecError
from dlrepro.results import bundle, compare, numbers, palette, plots, report, study_plots, tables
from dlrepro.results.answers import cells as paper, claims, measured
from dlrepro.results.answers import verdicts as words
from dlrepro.results.report import TEMPLATES, Report, Table, _table

STAMP = re.compile(r"^(?P<study>.+)-(?P<stamp>\d{8}T\d{6}Z)\.json$")
MISSING = claims.BUNDLE_MISSING


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


def find_record(name, results_dir=REPO_ROOT / "results"):
    """The record file ``name``, or the latest record of exactly study ``name`` anywhere under results_dir
    (results/**/<name>-<YYYYMMDDTHHMMSSZ>.json whose "study" is ``name``); raises DlreproError."""
    from dlrepro.run import study as studyrun

    path = Path(name)
    records = sorted(p.name for p in Path(results_dir).rglob("*.json") if STAMP.match(p.name))
    if not path.is_file() and (path.suffix == ".json" or len(path.parts) > 1):  # a file named, not a study
        raise DlreproError("%s: no such study record file" % name, "give one of the records under %s (%s), or a "
                           "study name" % (_shown(results_dir), ", ".join(records) or "none"))
    if not path.is_file():
        found = sorted((m.group("stamp"), p) for p in Path(results_dir).rglob("%s-*.json" % name)
                       if (m := STAMP.match(p.name)) and m.group("study") == name)
        if not found:
            known = studies.available()
            if name not in known:
                raise DlreproError("%s: no such study%s; studies: %s" % (name, names.near_miss(name, known),
                                                                         ", ".join(known)),
                                   "give a study name or a record file (results/studies/<study>-<stamp>.json)")
            raise DlreproError("no study record of %s under %s" % (name, _shown(results_dir)),
                               "give the record file (results/**/%s-<stamp>.json), or start the study: "
                               "`dlrepro study %s --quick`" % (name, name))
        path = found[-1][1]
    return studyrun.Record.latest(str(path), results_dir)


def _shown(path):
    """A path relative to the repository where it lies inside it (no machine path in a report)."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return path.name if path.is_absolute() else str(path)


def _manifest(record):
    """(Study, note): the manifest the record was made from. Today's file when its sha256 is the recorded
    one; else the file at the record's commit (git show), with a note saying so; else DlreproError."""
    entry = record.body["manifest"]
    file = Path(entry["file"]) if Path(entry["file"]).is_absolute() else REPO_ROOT / entry["file"]
    today = hashlib.sha256(file.read_bytes()).hexdigest() if file.is_file() else None
    if today == entry["sha256"]:
        return studies.load(str(file)), None
    commit = ((record.body.get("suite") or {}).get("git") or {}).get("commit")
    shown = _shown(file)
    old = subprocess.run(["git", "-C", str(REPO_ROOT), "show", "%s:%s" % (commit, shown)], capture_output=True) \
        if commit else None
    if old is None or old.returncode != 0 or hashlib.sha256(old.stdout).hexdigest() != entry["sha256"]:
        raise DlreproError("%s: the manifest %s changed since the record was made (sha256 %s recorded, %s now) and "
                           "the recorded one is not in git at commit %s" % (
                               _shown(record.path), shown, entry["sha256"][:12], (today or "no file")[:12], commit),
                           "check out the commit the record names, or run the study again")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / file.name
        copy.write_bytes(old.stdout)
        try:
            study = studies.load(str(copy))
        except SpecError as exc:  # a manifest of an older schema: its claims cannot be judged by today's rules
            first = str(exc).replace(str(copy), "%s@%s" % (shown, commit[:12])).splitlines()[0]
            raise DlreproError("%s: the manifest as recorded (%s at commit %s) does not validate under today's "
                               "rules: %s" % (_shown(record.path), shown, commit[:12], first),
                               "run the study again, or check out commit %s to rebuild this report" % commit[:12]) \
                from None
    return study, "judged by %s as recorded (sha256 %s, commit %s); today's file differs (sha256 %s)" % (
        shown, entry["sha256"][:12], commit[:12], (today or "no file")[:12])


def _not_run(record):
    """{run id: why it has no measurement here} for the record's runs without an ok bundle."""
    found = {}
    for run_id, entry in record.body["runs"].items():
        if entry.get("why_here"):
            found[run_id] = "not runnable here: %s" % entry["why_here"]
        elif entry.get("state") in ("broken", "not runnable"):
            found[run_id] = "%s: %s" % (entry["state"], entry.get("error"))
        elif not entry.get("bundle"):
            found[run_id] = "not run yet (%s)" % entry.get("state")
    return found


def _bundles(record, results_dir):
    """({run id: bundle folder}, {run id: bundle id the record names that results_dir lacks})."""
    folders, missing = {}, {}
    for run_id, entry in record.body["runs"].items():
        if entry.get("bundle"):
            try:
                folders[run_id] = bundle.locate(entry["bundle"], results_dir, partial=True)
            except DlreproError:
                missing[run_id] = entry["bundle"]
    return folders, missing


def _references(study, bodies):
    """{spec: [Reference]}: as the bundles recorded them, else (specs without a bundle) as the spec says today."""
    found = compare.recorded_references(bodies)
    for run in study.runs.values():
        if run.spec not in found:
            found[run.spec] = specmod.load(run.spec).references
    return found


def host_line(bodies):
    """'2-CPU AMD EPYC, no GPU' (or '1 NVIDIA H200, 16-CPU ...') of the first bundle's host; None without one."""
    for body in bodies[:1]:
        host = body["host"]
        gpus = [g["name"] for g in host.get("gpus") or []]
        cpu = "%d-CPU %s" % (host["cpu"]["logical_cpus"], host["cpu"]["model"])
        if not gpus:
            return cpu + ", no GPU"
        return "%s, %s" % (", ".join("%d %s" % (gpus.count(g), g) for g in dict.fromkeys(gpus)), cpu)
    return None


def _rests_on(v, smoke):
    """What a claim verdict rests on, in words: its RestsOn (helper rules) where the verdict has one."""
    rests = getattr(v, "rests_on", None)
    parts = []
    if rests is not None:
        counted = [n for n in rests.repeats if n is not None]
        if counted:
            low, high = min(counted), max(counted)
            parts.append(numbers.count(high, "repeat") if low == high else "%d-%d repeats" % (low, high))
        if rests.test:
            parts.append(rests.test + ("" if rests.p_value is None else ", p %.2g" % rests.p_value))
        if rests.device:
            parts.append(rests.device)
        smoke = smoke or rests.smoke
    elif getattr(v, "device", None):
        parts.append("run %s on %s" % (v.run, v.device))
    if smoke:
        parts.append("smoke pass")
    return ", ".join(parts)


def answer(study, host, verdict_list, groups):
    """The one-sentence answer: 'On this study's host (...) 4 of DLBench's 22 claims could be tested: 1 holds,
    3 direction holds, size does not. 16 needs an NVIDIA GPU, 2 ...'."""
    tested = [v for v in verdict_list if v.verdict != words.NOT_TESTABLE]
    tally = {}
    for v in sorted(tested, key=lambda v: palette.rank(v.verdict)):
        tally[v.verdict] = tally.get(v.verdict, 0) + 1
    where = "On this study's host (%s)" % host if host else "With none of its bundles at hand"
    name = study.title.split(" - ")[0].strip()
    text = "%s %d of %s %d claims could be tested" % (where, len(tested), name + ("'" if name.endswith("s") else "'s"),
                                                      len(verdict_list))
    text += (": " + ", ".join("%d %s" % (n, w) for w, n in tally.items())) if tally else ""
    rest = "; ".join("%s (%d)" % (why, len(ids)) for why, ids in groups.items())
    return text + "." + (" Not testable here: %s." % rest if rest else "")


def _smoke(record, summary):
    """The banner text of a smoke pass (--quick, or ok timing jobs without a repeat-level interval), else None."""
    quick = (record.body.get("asked") or {}).get("quick")
    ok = summary[(summary["status"] == "ok") & summary["median"].notna()]
    bare = [row for _, row in ok.iterrows() if measured.get(row, "ci95_method") not in measured.REPEAT_LEVEL
            or measured.get(row, "ci95_low") is None]
    if not quick and not bare:
        return None
    text = "Smoke pass: " + ("`dlrepro study --quick`, few repeats of few iterations per job. " if quick else "")
    if bare:
        text += "%d of %d timed jobs have no interval over repeats (an interval needs 6 repeats). " % (
            len(bare), len(ok))
    return text + "The verdicts are indicative; run `dlrepro study %s` without --quick for intervals." % (
        record.body["study"])


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


def _paper_table(study, t):
    """One published table in its own layout, per column: published | here | measured / published | outcome, each
    outcome's reason once as a numbered footnote (a table repeats one reason in most of its cells); None (and a
    one-line note) where no cell holds a published or a measured value."""
    if all(c.published is None and c.measured is None for c in t.cells.values()):
        reasons = sorted({c.reason for c in t.cells.values() if c.reason})
        return None, "%s: no value to show (%s)." % (t.title, "; ".join(reasons) or "empty")
    metric = study.tables[t.name].columns[0].metric
    unit, fmt = _unit(t, measured.metric_kind(metric))
    header = ["tool"]
    for label in t.columns:
        header += ["%s published (%s)" % (label, unit), "%s here (%s)" % (label, unit), "%s ratio" % label,
                   "%s outcome" % label]
    cells = [[t.cells[(tool, label)] for label in t.columns] for tool in t.rows]
    marks, footnotes = report.numbered_notes([c.why for line in cells for c in line])
    marks = iter(marks)
    rows = [[tool] + [text for c in line for text in (fmt(c.published), fmt(c.measured), numbers.ratio(c.ratio),
                                                      " ".join(filter(None, [c.outcome, next(marks)])))]
            for tool, line in zip(t.rows, cells)]
    note = " ".join(filter(None, [t.source + ("" if t.status == "published" else " (values not retrieved)"),
                                  t.note]))
    return Table(t.title, header, rows, note, footnotes), None


def _environment(study, bodies, summary):
    """The differences that matter: the study's hardware and versions vs this host's."""
    rows = [["the study", study.hardware, "", ""]]
    for body in bodies[:1]:
        host = body["host"]
        gpus = "; ".join("%s (driver %s)" % (g["name"], g["driver"]) for g in host.get("gpus") or []) or "no GPU"
        rows.append(["here", "%s, %d CPUs, %.0f GiB; %s" % (host["cpu"]["model"], host["cpu"]["logical_cpus"],
                                                          host["memory_bytes"] / 2 ** 30, gpus),
                     ", ".join(sorted(set((summary["framework"].map(palette.name) + " "
                                           + summary["framework_version"]).dropna()))),
                     ", ".join(sorted(set(summary["precision"].dropna())))])
    return _table("Environment: the study vs here", pd.DataFrame(
        rows, columns=["side", "hardware", "framework versions", "precision"]),
        "fp32 here is true fp32 (TF32 off), as on the studies' GPUs, which had no TF32.")


def anchor(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _asked(asked):
    """'all devices, docker executor, the spec's frameworks, --quick' from the record's options."""
    return ", ".join([asked.get("device") or "all devices", "%s executor" % (asked.get("executor") or "default"),
                      ", ".join(asked.get("frameworks") or []) or "the spec's frameworks"]
                     + (["--quick"] if asked.get("quick") else []))


def context(record, results_dir=REPO_ROOT / "results"):
    """Everything the study templates show."""
    study, manifest_note = _manifest(record)
    folders, missing = _bundles(record, results_dir)
    not_run = _not_run(record)
    gone = {run: "bundle %s not found under %s" % (bid, _shown(results_dir)) for run, bid in missing.items()}
    not_run.update({run: "%s (%s)" % (MISSING, why) for run, why in gone.items()})
    bodies = [bundle.body(f) for f in folders.values()]
    if folders:
        summary, samples = tables.merge(list(folders.values()))
        runs_of = {f.name.lstrip(".").replace(".partial", ""): run for run, f in folders.items()}
        summary = summary.assign(run=summary["bundle_id"].map(runs_of))
    else:
        summary, samples = tables.frame([], tables.SUMMARY_COLUMNS).assign(run=None), None
    built = paper.build(study, summary, _references(study, bodies), not_run, gone)
    verdict_list = claims.evaluate(study, summary, not_run, gone, gpus_here=len(bodies[0]["host"].get("gpus") or [])
                                   if bodies else None)
    smoke = _smoke(record, summary)
    judged, groups = [], {}
    for v in verdict_list:
        if v.verdict == words.NOT_TESTABLE:
            groups.setdefault(v.reason, []).append(v)
        else:
            judged.append(Claim(v.claim, v.text, v.verdict, palette.verdict_colour(v.verdict), v.evidence,
                                _rests_on(v, bool(smoke)), v.source))
    judged.sort(key=lambda c: palette.rank(c.verdict))
    counts, why = paper.counts(built)
    papers, empty = [], []
    for t in built:
        shown, line = _paper_table(study, t)
        (papers.append((t, shown)) if shown else empty.append(line))
    details = report.context(list(folders.values()), summary.drop(columns=["run"]), samples) if folders else None
    figures = study_plots.all_plots(study, verdict_list, built)
    runs = pd.DataFrame([[run_id, entry["spec"], ", ".join(entry["variants"]), entry["device"], entry.get("state"),
                          (entry.get("bundle") or "") + (" (missing)" if run_id in missing else ""),
                          entry.get("why_here") or entry.get("error") or "",
                          "; ".join(entry.get("notes") or []), entry.get("what")]
                         for run_id, entry in record.body["runs"].items()],
                        columns=["run", "spec", "variants", "device", "state", "bundle", "why not here",
                                 "cut here", "what of the study"])
    host = host_line(bodies)
    return {"study": study, "record": record.body, "record_path": _shown(record.path),
            "manifest_note": manifest_note, "asked": _asked(record.body.get("asked") or {}),
            "answer": answer(study, host, verdict_list, {k: [v.claim for v in g] for k, g in groups.items()}),
            "smoke": smoke, "missing": {run: bid for run, bid in missing.items()},
            "results_shown": _shown(results_dir), "claims": judged,
            "untestable": [(why, group) for why, group in groups.items()], "cells": counts, "why": why,
            "environment": _environment(study, bodies, summary), "papers": papers, "empty_tables": empty,
            "runs": _table("Runs of the study on this host", runs), "details": details, "anchor": anchor,
            "figures": figures, "figure_size": (plots.WIDTH_PX, plots.HEIGHT_PX)}


def write(record_name, out_dir=None, results_dir=REPO_ROOT / "results", allow_missing=False):
    """Write study.html, study.md and figures/*.png of a study record (a record file, or a study name: its
    latest record under results_dir) into out_dir (default: results_dir/reports/<record file name>); returns
    the paths (Report). Raises MissingBundles (after writing) when bundles the record names are missing,
    unless ``allow_missing``."""
    record = find_record(record_name, results_dir)
    ctx = context(record, results_dir)
    out = Path(out_dir or Path(results_dir) / "reports" / record.path.stem)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for old in (out / "figures").glob("*.png"):
        old.unlink()
    made = Report(out / "study.html", out / "study.md")
    for figure in ctx["figures"] + (ctx["details"] or {}).get("figures", []):
        path = out / "figures" / (figure.name + ".png")
        path.write_bytes(figure.png)
        made.figures.append(path)
    made.html.write_text(TEMPLATES.get_template("study.html.j2").render(ctx, d=ctx["details"]))
    made.markdown.write_text(TEMPLATES.get_template("study.md.j2").render(ctx, d=ctx["details"]))
    if ctx["missing"] and not allow_missing:
        raise MissingBundles("%s names %d bundle%s not found under %s: %s" % (
            ctx["record_path"], len(ctx["missing"]), "s"[len(ctx["missing"]) == 1:], ctx["results_shown"],
            ", ".join(sorted(ctx["missing"].values()))),
            "commit or copy those bundles into %s, or pass --allow-missing to write the report without them "
            "(its claims then read '%s')" % (ctx["results_shown"], MISSING))
    return made
