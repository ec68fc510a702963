"""Comparable across hardware: achieved FLOP/s, the fraction of the device's peak, then and now.

A job's work per timed mini-batch is counted from its spec (runner.flops: a training iteration, or an
inference pass, as direct convolutions and plain matrix products: the "model FLOPs"; a library that picks
Winograd or FFT convolutions does fewer, so a fraction near or above 1 is possible and says so); over the measured
seconds per mini-batch (the median) it gives the achieved FLOP/s,
and over the device's peak at the precision the job ran (dlrepro.inputs.peaks: fp32 with TF32 off, tf32, bf16,
fp16) the fraction of peak. A published timing on hardware with a known peak gets the same two numbers
from the cell's own seconds, so a K80 cell of 2017 and an H200 job of today can be set side by side:
never judged ("reproduces" needs the same hardware), shown as verdicts.OTHER_HARDWARE.

Functions are pure: tables and the specs as the bundles recorded them in, rows (DataFrames) out; the per-job columns
are written with the bundle's tables (dlrepro.store.peak_columns), the figure is a view's
(dlrepro.views.plots).
"""

import re

import pandas as pd

from dlrepro.answers import measured
from dlrepro.answers.verdicts import NOT_RUN, OTHER_HARDWARE
from dlrepro.inputs import eras, peaks
from dlrepro.inputs.frameworks import in_study
from runner import flops

# a published training wall time covers epochs x (training samples // mini-batch) iterations, feeding included
TRAINING_SAMPLES = {"cifar10": 50000, "mnist": 60000, "imdb": 25000}
TRAINING_SOURCES = {
    "cifar10": "CIFAR-10: 50,000 training images",
    "mnist": "MNIST: 60,000 training images",
    "imdb": "IMDB: 25,000 training reviews",
}
PUBLISHED_COLUMNS = [
    "spec",
    "model",
    "batch_size",
    "metric",
    "published_framework",
    "published_version",
    "published_hardware",
    "published_value",
    "published_unit",
    "published_seconds",
    "flops",
    "published_achieved_flops",
    "published_peak_flops",
    "published_peak_device",
    "published_fraction",
    "published_fraction_label",
    "framework",
    "framework_version",
    "measured_hardware",
    "measured_batch_size",
    "measured_threads",
    "precision",
    "measured_seconds",
    "measured_achieved_flops",
    "measured_peak_device",
    "measured_fraction",
    "measured_fraction_label",
    "verdict",
    "sentence",
    "basis",
    "reference_id",
    "source",
    "bundle_id",
    "job_id",
]
THEN_AND_NOW_KEY = [
    "spec",
    "variant",
    "batch_size",
    "framework",
    "mode",
    "device",
    "device_name",
    "host",
    "precision",
    "threads",
    "ranks",
]
THEN_AND_NOW_COLUMNS = THEN_AND_NOW_KEY + [
    "then_version",
    "now_version",
    "then_seconds",
    "now_seconds",
    "speedup",
    "speedup_low",
    "speedup_high",
    "smoke",
    "then_job_id",
    "now_job_id",
]


def _plain(value):
    """A resolved spec's dicts as job.json has them: unset (None) options left out, at any depth."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _model_dict(spec, model_name):
    m = spec["models"][model_name]
    return {"layers": _plain(m["layers"]), "input_shape": list(m["input_shape"]), "parameters": m["parameters"]}


def _epochs(metric):
    match = re.fullmatch(r"(?:training_)?wall_time_(\d+)_epochs", metric)
    return int(match.group(1)) if match else None


def published_work(spec, ref):
    """(FLOPs, seconds, basis) of a published cell: the work its value timed and the seconds it took, or
    None where the metric cannot be turned into work (accuracy, ratios, a dataset of unknown size). ``spec``: the
    resolved spec as a bundle recorded it (bundle.json's spec.resolved, a dict).

    seconds_per_minibatch: a training iteration of ref.batch_size; images_per_second and
    seconds_per_1000_images: inference passes (forward FLOPs per image); (training_)wall_time_N_epochs:
    N x (training samples // batch) training iterations (TRAINING_SAMPLES), their wall time including feeding
    and anything else the loop did, so its efficiency is a lower bound."""
    variant = spec["variants"].get(ref.variant) if ref.variant else None
    if variant is None or not ref.batch_size or isinstance(ref.value, list):
        return None
    model = _model_dict(spec, variant["model"])
    optimizer = _plain(variant["optimizer"]) if variant.get("optimizer") else None
    value = float(ref.value) * {"min": 60.0}.get(ref.unit, 1.0)
    if ref.metric == "seconds_per_minibatch":
        return flops.of_model(model, ref.batch_size, optimizer)["training"], value, "a training iteration"
    per_image = flops.of_model(model, 1)["inference"]
    if ref.metric == "images_per_second":
        return per_image, 1.0 / value, "an inference pass per image"
    if ref.metric == "seconds_per_1000_images":
        return 1000 * per_image, value, "an inference pass of 1000 images"
    epochs = _epochs(ref.metric)
    dataset = (variant.get("data") or {}).get("name")
    if epochs and dataset in TRAINING_SAMPLES:
        iterations = epochs * (TRAINING_SAMPLES[dataset] // ref.batch_size)
        return (
            iterations * flops.of_model(model, ref.batch_size, optimizer)["training"],
            value,
            "%d training iterations (%s), wall time: a lower bound" % (iterations, TRAINING_SOURCES[dataset]),
        )
    return None


def fraction_label(fraction, estimate=False, decimals=1):
    """How a fraction of peak is shown: '79.7%' (``decimals`` places; under 1%: two significant digits); '' for none.
    Above 1 (an achieved FLOP rate above the peak) never a bare figure over 100%: '≥100% (at or above the
    estimate)' against a CPU estimate (``estimate``; it assumes the recorded clock on every core, which turbo
    exceeds), '≥100% (at or above the peak)' against a datasheet peak (at the boost clock, which GPU Boost can
    exceed); both count FLOPs as direct convolutions and plain matrix products, which Winograd or FFT undercut."""
    if fraction is None or pd.isna(fraction):
        return ""
    if fraction > 1:
        return "≥100%% (at or above the %s)" % ("estimate" if estimate else "peak")
    return "%.*f%%" % (decimals, 100 * fraction) if fraction >= 0.01 else "%.2g%%" % (100 * fraction)


SMOKE = ", smoke pass"  # after the fraction of a job whose time is a smoke pass (answers.measured.smoke)


def job_label(row):
    """A job's (summary row's) fraction of peak as fraction_label shows it (against a CPU estimate where its peak
    device is one), marked SMOKE where its time is a smoke pass: shown, never a figure of the full protocol."""
    label = fraction_label(
        measured.get(row, "fraction_of_peak"), str(measured.get(row, "peak_device")) == peaks.CPU_DEVICE
    )
    return label + SMOKE if label and measured.smoke(row, "seconds_per_minibatch") else label


def labelled(summary):
    """``summary`` with ``fraction_of_peak_label``: each job's job_label."""
    return summary.assign(fraction_of_peak_label=[job_label(row) for row in summary.to_dict("records")])


def sentence(
    published_fraction, published_device, measured_fraction, measured_hardware, batch_note="", measured_estimate=False
):
    """'other hardware: 31% of a tesla-k80-gk210's peak then, 24% of this NVIDIA H200's now'; without a measured
    fraction 'not run: 31% of a tesla-k80-gk210's peak then; not measured now'. Fractions as fraction_label
    gives them (``measured_estimate``: the measured one is against a CPU estimate)."""
    then = "%s of a %s's peak then" % (fraction_label(published_fraction, decimals=0), published_device)
    if measured_fraction is None or pd.isna(measured_fraction):
        return "%s: %s; not measured now" % (NOT_RUN, then)
    return "%s: %s, %s of this %s's now%s" % (
        OTHER_HARDWARE,
        then,
        fraction_label(measured_fraction, measured_estimate, 0),
        measured_hardware,
        batch_note,
    )


def _is(value, wanted):
    """Whether a table's ``value`` (None, NaN or NA: missing) equals ``wanted``."""
    return not pd.isna(value) and value == wanted


def published_efficiency(summary, references, specs):
    """One row per (published timing on hardware with a known fp32 peak, measured job of the same network and
    framework (dlrepro.inputs.frameworks.study_names), or none): PUBLISHED_COLUMNS, the verdict OTHER_HARDWARE beside a
    measured job (never "reproduces"), NOT_RUN where no job of the network and framework was measured.
    The measured jobs are those of the published mini-batch where there are any, else those of every other
    mini-batch measured (``measured_batch_size`` says which; the sentence names it); a CPU job's thread count is
    ``measured_threads`` (a sweep gives one row per count).

    ``summary``: a summary table (dlrepro.store.tables, v6: fraction_of_peak). ``references``: {spec name:
    [Reference]} and ``specs``: {spec name: resolved spec dict}, both as the bundles recorded them
    (answers.model.recorded). The published side is at fp32 (the studies' GPUs had no
    TF32 or bf16 tensor cores); the measured side at each precision measured, one row each."""
    rows = []
    for name, refs in references.items():
        spec = specs[name]
        jobs = summary[(summary["spec"] == name) & summary["fraction_of_peak"].notna()] if len(summary) else summary
        models = {v: spec["variants"][v]["model"] for v in jobs["variant"].unique() if v in spec["variants"]}
        frameworks = jobs["framework"].dropna().unique()
        job_rows = list(
            jobs.itertuples(index=False)
        )  # once per spec (a selection per reference: 85 of a site's 402 s profiled)
        for ref in refs:
            peak = peaks.published(ref.hardware)
            work = published_work(spec, ref) if peak is not None and peak.flops else None
            if work is None:
                continue
            work_flops, seconds, basis = work
            fraction = work_flops / seconds / peak.flops
            model = spec["variants"][ref.variant]["model"]
            inference = ref.metric in ("images_per_second", "seconds_per_1000_images")
            base = {
                "spec": name,
                "model": model,
                "batch_size": ref.batch_size,
                "metric": ref.metric,
                "published_framework": ref.framework,
                "published_version": ref.framework_version,
                "published_hardware": ref.hardware,
                "published_value": ref.value,
                "published_unit": ref.unit,
                "published_seconds": seconds,
                "flops": work_flops,
                "published_achieved_flops": work_flops / seconds,
                "published_peak_flops": peak.flops,
                "published_peak_device": peak.device,
                "published_fraction": fraction,
                "published_fraction_label": fraction_label(fraction),
                "verdict": OTHER_HARDWARE,
                "basis": basis,
                "reference_id": ref.id,
                "source": ref.source,
            }
            ours = {f for f in frameworks if in_study(f, ref.framework)}
            variants = {v for v, m in models.items() if m == model}
            mode = "inference" if inference else "throughput"
            matched = [r for r in job_rows if r.variant in variants and _is(r.mode, mode) and r.framework in ours]
            if any(_is(r.batch_size, ref.batch_size) for r in matched):
                matched = [r for r in matched if _is(r.batch_size, ref.batch_size)]
            for row in matched:
                note = (
                    ""
                    if row.batch_size == ref.batch_size
                    else " (mini-batch %d, %d then)" % (row.batch_size, ref.batch_size)
                )
                if measured.smoke(row, "seconds_per_minibatch"):
                    note += SMOKE
                estimate = str(row.peak_device) == peaks.CPU_DEVICE
                rows.append(
                    dict(
                        base,
                        framework=row.framework,
                        framework_version=row.framework_version,
                        measured_hardware=row.device_name,
                        measured_batch_size=row.batch_size,
                        measured_threads=row.threads if row.device == "cpu" else None,
                        precision=row.precision,
                        measured_seconds=row.median,
                        measured_achieved_flops=row.achieved_flops,
                        measured_peak_device=row.peak_device,
                        measured_fraction=row.fraction_of_peak,
                        measured_fraction_label=job_label(row._asdict()),
                        sentence=sentence(fraction, peak.device, row.fraction_of_peak, row.device_name, note, estimate),
                        bundle_id=row.bundle_id,
                        job_id=row.job_id,
                    )
                )
            if not matched:
                rows.append(dict(base, verdict=NOT_RUN, sentence=sentence(fraction, peak.device, None, None)))
    return pd.DataFrame(rows, columns=PUBLISHED_COLUMNS)


def then_and_now(summary):
    """The speedup of a framework's newest version over its oldest on the same host, device, spec, variant,
    batch size, precision and threads (an era image against a modern one: MXNet 0.12.0 and 1.9.1):
    THEN_AND_NOW_COLUMNS, one row per such pair of ok jobs timed in seconds per mini-batch.

    speedup = then_seconds / now_seconds (medians; > 1: the modern version is faster), with the interval
    [then ci95_low / now ci95_high, then ci95_high / now ci95_low] from the two medians' 95% intervals
    (conservative: both ends at once; null where either job has no interval); where either job is a smoke pass
    (--quick, ``smoke`` True) the speedup is an indication of one repeat each, never a verdict, and has no
    interval."""
    ok = summary[
        (summary["status"] == "ok")
        & (summary["quantity"] == "seconds per mini-batch")
        & summary["framework_version"].notna()
        & summary["median"].notna()
    ]
    rows = []
    for key, group in ok.groupby(THEN_AND_NOW_KEY, dropna=False, sort=True):
        versions = sorted(group["framework_version"].unique(), key=eras.key)
        if len(versions) < 2:
            continue
        then = group[group["framework_version"] == versions[0]].iloc[0]
        now = group[group["framework_version"] == versions[-1]].iloc[0]
        smoke = any(pd.notna(row.get("quick")) and bool(row.get("quick")) for row in (then, now))
        low = then["ci95_low"] / now["ci95_high"] if pd.notna(then["ci95_low"]) and pd.notna(now["ci95_high"]) else None
        high = (
            then["ci95_high"] / now["ci95_low"] if pd.notna(then["ci95_high"]) and pd.notna(now["ci95_low"]) else None
        )
        rows.append(
            dict(
                zip(THEN_AND_NOW_KEY, key),
                then_version=versions[0],
                now_version=versions[-1],
                then_seconds=then["median"],
                now_seconds=now["median"],
                speedup=then["median"] / now["median"],
                speedup_low=None if smoke else low,
                speedup_high=None if smoke else high,
                smoke=smoke,
                then_job_id=then["job_id"],
                now_job_id=now["job_id"],
            )
        )
    return pd.DataFrame(rows, columns=THEN_AND_NOW_COLUMNS)
