"""The efficiency columns of one job, written with a bundle's tables: the FLOPs of its timed mini-batch, the FLOP/s it
achieved, and the peak of the device it ran on at its precision.

A job's work per timed mini-batch is counted from its job.json (runner.flops: a training iteration, or an inference
pass, as direct convolutions and plain matrix products: the "model FLOPs"); over the measured seconds per
mini-batch (the median) it gives the achieved FLOP/s, and over the device's peak (dlrepro.inputs.peaks: a GPU by name, a
CPU's estimate from its cores, clock and vector units) the fraction of peak. What the fractions are then set beside
(published cells on their own hardware, then and now) is the answer layer's: dlrepro.answers.efficiency.
"""

from dlrepro.inputs import peaks
from runner import flops

COLUMNS = ("flops_per_iteration", "achieved_flops", "peak_flops", "fraction_of_peak", "peak_device", "peak_source")


def cpu_count(job, result):
    """(physical cores or None, logical CPUs) a cpu job ran on: the CPUs its thread count was confined to (the
    process record's cpu_choice, each core counted once through its CPUs' SMT siblings), else the cores and CPUs
    its process could use (environment cpu.usable_cores, usable_cpus); results that recorded neither: (None, its
    threads, else its usable CPUs)."""
    environment = result.get("environment") or {}
    chosen = (((environment.get("process") or {}).get("cpu_choice") or {}).get("cpus")) or []
    if chosen and all(c.get("siblings") for c in chosen):
        return len({tuple(c["siblings"]) for c in chosen}), len(chosen)
    cpu = environment.get("cpu") or {}
    if not job.get("threads") and cpu.get("usable_cores"):
        return cpu["usable_cores"], cpu.get("usable_cpus")
    return None, job.get("threads") or cpu.get("usable_cpus")


def job_peak(job, result, precision, device_name):
    """The Peak a job ran against (dlrepro.inputs.peaks.Peak), or None: a cuda job's GPU by name and its ranks' count
    at ``precision``; a cpu job's fp32 estimate from its physical cores (cpu_count), clock and CPU model."""
    if job["device"] == "cuda":
        return peaks.gpu(device_name, job.get("ranks") or 1, precision or "fp32")
    cpu = (result.get("environment") or {}).get("cpu") or {}
    if (precision or "fp32") != "fp32":
        return None
    cores, logical = cpu_count(job, result)
    return peaks.cpu(cpu.get("mhz"), cpu, cores, logical)


def job_columns(job, result, precision, device_name, median, quantity):
    """The efficiency columns (COLUMNS) of one job: ``median`` seconds per mini-batch of a throughput or
    inference job (``quantity`` "seconds per mini-batch"); None in each column that does not apply.
    achieved_flops and peak_flops in FLOP/s, fraction_of_peak in [0, 1] (a fraction, not percent)."""
    out = dict.fromkeys(COLUMNS)
    if result.get("status") != "ok" or quantity != "seconds per mini-batch" or not median:
        return out
    work = flops.of_job(job)
    if work is None:
        return out
    out["flops_per_iteration"], out["achieved_flops"] = work, work / median
    peak = job_peak(job, result, precision, device_name)
    if peak is None:
        clock = job["device"] != "cuda" and not ((result.get("environment") or {}).get("cpu") or {}).get("mhz")
        out["peak_source"] = "no peak known for %s (%s, %s)%s" % (
            device_name,
            job["device"],
            precision or "fp32",
            ": the job recorded no CPU clock" if clock else "",
        )
        return out
    out["peak_device"], out["peak_source"] = peak.device, peak.source
    if peak.flops:
        out["peak_flops"], out["fraction_of_peak"] = peak.flops, out["achieved_flops"] / peak.flops
    return out
