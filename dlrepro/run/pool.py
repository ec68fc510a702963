"""Workers that outlive a run: the serving supervisors that the runs of one study share.

A study (dlrepro.run.study) owns one WorkerPool and passes it to each of its runs (dlrepro.run.runs). Every
group of jobs of one image on one GPU (or the CPU) then goes to the pool's supervisor for that (executor,
image, device, GPU, isolation): one container (docker, podman) or one process (local) for the whole study,
started at its first group, serving plan after plan (``runner.supervise --serve``), with one warm worker
per settings key (runner.settings) inside it. The runs still go one after another, each group sent when
its run comes to it, so each run's bundle is complete as soon as its last job ends, as without a pool.
Slurm keeps its one task per job (the pool is not used there).

The supervisors' staging and output folders live in the pool's ``folder`` (``jobs/`` mounted read-only,
``out/`` read-write); a run's output goes under ``out/<bundle id>/attempt-<n>/`` and its attempt records
where (``pool``: {id, scratch}), so a resume takes what a killed study left there as it takes what a killed
run left in its own work folder. Containers carry the pool's ``id`` as their run label.

Warm workers hold memory while they wait (a framework's own, and what it keeps between jobs: runner.supervise
retires a worker that keeps more and more). Before a plan starts, while the host has less than KEEP_FREE of
its memory available, the idle supervisors are ended, the least recently used first (``ended_for_memory``
counts them, and the next plan of such a key starts a new one): on a 2-CPU, 23 GiB host the fourteen warm
workers of a DLBench study (seven frameworks, one and two threads) left too little for ResNet-50, and the
kernel killed three of its jobs, which separate runs had measured.

``close`` (at the study's end, on an error or an interrupt) ends every supervisor and waits for its
container or process to be gone, then removes the pool's folders that hold nothing more (the output a
killed study or a lost container left stays, with its staging, until a resume has taken it). Once the engine
went away under a plan (EngineLost), ``close`` ends what it can and removes nothing: a container that lives on
without its engine may still write its output there.
"""

import collections
import itertools
import os
import shutil
import threading
from pathlib import Path

from dlrepro.errors import EngineLost
from dlrepro.plan import hostinfo
from dlrepro.run.executors.base import planned

KEEP_FREE = 0.5  # the share of the host's memory kept available when a plan starts, by ending idle supervisors


class WorkerPool:
    """The serving supervisors of one study, by ``Executor.serve_key``; ``starts``: how many each key started
    (1 unless one ended: a crash of the supervisor or its container, an interrupt, or ended for memory);
    ``ended_for_memory``: how many of each key were ended idle to give the host memory back."""

    def __init__(self, folder, pool_id, log=None):
        """``folder``: where the staging (``jobs``) and output (``out``) roots go; ``pool_id``: the label of its
        containers; ``log(message)``: told when an idle supervisor is ended for memory."""
        self.folder, self.id, self.log = Path(folder), pool_id, log or (lambda message: None)
        self.jobs, self.out = self.folder / "jobs", self.folder / "out"
        self.jobs.mkdir(parents=True, exist_ok=True)
        self.out.mkdir(parents=True, exist_ok=True)
        os.chmod(self.jobs, 0o755)
        self.servers, self.starts, self.ended_for_memory = {}, collections.Counter(), collections.Counter()
        self.lost = False  # the engine went away under a plan: its containers may live on, writing their output
        self._lock = threading.Lock()
        self._busy, self._used, self._clock = set(), {}, itertools.count()

    def stage_of(self, scratch):
        """The staging folder of the plan whose output folder is ``scratch`` (under ``out``)."""
        return self.jobs / Path(scratch).relative_to(self.out)

    def serve(self, executor, image, stage, scratch, data_root, sink, on_event, gpu):
        """Run the plan staged in ``stage`` (output: ``scratch``) in the supervisor of ``executor.serve_key(image,
        gpu)``, started if there is none; one that ends during the plan, or a plan interrupted, leaves the pool (the
        next plan gets a new one) and the error is raised."""
        key = executor.serve_key(image, gpu)
        with self._lock:
            self._busy.add(key)
            self._used[key] = next(self._clock)
        try:
            self._make_room()
            self._serve(key, executor, image, stage, scratch, data_root, sink, on_event, gpu)
        finally:
            with self._lock:
                self._busy.discard(key)

    def _make_room(self):
        """End idle supervisors, least recently used first, while the host has less than KEEP_FREE of its memory
        available."""
        while True:
            free = hostinfo.available_memory_bytes()
            if free is None or free >= KEEP_FREE * hostinfo.memory_bytes():
                return
            with self._lock:
                idle = sorted((k for k in self.servers if k not in self._busy), key=lambda k: self._used.get(k, -1))
                server = self.servers.pop(idle[0]) if idle else None
                if server is not None:
                    self.ended_for_memory[idle[0]] += 1
            if server is None:
                return
            self.log(
                "ended the idle %s supervisor of %s to give memory back: the host had %.1f of %.1f GiB available"
                % (idle[0][0], idle[0][1] or "the local interpreter", free / 2**30, hostinfo.memory_bytes() / 2**30)
            )
            try:
                server.end()
            except Exception:  # noqa: BLE001 - it is gone either way
                server.end(kill=True)

    def _serve(self, key, executor, image, stage, scratch, data_root, sink, on_event, gpu):
        with self._lock:
            server = self.servers.get(key)
        if server is not None and not server.alive():  # it ended between plans (a crash of its container)
            server.end(kill=True)
            server = None
        if server is None:
            server = executor.serve(image, self, data_root, gpu)
            with self._lock:
                self.servers[key] = server
                self.starts[key] += 1
        try:
            server.plan(
                str(Path(stage).relative_to(self.jobs)),
                str(Path(scratch).relative_to(self.out)),
                scratch,
                sink,
                on_event,
                planned(stage),
            )
        except BaseException as exc:
            with self._lock:
                self.servers.pop(key, None)
                self.lost = self.lost or isinstance(exc, EngineLost)
            server.end(kill=True)
            raise

    def cancel(self):
        """End every supervisor at once (an interrupted multi-GPU run): the plans they were running end."""
        with self._lock:
            servers = list(self.servers.values())
        for server in servers:
            server.end(kill=True)

    def close(self, lost=False):
        """End every supervisor (cleanly when idle) and wait until its container or process is gone; then remove
        the pool's empty folders. Raises the first error met, once every supervisor was ended. ``lost`` (or
        ``self.lost``): the engine went away: each supervisor is ended as far as it can be, without an error, and
        no folder is removed."""
        lost = lost or self.lost
        with self._lock:
            servers, self.servers = list(self.servers.values()), {}
        errors = []
        for server in servers:
            try:
                server.end(kill=lost)
            except Exception as exc:  # noqa: BLE001 - the others are ended first
                if lost:  # its engine is gone: nothing more can end it from here
                    continue
                errors.append(exc)
                server.end(kill=True)
        if lost:
            return
        for plan in list(self.jobs.rglob("plan.json")):  # a plan's staging goes once nothing of its output is left
            if not any(p.is_file() for p in (self.out / plan.parent.relative_to(self.jobs)).rglob("*")):
                shutil.rmtree(plan.parent)
        for root, folders, files in os.walk(self.folder, topdown=False):
            if not files and not os.listdir(root):
                os.rmdir(root)
        if errors:
            raise errors[0]
