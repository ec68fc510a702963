"""Run every job of a plan: ``python -m runner.supervise [--watch-stdin] JOBS_DIR OUT_DIR``.

JOBS_DIR holds plan.json ({"jobs": [job ids in order]}) and <job id>.json for each.
Each job runs as ``python -m runner JOBS_DIR/<id>.json OUT_DIR/<id>`` with its output
in OUT_DIR/<id>/log.txt, so one job that crashes, runs out of memory or hangs cannot
take the others down. The runner rewrites result.json after every repeat and epoch (status
"running" until the end); when a job process ends without a final result, this supervisor
records it as failed, naming the exit status or signal (out of memory when the cgroup's OOM
killer took it, with the limit: runner.limits) or the time limit, with the end of the log,
and keeps what the job had measured.

With ``--watch-stdin`` the supervisor reads its standard input, which the host holds open:
end of file means the host's run is gone (killed, its terminal closed), and the supervisor
ends the running job and exits at once, so no job outlives the run that started it.

Progress goes to stdout as lines ``@dlrepro start <id>`` and ``@dlrepro end <id> <status>``.
"""
import json
import os
import signal
import subprocess
import sys
import threading

from runner import contract, limits

LOG_TAIL_BYTES = 4000
HOST_GONE = 75  # exit status when the host's run went away (--watch-stdin)
_running = []  # the job process being waited for, so that SIGTERM can end it too
_host_gone = threading.Event()  # set when standard input closed: nothing more is recorded


def _end_running():
    for proc in _running:
        if proc.poll() is None:
            proc.kill()


def _terminate(signum, frame):
    """On SIGTERM (e.g. `docker stop`, or the host cancelling a run), end the running job, then exit."""
    _end_running()
    sys.exit(128 + signum)


def _watch_stdin():
    """Block until standard input ends (the host closed it or died), then end the running job and exit."""
    try:
        while sys.stdin.read(4096):
            pass
    except (IOError, OSError, ValueError):
        pass
    _host_gone.set()
    _end_running()
    sys.stderr.write("supervisor: the host's run is gone (standard input closed); ending\n")
    os._exit(HOST_GONE)


def _log_tail(path):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _exit_reason(returncode, oom_killed):
    if returncode is None:
        return "the job process did not finish"
    if returncode < 0:
        if oom_killed:
            limit = limits.memory_limit()
            return "out of memory (limit %s): the kernel killed the job process" % (
                limits.describe_bytes(limit) if limit else "of the container")
        name = signal.Signals(-returncode).name
        hint = " (killed: out of memory?)" if -returncode == signal.SIGKILL else ""
        return "the job process died of %s%s" % (name, hint)
    return "the job process exited with status %d without writing result.json" % returncode


def _final(result_path):
    """The job's result.json if the job finished it (any status but "running"), else None."""
    try:
        with open(result_path) as f:
            result = json.load(f)
    except (IOError, OSError, ValueError):
        return None
    return result if result.get("status") != "running" else None


def _record_failure(job, result_path, reason, log_path):
    """Write the failed result of a job that did not finish, keeping what it had measured."""
    try:
        with open(result_path) as f:
            result = json.load(f)  # written after the last complete repeat or epoch
    except (IOError, OSError, ValueError):
        result = contract.new_result(job.get("id"), "failed")
    result.update(status="failed", reason=reason, finished=contract.utc_now(),
                  error={"type": "ProcessError", "message": reason, "traceback": _log_tail(log_path)})
    contract.write_json(result_path, result)
    return result


def run_one(command, job, outdir):
    """Run ``command`` (a runner invocation) for ``job``; returns the status recorded in result.json."""
    if not os.path.isdir(outdir):
        os.makedirs(outdir)
    log_path = os.path.join(outdir, "log.txt")
    result_path = os.path.join(outdir, "result.json")
    timeout = job.get("timeout_s")
    kills_before = limits.oom_kills()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        _running[:] = [proc]
        try:
            proc.wait(timeout=timeout)
            reason = None
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            reason = "the job exceeded its time limit of %s s and was killed" % timeout
        finally:
            del _running[:]
    if _host_gone.is_set():  # the job was ended because the host's run is gone: it did not fail
        os._exit(HOST_GONE)
    found = _final(result_path)
    if found is not None:
        return found["status"]
    kills_after = limits.oom_kills()
    oom = kills_before is not None and kills_after is not None and kills_after > kills_before
    return _record_failure(job, result_path, reason or _exit_reason(proc.returncode, oom), log_path)["status"]


def main(argv):
    watch = "--watch-stdin" in argv
    argv = [a for a in argv if a != "--watch-stdin"]
    if len(argv) != 2:
        sys.stderr.write("usage: python -m runner.supervise [--watch-stdin] JOBS_DIR OUT_DIR\n")
        return 2
    jobs_dir, out_dir = argv
    signal.signal(signal.SIGTERM, _terminate)
    if watch:
        threading.Thread(target=_watch_stdin, name="watch-stdin", daemon=True).start()
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
