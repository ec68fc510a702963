"""Data-parallel jobs: ``job["ranks"]`` ranks, one per GPU (or one CPU process each), on one mini-batch split
across them.

The host chooses the rendezvous (``job["rendezvous"]``: address and port on the job's host, never asked of a
scheduler from inside a container); rank r takes rows r*b .. (r+1)*b of each total mini-batch of
``job["batch_size"]`` rows (b = ``job["rank_batch_size"]``; runner.adapters.base ``shard``). Adapters that run a
process per rank (PyTorch's DistributedDataParallel) are launched from rank 0, which is the job's own process:
``launch`` starts ranks 1..N-1 (``python -m runner.rank JOB OUTDIR RANK``), each running the same warm-up and
repeats with a barrier at every repeat's edges and writing its own record (OUTDIR/rank-<r>.json: its timed
iterations, device and telemetry); rank 0's result takes them as ``ranks``. A rank that dies ends the job: rank
0 records the reason and ends the others; a rank whose rank 0 is gone ends itself; every collective has the
job's time limit, so none hangs. Adapters that drive several devices from one process (JAX) need no launch.

NVLink multicast stays off in every rank (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1): on shared hosts a program using it can take the GPUs out of service.
"""

import json
import os
import subprocess
import sys
import threading
import time

from runner.topology import NO_MULTICAST

RANK = "DLREPRO_RANK"
PROCESS_PER_RANK = ("torch",)


def rank():
    """This process's rank (0 outside a data-parallel job)."""
    return int(os.environ.get(RANK, "0"))


def environment(job, rank_index):
    """The variables of rank ``rank_index`` of ``job``: torch's env:// rendezvous, the rank, no NVLink multicast."""
    where = job["rendezvous"]
    return dict(
        NO_MULTICAST,
        MASTER_ADDR=where["address"],
        MASTER_PORT=str(where["port"]),
        RANK=str(rank_index),
        LOCAL_RANK=str(rank_index),
        WORLD_SIZE=str(job["ranks"]),
        **{RANK: str(rank_index)},
    )


def record_path(outdir, rank_index):
    return os.path.join(outdir, "rank-%d.json" % rank_index)


class Launched(object):
    """Ranks 1..N-1 of a job, started by rank 0; ``failure`` is set (with the reason) when one of them dies."""

    def __init__(self, job, job_path, outdir, on_failure):
        self.job, self.outdir, self.failure = job, outdir, None
        self.procs = []
        for r in range(1, job["ranks"]):
            log = open(os.path.join(outdir, "rank-%d.log" % r), "wb")
            self.procs.append(
                (
                    r,
                    subprocess.Popen(
                        [sys.executable, "-m", "runner.rank", job_path, outdir, str(r)],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=dict(os.environ, **environment(job, r)),
                    ),
                )
            )
            log.close()
        self._watch = threading.Thread(target=self._watcher, args=(on_failure,), name="dlrepro-ranks")
        self._watch.daemon = True
        self._watch.start()

    def _watcher(self, on_failure):
        while not self.failure:
            if self.dead():
                self.stop()
                on_failure(self.failure)
                return
            if all(proc.poll() is not None for _, proc in self.procs):
                return
            time.sleep(0.2)

    def dead(self, grace=0.0):
        """The reason a launched rank failed (it ended with a status other than 0), waiting up to ``grace``
        seconds for one to end (rank 0's collective may notice a dead peer before its process is gone); or None."""
        deadline = time.time() + grace
        while True:
            for r, proc in self.procs:
                code = proc.poll()
                if code is not None and code != 0:
                    self.failure = self.failure or "rank %d of %d ended with status %d: %s" % (
                        r,
                        self.job["ranks"],
                        code,
                        _tail(os.path.join(self.outdir, "rank-%d.log" % r)),
                    )
                    return self.failure
            if time.time() >= deadline:
                return None
            time.sleep(0.1)

    def stop(self):
        for _, proc in self.procs:
            if proc.poll() is None:
                proc.kill()

    def collect(self, timeout):
        """Every launched rank's record, once it has ended (they end with rank 0's last collective)."""
        records = []
        for r, proc in self.procs:
            proc.wait(timeout)
            with open(record_path(self.outdir, r)) as f:
                records.append(json.load(f))
        return records


def _tail(path, size=1500):
    """The last line of a rank's log."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            lines = f.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "no output"


def topology(job):
    """`nvidia-smi topo -m` (how the job's GPUs connect: NVLink, PCIe switches, NUMA nodes) for a cuda job, or
    None (a CPU job, or no nvidia-smi in the image)."""
    if job["device"] != "cuda":
        return None
    try:
        return subprocess.run(
            ["nvidia-smi", "topo", "-m"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def watch_rank0(parent):
    """In ranks >= 1: end this process when rank 0 (process ``parent``) is gone, so no rank waits forever."""

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(70)

    thread = threading.Thread(target=watch, name="dlrepro-rank0")
    thread.daemon = True
    thread.start()
