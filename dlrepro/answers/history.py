"""Each configuration's history across bundles: its median and 95% interval in every bundle that measured it, in
the order the bundles were made, and the verdict of each run against the one before it by ``dlrepro compare``'s
rules (answers.regression: the same units, test, interval and band).

A configuration is a job measured alike on one device model (answers.configkey.LINE: spec, variant, framework and
version, device, mode, mini-batch, precision, layout, cuDNN autotune, CPU threads for CPU jobs, ranks, the timed
sample, ``device_name``). A run timed differently from the one before, or on a host of another fingerprint (two
CPUs sold under one model name, one with AVX-512), is "not comparable: timer changed (...)" / "not comparable: other
host (...)" against it (answers.configkey.not_comparable), never faster or slower. Pure: bundle.json bodies and the
merged tables in (dlrepro.store.tables.merge), Configuration objects out.
"""

import hashlib
import re
from dataclasses import dataclass, field

import pandas as pd

from dlrepro.answers import configkey, measured, regression, verdicts
from dlrepro.answers.configkey import LINE

SMOKE_ONE = "a smoke pass (--quick) set against a full run: few iterations on one side, another protocol"
SMOKE_BOTH = "both smoke passes (--quick): few iterations a job"


@dataclass
class Point:
    """One bundle's measurement of a configuration: ``median`` and ``low``/``high`` (its 95% CI; None where the bundle
    measured it in several jobs, seeds pooled) in ``unit``; ``joules`` and ``usd`` per sample and per 1M samples
    (``usd_dated``: its price's date, prices.Row.dated, None for a given price; ``usd_older``: that date ends before
    the bundle was made) where the summary has them (answers.cost.priced); ``timer`` how its iterations were timed
    and ``host`` its bundle's configkey.fingerprint; ``verdict`` and ``reason`` against the point before (None for
    the first, or where either side has no timed units: a pass over images), the reason saying when a side is a
    smoke pass; verdicts.NOT_COMPARABLE where the timer or the host differs from the point before's."""

    bundle_id: str
    created: str
    suite_commit: str
    smoke: bool
    median: float
    low: float = None
    high: float = None
    unit: str = "s"
    quantity: str = ""
    verdict: str = None
    reason: str = None
    change: float = None
    joules: float = None  # J per sample, where the energy was measured (one job)
    joules_window: float = None  # its energy window over its measured window where they differ (measured.energy_window)
    usd: float = None  # USD per 1M samples (answers.cost; one job with a price)
    usd_dated: str = None
    usd_older: bool = None
    timer: str = None  # configkey.timer_of its jobs
    host: tuple = None  # configkey.fingerprint of its bundle
    throughput: float = None  # samples/s (one job)
    fraction_of_peak: float = None  # achieved over the device's peak FLOP/s, in [0, 1] (one job with a known peak)


@dataclass
class Configuration:
    key: dict  # configkey.LINE column -> value
    slug: str  # a file name, unique per key
    points: list = field(default_factory=list)


def _plain(value):
    """A key value as plain Python (None for a missing one)."""
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def slug(key):
    """'alexnet.alexnet-s.torch-2.13.0.cpu.b64.fp32.t2-1a2b3c4d': readable, and unique by the hash of every key
    value."""
    text = "%s.%s.%s-%s.%s.b%s.%s" % (
        key["spec"],
        key["variant"],
        key["framework"],
        key["framework_version"],
        key["device"],
        key["batch_size"],
        key["precision"],
    )
    text += ".t%s" % key["threads"] if key["threads"] is not None else ""
    digest = hashlib.sha256(repr([key[c] for c in LINE]).encode()).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text) + "-" + digest


def _keyed(summary):
    """The summary's ok rows with a median, comparable, with the sample their units are (epoch: convergence;
    repeat mean: the pipelined wall time, tables' samples)."""
    ok = summary[(summary["status"] == "ok") & summary["median"].notna()]
    sample = [
        "epoch" if mode == "convergence" else "repeat mean" if timer == "pipelined_wall" else "iteration"
        for mode, timer in zip(ok["mode"], ok["timer"].fillna(""))
    ]
    return configkey.normalised(ok.assign(sample=sample))


def history(bodies, summary, samples, min_effect=0.05, alpha=0.01):
    """[Configuration] with one Point per bundle that measured it ok, sorted by their slugs; points in the order
    the bundles were made (bundle.json ``created``, then id)."""
    made = {b["id"]: (b["created"], b["id"]) for b in bodies}
    smoke = {b["id"]: bool((b.get("options") or {}).get("quick")) for b in bodies}
    hosts = {b["id"]: configkey.fingerprint(b) for b in bodies}
    units = regression.units_by_bundle(samples)
    found = []
    for values, rows in _keyed(summary).groupby(LINE, dropna=False, sort=False):
        key = {c: _plain(v) for c, v in zip(LINE, values)}
        points, before = [], None
        for bid, jobs in sorted(rows.groupby("bundle_id", sort=False), key=lambda item: made[item[0]]):
            one = jobs.iloc[0]
            point = Point(
                bid,
                made[bid][0],
                one["suite_commit"],
                smoke[bid],
                float(jobs["median"].median()),
                _plain(one["ci95_low"]) if len(jobs) == 1 else None,
                _plain(one["ci95_high"]) if len(jobs) == 1 else None,
                one["unit"],
                one["quantity"],
                joules=_plain(one["energy_j_per_sample"]) if len(jobs) == 1 else None,
                joules_window=measured.energy_window(one) if len(jobs) == 1 else None,
                usd=_plain(one.get("usd_per_million_samples")) if len(jobs) == 1 else None,
                usd_dated=_plain(one.get("price_dated")) if len(jobs) == 1 else None,
                usd_older=_plain(one.get("price_older")) if len(jobs) == 1 else None,
                timer=configkey.timer_of(jobs),
                host=hosts[bid],
                throughput=_plain(one.get("throughput")) if len(jobs) == 1 else None,
                fraction_of_peak=_plain(one.get("fraction_of_peak")) if len(jobs) == 1 else None,
            )
            mine = units.get(bid, {}).get(tuple(values[:-1]))
            why = (
                configkey.not_comparable(before[0].timer, point.timer, before[0].host, point.host)
                if before is not None
                else None
            )
            if why:
                point.verdict, point.reason = verdicts.NOT_COMPARABLE, why
            elif before is not None and mine is not None and before[1] is not None:
                judged = regression.judge(
                    before[1], mine, min_effect, alpha, "epochs" if key["sample"] == "epoch" else "repeats"
                )
                point.verdict, point.reason, point.change = judged.verdict, judged.reason, _plain(judged.change)
                if point.smoke or before[0].smoke:
                    point.reason += "; %s" % (SMOKE_BOTH if point.smoke and before[0].smoke else SMOKE_ONE)
            points.append(point)
            before = (point, mine)
        found.append(Configuration(key, slug(key), points))
    return sorted(found, key=lambda c: c.slug)
