"""The study report: does the paper hold on this hardware? study.md (figures beside it) and a self-contained
study.html, from a study record (dlrepro.run.study) and the bundles it names.

At the top, one screen: how many published cells reproduce, differ, cannot be compared here (and why) or
were not run (and why); each claim's verdict with its evidence (dlrepro.results.claims); the environment
differences that matter (hardware, framework versions, precision). Then each published table in the paper's
own layout, the value measured here beside the published one with the ratio and outcome, and the ranking
verdict per column (dlrepro.results.paper); then what was not run here and why; then the details of the
bundles as the bundle report shows them (results, comparison, figures: dlrepro.results.report).
"""
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dlrepro import REPO_ROOT, spec as specmod, studies
from dlrepro.results import bundle, compare, plots, report, tables
from dlrepro.results.answers import cells as paper, claims
from dlrepro.results.report import TEMPLATES, Report, Table, _fmt, _table


@dataclass
class Summary:
    counts: dict  # outcome -> cells
    why: dict  # "cannot be compared" / "not run" -> {reason: cells}
    verdicts: dict  # claim verdict -> number of claims


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


def _references(study, bodies):
    """{spec: [Reference]}: as the bundles recorded them, else (specs without a bundle) as the spec says today."""
    found = compare.recorded_references(bodies)
    for run in study.runs.values():
        if run.spec not in found:
            found[run.spec] = specmod.load(run.spec).references
    return found


def _environment(study, bodies, summary):
    """The differences that matter: the study's hardware and versions vs this host's, and the options used."""
    rows = [["the study", study.hardware, "", ""]]
    for body in bodies[:1]:
        host = body["host"]
        gpus = "; ".join("%s (driver %s)" % (g["name"], g["driver"]) for g in host.get("gpus") or []) or "no GPU"
        rows.append(["here", "%s, %d CPUs, %.0f GiB; %s" % (host["cpu"]["model"], host["cpu"]["logical_cpus"],
                                                          host["memory_bytes"] / 2 ** 30, gpus),
                     ", ".join(sorted(set((summary["framework"] + " " + summary["framework_version"]).dropna()))),
                     ", ".join(sorted(set(summary["precision"].dropna())))])
    return _table("Environment: the study vs here", pd.DataFrame(
        rows, columns=["side", "hardware", "framework versions", "precision"]),
        "fp32 here is true fp32 (TF32 off), as on the studies' GPUs, which had no TF32.")


def _claims_table(verdicts):
    return _table("Claims: the study's conclusions here", pd.DataFrame(
        [[v.claim, v.text, v.verdict, v.evidence, v.source] for v in verdicts],
        columns=["claim", "stated", "verdict", "evidence", "source"]),
        "holds / partly holds / does not hold on the hardware at hand; not testable here: the reason is given.")


def _paper_table(t):
    """One published table in its own layout: per column, published | here | ratio | outcome."""
    header = ["tool"]
    for label in t.columns:
        header += ["%s published" % label, "%s here" % label, "%s ratio" % label, "%s outcome" % label]
    rows = []
    for tool in t.rows:
        line = [tool]
        for label in t.columns:
            cell = t.cells[(tool, label)]
            line += [_fmt(cell.published), _fmt(cell.measured), _fmt(cell.ratio, "%.3g"),
                     cell.outcome + (": " + cell.why if cell.why else "")]
        rows.append(line)
    note = " ".join(filter(None, [t.source + ("" if t.status == "published" else " (values not retrieved)"),
                                  t.note]))
    return Table(t.title, header, rows, note)


def anchor(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def context(record, results_dir=REPO_ROOT / "results"):
    """Everything the study templates show."""
    from dlrepro.run import study as studyrun

    study = studies.load(record.body["manifest"]["file"] if Path(record.body["manifest"]["file"]).is_absolute()
                         else str(REPO_ROOT / record.body["manifest"]["file"]))
    folders = studyrun.bundles_of(record, results_dir)
    not_run = _not_run(record)
    bodies = [bundle.body(f) for f in folders.values()]
    if folders:
        summary, samples = tables.merge(list(folders.values()))
        runs_of = {f.name.lstrip(".").replace(".partial", ""): run for run, f in folders.items()}
        summary = summary.assign(run=summary["bundle_id"].map(runs_of))
    else:
        summary, samples = tables.frame([], tables.SUMMARY_COLUMNS).assign(run=None), None
    built = paper.build(study, summary, _references(study, bodies), not_run)
    verdicts = claims.evaluate(study, summary, not_run)
    counts, why = paper.counts(built)
    tally = {}
    for v in verdicts:
        tally[v.verdict] = tally.get(v.verdict, 0) + 1
    details = report.context(list(folders.values()), summary.drop(columns=["run"]), samples) if folders else None
    runs = pd.DataFrame([[run_id, entry["spec"], ", ".join(entry["variants"]), entry["device"], entry.get("state"),
                          entry.get("bundle") or "", entry.get("why_here") or entry.get("error") or "",
                          "; ".join(entry.get("notes") or []), entry.get("what")]
                         for run_id, entry in record.body["runs"].items()],
                        columns=["run", "spec", "variants", "device", "state", "bundle", "why not here",
                                 "cut here", "what of the study"])
    return {"study": study, "record": record.body, "record_path": str(record.path),
            "summary": Summary(counts, why, tally), "claims": _claims_table(verdicts), "verdicts": verdicts,
            "environment": _environment(study, bodies, summary), "papers": [(t, _paper_table(t)) for t in built],
            "runs": _table("Runs of the study on this host", runs), "details": details, "anchor": anchor,
            "figure_size": (plots.WIDTH_PX, plots.HEIGHT_PX)}


def write(record_name, out_dir=None, results_dir=REPO_ROOT / "results"):
    """Write study.html, study.md and figures/*.png of a study record (a record file, or a study name: its
    latest record) into out_dir (default: reports/<record file name>); returns the paths (Report)."""
    from dlrepro.run import study as studyrun

    record = studyrun.Record.latest(record_name, results_dir)
    ctx = context(record, results_dir)
    out = Path(out_dir or Path("reports") / record.path.stem)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for old in (out / "figures").glob("*.png"):
        old.unlink()
    made = Report(out / "study.html", out / "study.md")
    for figure in (ctx["details"] or {}).get("figures", []):
        path = out / "figures" / (figure.name + ".png")
        path.write_bytes(figure.png)
        made.figures.append(path)
    made.html.write_text(TEMPLATES.get_template("study.html.j2").render(ctx, d=ctx["details"]))
    made.markdown.write_text(TEMPLATES.get_template("study.md.j2").render(ctx, d=ctx["details"]))
    return made
