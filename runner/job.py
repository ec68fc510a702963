"""Run one job in this process: ``python -m runner JOB.json OUTDIR``.

Always writes OUTDIR/result.json: status "ok" with the measurements, or "failed"
with the exception and its traceback. The exit status is 0 for ok and 1 otherwise,
so a supervisor can tell a recorded failure from a crash (no result.json).
"""
import json
import os
import sys
import traceback

from runner import contract, environment


class ModelMismatch(RuntimeError):
    """The framework's model has a different parameter count from the spec's."""


def _execute(job, result):
    # numpy and the framework are imported only now, after the thread-count variables are set
    from runner import adapters, data as datamod, measure

    adapter = adapters.load(job)
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
    if job["mode"] == "throughput":
        result["timing"], result["loss"] = measure.throughput(adapter, job, dataset)
    elif job["mode"] == "convergence":
        if dataset is None:
            raise contract.ContractError("convergence mode needs a dataset")
        result["timing"], result["loss"], result["convergence"] = measure.convergence(adapter, job, dataset)
    elif job["mode"] == "inference":
        result["timing"], result["inference"] = measure.inference(adapter, job)
    else:
        raise contract.ContractError("unknown mode %r" % job["mode"])


def run(job_path, outdir):
    """Run the job in ``job_path``, write ``outdir``/result.json; returns the result dict."""
    with open(job_path) as f:
        job = json.load(f)
    result = contract.new_result(job.get("id"), "failed")
    result["started"] = contract.utc_now()
    try:
        contract.check_job(job)
        environment.set_thread_count(job.get("threads"))
        result["environment"] = environment.describe()
        _execute(job, result)
        result["status"] = "ok"
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
