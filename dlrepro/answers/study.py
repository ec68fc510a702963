"""A study's answer: does the paper hold on the host that ran it? Built once from a study record, its manifest as
recorded and the bundles the record names (dlrepro.answers.gather reads them), rendered by the study report's
views and written as study.json.

It holds: the one-sentence answer ("On this study's host (2-CPU AMD EPYC, no GPU) 4 of DLBench's 22 claims could be
tested: 1 holds, ..."), every claim's verdict (answers.claims) with the untestable ones grouped by reason, the
drift of each claim from the published versions to today's where the study ran both (answers.drift; the verdicts
and tables above are then today's, and the tables are also built from the published versions' jobs), the
paper's tables with the value measured here beside each published cell (answers.cells), the smoke-pass banner
where the study ran --quick or its timings carry no interval, the runs with why each did or did not run here, the
bundles the record names that the results folder lacks, and the bundles' own BundleAnswer as details.
"""

from dataclasses import asdict, dataclass, field

import pandas as pd

from dlrepro.answers import cells as paper
from dlrepro.answers import claims, measured, model, verdicts
from dlrepro.answers import drift as driftmod

MISSING = claims.BUNDLE_MISSING


@dataclass
class StudyAnswer:
    """``record``: the record's body; ``claims``: the judged claims' Verdicts, answers first (verdicts.rank);
    ``untestable``: [(reason, [Verdict])]; ``tables``: answers.cells.PaperTable per published table;
    ``counts`` / ``why``: answers.cells.counts; ``runs``: one dict per run of the record; ``missing``: {run id:
    bundle id the results folder lacks}; ``bundle``: the BundleAnswer of its bundles (None without any)."""

    study: object
    record: dict
    record_path: str
    manifest_note: str
    host: str
    answer: str
    claims: list
    untestable: list
    tables: list
    counts: dict
    why: dict
    smoke: str
    runs: list
    missing: dict = field(default_factory=dict)
    results_shown: str = "results"
    bundle: object = None
    drift: list = field(default_factory=list)  # answers.drift.Drift per claim (a study run with --versions both)
    published_tables: list = field(default_factory=list)  # the tables from the published versions' jobs (idem)

    @property
    def unretrieved(self):
        """The line saying which of the study's own tables are not in the suite (unretrieved), None: all are."""
        return self.study.unretrieved()

    def to_json(self):
        """The study's answer as plain data (study.json beside study.md): every verdict with its evidence and what
        it rests on, every published cell with its measured value and outcome."""

        def verdict(v):
            return {
                k: getattr(v, k)
                for k in (
                    "claim",
                    "text",
                    "source",
                    "kind",
                    "verdict",
                    "evidence",
                    "run",
                    "device",
                    "measured_on",
                    "values",
                    "points",
                    "band",
                    "reason",
                    "scope",
                )
            } | {"rests_on": asdict(v.rests_on)}

        return {
            "schema": "dlrepro.study-answer/1",
            "study": self.study.name,
            "record": self.record_path,
            "manifest_note": self.manifest_note,
            "host": self.host,
            "answer": self.answer,
            "smoke": self.smoke,
            "missing": self.missing,
            "claims": [verdict(v) for v in self.claims],
            "untestable": [{"reason": why, "claims": [verdict(v) for v in group]} for why, group in self.untestable],
            "tables": [
                {
                    "name": t.name,
                    "title": t.title,
                    "source": t.source,
                    "status": t.status,
                    "rankings": t.rankings,
                    "timers": t.timers,
                    "cells": [asdict(c) for c in t.cells.values()],
                }
                for t in self.tables
            ],
            "cells": self.counts,
            "runs": self.runs,
            "bundles": self.bundle.ids if self.bundle else [],
        } | (
            {
                "drift": [
                    {
                        "claim": d.claim,
                        "text": d.text,
                        "change": d.change,
                        "labels": d.labels,
                        "published": verdict(d.published),
                        "today": verdict(d.today),
                    }
                    for d in self.drift
                ]
            }
            if self.drift
            else {}
        )


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


def not_run(record, missing, results_shown):
    """{run id: why it has no measurement here} for the record's runs without an ok bundle, and for those whose
    bundle is ``missing`` (not found under ``results_shown``)."""
    found = {}
    for run_id, entry in record["runs"].items():
        if entry.get("why_here"):
            found[run_id] = "not runnable here: %s" % entry["why_here"]
        elif entry.get("state") in ("broken", "not runnable"):
            found[run_id] = "%s: %s" % (entry["state"], entry.get("error"))
        elif not entry.get("bundle"):
            found[run_id] = "not run yet (%s)" % entry.get("state")
    for run, bid in missing.items():
        found[run] = "%s (bundle %s not found under %s)" % (MISSING, bid, results_shown)
    return found


def sentence(study, host, verdict_list, groups):
    """The one-sentence answer: 'On this study's host (...) 4 of DLBench's 22 claims could be tested: 1 holds,
    3 direction holds, size does not. Not testable here: needs an NVIDIA GPU (16); ...'."""
    tested = [v for v in verdict_list if v.verdict not in verdicts.UNJUDGED]
    tally = {}
    for v in sorted(tested, key=lambda v: verdicts.rank(v.verdict)):
        tally[v.verdict] = tally.get(v.verdict, 0) + 1
    where = "On this study's host (%s)" % host if host else "With none of its bundles at hand"
    name = study.title.split(" - ")[0].strip()
    text = "%s %d of %s %d claims could be tested" % (
        where,
        len(tested),
        name + ("'" if name.endswith("s") else "'s"),
        len(verdict_list),
    )
    scoped = {w: sum(1 for v in tested if v.verdict == w and v.scope) for w in tally}
    text += (
        (
            ": "
            + ", ".join(
                "%d %s%s"
                % (
                    n,
                    w,
                    ""
                    if not scoped[w]
                    else " (for the tools measured only)"
                    if scoped[w] == n
                    else " (%d for the tools measured only)" % scoped[w],
                )
                for w, n in tally.items()
            )
        )
        if tally
        else ""
    )
    said = []
    for word in verdicts.UNJUDGED:
        rest = "; ".join("%s (%d)" % (why, len(group)) for why, group in groups if group[0].verdict == word)
        said += [" %s: %s." % (word.capitalize(), rest)] if rest else []
    return text + "." + "".join(said)


def _state(entry, measured_any, missing):
    """A run's state as the Runs table shows it: the record's, with ', nothing ran' for a complete run whose
    bundle has no ok job (every job skipped or failed)."""
    state = entry.get("state")
    complete = state in ("complete", "published") and entry.get("bundle") and not missing
    return "%s, nothing ran" % state if complete and not measured_any else state


def smoke(record, summary, judged):
    """The banner of a smoke pass, or None: the study ran --quick (its claims are inconclusive), or ok timed jobs
    carry no repeat-level interval. None when no claim was judged and nothing was timed (nothing to qualify)."""
    quick = (record.get("asked") or {}).get("quick")
    ok = summary[(summary["status"] == "ok") & (summary["mode"] == "throughput") & summary["median"].notna()]
    bare = [row for _, row in ok.iterrows() if measured.interval(row, "seconds_per_minibatch") is None]
    if not (quick or bare) or not (judged or len(ok)):
        return None
    text = "Smoke pass: " + (
        "`dlrepro study --quick`, 1 repeat of 3 iterations per timing, 1 epoch cut short per "
        "training; every claim it touches is inconclusive. "
        if quick
        else ""
    )
    if bare and not quick:
        text += "%d of %d timed jobs have no interval over repeats (an interval needs 6 repeats). " % (
            len(bare),
            len(ok),
        )
    return text + "Run `dlrepro study %s` without --quick for verdicts that rest on intervals." % record["study"]


def study_answer(
    study,
    record,
    record_path,
    manifest_note,
    bodies,
    summary,
    samples,
    missing,
    results_shown,
    unrecorded=None,
    price_per_hour=None,
    planned=None,
):
    """The StudyAnswer of study record ``record`` (its body) for manifest ``study`` (studies.Study, as recorded),
    from the bundle.json ``bodies`` of the runs' bundles and their merged tables (``summary`` with a ``run`` column,
    ``samples``); ``missing``: {run id: bundle id the results folder lacks}; ``unrecorded``: {spec name:
    [Reference]} for the specs of runs that have no bundle, whose published values no bundle recorded (the spec's
    today: shown beside "not run", nothing measured depends on them); ``price_per_hour``: the reader's price (USD
    per device-hour) for the cost per 1M samples, None: the price table's; ``planned``: {version set:
    {claim: plan.coverage Outcome}} of the study's host as the record holds it (plan.coverage_record.of_record;
    the verdicts take today's set where there is one, the drift's published verdicts the published set's), None: no
    plan (no bundle)."""
    plans = planned or {}
    today = plans.get("today") or next(iter(plans.values()), None)
    gone = {run: "bundle %s not found under %s" % (bid, results_shown) for run, bid in missing.items()}
    why_not = not_run(record, missing, results_shown)
    every = measured.prepare(summary, bodies)
    prepared = driftmod.rows_of(every, record, "today") if driftmod.sets_of(record) else every
    found = model.recorded(bodies)
    references = dict(unrecorded or {}, **found.references)
    bundles = {b["id"]: b for b in bodies}
    left = {
        (run, item["variant"], item["framework"]): item["reason"]
        for run, entry in record["runs"].items()
        for item in (bundles.get(entry.get("bundle")) or {}).get("left_out") or []
        if item.get("framework")
    }
    tables = paper.build(study, prepared, references, why_not, gone, left)
    verdict_list = claims.evaluate(study, prepared, why_not, gone, today)
    changes = driftmod.drift(
        study, every, record, lambda rows, name: claims.evaluate(study, rows, why_not, gone, plans.get(name, today))
    )
    published_tables = (
        paper.build(study, driftmod.rows_of(every, record, "published"), references, why_not, gone, left)
        if changes
        else []
    )
    groups = {}
    judged = []
    for v in verdict_list:
        if v.verdict in verdicts.UNJUDGED:
            groups.setdefault(v.reason, []).append(v)
        else:
            judged.append(v)
    judged.sort(key=lambda v: verdicts.rank(v.verdict))
    counts, why = paper.counts(tables)
    host = host_line(bodies)
    ran = set(summary[summary["status"] == "ok"]["run"].dropna()) if len(summary) else set()
    runs = [
        dict(
            run=run_id,
            spec=entry["spec"],
            variants=list(entry["variants"]),
            device=entry["device"],
            state=_state(entry, run_id in ran, run_id in missing),
            bundle=entry.get("bundle"),
            missing=run_id in missing,
            why_here=entry.get("why_here") or entry.get("error"),
            notes=list(entry.get("notes") or []),
            what=entry.get("what"),
        )
        for run_id, entry in record["runs"].items()
    ]
    details = model.bundle_answer(bodies, summary.drop(columns=["run"]), samples, price_per_hour) if bodies else None
    return StudyAnswer(
        study,
        record,
        record_path,
        manifest_note,
        host,
        sentence(study, host, verdict_list, list(groups.items())) + drift_sentence(changes),
        judged,
        list(groups.items()),
        tables,
        counts,
        why,
        smoke(record, prepared, judged),
        runs,
        dict(missing),
        results_shown,
        details,
        changes,
        published_tables,
    )


def drift_sentence(changes):
    """' From the published versions to today's: 1 flips, 3 keep their verdict, 2 cannot tell, 4 on the same images,
    12 not judged.' ('' without version sets)."""
    if not changes:
        return ""
    tally = {}
    for d in changes:
        tally[d.change] = tally.get(d.change, 0) + 1
    words = {
        driftmod.KEEPS: "keep their verdict" if tally.get(driftmod.KEEPS, 0) != 1 else "keeps its verdict",
        driftmod.SAME: "on the same images",
    }
    return " From the published versions to today's: %s." % ", ".join(
        "%d %s" % (tally[c], words.get(c, c)) for c in driftmod.CHANGES if c in tally
    )


def empty_summary(columns):
    """A summary with no rows and a ``run`` column, for a record none of whose bundles is at hand."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()}).assign(run=None)
