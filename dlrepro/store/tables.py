"""Tidy tables of a bundle, schema ``dlrepro.tables/10``: one row per job, one row per measured sample.

Every row carries its provenance, so rows from many bundles, machines and suite versions
can be concatenated and still say where each number came from (benchopt's one-table shape).

summary.parquet / summary.csv: one row per job (SUMMARY_COLUMNS).
samples.parquet: one row per measured sample (SAMPLE_COLUMNS): ``sample`` is
  "iteration"  one timed iteration (``seconds``, s): a training mini-batch of a throughput job, or
               one inference mini-batch (copy in, forward, copy out) of an inference job,
  "repeat mean" under the "pipelined_wall" timer (``timer``), which has no clock per iteration: one row per
               repeat, that repeat's wall time over its iterations, the mean iteration (``index`` null; before
               tables v8 labelled "iteration"), so the job's ``median`` is a median of repeat means
               (``ci95_method`` "median of repeat means, ..."), not of iterations,
  "epoch"      one epoch of a convergence job (``seconds``, ``cumulative_seconds``: wall time, s;
               ``test_accuracy``: fraction in [0, 1], ``perplexity``),
  "pass"       the timed pass over all inference images (``seconds``: its wall time, s).

Units: every time in seconds; throughput in samples/s (``throughput_unit``); accuracy as a
fraction; ``timer``: how a throughput job's iterations were timed (runner.measure: "device_events", CUDA events
in stream order, after an untimed lead-in iteration per repeat; "device_events (no lead-in)", the same events
before the lead-in (suite commit 866f90f: ``timing.lead_in`` absent or 0, the first sample of each repeat holds the
launch queue's refill), another discipline; "pipelined_wall", the repeat's wall time with one synchronisation at its
end, over its iterations; "host_sync", the host clock with a synchronisation around every iteration; null: not
recorded, results before it); a comparison of two jobs timed differently compares two quantities; ``median``: the
median of the repeat medians (of a convergence run's epochs; of the repeat means under "pipelined_wall"), the
estimator the interval is of (results whose summary has no ``point_estimate``, written before: the median of every
sample; runner.stats); ``ci95_low``/``ci95_high``: the 95% CI of the median by ``ci95_method`` (tables v4: over the
repeat medians, or a convergence run's epochs, ``ci95_units`` of them, exact coverage
``ci95_coverage``; earlier versions: the iterations pooled); ``threads``: the CPU threads the job
asked for (null: the framework's choice), ``framework_threads``: what the framework reported using,
``gradients`` / ``thread_pools``: how the step was timed (runner.contract: "gate_op" and "intra_op" as
DLBench's TensorFlow scripts; empty for an inference job, resp. a job without a thread count; every job before
tables v8 ran "pruned" / "all", but Torch 7's before suite commit 12f47db ran "gate_op": tables v9 say so),
``usable_cpus``: the CPUs the job was confined to, ``layout``: the job's --layout option as applied ("default": the
framework's, "channels_last"), ``memory_layout``: the layout the adapter fed its images in, "NCHW" (N, C, H, W) or
"NHWC" (N, H, W, C) (result.json's environment.layout; an older table re-derives it from there), ``seed``: the
job's seed (a convergence job's independent trainings are one job per seed, 0..N-1; every job before tables v7:
0), ``cpu_seconds`` / ``effective_parallelism``: the process CPU time over the measured window and that divided by
its wall time; ``energy_j``,
``energy_j_per_sample``, ``mean_power_w``: the energy over the measured window (J, J per sample
processed, W; a GPU board's from NVML, a CPU package's from RAPL where readable: ``energy_method``;
not certified measurements); ``energy_window_s`` / ``measured_window_s``: the energy counters' window and the
measured window (s, result.json's energy ``seconds`` and ``cpu_usage.wall_seconds``), and
``energy_window_differs``: true when they differ by more than one telemetry sampling period (``interval_s``,
0.025 s), then J/sample and mean power cover another stretch than the measured one (results before issue 52: the
GPU sampler's own edge readings sat inside the counters' window, up to 2.27x the measured time); null where a
window was not recorded; ``isolation``: the job's process ("process") or a warm worker shared
with the jobs before it ("worker"); ``attempt``: which attempt of the bundle produced the row; ``final_loss``:
the last measured training loss; ``ranks``, ``scaling``, ``rank_batch_size``: a data-parallel job's ranks (one per
GPU), "strong" or "weak" and each rank's share of the total mini-batch ``batch_size``, with ``speedup`` /
``scaled_speedup`` / ``scaling_efficiency`` over the run's 1-rank job ``scaling_base`` (``scaling``; samples:
"iteration" rows are the job's timing: the slowest rank's per iteration, ``rank`` null, and every rank's own
are "rank iteration" rows; results before runner.rankjoin: rank 0's, ``rank`` 0, the other ranks' as "rank
iteration"; a data-parallel job's energy is every rank's GPU board summed, before runner.rankjoin rank 0's
only, so its J/sample was about 1/ranks of the true one); ``flops_per_iteration``: the FLOPs of
one timed mini-batch counted from the spec (runner.flops: a training iteration, or an inference pass), with
``achieved_flops`` (FLOP/s over the median), ``peak_flops`` (FLOP/s of the device at the job's precision:
dlrepro.inputs.peaks, ``peak_device`` and ``peak_source`` say which and from where; a CPU's is an estimate) and
``fraction_of_peak`` (achieved over peak, a fraction: dlrepro.store.peak_columns); GPU clocks in MHz, power in W,
temperature in degrees C (medians and maxima over the
measured iterations' NVML samples, ``telemetry_samples`` of them at 40 Hz; ``throttled``: the
GPU was held back by power or thermal limits while they ran). The schema version travels in the parquet files'
key-value metadata
(``dlrepro.tables``) and in the ``tables_schema`` column; a new column means a new version
(ADDED says what each added). Tables of an older version are re-derived from the bundle's JSON
files when read, so every reader sees this version's columns; the derived tables are kept in DLREPRO_CACHE/tables/
(``kept_folder``) for the next run, never in the bundle.
"""

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from dlrepro import REPO_ROOT, cache
from dlrepro.errors import BundleError
from dlrepro.files import tree_digest
from dlrepro.store import peak_columns
from runner import telemetry
from runner.contract import OPTION_DEFAULTS
from runner.stats import CI_METHOD_MEANS

SCHEMA = "dlrepro.tables/10"
METADATA_KEY = b"dlrepro.tables"

# column -> pandas dtype; the order is the order in the files
PROVENANCE = {
    "tables_schema": "string",
    "bundle_id": "string",
    "bundle_created": "string",
    "suite_version": "string",
    "suite_commit": "string",
    "job_id": "string",
    "spec": "string",
    "spec_sha256": "string",
    "variant": "string",
    "framework": "string",
    "framework_version": "string",
    "image": "string",
    "image_id": "string",
    "executor": "string",
    "host": "string",
    "device": "string",
    "device_name": "string",
    "driver": "string",
    "cuda": "string",
    "cudnn": "string",
    "mode": "string",
    "batch_size": "Int64",
    "threads": "Int64",
    "seed": "Int64",
    "ranks": "Int64",
    "scaling": "string",
    "rank_batch_size": "Int64",
    "precision": "string",
    "layout": "string",
    "memory_layout": "string",
    "cudnn_autotune": "boolean",
    "ptx_jit": "boolean",
    "timer": "string",
    "gradients": "string",
    "thread_pools": "string",
}
MEASURED = {
    "status": "string",
    "quantity": "string",
    "unit": "string",
    "median": "float64",
    "mean": "float64",
    "q1": "float64",
    "q3": "float64",
    "iqr": "float64",
    "ci95_low": "float64",
    "ci95_high": "float64",
    "ci95_method": "string",
    "ci95_coverage": "float64",
    "ci95_units": "Int64",
    "n": "Int64",
    "throughput": "float64",
    "throughput_unit": "string",
    "parameters": "Int64",
    "parameters_equivalent": "Int64",
    "parameters_expected": "Int64",
    "epochs": "Int64",
    "final_test_accuracy": "float64",
    "final_perplexity": "float64",
    "total_seconds": "float64",
    "seconds_per_1000_images": "float64",
    "throttled": "boolean",
    "throttle_reasons": "string",
    "sm_clock_median_mhz": "float64",
    "memory_clock_median_mhz": "float64",
    "power_median_w": "float64",
    "temperature_max_c": "float64",
    "telemetry_samples": "Int64",
    "framework_threads": "Int64",
    "usable_cpus": "Int64",
    "cpu_seconds": "float64",
    "effective_parallelism": "float64",
    "energy_j": "float64",
    "energy_j_per_sample": "float64",
    "mean_power_w": "float64",
    "energy_method": "string",
    "energy_window_s": "float64",
    "measured_window_s": "float64",
    "energy_window_differs": "boolean",
    "isolation": "string",
    "attempt": "Int64",
    "final_loss": "float64",
    "speedup": "float64",
    "scaled_speedup": "float64",
    "scaling_efficiency": "float64",
    "scaling_base": "string",
    "flops_per_iteration": "Int64",
    "achieved_flops": "float64",
    "peak_flops": "float64",
    "fraction_of_peak": "float64",
    "peak_device": "string",
    "peak_source": "string",
    "reason": "string",
    "remedy": "string",
}
SUMMARY_COLUMNS = {**PROVENANCE, **MEASURED}
SAMPLE_COLUMNS = {
    **PROVENANCE,
    "sample": "string",
    "rank": "Int64",
    "repeat": "Int64",
    "index": "Int64",
    "seconds": "float64",
    "cumulative_seconds": "float64",
    "test_accuracy": "float64",
    "test_loss": "float64",
    "train_loss": "float64",
    "perplexity": "float64",
}
_COLUMNS = {"summary": SUMMARY_COLUMNS, "samples": SAMPLE_COLUMNS}
FILES = ("summary.parquet", "samples.parquet")
ADDED = {
    "dlrepro.tables/2": (
        "layout",
        "cudnn_autotune",
        "ptx_jit",
        "throttled",
        "throttle_reasons",
        "sm_clock_median_mhz",
        "memory_clock_median_mhz",
        "power_median_w",
        "temperature_max_c",
    ),
    "dlrepro.tables/3": ("telemetry_samples",),
    "dlrepro.tables/4": (
        "mean",
        "ci95_method",
        "ci95_coverage",
        "ci95_units",
        "framework_threads",
        "usable_cpus",
        "cpu_seconds",
        "effective_parallelism",
        "energy_j",
        "energy_j_per_sample",
        "mean_power_w",
        "energy_method",
        "isolation",
        "attempt",
    ),
    "dlrepro.tables/5": (
        "ranks",
        "scaling",
        "rank_batch_size",
        "final_loss",
        "speedup",
        "scaled_speedup",
        "scaling_efficiency",
        "scaling_base",
        "rank",
    ),
    "dlrepro.tables/6": peak_columns.COLUMNS,
    "dlrepro.tables/7": ("timer", "seed"),
    "dlrepro.tables/8": ("energy_window_s", "measured_window_s", "energy_window_differs", "gradients", "thread_pools"),
    "dlrepro.tables/9": (),  # no column added: Torch 7's steps from before suite commit 12f47db are "gate_op"
    "dlrepro.tables/10": ("memory_layout",),
}
POOLED_CI = "iterations pooled, distribution-free (before tables v4)"


def columns_of(version, name):
    """The column names of table ``name`` ("summary" or "samples") in tables schema ``version``;
    None for a version this suite does not know."""
    current = list(SUMMARY_COLUMNS if name == "summary" else SAMPLE_COLUMNS)
    versions = ["dlrepro.tables/%d" % n for n in range(int(SCHEMA.rsplit("/", 1)[1]), 0, -1)]
    if version not in versions:
        return None
    later = [c for v in versions[: versions.index(version)] for c in ADDED.get(v, ())]
    return [c for c in current if c not in later]


def _image_for(body, job):
    """The image record a job ran in: by job id; bundles of schema 1 only by framework and device."""
    images = body.get("images") or []
    for image in images:
        if job["id"] in image.get("jobs", ()):
            return image
    return next(
        (
            i
            for i in images
            if "jobs" not in i and i["framework"] == job["framework"] and i.get("device") == job["device"]
        ),
        None,
    )


def _gpu(body, result):
    """The job's GPU as the framework saw it, and the host's first GPU (bundles without telemetry)."""
    gpu = (result.get("environment") or {}).get("gpu") or {}
    host_gpus = (body.get("host") or {}).get("gpus") or []
    return gpu, (host_gpus[0] if host_gpus else {})


def provenance(body, job, result, measured=None):
    """The provenance columns of one job's rows, from bundle.json's body, job.json and result.json
    (``measured``: the job's runner.telemetry.summary_columns, when the caller has them)."""
    env = result.get("environment") or {}
    image = _image_for(body, job) if result["status"] != "skipped" else None
    gpu, host_gpu = _gpu(body, result)
    measured = measured or telemetry.summary_columns(result)
    cuda_job = job["device"] == "cuda"
    cpu_model = (env.get("cpu") or {}).get("model") or ((body.get("host") or {}).get("cpu") or {}).get("model")
    suite = body.get("suite") or {}
    return {
        "tables_schema": SCHEMA,
        "bundle_id": body["id"],
        "bundle_created": body.get("created"),
        "suite_version": suite.get("version"),
        "suite_commit": (suite.get("git") or {}).get("commit"),
        "job_id": job["id"],
        "spec": job["spec"]["name"],
        "spec_sha256": job["spec"]["sha256"],
        "variant": job["variant"],
        "framework": job["framework"],
        "framework_version": env.get("framework_version"),
        "image": image["name"] if image else None,
        "image_id": image["image_id"] if image else None,
        "executor": (body.get("executor") or {}).get("executor"),
        "host": (body.get("host") or {}).get("hostname"),
        "device": job["device"],
        "device_name": (measured["gpu_name"] or gpu.get("name") or host_gpu.get("name")) if cuda_job else cpu_model,
        "driver": (measured["driver"] or gpu.get("driver") or host_gpu.get("driver")) if cuda_job else None,
        "cuda": _text(env.get("cuda") or (image or {}).get("cuda")) if cuda_job else None,
        "cudnn": _text(env.get("cudnn") or (image or {}).get("cudnn")) if cuda_job else None,
        "mode": job["mode"],
        "batch_size": job["batch_size"],
        "threads": job["threads"],
        "seed": job["seed"],
        "ranks": job.get("ranks"),
        "scaling": job.get("scaling"),
        "rank_batch_size": job.get("rank_batch_size"),
        "precision": measured["precision"] or job["precision"],
        "layout": measured["layout"],
        "memory_layout": env.get("layout"),
        "cudnn_autotune": measured["cudnn_autotune"],
        "ptx_jit": measured["ptx_jit"],
        "timer": timer(result.get("timing") or {}),
        # how the step was timed (runner.contract); jobs from before these options ran the defaults
        "gradients": gradients(job, env),
        "thread_pools": job.get("thread_pools", OPTION_DEFAULTS["thread_pools"]) if job["threads"] else None,
    }


def gradients(job, env):
    """The gradients column of a job whose result's environment is ``env``: the job's ``gradients``
    (runner.contract; jobs from before the option: "pruned"), None for a job without an optimizer (inference). But
    "gate_op" where a Torch 7 step's environment does not say what its backward computed: before suite commit
    12f47db the torch7 adapter ran nn's backward whole, the first module's gradient with respect to the mini-batch
    too, whatever the job asked (runner.adapters.torch7_adapter.gradients_text records it since)."""
    if not job.get("optimizer"):
        return None
    if env.get("framework") == "torch7" and "gradients" not in env:
        return "gate_op"
    return job.get("gradients", OPTION_DEFAULTS["gradients"])


NO_LEAD_IN = "device_events (no lead-in)"


def timer(timing):
    """The timer column of a result's ``timing``: its ``timer``, but NO_LEAD_IN for device events recorded without
    a lead-in iteration (before suite commit 866f90f), another discipline that compare and the history keep apart."""
    found = timing.get("timer")
    if found == "device_events" and not (timing.get("lead_in") or {}).get("iterations"):
        return NO_LEAD_IN
    return found


def _text(value):
    return None if value is None else str(value)


def summary_row(body, job, result):
    """One row of the summary table (and of bundle.json's job list) for one job."""
    timing = result.get("timing") or {}
    stats = timing.get("summary") or {}
    ci = stats.get("ci95") or [None, None]
    params = result.get("parameters") or {}
    conv = result.get("convergence") or {}
    gpu = telemetry.summary_columns(result)
    cpu = result.get("cpu_usage") or {}
    base = provenance(body, job, result, gpu)
    return dict(
        base,
        **{
            "status": result["status"],
            "quantity": timing.get("quantity"),
            "unit": timing.get("unit"),
            "median": stats.get("median"),
            "mean": stats.get("mean"),
            "q1": stats.get("q1"),
            "q3": stats.get("q3"),
            "iqr": stats.get("iqr"),
            "ci95_low": ci[0],
            "ci95_high": ci[1],
            "ci95_method": (
                CI_METHOD_MEANS
                if timing.get("sample") == "repeat mean" and stats
                # its label before v8
                else stats.get("ci95_method") or (POOLED_CI if stats else None)
            ),
            "ci95_coverage": stats.get("ci95_coverage"),
            "ci95_units": stats.get("ci95_units"),
            "n": stats.get("n"),
            "throughput": timing.get("throughput"),
            "throughput_unit": timing.get("throughput_unit"),
            "parameters": params.get("measured"),
            "parameters_equivalent": params.get("equivalent"),
            "parameters_expected": job["model"]["parameters"],
            "epochs": len(conv.get("epochs") or []) or None,
            "final_test_accuracy": conv.get("final_test_accuracy"),
            "final_perplexity": conv.get("final_perplexity"),
            "total_seconds": conv.get("total_seconds"),
            "seconds_per_1000_images": (result.get("inference") or {}).get("seconds_per_1000_images"),
            **{
                c: gpu[c]
                for c in (
                    "throttled",
                    "throttle_reasons",
                    "sm_clock_median_mhz",
                    "memory_clock_median_mhz",
                    "power_median_w",
                    "temperature_max_c",
                    "telemetry_samples",
                )
            },
            "framework_threads": (result.get("environment") or {}).get("threads"),
            "usable_cpus": cpu.get("usable_cpus"),
            "cpu_seconds": cpu.get("cpu_seconds"),
            "effective_parallelism": cpu.get("effective_parallelism"),
            **_energy(result, job),
            "isolation": result.get("isolation"),
            "attempt": (result.get("attempt") or {}).get("number"),
            "final_loss": (result.get("loss") or {}).get("last"),
            "speedup": None,
            "scaled_speedup": None,
            "scaling_efficiency": None,
            "scaling_base": None,
            **peak_columns.job_columns(
                job, result, base["precision"], base["device_name"], stats.get("median"), timing.get("quantity")
            ),
            "reason": result.get("reason"),
            "remedy": result.get("remedy"),
        },
    )


SCALING_KEY = (
    "spec_sha256",
    "variant",
    "framework",
    "framework_version",
    "device",
    "mode",
    "threads",
    "precision",
    "layout",
    "scaling",
)


def scaling(rows):
    """Fill the scaling columns of a bundle's data-parallel rows (``rows``: its summary rows, changed in place)
    from the 1-rank job of the same run (same spec, variant, framework, device, mode, threads, precision and
    mini-batch: the total under strong scaling, the per-rank one under weak), whose id goes into
    ``scaling_base``:

    strong scaling (DLBench, Shi et al. 2016 v7 section 5.2): speedup S(N) = t1 / tN, t = median seconds per
        total mini-batch; scaling_efficiency E = S / N;
    weak scaling (DLF, ilkarman/DeepLearningFrameworks multi-GPU notebooks): scaled_speedup W(N) =
        throughput_N / throughput_1 (samples/s, the total mini-batch N times the 1-rank one); E = W / N;
        ``final_loss`` beside it is the guard that the larger batch (and N times the learning rate) still trains.

    Rows without an ok 1-rank base keep them null."""

    def key(row):
        per = row["batch_size"] if row["scaling"] == "strong" else row["rank_batch_size"]
        return tuple(row[c] for c in SCALING_KEY) + (per,)

    bases = {key(r): r for r in rows if r["ranks"] == 1 and r["status"] == "ok" and r["median"]}
    for row in rows:
        base = bases.get(key(row)) if row["ranks"] and row["status"] == "ok" and row["median"] else None
        if base is None:
            continue
        n = row["ranks"]
        if row["scaling"] == "strong":
            row["speedup"] = base["median"] / row["median"]
            row["scaling_efficiency"] = row["speedup"] / n
        else:
            row["scaled_speedup"] = row["throughput"] / base["throughput"]
            row["scaling_efficiency"] = row["scaled_speedup"] / n
        row["scaling_base"] = base["job_id"]
    return rows


def _processed(result, job):
    """The samples the measured window processed: the measured iterations' mini-batches and the untimed lead-in
    ones of the device-events timer (``timing.lead_in``; a data-parallel job's total mini-batch, every rank's
    shard), the epochs' training mini-batches (their evaluation is outside the window: runner.window) or the
    timed inference pass's images."""
    timing = result.get("timing") or {}
    if result.get("inference"):
        return result["inference"]["images"]
    if result.get("convergence"):
        return sum(e["iterations"] for e in result["convergence"]["epochs"]) * job["batch_size"]
    repeats = timing.get("repeats") or []
    lead_in = (timing.get("lead_in") or {}).get("iterations") or 0
    if timing.get("sample") == "repeat mean":  # one sample per repeat: its iterations' mean
        return (timing["iterations_per_repeat"] + lead_in) * len(repeats) * job["batch_size"]
    return (sum(len(r) for r in repeats) + lead_in * len(repeats)) * job["batch_size"]


def _energy(result, job):
    """The energy columns: joules over the measured window, per sample processed, mean watts, the method, the
    energy counters' and the measured window (s) and whether they differ by more than one sampling period."""
    found = result.get("energy") or {}
    if found.get("status") != "ok":
        return {
            "energy_j": None,
            "energy_j_per_sample": None,
            "mean_power_w": None,
            "energy_method": None,
            "energy_window_s": None,
            "measured_window_s": None,
            "energy_window_differs": None,
        }
    processed = _processed(result, job)
    counted = found.get("seconds")
    measured = found.get("measured_seconds", (result.get("cpu_usage") or {}).get("wall_seconds"))
    period = (result.get("telemetry") or {}).get("interval_s") or telemetry.DEFAULT_INTERVAL_S
    return {
        "energy_j": found["joules"],
        "energy_j_per_sample": found["joules"] / processed if processed else None,
        "mean_power_w": found.get("mean_w"),
        "energy_method": found.get("method"),
        "energy_window_s": counted,
        "measured_window_s": measured,
        "energy_window_differs": None if None in (counted, measured) else abs(counted - measured) > period,
    }


def sample_rows(body, job, result):
    """The samples table's rows for one job: timed iterations, epochs or inference passes."""
    base = provenance(body, job, result)
    rows = []
    timing = result.get("timing") or {}
    if timing.get("quantity") == "seconds per mini-batch":  # a convergence job's epochs come below, with accuracy
        joined = bool(timing.get("ranks_joined"))  # the slowest rank's per iteration (runner.rankjoin)
        means = timing.get("sample") == "repeat mean"  # pipelined_wall: no iteration's own time, no index
        for repeat, seconds in enumerate(timing.get("repeats") or [], 1):
            rows += [
                dict(
                    base,
                    sample="repeat mean" if means else "iteration",
                    rank=0 if job.get("ranks") and not joined else None,
                    repeat=repeat,
                    index=None if means else i,
                    seconds=s,
                )
                for i, s in enumerate(seconds, 1)
            ]
        for record in (result.get("ranks") or [])[0 if joined else 1 :]:  # each rank's own timings of them
            for repeat, seconds in enumerate(record.get("repeats") or [], 1):
                rows += [
                    dict(base, sample="rank iteration", rank=record["rank"], repeat=repeat, index=i, seconds=s)
                    for i, s in enumerate(seconds, 1)
                ]
    for epoch in (result.get("convergence") or {}).get("epochs") or []:
        rows.append(
            dict(
                base,
                sample="epoch",
                repeat=1,
                index=epoch["epoch"],
                seconds=epoch.get("seconds"),
                cumulative_seconds=epoch.get("cumulative_seconds"),
                test_accuracy=epoch.get("test_accuracy"),
                test_loss=epoch.get("test_loss"),
                train_loss=epoch.get("train_loss"),
                perplexity=epoch.get("perplexity"),
            )
        )
    if (result.get("inference") or {}).get("pass_seconds") is not None:
        rows.append(dict(base, sample="pass", repeat=1, index=1, seconds=result["inference"]["pass_seconds"]))
    return rows


def frame(rows, columns):
    """A DataFrame of ``rows`` (dicts) with ``columns`` (name -> dtype) first, those missing null, then any
    other keys the rows have (merge's ``measurement`` labels)."""
    table = pd.DataFrame(rows)
    return table.reindex(columns=list(columns) + [c for c in table.columns if c not in columns]).astype(columns)


def build(folder, body, job_ids):
    """(summary rows, sample rows) as dicts, of the jobs ``job_ids`` (in that order) of the bundle in
    ``folder`` with bundle.json ``body``."""
    summary, samples = [], []
    for job_id in job_ids:
        job_dir = Path(folder) / "jobs" / job_id
        job, result = (json.loads((job_dir / name).read_text()) for name in ("job.json", "result.json"))
        summary.append(summary_row(body, job, result))
        samples += sample_rows(body, job, result)
    return scaling(summary), samples


def write(folder, summary_rows, sample_rows):
    """Write summary.parquet, summary.csv and samples.parquet into ``folder``, the schema in the metadata."""
    folder = Path(folder)
    summary = frame(summary_rows, SUMMARY_COLUMNS)
    for name, table in (("summary.parquet", summary), ("samples.parquet", frame(sample_rows, SAMPLE_COLUMNS))):
        arrow = pa.Table.from_pandas(table, preserve_index=False)
        metadata = {**(arrow.schema.metadata or {}), METADATA_KEY: SCHEMA.encode()}
        pq.write_table(arrow.replace_schema_metadata(metadata), folder / name)
    summary.to_csv(folder / "summary.csv", index=False)


def schema_of(path):
    """The tables schema a parquet file declares in its metadata, or None."""
    value = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
    return value.decode() if value else None


UNREADABLE = (OSError, ValueError, KeyError, TypeError, pa.ArrowException)  # what a damaged bundle file raises


def unreadable(folder, exc, path=None):
    """The BundleError for a file of the bundle in ``folder`` that could not be read."""
    where = path or getattr(exc, "filename", None) or folder
    return BundleError(
        "%s: cannot be read (%s: %s); `dlrepro validate %s` lists what is wrong"
        % (where, type(exc).__name__, exc, folder)
    )


def stored(folder, name):
    """The parquet file of table ``name`` when it is of this tables version, else None; raises
    BundleError naming a parquet file that cannot be read."""
    path = Path(folder) / ("%s.parquet" % name)
    try:
        return path if path.is_file() and schema_of(path) == SCHEMA else None
    except UNREADABLE as exc:
        raise unreadable(folder, exc, path) from None


def read(folder, name):
    """One table of a bundle folder ("summary" or "samples"), with this version's columns.

    A bundle written before tables existed (bundle schema 1), or with tables of an older
    version, has them derived from its JSON files. Raises BundleError naming a file that
    cannot be read.
    """
    columns = _COLUMNS[name]
    path = stored(folder, name)
    try:
        if path is not None:
            return _pandas(pq.read_table(path), columns)
        return _derived(Path(folder), _signature(Path(folder)), name).copy()
    except UNREADABLE as exc:
        raise unreadable(folder, exc, path) from None


def _signature(folder):
    """What ``_derived`` reads of a bundle folder: each JSON file's path, modification time (ns) and size."""
    files = [folder / "bundle.json"] + sorted((folder / "jobs").glob("*/*.json"))
    return tuple((str(path), stat.st_mtime_ns, stat.st_size) for path in files for stat in [path.stat()])


TABLES_CODE = ("runner", "dlrepro/store", "dlrepro/inputs", "dlrepro/errors.py")  # what derives tables from JSON


@lru_cache(maxsize=1)
def _code_digest():
    """The SHA-256 of this tables version and of the code that derives tables from a bundle's JSON files."""
    return hashlib.sha256((SCHEMA + "\0" + tree_digest(REPO_ROOT, TABLES_CODE)).encode()).hexdigest()


def kept_folder(folder, signature):
    """Where the cache keeps the tables derived from the bundle in ``folder`` (``_signature``'s files):
    DLREPRO_CACHE/tables/<SHA-256 of the tables code and of each JSON file's path in the bundle and bytes>, so an
    edited JSON file or changed code derives them again."""
    digest = hashlib.sha256(_code_digest().encode())
    for path, _, _ in signature:
        digest.update(str(Path(path).relative_to(folder)).encode() + b"\0" + Path(path).read_bytes() + b"\0")
    return cache.root() / "tables" / digest.hexdigest()


@lru_cache(maxsize=256)
def _derived_tables(folder, signature):
    """{"summary", "samples": arrow table of this version's schema} of a bundle whose tables are of another version:
    read from the cache (``kept_folder``) or derived from its JSON files and kept there; once per process while
    ``signature`` holds (`dlrepro site` reads each committed bundle, none of this version, for its report, its study
    records' reports and the history). The bundle's own files are never written."""
    kept = kept_folder(folder, signature)
    try:
        return {name: pq.read_table(kept / ("%s.parquet" % name), schema=_arrow_schema(name)) for name in _COLUMNS}
    except (OSError, pa.ArrowException):  # not kept yet, or a damaged copy: derive again
        pass
    body = json.loads((folder / "bundle.json").read_text())
    rows = dict(zip(("summary", "samples"), build(folder, body, [r["job_id"] for r in body["jobs"]])))
    found = {
        name: pa.Table.from_pandas(frame(rows[name], _COLUMNS[name]), schema=_arrow_schema(name), preserve_index=False)
        for name in _COLUMNS
    }
    _keep(kept, found)
    return found


def _keep(kept, found):
    """Write the tables ``found`` ({name: arrow table}) as parquet files into the cache folder ``kept``, each file
    whole or not at all; a cache that cannot be written only means deriving again next time."""
    try:
        kept.mkdir(parents=True, exist_ok=True)
        for name, table in found.items():
            partial = kept / ("%s.parquet.%d" % (name, os.getpid()))
            pq.write_table(table, partial)
            os.replace(partial, kept / ("%s.parquet" % name))
    except OSError:
        pass


@lru_cache(maxsize=512)
def _derived(folder, signature, name):
    """Table ``name`` of ``_derived_tables`` as a DataFrame, once per process. Callers copy before changing it."""
    return _pandas(_derived_tables(folder, signature)[name], _COLUMNS[name])


# A string column read into pandas holds Python strings (pandas' "python" storage), not arrow memory: the answers and
# views select the tables' rows many times over (a mask, a group, a row), and each selection of an arrow-backed
# column is a call into pyarrow per column (`dlrepro site` over the committed results: 224 and 246 CPU-s with
# arrow-backed strings, 197 and 212 with these, the same bytes). The parquet files' types are unchanged.
STRING = pd.StringDtype("python")
_ARROW_TYPES = {
    pa.string(): STRING,
    pa.large_string(): STRING,  # what pandas writes a string column as
    pa.int64(): pd.Int64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


@lru_cache(maxsize=4)
def _dtypes(columns):
    """{name: pandas dtype} of ``columns`` ((name, dtype name) pairs), a "string" column as STRING."""
    return {name: STRING if dtype == "string" else pd.api.types.pandas_dtype(dtype) for name, dtype in columns}


def _pandas(table, columns):
    """The DataFrame of arrow ``table`` with ``columns``' dtypes (name -> dtype; "string" as STRING), converted
    column by column only where the arrow types do not give them already (a table of this version's schema does)."""
    found = table.to_pandas(types_mapper=_ARROW_TYPES.get)
    dtypes = _dtypes(tuple(columns.items()))
    same = list(found.columns) == list(dtypes) and found.dtypes.tolist() == list(dtypes.values())
    return found if same else found.astype(dtypes)


def summary(folder):
    """The bundle's summary table: one row per job (SUMMARY_COLUMNS)."""
    return read(folder, "summary")


def samples(folder):
    """The bundle's samples table: one row per measured iteration, epoch or inference pass."""
    return read(folder, "samples")


@lru_cache(maxsize=2)
def _arrow_schema(name):
    """The arrow schema of table ``name`` ("summary" or "samples") of this version."""
    return pa.Schema.from_pandas(frame([], _COLUMNS[name]), preserve_index=False).remove_metadata()


def _derived_table(folder, name):
    """Table ``name`` of ``_derived_tables`` of the bundle in ``folder``; raises BundleError naming a file that cannot
    be read."""
    try:
        return _derived_tables(folder, _signature(folder))[name]
    except UNREADABLE as exc:
        raise unreadable(folder, exc) from None


def _concat(folders, name, columns):
    """One arrow table of table ``name`` of every folder, with exactly this version's ``columns``."""
    schema = _arrow_schema(name)
    files = {folder: stored(folder, name) for folder in folders}
    current = [str(path) for path in files.values() if path is not None]
    try:
        parts = [ds.dataset(current, format="parquet", schema=schema).to_table()] if current else []
    except UNREADABLE:  # name the damaged file
        for folder, path in files.items():
            if path is not None:
                read(folder, name)
        raise
    parts += [_derived_table(Path(f), name) for f, path in files.items() if path is None]
    return _pandas(pa.concat_tables(parts), columns) if parts else frame([], columns)


def _sums(folder):
    path = folder / "SHA256SUMS"
    return path.read_bytes() if path.is_file() else None


DUPLICATE_KEY = ["spec_sha256", "job_id", "image_id", "host", "device_name"]


def merge(folders, with_samples=True):
    """(summary, samples) of many bundles in one table each: bundles x machines x suite versions.

    ``with_samples=False`` reads the summaries only and returns (summary, None).

    Rules: a bundle given twice (the same bundle id and SHA256SUMS) is read once; two different
    bundles with one id raise BundleError. The same job measured more
    than once (the same resolved spec, job, image, host and device: DUPLICATE_KEY) in different
    bundles is kept every time, labelled: ``measurement`` numbers them in bundle order (1, 2, ...)
    and ``measurements`` says how many there are. The tables have this suite version's columns
    (tables of other versions are re-derived from their bundle's JSON files). Raises
    BundleError naming a folder that is not a bundle or a file that cannot be read.
    """
    unique = {}
    for folder in map(Path, folders):
        if not (folder / "bundle.json").is_file():
            raise BundleError("%s is not a bundle: it has no bundle.json" % folder)
        first = unique.setdefault(folder.name, folder)
        if first != folder and _sums(first) != _sums(folder):
            raise BundleError(
                "two different bundles have the id %s: %s and %s (their SHA256SUMS differ); merge "
                "one of them" % (folder.name, first, folder)
            )
    if not unique:
        raise BundleError("no bundle to merge: give bundle folders or ids, comma-separated")
    summary = _concat(unique.values(), "summary", SUMMARY_COLUMNS)
    summary = summary.sort_values(["bundle_created", "bundle_id"], kind="stable")
    keys = summary[DUPLICATE_KEY].astype("string").fillna("")
    summary["measurement"] = keys.groupby(DUPLICATE_KEY, sort=False).cumcount() + 1
    summary["measurements"] = keys.groupby(DUPLICATE_KEY, sort=False)["job_id"].transform("size")
    summary = summary.reset_index(drop=True)
    if not with_samples:
        return summary, None
    labels = summary[["bundle_id", "job_id", "measurement", "measurements"]]
    return summary, _concat(unique.values(), "samples", SAMPLE_COLUMNS).merge(
        labels, on=["bundle_id", "job_id"], how="left"
    )


def merge_to(folders, out=None):
    """``merge`` of the bundles in ``folders``; with ``out``, also write its summary.parquet, summary.csv and
    samples.parquet there (the samples are read only then). Returns (summary, samples or None)."""
    summary, samples = merge(folders, with_samples=bool(out))
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        write(out, summary.to_dict("records"), samples.to_dict("records"))
    return summary, samples
