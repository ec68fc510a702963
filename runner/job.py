"""Run one job in this process: ``python -m runner JOB.json OUTDIR``.

Always writes OUTDIR/result.json: status "ok" with the measurements, "skipped" with
the reason and remedy when the job cannot run as asked here (an option the adapter
does not have, a GPU the framework build has no kernels for), or "failed" with the
exception and its traceback. Every result records the job's measurement options
(``options``) and, for GPU jobs, the GPU telemetry of the measured window. The exit status is 0 for ok and 1 otherwise,
so a supervisor can tell a recorded failure from a crash (no result.json).
"""
import json
import os
import sys
import traceback

from runner import archs, contract, environment, telemetry


class ModelMismatch(RuntimeError):
    """The framework's model has a different parameter count from the spec's."""


def _execute(job, result):
    # numpy and the framework are imported only now, after the thread-count variables are set
    from runner import adapters, data as datamod, measure
    from runner.adapters import capabilities

    problem = capabilities.unsupported_options(job["framework"], job, job["device"])
    if problem:
        raise archs.Refused(problem, "use the default for that option (%s), or a framework whose adapter has it"
                            % ", ".join("%s=%s" % kv for kv in sorted(contract.OPTION_DEFAULTS.items())))
    assigned = os.environ.get("DLREPRO_GPU")  # the host GPU the executor assigned (Slurm: the one its GRES gave)
    if job["device"] == "cuda" and assigned is not None and not environment.gpu_devices():
        raise archs.Refused(
            "no NVIDIA GPU device is visible to the job (no /dev/nvidia<N>): host GPU %s, assigned to it, was not "
            "passed in" % assigned,
            "run where the engine can pass GPUs into containers (NVIDIA Container Toolkit; Podman: its CDI spec), or "
            "use --device cpu")
    adapter = adapters.load(job)
    result["options"]["ptx_jit"] = _check_archs(adapter, job, result)
    expected = job["model"]["parameters"]
    measured = adapter.build()
    conventions = adapter.conventions()
    equivalent = measured + sum(c["difference"] for c in conventions)
    result["parameters"] = {"measured": measured, "expected": expected, "conventions": conventions,
                            "equivalent": equivalent}
    result["environment"].update(adapter.environment())
    if equivalent != expected:
        raise ModelMismatch("model %s has %s trainable parameters in %s%s, the spec states %s"
                            % (job["model"]["name"], format(measured, ","), job["framework"],
                               "".join(" (+%s: %s)" % (format(c["difference"], ","), c["name"]) for c in conventions),
                               format(expected, ",")))
    if job["mode"] == "parameters":
        return
    if job.get("weights"):
        result["weights"] = adapter.load_weights(job["weights"])
    dataset = None
    if job["data"]["kind"] == "dataset":
        dataset = datamod.load_dataset(job["data"], job["model"])
    sampler = telemetry.Sampler.for_job(job)
    try:
        if job["mode"] == "throughput":
            result["timing"], result["loss"] = measure.throughput(adapter, job, dataset, sampler)
        elif job["mode"] == "convergence":
            if dataset is None:
                raise contract.ContractError("convergence mode needs a dataset")
            result["timing"], result["loss"], result["convergence"] = measure.convergence(adapter, job, dataset,
                                                                                          sampler)
        elif job["mode"] == "inference":
            result["timing"], result["inference"] = measure.inference(adapter, job, sampler)
        else:
            raise contract.ContractError("unknown mode %r" % job["mode"])
    finally:
        sampler.close()
        result["telemetry"] = sampler.result()


def _check_archs(adapter, job, result):
    """Refuse a CUDA job whose framework build has no kernels for the GPU (archs.check); returns ptx_jit.

    The architectures come from the framework when it reports them (``adapter.cuda_archs()``:
    torch.cuda.get_arch_list()), else from the image matrix's table (job["cuda_archs"]).
    """
    if job["device"] != "cuda":
        return False
    gpu = getattr(adapter, "gpu_capability", lambda: None)()
    if gpu is None:
        return False
    reported = getattr(adapter, "cuda_archs", lambda: None)()
    shipped, source = (reported, "framework") if reported else (job.get("cuda_archs") or [], "image matrix")
    result["environment"]["cuda_archs"] = {"archs": shipped, "source": source if shipped else None,
                                           "gpu": gpu[0], "capability": gpu[1]}
    what = getattr(adapter, "build_name", job["framework"])
    return archs.check(what, gpu[0], gpu[1], shipped, job.get("allow_ptx_jit", False)) == "ptx"


def run(job_path, outdir):
    """Run the job in ``job_path``, write ``outdir``/result.json; returns the result dict."""
    with open(job_path) as f:
        job = json.load(f)
    result = contract.new_result(job.get("id"), "failed")
    result["started"] = contract.utc_now()
    result["options"] = contract.job_options(job)
    try:
        contract.check_job(job)
        environment.set_thread_count(job.get("threads"))
        result["environment"] = environment.describe()
        _execute(job, result)
        result["status"] = "ok"
    except archs.Refused as exc:  # cannot run as asked here: nothing went wrong
        result["status"], result["reason"], result["remedy"] = "skipped", exc.reason, exc.remedy
        sys.stderr.write("skipped: %s\n" % exc.reason)
    except Exception as exc:  # every failure is recorded, never lost
        result["status"] = "failed"
        result["reason"] = "%s: %s" % (type(exc).__name__, exc)
        result["error"] = {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}
        traceback.print_exc()
    result["finished"] = contract.utc_now()
    if not os.path.isdir(outdir):
        os.makedirs(outdir)
    contract.write_json(os.path.join(outdir, "result.json"), result)
    return result


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: python -m runner JOB.json OUTDIR\n")
        return 2
    return 0 if run(argv[0], argv[1])["status"] == "ok" else 1
