"""Run one job: ``python -m runner JOB.json OUTDIR``, or ``run`` in a worker process (runner.worker).

Always writes OUTDIR/result.json: status "ok" with the measurements, "skipped" with
the reason and remedy when the job cannot run as asked here (an option the adapter
does not have, a GPU the framework build has no kernels for), or "failed" with the
exception and its traceback. While the job runs, result.json is rewritten after every
repeat and epoch with status "running" and what was measured so far, so a job killed
midway keeps it (runner.supervise records it as failed with the reason). Every result
records the job's measurement options (``options``), the process settings it ran with
(runner.settings), the measured window's CPU time, effective parallelism and energy, and
for GPU jobs the GPU telemetry (runner.window), and when each phase ended (``phases``).
The exit status is 0 for ok and 1 otherwise, so a supervisor can tell a recorded failure
from a crash (no final result.json).
"""

import gc
import json
import os
import sys
import time
import traceback

from runner import archs, contract, environment, rankjoin, ranks, settings
from runner import window as windowmod

SPAWNED = "DLREPRO_SPAWNED"  # time.time() at which the supervisor started this job's process


class ModelMismatch(RuntimeError):
    """The framework's model has a different parameter count from the spec's."""


class _Job(object):
    """One job's result as it is being made, written to ``outdir`` whenever it changes."""

    def __init__(self, job, outdir, isolation, rank=0, worker=None):
        self.job, self.outdir, self.t0, self.rank = job, outdir, time.time(), rank
        self.result = contract.new_result(job.get("id"), "running")
        self.result.update(
            started=contract.utc_now(True), options=contract.job_options(job), isolation=isolation, worker=worker
        )
        spawned = os.environ.get(SPAWNED)
        if spawned and isolation == "process":
            self.result["phases"]["spawned"] = round(float(spawned) - self.t0, 3)

    def phase(self, name):
        """Record that the job reached phase ``name`` (seconds since it started), written at once: a job killed
        later still says how far it got."""
        self.result["phases"][name] = round(time.time() - self.t0, 3)
        self.write()

    def write(self):
        """result.json (rank 0, or a plain job); a data-parallel job's other ranks write their rank record."""
        if not os.path.isdir(self.outdir):
            os.makedirs(self.outdir)
        if self.rank:
            if self.result["status"] != "running":
                contract.write_json(ranks.record_path(self.outdir, self.rank), self.rank_record())
            return
        contract.write_json(os.path.join(self.outdir, "result.json"), self.result)

    def rank_record(self):
        """This rank's part of a data-parallel job: its status, device, timed iterations, CPU time and
        telemetry (runner.rankjoin joins them into the job's)."""
        r, timing, tel = self.result, self.result.get("timing") or {}, self.result.get("telemetry") or {}
        return {
            "rank": self.rank,
            "status": r["status"],
            "reason": r["reason"],
            "device": (r.get("environment") or {}).get("gpu") or (r.get("environment") or {}).get("cpu"),
            "process": (r.get("environment") or {}).get("process"),
            "repeats": timing.get("repeats"),
            "summary": timing.get("summary"),
            "cpu_usage": r.get("cpu_usage"),
            "telemetry": {
                k: tel.get(k)
                for k in ("status", "reason", "device", "summary", "throttled", "throttle_reasons", "energy")
            },
        }

    def abort(self, reason):
        """Another rank died: record the job as failed with the reason and end this process (its collectives
        would wait for the dead rank)."""
        self.result.update(status="failed", reason=reason, finished=contract.utc_now(True))
        self.write()
        os._exit(1)

    def progress(self, timing, convergence=None):
        """What was measured so far, status running: kept if the job dies before it ends."""
        self.result["timing"] = timing
        if convergence is not None:
            self.result["convergence"] = convergence
        self.write()


def _execute(state):
    # numpy and the framework are imported only now, after runner.settings has set the environment
    from runner import adapters, frameworks, measure
    from runner import data as datamod
    from runner.adapters import capabilities

    job, result = state.job, state.result
    problem = capabilities.unsupported_options(frameworks.Token.of_job(job), job, job["device"])
    if problem:
        raise archs.Refused(
            problem,
            "use the default for that option (%s), a warm-up of at least one iteration, "
            "or a framework whose adapter has it"
            % ", ".join("%s=%s" % kv for kv in sorted(contract.OPTION_DEFAULTS.items())),
        )
    unmapped = os.environ.get("DLREPRO_GPU_UNMAPPED")  # a Slurm task whose GPUs name no host GPU for certain
    if job["device"] == "cuda" and unmapped:
        raise archs.Refused(
            unmapped,
            "give gres.conf explicit File=/dev/nvidia<N> lines (Slurm then sets "
            "SLURM_JOB_GPUS to the host indices), or put nvidia-smi on the nodes with "
            "ConstrainDevices=yes (its GPU UUIDs are then used)",
        )
    assigned = os.environ.get("DLREPRO_GPU")  # the host GPU the executor assigned (Slurm: the one its GRES gave)
    if job["device"] == "cuda" and assigned is not None and not environment.gpu_devices():
        raise archs.Refused(
            "no NVIDIA GPU device is visible to the job (no /dev/nvidia<N>): host GPU %s, assigned to it, was not "
            "passed in" % assigned,
            "run where the engine can pass GPUs into containers (NVIDIA Container Toolkit; Podman: its CDI spec), or "
            "use --device cpu",
        )
    adapter = adapters.load(job)
    _leave_out_of_collections()
    state.phase("framework_imported")
    result["options"]["ptx_jit"] = _check_archs(adapter, job, result)
    expected = job["model"]["parameters"]
    measured = adapter.build()
    conventions = adapter.conventions()
    equivalent = measured + sum(c["difference"] for c in conventions)
    result["parameters"] = {
        "measured": measured,
        "expected": expected,
        "conventions": conventions,
        "equivalent": equivalent,
    }
    result["environment"].update(adapter.environment())
    state.phase("model_built")
    if equivalent != expected:
        raise ModelMismatch(
            "model %s has %s trainable parameters in %s%s, the spec states %s"
            % (
                job["model"]["name"],
                format(measured, ","),
                job["framework"],
                "".join(" (+%s: %s)" % (format(c["difference"], ","), c["name"]) for c in conventions),
                format(expected, ","),
            )
        )
    if job["mode"] == "parameters":
        return adapter
    if job.get("weights"):
        result["weights"] = adapter.load_weights(job["weights"])
    dataset = None
    if job["data"]["kind"] == "dataset":
        dataset = datamod.load_dataset(job["data"], job["model"])
        result["environment"]["prepared_data"] = dataset.prepared
    state.phase("data_ready")
    window = windowmod.Window.for_job(job)
    try:
        if job["mode"] == "throughput":
            result["timing"], result["loss"] = measure.throughput(
                adapter, job, dataset, window, state.progress, lambda: state.phase("warmup_done")
            )
        elif job["mode"] == "convergence":
            if dataset is None:
                raise contract.ContractError("convergence mode needs a dataset")
            result["timing"], result["loss"], result["convergence"] = measure.convergence(
                adapter, job, dataset, window, state.progress
            )
        elif job["mode"] == "inference":
            result["timing"], result["inference"] = measure.inference(adapter, job, window)
        else:
            raise contract.ContractError("unknown mode %r" % job["mode"])
    finally:
        window.close()
        result.update(telemetry=window.telemetry(), cpu_usage=window.cpu_usage(), energy=window.energy())
        state.phase("measured_done")
    result["environment"].update(adapter.ran())  # what ran, known only now (torch: the graphs it compiled)
    return adapter


def _leave_out_of_collections():
    """Put every object alive now (the interpreter's, the runner's, the framework's just imported: 170,000 with
    torch) out of the cyclic garbage collector's reach, so that the full collection of the adapter's ``release``
    after every job scans only what a job made since (0.09 s a job with torch on a 2-CPU host, and none after
    this). They stay alive as they would have. Python >= 3.7 (gc.freeze); before that, nothing changes."""
    freeze = getattr(gc, "freeze", None)
    if freeze is not None:
        freeze()


def _check_archs(adapter, job, result):
    """Refuse a CUDA job whose framework build has no kernels for the GPU (archs.check); returns ptx_jit.

    The architectures come from the framework when it reports them (``adapter.cuda_archs()``:
    torch.cuda.get_arch_list()), else from the image matrix's table (job["cuda_archs"]). The GPU is
    ``adapter.gpu_capability()``; where the adapter cannot tell, the record says "unknown" with a
    note and nothing is refused.
    """
    if job["device"] != "cuda":
        return False
    gpu = adapter.gpu_capability()
    reported = adapter.cuda_archs()
    shipped, source = (reported, "framework") if reported else (job.get("cuda_archs") or [], "image matrix")
    record = {"archs": shipped, "source": source if shipped else None, "gpu": "unknown", "capability": "unknown"}
    result["environment"]["cuda_archs"] = record
    if gpu is None:
        record["note"] = (
            "the %s adapter cannot tell the GPU's compute capability, so the build's architectures "
            "were not checked against it" % job["framework"]
        )
        return False
    record["gpu"], record["capability"] = gpu
    return archs.check(adapter.build_name, gpu[0], gpu[1], shipped, job.get("allow_ptx_jit", False)) == "ptx"


def _launch_ranks(job, job_path, state):
    """Rank 0 of a data-parallel job: the rendezvous and the GPUs' topology recorded; for a process-per-rank
    framework its rendezvous variables set and ranks 1..N-1 started (runner.ranks), returned; None otherwise."""
    if job.get("ranks") is None:
        return None
    state.result["environment"].update(rendezvous=job.get("rendezvous"), gpu_topology=ranks.topology(job))
    if job["framework"] not in ranks.PROCESS_PER_RANK:
        return None
    os.environ.update(ranks.environment(job, 0))
    return ranks.Launched(job, job_path, state.outdir, state.abort) if job["ranks"] > 1 else None


def run(job_path, outdir, isolation="process", rank=0, worker=None):
    """Run the job in ``job_path``, write ``outdir``/result.json; returns the result dict. ``isolation``:
    "process" (this process runs this job only) or "worker" (runner.worker: its earlier jobs ran here too, and
    the process's settings were applied once). ``rank``: which rank of a data-parallel job this process is
    (runner.ranks; rank 0 launches the others and keeps their records in ``ranks``). ``worker``: the worker
    record of a job run in a warm worker (runner.worker), kept in the result. The adapter is released
    (runner.adapters.base) at the end."""
    with open(job_path) as f:
        job = json.load(f)
    state = _Job(job, outdir, isolation, rank, worker)
    result, adapter, launched = state.result, None, None
    try:
        contract.check_job(job)
        process = settings.apply(job, rank) if isolation == "process" else settings.record(job)
        result["environment"] = dict(environment.describe(), process=process)
        state.write()
        if rank == 0:
            launched = _launch_ranks(job, job_path, state)
        adapter = _execute(state)
        result["status"] = "ok"
        if job.get("ranks") is not None and rank == 0:
            result["ranks"] = [state.rank_record()] + (launched.collect(job.get("timeout_s")) if launched else [])
            rankjoin.join(result, job, result["ranks"])
    except archs.Refused as exc:  # cannot run as asked here: nothing went wrong
        result["status"], result["reason"], result["remedy"] = "skipped", exc.reason, exc.remedy
        sys.stderr.write("skipped: %s\n" % exc.reason)
    except Exception as exc:  # every failure is recorded, never lost
        result["status"] = "failed"
        result["reason"] = "%s: %s" % (type(exc).__name__, exc)
        if launched is not None and launched.dead(grace=5.0):  # the cause, not the collective that noticed it
            result["reason"] = "%s (rank 0: %s)" % (launched.failure, result["reason"])
        result["error"] = {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}
        traceback.print_exc()
    finally:
        if adapter is not None:
            adapter.release()
        if launched is not None and result["status"] != "ok":
            launched.stop()
    result["finished"] = contract.utc_now(True)
    state.phase("finished")
    return result


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: python -m runner JOB.json OUTDIR\n")
        return 2
    return 0 if run(argv[0], argv[1])["status"] == "ok" else 1
