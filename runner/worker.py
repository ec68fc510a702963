"""A warm worker: one process that imports the framework once and runs job after job in it.

``python -m runner.worker CONTROL_FD FIRST_JOB.json [WHY]``: the process settings of FIRST_JOB.json
(runner.settings: thread variables, CPU affinity, the framework's environment) are applied before
anything is imported, and hold for every job the worker is given (the supervisor gives it only jobs
with the same settings). Then, for each line of standard input, a JSON list ["JOB.json", "OUTDIR"] (paths are
data: one with a space in it stays one path; ``order``), it runs the job
(runner.job.run, isolation "worker": a fresh adapter, model, optimizer, data and seeds; the adapter's
``release`` gives back its memory and the framework's caches afterwards) with its standard output and
error sent to OUTDIR/log.txt, hands the heap's free pages back to the system (glibc's malloc_trim), and
writes "done <job id> <status> <held bytes>" to file descriptor CONTROL_FD: the memory the worker still
holds, resident, once the job is released ("-" where /proc cannot tell), which the supervisor watches
(runner.supervise: a worker whose framework keeps memory from job to job is retired). Each job's result
names the worker (``worker``: {id: "<host name>/<pid>", unique among the live workers of a machine or
container; jobs_before: how many jobs it ran before this one, 0 in a fresh worker; held_bytes: what the
worker held as the job started, the interpreter's own in a fresh worker, else what the jobs before it left,
or None; started_for: WHY, why the supervisor started this worker, e.g. that the one before it failed}).
It ends at the end of its input. A job that crashes or hangs takes the worker down with it; the supervisor
records the job and starts another worker for the rest.
"""

import ctypes
import json
import os
import socket
import sys

from runner import job as jobmod
from runner import settings


def _run_logged(job_path, outdir, worker):
    """runner.job.run with this process's standard output and error in outdir/log.txt; ``worker``: the result's
    worker record."""
    if not os.path.isdir(outdir):
        os.makedirs(outdir)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log = os.open(os.path.join(outdir, "log.txt"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        return jobmod.run(job_path, outdir, isolation="worker", worker=worker)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + (log,):
            os.close(fd)


def held_bytes():
    """The memory this process holds (resident, bytes), after handing the heap's free pages back to the system
    (glibc malloc_trim: a framework's freed tensors otherwise stay in the process); None where /proc/self/statm
    cannot be read."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to hand back this way
        pass
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (IOError, OSError, ValueError, IndexError):
        return None


def order(job_path, outdir):
    """The line that gives a worker the job ``job_path`` with its output folder ``outdir``: one JSON list, so that
    neither path is split (a space in either is part of it)."""
    return json.dumps([str(job_path), str(outdir)]) + "\n"


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: python -m runner.worker CONTROL_FD FIRST_JOB.json [WHY]\n")
        return 2
    control = os.fdopen(int(argv[0]), "w")
    with open(argv[1]) as f:
        settings.apply(json.load(f))
    name, held = "%s/%d" % (socket.gethostname(), os.getpid()), held_bytes()
    for served, line in enumerate(sys.stdin):
        job_path, outdir = json.loads(line)
        result = _run_logged(
            job_path,
            outdir,
            {"id": name, "jobs_before": served, "held_bytes": held, "started_for": argv[2] if len(argv) > 2 else None},
        )
        held = held_bytes()
        control.write("done %s %s %s\n" % (result["job_id"], result["status"], "-" if held is None else held))
        control.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
