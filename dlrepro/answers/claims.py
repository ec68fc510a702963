"""Whether each stated conclusion of a study holds on the hardware at hand: pure functions of a summary table.

A claim is judged only from rows of the device class it is stated for (Study.device_of: a GPU claim from GPU
jobs, a CPU claim from CPU jobs), from the first of its runs that measured its variant (a study run -> its
bundles' summary rows, answers.measured.prepare'd, with the study's run id in a ``run`` column). The study's tool
names are mapped to the suite's frameworks; tools the suite does not run (Lua Torch, Theano, Keras) take no part,
and the evidence says so. One row stands for a tool at a batch size (answers.measured.pick: on a CPU the largest
thread count every tool of the claim measured, named in the evidence; the default precision; several left:
ambiguous, the tool is left out and named).

Every verdict rests on 95% intervals (answers.bands): a tool's value over its repeats (or seeds), a ratio's or a
speedup's from the intervals of the two values it divides. Verdicts (answers.verdicts), each with what it rests on
(RestsOn):
  any kind  a smoke pass among the rows it uses (answers.measured.smoke: a --quick job, an accuracy short of its
            epochs): INCONCLUSIVE "smoke pass", the measured values shown;
  ordering  over every pair of tools in different tiers (at every batch size measured): a pair counts
            only when the two intervals are separated; all pairs in the stated order and separated: HOLDS; any
            pair reversed and separated: DOES_NOT_HOLD; else INCONCLUSIVE;
  ratio     per other tool, its value / the subject's for times (inverted for rates and accuracies), > 1
            when the subject is better, with its interval; per tool: inside the band, outside it, across an edge,
            or no interval; any outside: DOES_NOT_HOLD, unless the band states a direction (it does not contain 1)
            and the interval lies wholly on the band's side of 1: DIRECTION_ONLY; else any across or without an
            interval: INCONCLUSIVE; else HOLDS; min and max named;
  band      each tool's value (its interval) against the band, judged as a ratio without a direction;
  scaling   each tool's throughput at ``to`` / at ``at`` (threads, or GPUs: strong scaling the speedup,
            weak scaling W over one per-GPU mini-batch), with its interval: judged as a ratio;
  NOT_TESTABLE with the reason: an untestable claim, another device class measured, nothing measured,
            what the host's plan says it lacks, a missing bundle ("cannot judge: ...");
  NOT_ASKED  none of its runs was asked (``study --run`` named others) and the host's plan could test it: its
            reason '--run cpu-rnn was given'.
A verdict that holds (or holds in direction) on some of the tools the claim names has a ``scope`` ('for the 3
tools measured; not measured: CNTK'), shown with the word (Verdict.said).
A NOT_TESTABLE verdict also carries ``reason``, the one line the views fold it under (Verdict.reason: the
claim's own why, a missing bundle, the plan of the study's host (dlrepro.plan.coverage: "needs an NVIDIA GPU", "needs 2
GPUs (this host has 1)", "too few of its tools can run here: ..."), else its evidence). ``points`` are the quantities
judged against the band (values,
ratios or speedups, with their intervals): what the views draw.
"""

import re
from dataclasses import dataclass, field

from dlrepro.answers import bands, measured, verdicts
from dlrepro.inputs import claimkinds

DEVICE_WORDS = {"cuda": "GPU", "cpu": "CPU"}
BUNDLE_MISSING = "cannot judge: bundle missing"
NO_INTERVAL, DIRECTION = "no interval", "direction"  # a point's place besides bands.INSIDE / OUTSIDE / ACROSS


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
    # scaling claim: the speedup), low/high its 95% interval (None: none), repeats the units of that interval,
    # smoke the reason the value is a smoke pass, or None
    values: list = field(default_factory=list)
    # [{tool, framework, batch_size, value, low, high, place}]: what was judged against ``band`` (a band claim:
    # the values; a ratio claim: the ratios; a scaling claim: the speedups; an ordering claim: the values, no band)
    points: list = field(default_factory=list)
    band: tuple = None
    rests_on: verdicts.RestsOn = field(default_factory=verdicts.RestsOn)
    reason: str = None  # of a NOT_TESTABLE verdict: the one line it is folded under (untestable_reason)
    # of a verdict that holds (or holds in direction) on some of the claim's tools: 'for the 3 tools measured; not
    # measured: CNTK, Keras(TF)', what the word stands for (scope_of)
    scope: str = None

    @property
    def said(self):
        """The verdict with its scope: 'holds for the 3 tools measured; not measured: CNTK'."""
        return "%s %s" % (self.verdict, self.scope) if self.scope else self.verdict


def better(metric):
    """+1 when a larger value is better (rates, accuracy), -1 for times."""
    return -1 if measured.metric_kind(metric) == "time" else 1


def _place(point, band, directional):
    """Where a judged point's interval lies: bands.INSIDE / OUTSIDE / ACROSS, DIRECTION (outside the band but
    wholly on its side of 1, where the band states a direction), or NO_INTERVAL."""
    if point["low"] is None:
        return NO_INTERVAL
    where = bands.position(point["low"], point["high"], band)
    side = bands.side(band) if directional else 0
    if where == bands.OUTSIDE and side and (point["low"] > 1 if side > 0 else point["high"] < 1):
        return DIRECTION
    return where


def _judge_band(points, band, directional):
    """The verdict of the ``points`` (each with value, low, high) against ``band``; each point gets its ``place``.
    Any outside: DOES_NOT_HOLD; else any across or without an interval: INCONCLUSIVE; else any only in the stated
    direction: DIRECTION_ONLY; else HOLDS."""
    for point in points:
        point["place"] = _place(point, band, directional)
    places = {p["place"] for p in points}
    if bands.OUTSIDE in places:
        return verdicts.DOES_NOT_HOLD
    if bands.ACROSS in places or NO_INTERVAL in places:
        return verdicts.INCONCLUSIVE
    return verdicts.DIRECTION_ONLY if DIRECTION in places else verdicts.HOLDS


def _missing(study, tools, found, notes):
    """The parts of the evidence that name tools left out: not run by the suite, not measured, ambiguous."""
    parts = list(notes)
    absent = [t for t in tools if not study.framework(t)]
    unmeasured = [
        t
        for t in tools
        if study.framework(t) and not any(k[0] == t for k in found) and not any(n.startswith(t + ":") for n in notes)
    ]
    if absent:
        parts.append("the suite does not run %s" % study.not_run_text(absent))
    if unmeasured:
        parts.append("no measurement of %s" % ", ".join(unmeasured))
    return parts


def _measure(study, rows, tools, metric, threads=None):
    """({(tool, batch size): row}, notes, thread count): one row per tool and batch size (measured.pick); on a CPU
    at ``threads``, else the largest thread count every measured tool has (measured.common_threads), so that tools
    are set side by side at one count; a tool whose rows are ambiguous, or that lacks that count, is left out and
    named in ``notes``."""
    found, notes = {}, []
    usable = {}
    for tool in tools:
        framework = study.framework(tool)
        mine = rows[rows["framework"] == framework] if framework else rows.iloc[0:0]
        usable[tool] = mine[[measured.raw(r, metric) is not None for _, r in mine.iterrows()]] if len(mine) else mine
    if threads is None:
        present = [study.framework(t) for t, mine in usable.items() if len(mine)]
        threads = measured.common_threads(rows[rows["framework"].isin(present)], present) if present else None
    for tool, mine in usable.items():
        for batch, group in mine.groupby("batch_size", sort=True):
            row, why = measured.pick(group, threads)
            if row is None:
                notes.append("%s: %s at b%d" % (tool, why, batch))
            else:
                found[(tool, int(batch))] = row
    return found, notes, threads


def _entry(tool, batch, row, metric, value=None, interval=None):
    low, high = interval if value is not None else (measured.interval(row, metric) or (None, None))
    units = (
        measured.get(row, "seeds") if measured.get(row, "mode") == "convergence" else measured.get(row, "ci95_units")
    )
    return {
        "tool": tool,
        "framework": measured.get(row, "framework"),
        "batch_size": batch,
        "threads": measured.get(row, "threads"),
        "value": measured.raw(row, metric) if value is None else value,
        "low": low,
        "high": high,
        "repeats": units,
        "smoke": measured.smoke(row, metric),
        "no_interval": None if low is not None else measured.no_interval(row, metric),
    }


def _separated(a, b):
    return a["low"] is not None and b["low"] is not None and (a["high"] < b["low"] or b["high"] < a["low"])


def _at(threads):
    return " at %d thread%s" % (threads, "s"[threads == 1 :]) if threads else ""


def _number(value, percent=False):
    """'0.8693' or, for an accuracy, '86.9%'."""
    return "%.1f%%" % (100 * value) if percent else "%.4g" % value


def _shown(entry, percent=False):
    """'PyTorch 0.869 [0.861-0.874]' of a value or judged point, its interval in brackets where it has one
    (an accuracy in percent: 'PyTorch 86.9% [86.1-87.4%]')."""
    if entry.get("low") is None:
        return "%s %s" % (entry["tool"], _number(entry["value"], percent))
    low, high = _number(entry["low"], percent), _number(entry["high"], percent)
    return "%s %s [%s-%s]" % (
        entry["tool"],
        _number(entry["value"], percent),
        low.rstrip("%") if percent else low,
        high,
    )


@claimkinds.judge("ordering")
def _ordering(study, claim, rows):
    tools = [t for tier in claim.order for t in tier]
    found, notes, threads = _measure(study, rows, tools, claim.metric)
    values = {k: _entry(k[0], k[1], r, claim.metric) for k, r in found.items()}
    sign = better(claim.metric)
    pairs, agree, separated, wrong = 0, 0, 0, []
    reversed_apart = False
    for i, upper in enumerate(claim.order):
        for lower in claim.order[i + 1 :]:
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
                            wrong.append(
                                "%s not ahead of %s at b%d (%.4g vs %.4g%s)"
                                % (
                                    a,
                                    b,
                                    batch,
                                    x["value"],
                                    y["value"],
                                    ""
                                    if apart
                                    else ", within noise"
                                    if x["low"] is not None and y["low"] is not None
                                    else ", noise unknown",
                                )
                            )
    missing = _missing(study, tools, found, notes)
    if pairs == 0:
        return (
            verdicts.NOT_TESTABLE,
            "no pair of its tools measured here (%s)" % ("; ".join(missing) or "fewer than two tools"),
            values,
            [],
            None,
        )
    if reversed_apart:
        verdict = verdicts.DOES_NOT_HOLD
    elif agree == pairs and separated == pairs:
        verdict = verdicts.HOLDS
    else:
        verdict = verdicts.INCONCLUSIVE
    best = sorted(values.values(), key=lambda v: -sign * v["value"])
    return (
        verdict,
        "%d of %d pairs in the stated order, %d of them with separated 95%% intervals%s; measured%s "
        "(best first): %s%s"
        % (
            agree,
            pairs,
            separated,
            ("; " + "; ".join(wrong)) if wrong else "",
            _at(threads),
            ", ".join("%s (b%d)" % (_shown(v), v["batch_size"]) for v in best),
            "; " + "; ".join(missing) if missing else "",
        ),
        values,
        list(best),
        None,
    )


def _ratios(values, subject, sign):
    """{(tool, batch): point} of each other tool's value / the subject's for times (subject / tool for rates and
    accuracies), with the interval of that ratio (bands.ratio)."""
    points = {}
    for (tool, batch), entry in values.items():
        base = values.get((subject, batch))
        if tool == subject or base is None:
            continue
        mine = (entry["low"], entry["high"]) if entry["low"] is not None else None
        theirs = (base["low"], base["high"]) if base["low"] is not None else None
        top, bottom = (mine, theirs) if sign < 0 else (theirs, mine)
        interval = bands.ratio(top, bottom) or (None, None)
        value = entry["value"] / base["value"] if sign < 0 else base["value"] / entry["value"]
        points[(tool, batch)] = {
            "tool": tool,
            "framework": entry["framework"],
            "batch_size": batch,
            "value": value,
            "low": interval[0],
            "high": interval[1],
        }
    return points


@claimkinds.judge("ratio")
def _ratio(study, claim, rows):
    found, notes, threads = _measure(study, rows, [claim.subject] + claim.tools, claim.metric)
    values = {k: _entry(k[0], k[1], row, claim.metric) for k, row in found.items()}
    points = _ratios(values, claim.subject, better(claim.metric))
    missing = _missing(study, [claim.subject] + claim.tools, found, notes)
    if not points:
        return _untestable(
            "the subject and another tool were not both measured (%s)" % ("; ".join(missing) or "nothing measured"),
            values,
        )
    verdict = _judge_band(list(points.values()), claim.band, directional=True)
    return (
        verdict,
        _ratio_words("ratio of %s to each other tool%s" % (claim.subject, _at(threads)), points, claim.band, missing),
        values,
        list(points.values()),
        tuple(claim.band),
    )


def _untestable(why, values):
    """What a judge returns when the claim cannot be judged from the rows: NOT_TESTABLE and why."""
    return verdicts.NOT_TESTABLE, why, values, [], None


def _ratio_words(what, points, band, missing, percent=False):
    """'<what>: min 1.2 (Caffe, b16), max 1.8 (CNTK, b16) (stated band 3.5-8); each: CNTK 1.8 [1.7-1.9] (b16),
    ...': every point with its 95% interval, and what is outside, across or without one."""
    ratios = {k: p["value"] for k, p in points.items()}
    (lo_key, lo), (hi_key, hi) = min(ratios.items(), key=lambda kv: kv[1]), max(ratios.items(), key=lambda kv: kv[1])
    places = {}
    for (tool, _), p in sorted(points.items()):
        if p.get("place") not in (None, bands.INSIDE):
            places.setdefault(p["place"], []).append(tool)
    said = "; ".join(
        "%s: %s"
        % (
            {
                bands.ACROSS: "interval across the band",
                bands.OUTSIDE: "outside the band",
                DIRECTION: "the stated direction only",
            }[place],
            ", ".join(tools),
        )
        for place, tools in places.items()
        if place != NO_INTERVAL
    )
    stated = "%g-%g%%" % (100 * band[0], 100 * band[1]) if percent else "%g-%g" % tuple(band)
    return "%s: min %s (%s, b%d), max %s (%s, b%d) (stated band %s); each: %s%s%s" % (
        what,
        _number(lo, percent) if percent else "%.3g" % lo,
        lo_key[0],
        lo_key[1],
        _number(hi, percent) if percent else "%.3g" % hi,
        hi_key[0],
        hi_key[1],
        stated,
        ", ".join("%s (b%d)" % (_shown(p, percent), b) for (t, b), p in sorted(points.items())),
        "; " + said if said else "",
        "; " + "; ".join(missing) if missing else "",
    )


@claimkinds.judge("band")
def _band(study, claim, rows):
    found, notes, threads = _measure(study, rows, claim.tools, claim.metric)
    values = {k: _entry(k[0], k[1], r, claim.metric) for k, r in found.items()}
    missing = _missing(study, claim.tools, found, notes)
    if not values:
        return _untestable("none of its tools measured here (%s)" % "; ".join(missing), values)
    points = {
        k: {key: v[key] for key in ("tool", "framework", "batch_size", "value", "low", "high")}
        for k, v in values.items()
    }
    verdict = _judge_band(list(points.values()), claim.band, directional=False)
    return (
        verdict,
        _ratio_words(
            "value per tool%s" % _at(threads), points, claim.band, missing, percent=claim.metric == "test_accuracy"
        ),
        values,
        list(points.values()),
        tuple(claim.band),
    )


@claimkinds.judge("scaling")
def _scaling(study, claim, rows):
    if claim.over == "gpus":
        weak = (rows["scaling"] == "weak").any()
        batch = rows["rank_batch_size"].fillna(rows["batch_size"]) if weak else rows["batch_size"]
        rows = rows.assign(_count=rows["ranks"].fillna(1), batch_size=batch)
    else:
        rows = rows.assign(_count=rows["threads"])
    counts = sorted(int(c) for c in rows["_count"].dropna().unique())
    to = counts[-1] if claim.to == "max" and counts else claim.to
    values, points, notes = {}, {}, []
    for count in (claim.at, to):
        found, more, _ = _measure(
            study,
            rows[rows["_count"] == count],
            claim.tools,
            "throughput",
            threads=count if claim.over == "threads" else None,
        )
        notes += [n for n in more if n not in notes]
        for key, row in found.items():
            values.setdefault(key, {})[count] = row
    entries = {}
    for (tool, batch), at in sorted(values.items()):
        if claim.at in at and to in at:
            base, top = (measured.raw(at[c], "throughput") for c in (claim.at, to))
            interval = bands.ratio(
                measured.interval(at[to], "throughput"), measured.interval(at[claim.at], "throughput")
            ) or (None, None)
            entry = _entry(tool, batch, at[to], "throughput", value=top / base, interval=interval)
            entry["smoke"] = measured.smoke(at[claim.at], "throughput") or entry["smoke"]
            entries[(tool, batch)] = entry
            points[(tool, batch)] = {k: entry[k] for k in ("tool", "framework", "batch_size", "value", "low", "high")}
    if not points:
        missing = _missing(study, claim.tools, values, notes)  # "no measurement": at neither count
        return _untestable(
            "%s %s and %s were not both measured (here: %s)%s"
            % (
                claim.over,
                claim.at,
                to,
                ", ".join(map(str, counts)) or "none",
                "; " + "; ".join(missing) if missing else "",
            ),
            entries,
        )
    missing = _missing(study, claim.tools, points, notes)
    verdict = _judge_band(list(points.values()), claim.band, directional=True)
    return (
        verdict,
        _ratio_words("throughput at %s %s / at %s" % (claim.over, to, claim.at), points, claim.band, missing),
        entries,
        list(points.values()),
        tuple(claim.band),
    )


def _grouped(values, key):
    """'Caffe, PyTorch (--quick: 3 iterations in 1 repeat); ...': the tools of ``values`` by their reason ``key``
    ("smoke" or "no_interval"), or '' when none has one."""
    found = {}
    for v in values:
        if v.get(key):
            found.setdefault(v[key], set()).add(v["tool"])
    return "; ".join("%s (%s)" % (", ".join(sorted(tools)), why) for why, tools in sorted(found.items()))


def _unit(claim):
    """What a claim's intervals are over: the seeds of a training (accuracies, training times), else repeats."""
    metric = claim.metric or ""
    return "seed" if metric in ("test_accuracy", "total_seconds") or measured.epochs_named(metric) else "repeat"


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
            DEVICE_WORDS[device],
            " and ".join(DEVICE_WORDS.get(d, d) for d in others),
            "".join(" (%s: %s)" % (r, not_run[r]) for r in claim.runs if r in not_run),
        )
    return "not measured here (%s)" % "; ".join(
        "%s: %s" % (r, not_run.get(r) or _unfinished(summary, r, claim.variant) or "no ok job of %s" % claim.variant)
        for r in claim.runs
    )


def _unfinished(summary, run, variant):
    """'its jobs were skipped: dataset cifar10 is not in the cache' of a run whose jobs of ``variant`` all ended
    without a measurement (the first one's status and reason, up to its parenthesis), else None."""
    rows = summary[(summary["run"] == run) & (summary["variant"] == variant)]
    if not len(rows) or (rows["status"] == "ok").any():
        return None
    first = rows.iloc[0]
    return "its jobs were %s: %s" % (first["status"], str(measured.get(first, "reason") or "no reason").split(" (")[0])


def _dataset_missing(summary, claim):
    """'needs dataset cifar10 (`dlrepro datasets.fetch cifar10`)' when a run of the claim skipped its jobs for a
    dataset the cache lacks (the job's recorded reason and remedy), else None."""
    rows = summary[
        summary["run"].isin(claim.runs) & (summary["variant"] == claim.variant) & (summary["status"] == "skipped")
    ]
    for _, row in rows.iterrows():
        found = re.match(r"dataset (\S+) is not in the cache", str(measured.get(row, "reason") or ""))
        if found:
            command = re.search(r"`(?:invoke|dlrepro) (datasets\.fetch \S+)`", str(measured.get(row, "remedy") or ""))
            return "needs dataset %s%s" % (found.group(1), " (`dlrepro %s`)" % command.group(1) if command else "")
    return None


def untestable_reason(study, claim, evidence, missing, summary=None, planned=None):
    """The one line a NOT_TESTABLE claim is folded under: the untestable claim's own why; BUNDLE_MISSING; where the
    plan of the study's host (dlrepro.plan.coverage, ``planned``: the claim's Outcome) says it cannot be tested there,
    the plan's headline (a GPU, GPUs or cores the host lacks; too few of its tools can run, and why); "needs
    dataset X (`dlrepro datasets.fetch X`)" where a run skipped its jobs for it; else the evidence. ``missing`` as
    in evaluate; ``summary`` the rows it was judged from."""
    if not claimkinds.of(claim).testable:
        return claim.why
    if any(r in missing for r in claim.runs):
        return BUNDLE_MISSING
    if planned is not None and not planned.testable:
        return planned.headline
    dataset = _dataset_missing(summary, claim) if summary is not None and len(summary) else None
    return dataset or evidence


def _not_asked(claim, not_run, plan):
    """'--run cpu-rnn was given' when none of the claim's runs was asked (each one's why in ``not_run`` says 'not
    asked: ...') and the host's ``plan`` (a dlrepro.plan.coverage Outcome, None: none) does not say it cannot test the
    claim there; else None (a claim the host could not test anyway is NOT_TESTABLE with the plan's reason)."""
    whys = [re.search(r"not asked: (.+)", not_run.get(r) or "") for r in claim.runs]
    if not claim.runs or not all(whys) or (plan is not None and not plan.testable):
        return None
    return whys[0].group(1)


def scope_of(claim, values):
    """For a claim judged on ``values`` (entries with a ``tool``): 'for the 3 tools measured; not measured: CNTK,
    Keras(TF)' when some of the tools it is stated for have no value (not run by the suite, not measured, left
    out), else None: a verdict that holds stands for the tools measured, never for every tool the claim names."""
    stated = list(
        dict.fromkeys(
            ([claim.subject] if claim.subject else []) + claim.tools + [t for tier in claim.order for t in tier]
        )
    )
    measured_tools = {v["tool"] for v in values}
    absent = [t for t in stated if t not in measured_tools]
    if not absent:
        return None
    return "for the %d tool%s measured; not measured: %s" % (
        len(measured_tools),
        "" if len(measured_tools) == 1 else "s",
        ", ".join(absent),
    )


def evaluate(study, summary, not_run=None, missing=None, planned=None):
    """One Verdict per claim of ``study`` from ``summary`` (tables' summary rows with a ``run`` column).
    ``not_run``: {run id: why it did not run here}; ``missing``: {run id: why its measurements are not
    available, e.g. "bundle X missing"}, which makes its claims "cannot judge: bundle X missing";
    ``planned``: {claim: dlrepro.plan.coverage Outcome} on the host that ran the study: a claim it says cannot be tested
    there is NOT_TESTABLE with the plan's reason as its evidence (untestable_reason)."""
    not_run, missing = not_run or {}, missing or {}
    found = []
    for name, claim in study.claims.items():
        device = study.device_of(name)
        base = dict(
            claim=name, text=claim.text, source=claim.source, kind=claim.kind, device=device, hardware=claim.hardware
        )
        kind = claimkinds.of(claim)
        if not kind.testable:
            found.append(Verdict(verdict=verdicts.NOT_TESTABLE, evidence=claim.why, **base))
            continue
        rows, run = summary.iloc[0:0], None
        for candidate in claim.runs:
            mine = summary[
                (summary["run"] == candidate) & (summary["variant"] == claim.variant) & (summary["status"] == "ok")
            ]
            if device != "any":
                mine = mine[mine["device"] == device]
            if claim.batch_size is not None:
                mine = mine[mine["batch_size"] == claim.batch_size]
            if len(mine) and candidate not in missing:
                rows, run = mine, candidate
                break
        asked = _not_asked(claim, not_run, (planned or {}).get(name)) if run is None else None
        if asked:
            found.append(
                Verdict(
                    verdict=verdicts.NOT_ASKED,
                    evidence="its runs (%s) were not asked: %s" % (", ".join(claim.runs), asked),
                    reason=asked,
                    rests_on=verdicts.RestsOn(device=device),
                    **base,
                )
            )
            continue
        if run is None:
            found.append(
                Verdict(
                    verdict=verdicts.NOT_TESTABLE,
                    evidence=_unmeasured(study, claim, summary, device, not_run, missing),
                    rests_on=verdicts.RestsOn(device=device),
                    **base,
                )
            )
            continue
        verdict, evidence, values, points, band = kind.judge(study, claim, rows)
        values = [v for _, v in sorted(values.items())]
        smoke, bare = _grouped(values, "smoke"), _grouped(values, "no_interval")
        if smoke and verdict != verdicts.NOT_TESTABLE:
            verdict, evidence = verdicts.INCONCLUSIVE, "smoke pass of %s; %s" % (smoke, evidence)
        elif bare and verdict != verdicts.NOT_TESTABLE:
            evidence = "%s; no 95%% interval for %s" % (evidence, bare)
        names = ", ".join(sorted(set(rows["device_name"].dropna().astype(str))))
        scope = scope_of(claim, values) if verdict in (verdicts.HOLDS, verdicts.DIRECTION_ONLY) else None
        found.append(
            Verdict(
                scope=scope,
                verdict=verdict,
                evidence="%s (run %s, %s)" % (evidence, run, names or device),
                run=run,
                measured_on=names or None,
                values=values,
                points=points,
                band=band,
                rests_on=verdicts.RestsOn(
                    repeats=[v["repeats"] for v in values],
                    test=kind.test,
                    unit=_unit(claim),
                    device=device,
                    smoke=bool(smoke),
                ),
                **base,
            )
        )
    planned = planned or {}
    for v in found:
        if v.verdict == verdicts.NOT_TESTABLE:
            plan = planned.get(v.claim)
            v.reason = untestable_reason(study, study.claims[v.claim], v.evidence, missing, summary, plan)
            if plan is not None and not plan.testable and v.reason == plan.headline and plan.cause != "untestable":
                v.evidence = plan.reason
    return found
