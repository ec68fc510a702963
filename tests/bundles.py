"""Bundles with known answers, written the way a run writes them (BundleWriter, job.json from the real job expansion,
result.json in the runner's format, the tidy tables built from them), for tests that assert exact verdicts and
figures on what a reader would open, not on hand-built frames.

    folder = make(tmp_path, "alexnet", [Job("torch", "alexnet-s", 16, medians=[0.10] * 6)])

A Job's ``medians`` are its repeats' medians (s): each repeat is ``per_repeat`` iterations spread by ``spread``
around its median, so the summary's median, IQR and repeat-level interval follow from them exactly; a convergence
Job gives its final ``accuracy`` and per-epoch ``epoch_seconds``. ``quick`` records the bundle as a --quick run.
"""

import hashlib
import json
from dataclasses import dataclass, field

from dlrepro.inputs import spec as specmod
from dlrepro.run import jobs as jobsmod
from dlrepro.run.options import RunOptions
from dlrepro.store.bundle import BundleWriter
from runner import stats

EPYC = {"model": "AMD EPYC 9B14", "logical_cpus": 2, "mhz": 2600.0, "flags": ["avx2", "fma"]}


@dataclass
class Job:
    framework: str
    variant: str
    batch_size: int
    medians: list = field(default_factory=lambda: [0.1] * 6)  # s per mini-batch, one per repeat
    per_repeat: int = 4
    spread: float = 0.0  # relative, of the iterations around their repeat's median
    device: str = "cpu"
    threads: int = None
    status: str = "ok"
    version: str = "1.0"
    accuracy: float = None  # a convergence job's final test accuracy
    epoch_seconds: list = None  # a convergence job's epochs (s)
    seed: int = None
    timer: str = "host_sync"  # how its iterations were timed (runner.measure: device_events, pipelined_wall, host_sync)
    precision: str = "fp32"
    joules: float = None  # the energy over the measured window (J), where measured
    memory_layout: str = None  # the layout the adapter fed its images in (result.json's environment.layout)


def _timing(job):
    repeats = [
        [m * (1 + job.spread * (i - (job.per_repeat - 1) / 2)) for i in range(job.per_repeat)] for m in job.medians
    ]
    summary = stats.summarize_repeats(repeats)
    return {
        "quantity": "seconds per mini-batch",
        "unit": "s",
        "repeats": repeats,
        "summary": summary,
        "throughput": job.batch_size / summary["median"],
        "throughput_unit": "samples/s",
        "timer": job.timer,
        # device events get one untimed lead-in step per repeat, as runner.measure has since 866f90f
        "lead_in": {"iterations": 1 if job.timer == "device_events" else 0},
    }


def _convergence(job):
    epochs, total = [], 0.0
    for i, seconds in enumerate(job.epoch_seconds, 1):
        total += seconds
        epochs.append(
            {
                "epoch": i,
                "seconds": seconds,
                "cumulative_seconds": total,
                "iterations": 390,
                "test_accuracy": job.accuracy,
            }
        )
    summary = stats.summarize_repeats([job.epoch_seconds], units="sample")
    return (
        {
            "quantity": "seconds per epoch",
            "unit": "s",
            "repeats": [job.epoch_seconds],
            "summary": summary,
            "throughput": job.batch_size * 390 / summary["median"],
            "throughput_unit": "samples/s",
        },
        {"epochs": epochs, "final_test_accuracy": job.accuracy, "total_seconds": total},
    )


def _result(job, expanded, device_name, cpu):
    result = {
        "schema": "dlrepro.result/1",
        "job_id": expanded["id"],
        "status": job.status,
        "environment": {"framework_version": job.version, "cpu": cpu},
        "parameters": {"measured": expanded["model"]["parameters"]},
    }
    if job.status != "ok":
        return dict(result, reason="boom", remedy=None)
    if job.accuracy is not None:
        result["timing"], result["convergence"] = _convergence(job)
    else:
        result["timing"] = _timing(job)
    if job.memory_layout:
        result["environment"]["layout"] = job.memory_layout
    if job.device == "cuda":
        result["environment"]["gpu"] = {"name": device_name, "driver": "580.95.05"}
    if job.joules is not None:
        result["energy"] = {"status": "ok", "joules": job.joules, "mean_w": 300.0, "method": "nvml total energy"}
    return result


def make(results_dir, spec_name, jobs, quick=False, gpu="NVIDIA H200", hostname="known-answers", cpu=EPYC):
    """Write a bundle of spec ``spec_name`` with ``jobs`` (Job) under ``results_dir``, on a host with the CPU record
    ``cpu`` (model, logical_cpus, mhz, flags: runner.environment's) and, for cuda jobs, one GPU ``gpu``; returns its
    folder."""
    spec = specmod.load(spec_name)
    writer = BundleWriter(results_dir, spec_name, hashlib.sha256(repr((spec_name, jobs, quick)).encode()).hexdigest())
    for job in jobs:
        options = RunOptions(
            frameworks=[job.framework],
            variants=[job.variant],
            batch_sizes=[job.batch_size],
            device=job.device,
            threads=[job.threads] if job.threads else None,
            quick=quick,
            precision=job.precision,
        )
        (expanded,) = [j for j in jobsmod.expand(spec, options) if j["batch_size"] == job.batch_size]
        if job.precision != "fp32":  # a run has one precision; two in one constructed bundle need two ids
            expanded = dict(expanded, id="%s.%s" % (expanded["id"], job.precision))
        if job.seed is not None:
            expanded = dict(expanded, id="%s.s%d" % (expanded["id"], job.seed), seed=job.seed)
        writer.write_job(expanded)
        writer.write_result(expanded["id"], _result(job, expanded, gpu, cpu))
    host = {
        "hostname": hostname,
        "cpu": cpu,
        "memory_bytes": 24 * 2**30,
        "os": "Debian 12",
        "gpus": [{"index": 0, "name": gpu, "driver": "580.95.05"}] if any(j.device == "cuda" for j in jobs) else [],
    }
    path = specmod.path_of(spec_name) if hasattr(specmod, "path_of") else None
    record = {
        "name": spec.name,
        "sha256": spec.digest(),
        "resolved": json.loads(json.dumps(spec.model_dump(mode="json"))),
        "file": str(path) if path else "specs/%s.yaml" % spec_name,
        "file_sha256": "0" * 64,
    }
    return writer.finish(
        {
            "command": "known answers",
            "spec": record,
            "options": {"quick": quick},
            "executor": {"executor": "local"},
            "host": host,
            "images": [],
            "datasets": [],
            "left_out": [],
            "interrupted": False,
        }
    )
