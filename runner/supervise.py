"""Run every job of a plan:
``python -m runner.supervise [--watch-stdin | --serve] [--isolation worker|process] JOBS OUT``.

JOBS holds plan.json ({"jobs": [job ids in order]}) and <job id>.json for each; each job's output goes to
OUT/<id>/ (result.json, log.txt).

Isolation. ``worker`` (the default): the jobs that share their process settings (runner.settings: the
framework, the device, the thread variables and CPUs) run one after another in a warm worker
(runner.worker) that imported the framework once, each with a fresh adapter, model, optimizer, data and
seeds; a job that crashes, runs out of memory or hangs past its time limit takes down only its worker,
which is replaced for the jobs after it. ``process``: each job in a process of its own
(``python -m runner JOB OUT``), paying the interpreter's and the framework's start every time.

Clean workers. A worker is retired after any job that failed (an exception, a crash, its time limit): a
sticky CUDA error or a fragmented allocator never reaches the next job, which gets a new worker. A job
without warm-up (a convergence job, or ``warmup`` 0) runs in a fresh worker, one that ran nothing before
it (``needs_fresh``), since the caches that outlive a job's release (cuDNN/cuBLAS handles and autotune
results, loaded kernels, XLA compilations) would otherwise make its first epoch or iteration depend on the
jobs before it; that worker then serves the jobs after it. A worker that holds more than LEAK_FACTOR times
what it held after its first job, and LEAK_MIN_BYTES more, once a job is released and its free heap handed
back (runner.worker), is retired too: its framework keeps memory from job to job (TensorFlow 2.21 and CNTK
2.7 each kept 0.4-0.5 GiB more after each FCN or AlexNet job on the CPU), which would otherwise pile up in a
worker that serves a whole study, beside the other warm workers, until the host runs out. Each job's result
names its worker (``worker``: {id, jobs_before, held_bytes, started_for}; runner.worker).

Serving (``--serve``): JOBS and OUT are roots, and the supervisor runs plan after plan, one per line
"STAGE OUTDIR" on its standard input (paths relative to JOBS and OUT), printing ``@dlrepro done STAGE``
after each; its workers (one per settings key) stay warm between plans, so the runs of a study share
them (dlrepro.run.pool). It ends at the end of its input: cleanly between plans, and, like
``--watch-stdin``, at once (the running job ended) when its input ends during a plan.

The runner rewrites result.json after every repeat and epoch (status "running" until the end); when a job
ends without a final result, this supervisor records it as failed, naming the exit status or signal (out of
memory when the cgroup's OOM killer took it, with the limit: runner.limits) or the time limit, with the end
of the log, and keeps what the job had measured.

With ``--watch-stdin`` the supervisor reads its standard input, which the host holds open: end of file
means the host's run is gone (killed, its terminal closed), and the supervisor ends the running job and
exits at once, so no job outlives the run that started it.

Progress goes to stdout as lines ``@dlrepro start <id>`` and ``@dlrepro end <id> <status>``.
"""

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

from runner import contract, limits, settings
from runner import worker as workermod
from runner.job import SPAWNED

LOG_TAIL_BYTES = 4000
LEAK_FACTOR = 2.0  # a worker holding more than this times what it held after its first job is retired,
LEAK_MIN_BYTES = 512 << 20  # once that is also this much more (a framework's pools grow a few hundred MiB)
HOST_GONE = 75  # exit status when the host's run went away (--watch-stdin)
_running = []  # the job or worker processes being waited for, so that SIGTERM can end them too
_host_gone = threading.Event()  # set when standard input closed: nothing more is recorded
_retired = {}  # {settings key: why its worker was retired}, the reason its next worker starts for
FIRST = "the first job of its settings in this supervisor"
FRESH = "a job without warm-up: a worker that ran nothing before it"


def _end_running():
    for proc in list(_running):
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


def _exit_reason(returncode, oom_killed, what="the job process", at_limit=None):
    """Why a job's process ended without its result. ``oom_killed``: the kernel's OOM killer took a process of this
    cgroup meanwhile; ``at_limit``: the cgroup's usage reached its limit meanwhile (None: unknown)."""
    if returncode is None:
        return "%s did not finish" % what
    if returncode < 0:
        limit = limits.memory_limit()
        shown = limits.describe_bytes(limit) if limit else None
        if oom_killed and (at_limit is False or not limit):
            return (
                "out of memory: the host, or a cgroup above this one, ran out of memory (%s) and the kernel killed "
                "%s"
                % ("this one's own limit of %s was not reached" % shown if limit else "this one has no limit", what)
            )
        if oom_killed:
            return "out of memory (limit %s%s): the kernel killed %s" % (
                shown,
                "" if at_limit else ", or the host's: this kernel's counters cannot tell which",
                what,
            )
        name = signal.Signals(-returncode).name
        hint = " (killed: out of memory?)" if -returncode == signal.SIGKILL else ""
        return "%s died of %s%s" % (what, name, hint)
    return "%s exited with status %d without writing result.json" % (what, returncode)


def _final(result_path):
    """The job's result.json if the job finished it (any status but "running"), else None."""
    try:
        with open(result_path) as f:
            result = json.load(f)
    except (IOError, OSError, ValueError):
        return None
    return result if result.get("status") != "running" else None


def _record_failure(job, result_path, reason, log_path):
    """Write the failed result of a job that did not finish, keeping what it had measured; returns its status."""
    try:
        with open(result_path) as f:
            result = json.load(f)  # written after the last complete repeat or epoch
    except (IOError, OSError, ValueError):
        result = contract.new_result(job.get("id"), "failed")
    result.update(
        status="failed",
        reason=reason,
        finished=contract.utc_now(True),
        error={"type": "ProcessError", "message": reason, "traceback": _log_tail(log_path)},
    )
    contract.write_json(result_path, result)
    return "failed"


def _settle(job, outdir, counters_before, reason, returncode, what):
    """The status of a job whose process (or worker) has ended: its final result's, or "failed" as recorded."""
    result_path = os.path.join(outdir, "result.json")
    found = _final(result_path)
    if found is not None:
        return found["status"]
    (kills, reached), (kills_after, reached_after) = counters_before, limits.counters()
    oom = kills is not None and kills_after is not None and kills_after > kills
    if reached is None:
        at_limit = None
    elif reached_after is None:  # v1: the peak usage, under the limit before, has reached it (limits.limit_reached)
        at_limit = True
    else:
        at_limit = reached_after > reached
    return _record_failure(
        job, result_path, reason or _exit_reason(returncode, oom, what, at_limit), os.path.join(outdir, "log.txt")
    )


def _timed_out(job):
    return "the job exceeded its time limit of %s s and was killed" % job.get("timeout_s")


def run_one(command, job, outdir):
    """Run ``command`` (a runner invocation) for ``job`` in a process of its own; returns its status."""
    if not os.path.isdir(outdir):
        os.makedirs(outdir)
    counters_before = limits.counters()
    with open(os.path.join(outdir, "log.txt"), "wb") as log:
        proc = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, **{SPAWNED: repr(time.time())})
        )
        _running[:] = [proc]
        try:
            proc.wait(timeout=job.get("timeout_s"))
            reason = None
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            reason = _timed_out(job)
        finally:
            del _running[:]
    if _host_gone.is_set():  # the job was ended because the host's run is gone: it did not fail
        os._exit(HOST_GONE)
    return _settle(job, outdir, counters_before, reason, proc.returncode, "the job process")


class Worker(object):
    """A runner.worker process for jobs of one settings key: ``run(job, path, outdir)`` gives a job's status
    (a job that took the worker down is recorded as failed, the worker then gone); ``jobs``: how many it was
    given; ``held``: the bytes it held after its last job, ``first_held`` after its first (None: not told)."""

    def __init__(self, first_job_path, why):
        """``why``: why it is started, kept in each of its jobs' ``worker.started_for``."""
        read, write = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "runner.worker", str(write), first_job_path, why],
            stdin=subprocess.PIPE,
            stdout=sys.stderr,
            stderr=sys.stderr,
            pass_fds=(write,),
            universal_newlines=True,
        )
        os.close(write)
        self.control = os.fdopen(read)
        self.jobs = 0  # how many jobs it was given
        self.held = self.first_held = None
        _running.append(self.proc)

    def keeps_memory(self):
        """Whether it holds more than LEAK_FACTOR times, and LEAK_MIN_BYTES more than, what it held after its first
        job."""
        return None not in (self.held, self.first_held) and self.held > max(
            LEAK_FACTOR * self.first_held, self.first_held + LEAK_MIN_BYTES
        )

    def _reply(self, timeout):
        """The worker's next control line, "" when it ended, None at the time limit."""
        ready, _, _ = select.select([self.control], [], [], timeout)
        return self.control.readline() if ready else None

    def run(self, job, job_path, outdir):
        counters_before = limits.counters()
        self.jobs += 1
        try:
            self.proc.stdin.write(workermod.order(job_path, outdir))
            self.proc.stdin.flush()
            line = self._reply(job.get("timeout_s"))
        except (IOError, OSError):  # the worker is gone already
            line = ""
        if line:
            return self._done(line)
        self.close(kill=True)
        if _host_gone.is_set():
            os._exit(HOST_GONE)
        return _settle(
            job,
            outdir,
            counters_before,
            _timed_out(job) if line is None else None,
            self.proc.returncode,
            "the worker process running it",
        )

    def _done(self, line):
        """The status in the worker's line "done <job id> <status> <held bytes>"; what it holds is kept."""
        fields = line.split()
        self.held = int(fields[3]) if len(fields) > 3 and fields[3].isdigit() else None
        if self.jobs == 1:
            self.first_held = self.held
        return fields[2]

    def close(self, kill=False):
        if self.proc.poll() is None:
            if kill:
                self.proc.kill()
            else:
                self.proc.stdin.close()
        self.proc.wait()
        self.control.close()
        if self.proc in _running:
            _running.remove(self.proc)


def _announce(kind, job_id, status=""):
    print(("@dlrepro %s %s %s" % (kind, job_id, status)).rstrip())
    sys.stdout.flush()


def _in_process(job_id, job, jobs_dir, out_dir):
    job_path = os.path.join(jobs_dir, job_id + ".json")
    _announce("start", job_id)
    status = run_one(
        [sys.executable, "-m", "runner", job_path, os.path.join(out_dir, job_id)], job, os.path.join(out_dir, job_id)
    )
    _announce("end", job_id, status)


def needs_fresh(job):
    """Whether ``job`` times from its first iteration on, with no warm-up to absorb what earlier jobs of a worker
    left (a convergence job; a throughput job with warm-up 0): it runs in a worker that ran nothing before."""
    return job.get("mode") == "convergence" or (job.get("mode") == "throughput" and job.get("warmup") == 0)


def _in_workers(jobs, jobs_dir, out_dir, workers):
    """Run ``jobs`` [(id, job)] in the warm workers ``workers`` {settings key: Worker} (started as needed, kept
    for later plans when serving): a worker is retired after a job that failed and once it keeps memory
    (``Worker.keeps_memory``), a job without warm-up gets a fresh one (``needs_fresh``); a data-parallel job
    runs in a process of its own (its ranks and their process group start and end with it)."""
    for job_id, job in jobs:
        if job.get("ranks") is not None:
            _in_process(job_id, job, jobs_dir, out_dir)
            continue
        key = settings.key(job)
        worker = workers.get(key)
        if worker is not None and worker.proc.poll() is not None:
            _retire(workers, key, "the worker before it had ended")
            worker = None
        elif worker is not None and needs_fresh(job) and worker.jobs:
            _retire(workers, key, FRESH)
            worker = None
        job_path = os.path.join(jobs_dir, job_id + ".json")
        if worker is None:
            worker = workers[key] = Worker(job_path, _retired.pop(key, FIRST))
        _announce("start", job_id)
        status = worker.run(job, job_path, os.path.join(out_dir, job_id))
        if status == "failed":  # retired: what the failure left in it does not reach the next job
            _retire(workers, key, "the worker before it failed (job %s)" % job_id, kill=True)
        elif worker.keeps_memory():  # retired: what its framework keeps does not pile up
            _retire(
                workers,
                key,
                "the worker before it kept memory: %d MiB after job %s, %d MiB after its first"
                % (worker.held >> 20, job_id, worker.first_held >> 20),
            )
        _announce("end", job_id, status)


def _retire(workers, key, why, kill=False):
    """End the worker of ``key``; ``why`` is what its successor will be started for."""
    workers.pop(key).close(kill=kill)
    _retired[key] = why


def _close(workers):
    for worker in workers.values():
        worker.close()
    workers.clear()


def _plans(busy):
    """The lines "STAGE OUTDIR" of standard input, as they come (``--serve``); when it ends while ``busy`` is set
    (a plan runs: the host's run is gone), the running job is ended and the supervisor exits."""
    lines, arrived = [], threading.Condition()

    def read():
        try:
            for line in sys.stdin:
                with arrived:
                    lines.append(line)
                    arrived.notify()
        except (IOError, OSError, ValueError):
            pass
        with arrived:
            lines.append(None)
            arrived.notify()
            if busy.is_set():
                _host_gone.set()
                _end_running()
                sys.stderr.write("supervisor: the host's run is gone (standard input closed); ending\n")
                os._exit(HOST_GONE)

    threading.Thread(target=read, name="read-plans", daemon=True).start()
    while True:
        with arrived:
            while not lines:
                arrived.wait()
            line = lines.pop(0)
            if line is not None:
                busy.set()
        if line is None:
            return
        yield line.rstrip("\n").split(" ", 1)


def _read_plan(jobs_dir):
    with open(os.path.join(jobs_dir, "plan.json")) as f:
        plan = json.load(f)
    jobs = []
    for job_id in plan["jobs"]:
        with open(os.path.join(jobs_dir, job_id + ".json")) as f:
            jobs.append((job_id, json.load(f)))
    return jobs


def _serve(jobs_root, out_root, isolation):
    """Run plan after plan (``--serve``), the workers kept between them; returns the exit status."""
    workers, busy = {}, threading.Event()
    for stage, out in _plans(busy):
        jobs_dir, out_dir = os.path.join(jobs_root, stage), os.path.join(out_root, out)
        _run_plan(_read_plan(jobs_dir), jobs_dir, out_dir, isolation, workers)
        busy.clear()
        _announce("done", stage)
    _close(workers)
    return 0


def _run_plan(jobs, jobs_dir, out_dir, isolation, workers):
    if isolation == "worker":
        _in_workers(jobs, jobs_dir, out_dir, workers)
        return
    for job_id, job in jobs:
        _in_process(job_id, job, jobs_dir, out_dir)


def main(argv):
    watch, serve = "--watch-stdin" in argv, "--serve" in argv
    argv = [a for a in argv if a not in ("--watch-stdin", "--serve")]
    isolation = "worker"
    if "--isolation" in argv:
        at = argv.index("--isolation")
        isolation = argv[at + 1] if at + 1 < len(argv) else None
        argv = argv[:at] + argv[at + 2 :]
    if len(argv) != 2 or isolation not in ("worker", "process") or (watch and serve):
        sys.stderr.write(
            "usage: python -m runner.supervise [--watch-stdin | --serve] [--isolation worker|process] JOBS OUT\n"
        )
        return 2
    jobs_dir, out_dir = argv
    signal.signal(signal.SIGTERM, _terminate)
    if serve:
        return _serve(jobs_dir, out_dir, isolation)
    if watch:
        threading.Thread(target=_watch_stdin, name="watch-stdin", daemon=True).start()
    workers = {}
    _run_plan(_read_plan(jobs_dir), jobs_dir, out_dir, isolation, workers)
    _close(workers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
