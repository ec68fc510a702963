"""Whether each stated conclusion of a study holds on the hardware at hand: pure functions of a summary table.

A claim is judged only from rows of the device class it is stated for (Study.device_of: a GPU claim from GPU
jobs, a CPU claim from CPU jobs), from the first of its runs that measured its variant (a study run -> its
bundles' summary rows, with the study's run id in a ``run`` column). The study's tool names are mapped to the
suite's frameworks; tools the suite does not run (Lua Torch, Theano, Keras) take no part, and the evidence
says so. One row stands for a tool at a batch size (answers.measured.pick: the largest thread count, the
default precision; several left: ambiguous, the tool is left out and named).

Verdicts (answers.verdicts), each with what it rests on (RestsOn):
  any kind  a smoke pass among the rows it uses (answers.measured.smoke: a timing without a repeat-level
            95% interval, as --quick gives; an accuracy short of its epochs): INCONCLUSIVE "smoke pass",
            the measured values shown;
  ordering  over every pair of tools in different tiers (at every batch size measured): a pair counts
            only when the two repeat-level 95% intervals are separated; all pairs in the stated order and
            separated: HOLDS; any pair reversed and separated: DOES_NOT_HOLD; else INCONCLUSIVE;
  ratio     per other tool, its value / the subject's for times (inverted for rates and accuracies), > 1
            when the subject is better: all inside the band: HOLDS; all on the band's side of 1 (a band
            that does not contain 1) but some outside: DIRECTION_ONLY; else DOES_NOT_HOLD; min and max named;
  band      each tool's value inside the band: all: HOLDS; else DOES_NOT_HOLD;
  scaling   each tool's throughput at ``to`` / at ``at`` (threads, or GPUs: strong scaling the speedup,
            weak scaling W over one per-GPU mini-batch): judged as a ratio;
  NOT_TESTABLE with the reason: an untestable claim, another device class measured, nothing measured,
            no data-parallel path for its tools, a missing bundle ("cannot judge: ...").
A NOT_TESTABLE verdict also carries ``reason``, the one line the views fold it under (Verdict.reason: the
claim's own why, a missing bundle, "needs an NVIDIA GPU", "needs 2 GPUs (this host has 1)", "needs Torch (the
suite does not run it)", else its evidence).
"""
import re
from dataclasses import dataclass, field

from dlrepro.results.answers import measured, verdicts
from runner.adapters import capabilities

DEVICE_WORDS = {"cuda": "GPU", "cpu": "CPU"}
BUNDLE_MISSING = "cannot judge: bundle missing"


@dataclass
class Verdict:
    """One claim's verdict (verdicts.CLAIM), the evidence in words and the values it rests on."""
    claim: str
    text: str
    source: str
    kind: str
    verdict: str
    evidence: str
    run: str = None  # the study run its rows come from
    device: str = None  # the device class the claim is stated for: cpu, cuda, any
    hardware: str = None  # the hardware the claim was stated on, where the study says
    measured_on: str = None  # the device names of the rows it used
    # [{tool, framework, batch_size, threads, value, low, high, repeats, smoke}]: value in the metric's unit (a
    # scaling claim: the speedup), low/high its repeat-level 95% interval (None: none), repeats the units of that
    # interval, smoke the reason the value is a smoke pass, or None
    values: list = field(default_factory=list)
    rests_on: verdicts.RestsOn = field(default_factory=verdicts.RestsOn)
    reason: str = None  # of a NOT_TESTABLE verdict: the one line it is folded under (untestable_reason)


def _better(metric):
    """+1 when a larger value is better (rates, accuracy), -1 for times."""
    return -1 if measured.metric_kind(metric) == "time" else 1


def _side(band):
    """+1 / -1 when the band lies wholly above / below 1 (a direction is stated), else 0."""
    return 1 if band[0] > 1 else -1 if band[1] < 1 else 0


def _judge_band(values, band, directional):
    """HOLDS when every value is inside ``band``; DIRECTION_ONLY when ``directional`` and every value is on the
    band's side of 1; else DOES_NOT_HOLD."""
    low, high = band
    if all(low <= v <= high for v in values):
        return verdicts.HOLDS
    side = _side(band)
    if directional and side and all((v - 1) * side > 0 for v in values):
        return verdicts.DIRECTION_ONLY
    return verdicts.DOES_NOT_HOLD


def _missing(study, tools, found, notes):
    """The parts of the evidence that name tools left out: not run by the suite, not measured, ambiguous."""
    parts = list(notes)
    absent = [t for t in tools if not study.framework(t)]
    unmeasured = [t for t in tools if study.framework(t) and not any(k[0] == t for k in found)
                  and not any(n.startswith(t + ":") for n in notes)]
    if absent:
        parts.append("the suite does not run %s" % ", ".join(absent))
    if unmeasured:
        parts.append("no measurement of %s" % ", ".join(unmeasured))
    return parts


def _measure(study, rows, tools, metric, threads=None):
    """({(tool, batch size): row}, notes): one row per tool and batch size (measured.pick); a tool whose rows
    are ambiguous is left out and named in ``notes``."""
    found, notes = {}, []
    for tool in tools:
        framework = study.framework(tool)
        mine = rows[rows["framework"] == framework] if framework else rows.iloc[0:0]
        mine = mine[[measured.raw(r, metric) is not None for _, r in mine.iterrows()]] if len(mine) else mine
        for batch, group in mine.groupby("batch_size", sort=True):
            row, why = measured.pick(group, threads)
            if row is None:
                notes.append("%s: %s at b%d" % (tool, why, batch))
            else:
                found[(tool, int(batch))] = row
    return found, notes


def _entry(tool, batch, row, metric, value=None):
    interval = measured.interval(row, metric) or (None, None)
    return {"tool": tool, "framework": measured.get(row, "framework"), "batch_size": batch,
            "threads": measured.get(row, "threads"), "value": measured.raw(row, metric) if value is None else value,
            "low": interval[0], "high": interval[1], "repeats": measured.get(row, "ci95_units"),
            "smoke": measured.smoke(row, metric)}


def _separated(a, b):
    return a["low"] is not None and b["low"] is not None and (a["high"] < b["low"] or b["high"] < a["low"])


def _ordering(study, claim, rows):
    tools = [t for tier in claim.order for t in tier]
    found, notes = _measure(study, rows, tools, claim.metric)
    values = {k: _entry(k[0], k[1], r, claim.metric) for k, r in found.items()}
    sign = _better(claim.metric)
    pairs, agree, separated, wrong = 0, 0, 0, []
    reversed_apart = False
    for i, upper in enumerate(claim.order):
        for lower in claim.order[i + 1:]:
            for a in upper:
                for b in lower:
                    for batch in sorted({k[1] for k in found}):
                        if (a, batch) not in values or (b, batch) not in values:
                            continue
                        x, y = values[(a, batch)], values[(b, batch)]
                        pairs += 1
                        apart = _separated(x, y)
                        separated += apart
                        if sign * (x["value"] - y["value"]) > 0:
                            agree += 1
                        else:
                            reversed_apart = reversed_apart or apart
                            wrong.append("%s not ahead of %s at b%d (%.4g vs %.4g%s)" % (
                                a, b, batch, x["value"], y["value"], "" if apart else ", within noise"
                                if x["low"] is not None and y["low"] is not None else ", noise unknown"))
    missing = _missing(study, tools, found, notes)
    if pairs == 0:
        return verdicts.NOT_TESTABLE, "no pair of its tools measured here (%s)" % (
            "; ".join(missing) or "fewer than two tools"), values
    if reversed_apart:
        verdict = verdicts.DOES_NOT_HOLD
    elif agree == pairs and separated == pairs:
        verdict = verdicts.HOLDS
    else:
        verdict = verdicts.INCONCLUSIVE
    best = sorted(values.values(), key=lambda v: -sign * v["value"])
    return verdict, "%d of %d pairs in the stated order, %d of them with separated 95%% intervals%s; measured (best " \
        "first): %s%s" % (agree, pairs, separated, ("; " + "; ".join(wrong)) if wrong else "",
                          ", ".join("%s %.4g (b%d)" % (v["tool"], v["value"], v["batch_size"]) for v in best),
                          "; " + "; ".join(missing) if missing else ""), values


def _ratio(study, claim, rows):
    found, notes = _measure(study, rows, [claim.subject] + claim.tools, claim.metric)
    sign = _better(claim.metric)
    values, ratios = {}, {}
    for (tool, batch), row in found.items():
        values[(tool, batch)] = _entry(tool, batch, row, claim.metric)
    for (tool, batch), entry in values.items():
        subject = values.get((claim.subject, batch))
        if tool != claim.subject and subject is not None:
            ratios[(tool, batch)] = entry["value"] / subject["value"] if sign < 0 else subject["value"] / entry["value"]
    missing = _missing(study, [claim.subject] + claim.tools, found, notes)
    if not ratios:
        return verdicts.NOT_TESTABLE, "the subject and another tool were not both measured (%s)" % (
            "; ".join(missing) or "nothing measured"), values
    verdict = _judge_band(ratios.values(), claim.band, directional=True)
    return verdict, _ratio_words("ratio of %s to each other tool" % claim.subject, ratios, claim.band, missing), values


def _ratio_words(what, ratios, band, missing):
    """'<what>: min 1.2 (Caffe, b16), max 1.8 (CNTK, b16) (stated band 3.5-8); each: ...'."""
    (lo_key, lo), (hi_key, hi) = min(ratios.items(), key=lambda kv: kv[1]), max(ratios.items(), key=lambda kv: kv[1])
    return "%s: min %.3g (%s, b%d), max %.3g (%s, b%d) (stated band %g-%g); each: %s%s" % (
        what, lo, lo_key[0], lo_key[1], hi, hi_key[0], hi_key[1], band[0], band[1],
        ", ".join("%s %.3g (b%d)" % (t, r, b) for (t, b), r in sorted(ratios.items())),
        "; " + "; ".join(missing) if missing else "")


def _band(study, claim, rows):
    found, notes = _measure(study, rows, claim.tools, claim.metric)
    values = {k: _entry(k[0], k[1], r, claim.metric) for k, r in found.items()}
    missing = _missing(study, claim.tools, found, notes)
    if not values:
        return verdicts.NOT_TESTABLE, "none of its tools measured here (%s)" % "; ".join(missing), values
    verdict = _judge_band([v["value"] for v in values.values()], claim.band, directional=False)
    return verdict, "%s (stated band %g-%g)%s" % (
        ", ".join("%s %.4g" % (t, v["value"]) for (t, b), v in sorted(values.items())), claim.band[0], claim.band[1],
        "; " + "; ".join(missing) if missing else ""), values


def _no_data_parallel(study, claim):
    """Why none of a GPU scaling claim's tools can run a data-parallel job here, or None when one can."""
    why = []
    for tool in claim.tools:
        framework = study.framework(tool)
        reason = capabilities.unsupported_parallel(framework, "throughput") if framework else \
            "the suite does not run %s" % tool
        if reason is None:
            return None
        why.append("%s: %s" % (tool, reason))
    return "no data-parallel path for its tools here (only %s have one): %s" % (
        ", ".join(sorted(capabilities.DATA_PARALLEL)), "; ".join(why))


def _scaling(study, claim, rows):
    if claim.over == "gpus":
        weak = (rows["scaling"] == "weak").any()
        batch = rows["rank_batch_size"].fillna(rows["batch_size"]) if weak else rows["batch_size"]
        rows = rows.assign(_count=rows["ranks"].fillna(1), batch_size=batch)
    else:
        rows = rows.assign(_count=rows["threads"])
    counts = sorted(int(c) for c in rows["_count"].dropna().unique())
    to = counts[-1] if claim.to == "max" and counts else claim.to
    values, speedups, notes = {}, {}, []
    for count in (claim.at, to):
        found, more = _measure(study, rows[rows["_count"] == count], claim.tools, "throughput",
                               threads=count if claim.over == "threads" else None)
        notes += [n for n in more if n not in notes]
        for key, row in found.items():
            values.setdefault(key, {})[count] = row
    entries = {}
    for (tool, batch), at in sorted(values.items()):
        if claim.at in at and to in at:
            base, top = (measured.raw(at[c], "throughput") for c in (claim.at, to))
            speedups[(tool, batch)] = top / base
            entry = _entry(tool, batch, at[to], "throughput", value=top / base)
            entry.update(low=None, high=None, smoke=measured.smoke(at[claim.at], "throughput") or entry["smoke"])
            entries[(tool, batch)] = entry
    if not speedups:
        missing = _missing(study, claim.tools, values, notes)  # "no measurement": at neither count
        return verdicts.NOT_TESTABLE, "%s %s and %s were not both measured (here: %s)%s" % (
            claim.over, claim.at, to, ", ".join(map(str, counts)) or "none",
            "; " + "; ".join(missing) if missing else ""), entries
    missing = _missing(study, claim.tools, speedups, notes)
    verdict = _judge_band(speedups.values(), claim.band, directional=True)
    return verdict, _ratio_words("throughput at %s %s / at %s" % (claim.over, to, claim.at), speedups, claim.band,
                                 missing), entries


JUDGES = {"ordering": _ordering, "ratio": _ratio, "band": _band, "scaling": _scaling}
TESTS = {"ordering": "pairs' repeat-level 95% intervals", "ratio": "ratio per tool against the band",
         "band": "value per tool against the band", "scaling": "speedup per tool against the band"}


def _unmeasured(study, claim, summary, device, not_run, missing):
    """The evidence of a claim that none of its runs measured: a missing bundle, another device class
    measured, or why each run did not run."""
    gone = [missing[r] for r in claim.runs if r in missing]
    if gone:
        return "cannot judge: %s" % "; ".join(gone)
    ok = summary[(summary["variant"] == claim.variant) & (summary["status"] == "ok")]
    others = sorted(set(ok["device"].dropna()) - {device})
    if device != "any" and others:
        return "the claim is about %ss; this host measured %s only%s" % (
            DEVICE_WORDS[device], " and ".join(DEVICE_WORDS.get(d, d) for d in others), "".join(
                " (%s: %s)" % (r, not_run[r]) for r in claim.runs if r in not_run))
    return "not measured here (%s)" % "; ".join(
        "%s: %s" % (r, not_run.get(r, "no ok job of %s" % claim.variant)) for r in claim.runs)


def gpus_needed(study, claim):
    """The GPU count a claim needs: the count a GPU scaling claim goes ``to`` (its runs' largest for "max"),
    else the largest GPU count of its runs (1 for one-device runs)."""
    largest = max(max(study.runs[r].gpus) for r in claim.runs) if claim.runs else 1
    return claim.to if claim.over == "gpus" and isinstance(claim.to, int) else largest


def untestable_reason(study, claim, evidence, not_run, missing, gpus_here=None):
    """The one line a NOT_TESTABLE claim is folded under: the untestable claim's own why; BUNDLE_MISSING;
    "needs N GPUs (this host has M)" for a claim of N > 1 GPUs (gpus_needed) on a host of M < N (``gpus_here``,
    where known); where none of its runs has a bundle and each did not run for want of a GPU, "needs an NVIDIA
    GPU" ("needs N GPUs" for N > 1 on a host of unknown count); "needs Torch (the suite does not run it)"; else
    the evidence. ``not_run`` and ``missing`` as in evaluate."""
    if claim.kind == "untestable":
        return claim.why
    if any(r in missing for r in claim.runs):
        return BUNDLE_MISSING
    wanted = gpus_needed(study, claim)
    if wanted > 1 and gpus_here is not None and gpus_here < wanted:
        return "needs %d GPUs (this host has %d)" % (wanted, gpus_here)
    reasons = [not_run.get(r, "") for r in claim.runs]
    if reasons and all("GPU" in r for r in reasons):
        return "needs %d GPUs" % wanted if wanted > 1 else "needs an NVIDIA GPU"
    absent = re.search(r"the suite does not run ([^;)]+)", evidence or "")
    if absent:
        return "needs %s (the suite does not run it)" % absent.group(1)
    return evidence


def evaluate(study, summary, not_run=None, missing=None, gpus_here=None):
    """One Verdict per claim of ``study`` from ``summary`` (tables' summary rows with a ``run`` column).
    ``not_run``: {run id: why it did not run here}; ``missing``: {run id: why its measurements are not
    available, e.g. "bundle X missing"}, which makes its claims "cannot judge: bundle X missing";
    ``gpus_here``: the GPU count of the host that ran the study (None: unknown), named in the reason of a
    multi-GPU claim (untestable_reason)."""
    not_run, missing = not_run or {}, missing or {}
    found = []
    for name, claim in study.claims.items():
        device = study.device_of(name)
        base = dict(claim=name, text=claim.text, source=claim.source, kind=claim.kind, device=device,
                    hardware=claim.hardware)
        cause = claim.why if claim.kind == "untestable" else _no_data_parallel(study, claim) \
            if claim.kind == "scaling" and claim.over == "gpus" else None
        if cause:
            found.append(Verdict(verdict=verdicts.NOT_TESTABLE, evidence=cause, **base))
            continue
        rows, run = summary.iloc[0:0], None
        for candidate in claim.runs:
            mine = summary[(summary["run"] == candidate) & (summary["variant"] == claim.variant)
                           & (summary["status"] == "ok")]
            if device != "any":
                mine = mine[mine["device"] == device]
            if claim.batch_size is not None:
                mine = mine[mine["batch_size"] == claim.batch_size]
            if len(mine) and candidate not in missing:
                rows, run = mine, candidate
                break
        if run is None:
            found.append(Verdict(verdict=verdicts.NOT_TESTABLE, evidence=_unmeasured(
                study, claim, summary, device, not_run, missing), rests_on=verdicts.RestsOn(device=device), **base))
            continue
        verdict, evidence, values = JUDGES[claim.kind](study, claim, rows)
        values = [v for _, v in sorted(values.items())]
        smoke = sorted({"%s: %s" % (v["tool"], v["smoke"]) for v in values if v["smoke"]})
        if smoke and verdict != verdicts.NOT_TESTABLE:
            verdict, evidence = verdicts.INCONCLUSIVE, "smoke pass (%s); %s" % ("; ".join(smoke), evidence)
        names = ", ".join(sorted(set(rows["device_name"].dropna().astype(str))))
        found.append(Verdict(
            verdict=verdict, evidence="%s (run %s, %s)" % (evidence, run, names or device), run=run,
            measured_on=names or None, values=values, rests_on=verdicts.RestsOn(
                repeats=[v["repeats"] for v in values], test=TESTS[claim.kind],
                device=device, smoke=bool(smoke)), **base))
    for v in found:
        if v.verdict == verdicts.NOT_TESTABLE:
            v.reason = untestable_reason(study, study.claims[v.claim], v.evidence, not_run, missing, gpus_here)
    return found
