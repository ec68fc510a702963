"""A warm worker: one process that imports the framework once and runs job after job in it.

``python -m runner.worker CONTROL_FD FIRST_JOB.json``: the process settings of FIRST_JOB.json
(runner.settings: thread variables, CPU affinity, the framework's environment) are applied before
anything is imported, and hold for every job the worker is given (the supervisor gives it only jobs
with the same settings). Then, for each line "JOB.json OUTDIR" on standard input, it runs the job
(runner.job.run, isolation "worker": a fresh adapter, model, optimizer, data and seeds; the adapter's
``release`` gives back its memory and the framework's caches afterwards) with its standard output and
error sent to OUTDIR/log.txt, and writes "done <job id> <status>" to file descriptor CONTROL_FD. Each
job's result names the worker (``worker``: {id: "<host name>/<pid>", unique among the live workers of a
machine or container; jobs_before: how many jobs it ran before this one, 0 in a fresh worker}). It ends
at the end of its input. A job that crashes or hangs takes the worker down with it; the supervisor
records the job and starts another worker for the rest.
"""
import json
import os
import socket
import sys

from runner import job as jobmod, settings


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


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: python -m runner.worker CONTROL_FD FIRST_JOB.json\n")
        return 2
    control = os.fdopen(int(argv[0]), "w")
    with open(argv[1]) as f:
        settings.apply(json.load(f))
    name = "%s/%d" % (socket.gethostname(), os.getpid())
    for served, line in enumerate(sys.stdin):
        job_path, outdir = line.rstrip("\n").split(" ", 1)
        result = _run_logged(job_path, outdir, {"id": name, "jobs_before": served})
        control.write("done %s %s\n" % (result["job_id"], result["status"]))
        control.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
