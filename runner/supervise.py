"""Run every job of a plan, one process per job: ``python -m runner.supervise JOBS_DIR OUT_DIR``.

JOBS_DIR holds plan.json ({"jobs": [job ids in order]}) and <job id>.json for each.
Each job runs as ``python -m runner JOBS_DIR/<id>.json OUT_DIR/<id>`` with its output
in OUT_DIR/<id>/log.txt, so one job that crashes, runs out of memory or hangs cannot
take the others down: when a job process ends without writing result.json, this
supervisor writes a "failed" one naming the exit status or signal and the end of the log.

Progress goes to stdout as lines ``@dlrepro start <id>`` and ``@dlrepro end <id> <status>``.
"""
import json
import os
import signal
import subprocess
import sys

from runner import contract

LOG_TAIL_BYTES = 4000
_running = []  # the job process being waited for, so that SIGTERM can end it too


def _terminate(signum, frame):
    """On SIGTERM (e.g. `docker stop`, or the host cancelling a run), end the running job, then exit."""
    for proc in _running:
        if proc.poll() is None:
            proc.kill()
    sys.exit(128 + signum)


def _log_tail(path):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _exit_reason(returncode):
    if returncode is None:
        return "the job process did not finish"
    if returncode < 0:
        name = signal.Signals(-returncode).name
        hint = " (killed: out of memory?)" if -returncode == signal.SIGKILL else ""
        return "the job process died of %s%s" % (name, hint)
    return "the job process exited with status %d without writing result.json" % returncode


def run_one(command, job, outdir):
    """Run ``command`` (a runner invocation) for ``job``; returns the status recorded in result.json."""
    if not os.path.isdir(outdir):
        os.makedirs(outdir)
    log_path = os.path.join(outdir, "log.txt")
    result_path = os.path.join(outdir, "result.json")
    timeout = job.get("timeout_s")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        _running[:] = [proc]
        try:
            proc.wait(timeout=timeout)
            reason = _exit_reason(proc.returncode)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            reason = "the job exceeded its time limit of %s s and was killed" % timeout
        finally:
            del _running[:]
    if os.path.isfile(result_path):  # written last and atomically: the job finished its work
        with open(result_path) as f:
            return json.load(f)["status"]
    result = contract.new_result(job.get("id"), "failed", reason=reason,
                                 error={"type": "ProcessError", "message": reason, "traceback": _log_tail(log_path)})
    result["finished"] = contract.utc_now()
    contract.write_json(result_path, result)
    return "failed"


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: python -m runner.supervise JOBS_DIR OUT_DIR\n")
        return 2
    jobs_dir, out_dir = argv
    signal.signal(signal.SIGTERM, _terminate)
    with open(os.path.join(jobs_dir, "plan.json")) as f:
        plan = json.load(f)
    for job_id in plan["jobs"]:
        job_path = os.path.join(jobs_dir, job_id + ".json")
        with open(job_path) as f:
            job = json.load(f)
        print("@dlrepro start %s" % job_id)
        sys.stdout.flush()
        status = run_one([sys.executable, "-m", "runner", job_path, os.path.join(out_dir, job_id)], job,
                         os.path.join(out_dir, job_id))
        print("@dlrepro end %s %s" % (job_id, status))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
