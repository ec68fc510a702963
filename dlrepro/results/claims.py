"""Whether each stated conclusion of a study holds on the hardware at hand: pure functions of a summary table.

The measurements of a claim come from the first of its runs that measured its variant (a study run ->
its bundles' summary rows, with the study's run id in a ``run`` column). On a CPU run with a thread
sweep, orderings and ratios are judged at the largest thread count measured; a scaling claim reads the
two thread (or GPU) counts it names. The study's tool names are mapped to the suite's frameworks; tools
the suite does not run (Lua Torch, Theano, Keras) take no part, and the verdict says so.

Verdicts: "holds", "partly holds", "does not hold", "not testable here" (with the reason):
  ordering  over every pair of tools in different tiers (and every batch size measured): all in the
            stated order: holds; more than half: partly; else does not hold. Pairs whose repeat-level
            95% CIs overlap are named "within noise".
  ratio     speed ratio = median over the other tools of (their value / the subject's) for times
            (inverted for rates and accuracies), > 1 when the subject is better: inside the band at every
            batch size: holds; on the band's side of 1 everywhere: partly; else does not hold.
  band      each tool's value inside the band: all: holds; some: partly; none: does not hold.
  scaling   each tool's throughput at ``to`` / at ``at`` inside the band (strong scaling and threads: the
            speedup t(at) / t(to); weak scaling: W): all: holds; some: partly; none: does not hold.
"""
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dlrepro.results import compare

NOT_TESTABLE = "not testable here"


@dataclass
class Verdict:
    claim: str
    text: str
    source: str
    kind: str
    verdict: str
    evidence: str
    run: str = None
    device: str = None
    values: list = field(default_factory=list)  # [{tool, framework, batch_size, threads, gpus, value}]


def _better(metric):
    """+1 when a larger value is better (rates, accuracy), -1 for times."""
    return 1 if compare.metric_kind(metric) in ("rate", "accuracy") or metric in ("throughput",) else -1


def _value(row, metric):
    if metric == "total_seconds":
        return None if row.status != "ok" or pd.isna(row.total_seconds) else float(row.total_seconds)
    if metric == "throughput":
        return None if row.status != "ok" or pd.isna(row.throughput) else float(row.throughput)
    return compare.measured_value(row, metric)


def _rows(summary, study, claim):
    """(run id, rows of the claim's variant in the first of its runs that measured it)."""
    for run in claim.runs:
        rows = summary[(summary["run"] == run) & (summary["variant"] == claim.variant) & (summary["status"] == "ok")]
        if len(rows):
            return run, rows
    return None, summary.iloc[0:0]


def _at_threads(rows):
    """CPU rows at their largest measured thread count (a sweep judged where the tools use the most cores)."""
    if rows.empty or rows["threads"].isna().all():
        return rows
    return rows[rows["threads"] == rows["threads"].max()]


def _values(rows, study, tools, metric):
    """{(tool, batch size): (value, row)} for the named tools that the suite runs."""
    found = {}
    for tool in tools:
        framework = study.framework(tool)
        for row in rows[rows["framework"] == framework].itertuples() if framework else ():
            value = _value(row, metric)
            if value is not None:
                found[(tool, int(row.batch_size))] = (value, row)
    return found


def _missing_note(study, tools, found):
    absent = [t for t in tools if not study.framework(t)]
    unmeasured = [t for t in tools if study.framework(t) and not any(k[0] == t for k in found)]
    parts = []
    if absent:
        parts.append("the suite does not run %s" % ", ".join(absent))
    if unmeasured:
        parts.append("no measurement of %s" % ", ".join(unmeasured))
    return "; ".join(parts)


def _noise(a, b):
    def interval(row):
        return (row.ci95_low, row.ci95_high) if compare.repeat_level(row) and pd.notna(row.ci95_low) else None

    x, y = interval(a), interval(b)
    return x is not None and y is not None and x[0] <= y[1] and y[0] <= x[1]


def _ordering(study, claim, rows):
    rows = _at_threads(rows)
    tools = [t for tier in claim.order for t in tier]
    found = _values(rows, study, tools, claim.metric)
    sign = _better(claim.metric)
    agree, pairs, wrong = 0, 0, []
    for i, upper in enumerate(claim.order):
        for lower in claim.order[i + 1:]:
            for a in upper:
                for b in lower:
                    for batch in sorted({k[1] for k in found}):
                        if (a, batch) in found and (b, batch) in found:
                            (va, ra), (vb, rb) = found[(a, batch)], found[(b, batch)]
                            pairs += 1
                            if sign * (va - vb) > 0:
                                agree += 1
                            else:
                                wrong.append("%s not ahead of %s at b%d (%.4g vs %.4g%s)" % (
                                    a, b, batch, va, vb, ", within noise" if _noise(ra, rb) else ""))
    if pairs == 0:
        return NOT_TESTABLE, "no pair of its tools measured here (%s)" % (_missing_note(study, tools, found)
                                                                          or "fewer than two tools"), found
    verdict = "holds" if agree == pairs else "partly holds" if agree > pairs / 2 else "does not hold"
    measured = ", ".join("%s %.4g" % (t, v) for (t, b), (v, _) in sorted(found.items(), key=lambda kv: sign * -kv[1][0]))
    note = _missing_note(study, tools, found)
    return verdict, "%d of %d pairs in the stated order%s; measured (best first): %s%s" % (
        agree, pairs, ("; " + "; ".join(wrong)) if wrong else "", measured, "; " + note if note else ""), found


def _ratio(study, claim, rows):
    rows = _at_threads(rows)
    found = _values(rows, study, [claim.subject] + claim.tools, claim.metric)
    sign = _better(claim.metric)
    ratios = {}
    for batch in sorted({k[1] for k in found}):
        if (claim.subject, batch) not in found:
            continue
        subject = found[(claim.subject, batch)][0]
        others = [found[(t, batch)][0] for t in claim.tools if (t, batch) in found]
        if others:
            ratios[batch] = float(np.median([(o / subject) if sign < 0 else (subject / o) for o in others]))
    if not ratios:
        return NOT_TESTABLE, "the subject and another tool were not both measured (%s)" % _missing_note(
            study, [claim.subject] + claim.tools, found), found
    low, high = claim.band
    inside = [low <= r <= high for r in ratios.values()]
    side = [(r > 1) == ((low + high) / 2 > 1) for r in ratios.values()]
    verdict = "holds" if all(inside) else "partly holds" if all(side) else "does not hold"
    return verdict, "speed ratio of %s to the others: %s (stated band %g-%g)%s" % (
        claim.subject, ", ".join("%.3g at b%d" % (r, b) for b, r in ratios.items()), low, high,
        "; " + _missing_note(study, claim.tools, found) if _missing_note(study, claim.tools, found) else ""), found


def _band(study, claim, rows):
    found = _values(_at_threads(rows), study, claim.tools, claim.metric)
    if not found:
        return NOT_TESTABLE, "none of its tools measured here (%s)" % _missing_note(study, claim.tools, found), found
    low, high = claim.band
    inside = [low <= v <= high for v, _ in found.values()]
    verdict = "holds" if all(inside) else "partly holds" if any(inside) else "does not hold"
    return verdict, "%s (stated band %g-%g)%s" % (
        ", ".join("%s %.4g" % (t, v) for (t, b), (v, _) in sorted(found.items())), low, high,
        "; " + _missing_note(study, claim.tools, found) if _missing_note(study, claim.tools, found) else ""), found


def _scaling(study, claim, rows):
    if claim.over == "threads":
        count, batch_of = rows["threads"], rows["batch_size"]
    else:  # GPUs: a one-device job counts as one rank; weak scaling pairs the jobs of one per-GPU mini-batch
        count = rows["ranks"].fillna(1)
        batch_of = rows["rank_batch_size"].fillna(rows["batch_size"]) if (rows["scaling"] == "weak").any() \
            else rows["batch_size"]
    rows = rows.assign(_count=count, _batch=batch_of)
    counts = sorted(int(c) for c in rows["_count"].dropna().unique())
    to = counts[-1] if claim.to == "max" and counts else claim.to
    found, speedups = {}, {}
    for tool in claim.tools:
        framework = study.framework(tool)
        mine = rows[rows["framework"] == framework] if framework else rows.iloc[0:0]
        base, top = mine[mine["_count"] == claim.at], mine[mine["_count"] == to]
        for batch in sorted(set(base["_batch"]) & set(top["_batch"])):
            a = base[base["_batch"] == batch]["throughput"].median()
            b = top[top["_batch"] == batch]["throughput"].median()
            if pd.notna(a) and pd.notna(b) and a > 0:
                speedups[(tool, int(batch))] = b / a
                found[(tool, int(batch))] = (b / a, None)
    if not speedups:
        reason = "%s %s and %s were not both measured (here: %s)" % (
            claim.over, claim.at, to, ", ".join(map(str, counts)) or "none")
        note = _missing_note(study, claim.tools, found)
        return NOT_TESTABLE, reason + ("; " + note if note else ""), found
    low, high = claim.band
    inside = [low <= s <= high for s in speedups.values()]
    verdict = "holds" if all(inside) else "partly holds" if any(inside) else "does not hold"
    return verdict, "throughput at %s %s / at %s: %s (stated band %g-%g)" % (
        claim.over, to, claim.at, ", ".join("%s %.3g (b%d)" % (t, s, b) for (t, b), s in sorted(speedups.items())),
        low, high), found


JUDGES = {"ordering": _ordering, "ratio": _ratio, "band": _band, "scaling": _scaling}


def evaluate(study, summary, not_run=None):
    """One Verdict per claim of ``study`` from ``summary`` (tables' summary rows with a ``run`` column);
    ``not_run``: {run id: why it did not run here}, named when a claim's runs all lack measurements."""
    not_run = not_run or {}
    verdicts = []
    for name, claim in study.claims.items():
        base = dict(claim=name, text=claim.text, source=claim.source, kind=claim.kind)
        if claim.kind == "untestable":
            verdicts.append(Verdict(verdict=NOT_TESTABLE, evidence=claim.why, **base))
            continue
        run, rows = _rows(summary, study, claim)
        if run is None:
            why = "; ".join("%s: %s" % (r, not_run.get(r, "no ok job of %s" % claim.variant)) for r in claim.runs)
            verdicts.append(Verdict(verdict=NOT_TESTABLE, evidence="not measured here (%s)" % why, **base))
            continue
        verdict, evidence, found = JUDGES[claim.kind](study, claim, rows)
        values = [{"tool": t, "batch_size": b, "value": v} for (t, b), (v, _) in sorted(found.items())]
        verdicts.append(Verdict(verdict=verdict, evidence="%s (run %s, %s)" % (evidence, run, rows["device"].iloc[0]),
                                run=run, device=rows["device"].iloc[0], values=values, **base))
    return verdicts
