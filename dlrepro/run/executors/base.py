"""The executor interface and what every executor shares: staging a group of jobs, following the
supervisor's progress lines, collecting each job's result into the bundle, and running jobs
concurrently over several GPUs.

With several GPUs (``gpus=[0, 1, ...]``, ``dlrepro run --gpus``) the jobs of a group are
independent: one worker thread per GPU takes the next job from a shared queue and runs
it alone, pinned to its GPU, so as many jobs run at once as there are GPUs. Each job still
gets its own staging, scratch output and result files, exactly as in a sequential run;
the progress callback is serialised by a lock.

A job that never got a result.json (the container or interpreter could not start) is recorded
as failed with the reason: nothing is dropped. When the container engine goes away (EngineLost),
the group's jobs that had not ended are recorded "interrupted" (``LOST``: lost by the machine, not
failed on their own), and nothing is taken out of their scratch output: their container may live on
without its engine, still writing there; a resume takes it once that container is gone.
"""

import collections
import json
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

from dlrepro.errors import EngineLost, ExecutorError
from dlrepro.plan import hostinfo
from runner import contract

INTERRUPTED = "the run was interrupted before this job finished"
LOST = "interrupted"  # the status of a job the machine lost (engine gone, node failed): a plain --resume reruns it
RUN_LABEL, HOST_LABEL, PID_LABEL = "org.dlrepro.run", "org.dlrepro.host", "org.dlrepro.pid"


def free_port():
    """A TCP port nothing listens on at this moment, for a data-parallel job's rendezvous (chosen by the host:
    nothing inside a container asks a scheduler for it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stage(jobs, directory):
    for job in jobs:
        if job.get("ranks") is not None:
            job = dict(job, rendezvous={"address": "127.0.0.1", "port": free_port()})
        contract.write_json(os.path.join(directory, job["id"] + ".json"), job)
    contract.write_json(os.path.join(directory, "plan.json"), {"jobs": [job["id"] for job in jobs]})
    for path in [directory] + [os.path.join(directory, f) for f in os.listdir(directory)]:
        os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)


def planned(stage):
    """The job ids of the plan staged in folder ``stage`` (its plan.json, which this host wrote)."""
    return json.loads((Path(stage) / "plan.json").read_text())["jobs"]


def follow(lines, scratch, sink, on_event, job_ids):
    """Turn the supervisor's ``@dlrepro start|end <id>`` lines into ``on_event(kind, job_id, result)``; as a job
    ends, its result moves from ``scratch`` into the sink at once (``result`` is its result.json body for "end",
    None for "start"). Only the ids of ``job_ids`` (the plan this host sent) are taken: a line naming another
    (a container printing ``@dlrepro end ../../x``) is output like any other, so that no path built from what a
    container prints reaches outside the scratch output or the bundle. Returns True at a serving supervisor's
    ``@dlrepro done`` (its plan ended: the lines after it belong to the next), False when the lines end."""
    job_ids = set(job_ids)
    for line in lines:
        parts = line.strip().split()
        if len(parts) >= 3 and parts[0] == "@dlrepro" and parts[1] == "done":
            return True
        if len(parts) >= 3 and parts[0] == "@dlrepro" and parts[2] in job_ids:
            source = Path(scratch) / parts[2]
            result = sink.accept(parts[2], source) if parts[1] == "end" and (source / "result.json").is_file() else None
            on_event(parts[1], parts[2], result)
    return False


def settle(folder, status, reason):
    """A result.json that a job left unfinished (status "running": the job was killed after writing what it had
    measured) gets ``status`` and ``reason``, its measurements kept; returns whether there was one."""
    path = Path(folder) / "result.json"
    if not path.is_file():
        return False
    try:
        result = json.loads(path.read_text())
    except ValueError:  # cut off while being written by a killed process: not a result
        path.unlink()
        return False
    if result.get("status") == "running":
        measured = len(((result.get("timing") or {}).get("repeats")) or []) or len(
            ((result.get("convergence") or {}).get("epochs")) or []
        )
        result.update(
            status=status,
            reason="%s%s" % (reason, "; kept what it measured: %d repeats or epochs" % measured if measured else ""),
            finished=contract.utc_now(),
        )
        contract.write_json(str(path), result)
    return True


class FolderSink:
    """Where an executor puts each job's result the moment the job ends: ``out_dir``/<id>/{result.json, log.txt}
    (the run loop's sink puts them into the bundle being written, dlrepro.run.runs)."""

    def __init__(self, out_dir, scratch_root=None):
        """``scratch_root``: where the supervisors' output folders go (a WorkerPool's ``out``; default: the
        system's temporary folder)."""
        self.out_dir, self.scratch_root = Path(out_dir), scratch_root
        self.submissions = []  # records of submissions to a scheduler (``submitted``)

    def scratch(self):
        """A new empty folder for the supervisor's output."""
        return Path(tempfile.mkdtemp(prefix="dlrepro-out-", dir=self.scratch_root))

    def accept(self, job_id, source):
        """Move the job's result.json and log.txt from ``source`` into place; returns the result."""
        target = self.out_dir / job_id
        target.mkdir(parents=True, exist_ok=True)
        for name in ("log.txt", "result.json"):
            if (Path(source) / name).is_file():
                shutil.move(str(Path(source) / name), str(target / name))
        return json.loads((target / "result.json").read_text())

    def missing(self, job, status, reason):
        """Record a job that left no result: ``status`` with ``reason``."""
        result = contract.new_result(job["id"], status, reason=reason)
        result["started"] = result["finished"] = contract.utc_now()
        target = self.out_dir / job["id"]
        target.mkdir(parents=True, exist_ok=True)
        contract.write_json(str(target / "result.json"), result)
        return result

    def launched(self, name, text):
        """Keep a launch record (a batch script) as file ``name`` under ``out_dir``; returns its path."""
        path = self.out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def submitted(self, record):
        """Keep (or update) the record of a submission to a scheduler (its ``array_id`` names it)."""
        self.submissions = [r for r in self.submissions if r["array_id"] != record["array_id"]] + [record]


def _collect(jobs, scratch, sink, taken, reason, status):
    """After a group: take what each job not yet ``taken`` left (an unfinished result settled with ``status`` and
    ``reason``) and record the jobs that left nothing; the finished ones were taken as they ended."""
    for job in jobs:
        if job["id"] in taken:
            continue
        source = Path(scratch) / job["id"]
        if settle(source, status, reason):
            sink.accept(job["id"], source)
        else:
            sink.missing(job, status, reason)


class Served:
    """A supervisor that serves plan after plan (``runner.supervise --serve``; dlrepro.run.pool): ``lines`` its
    output, ``send(text)`` writes to its standard input, ``stop(kill)`` closes that input (it ends once idle) or
    ends it at once and returns its exit status, ``alive()`` whether it still runs; ``what`` names it in errors,
    ``tail`` its last lines; ``lost()`` gives the EngineLost of an engine that went away under it, else None."""

    def __init__(self, lines, send, stop, alive, what, tail=(), lost=lambda: None):
        self.lines, self.send, self._stop, self.alive, self.what, self.tail = lines, send, stop, alive, what, tail
        self.lost = lost
        self.code = None  # its exit status, once ended

    def plan(self, stage, out, scratch, sink, on_event, job_ids):
        """Run the plan staged in ``stage`` with output to ``out`` (both relative to the supervisor's roots;
        ``scratch``: that output's folder here; ``job_ids``: its jobs), following it until it is done; raises EngineLost
        when it ended before that because its engine went away, else ExecutorError."""
        try:
            self.send("%s %s\n" % (stage, out))
            done = follow(self.lines, scratch, sink, on_event, job_ids)
        except OSError:  # its input closed: it ended
            done = False
        if not done:
            code = self.end(kill=True)
            lost = self.lost()
            if lost is not None:
                raise lost
            raise ExecutorError(
                "%s ended during a plan (exit status %s)%s"
                % (self.what, code, ": " + "".join(self.tail) if self.tail else "")
            )

    def end(self, kill=False):
        """End the supervisor (idle: its input closed; ``kill``: at once); returns its exit status. Ending it again
        gives the same status."""
        if self.code is None:
            self.code = self._stop(kill)
        return self.code


def run_on_gpus(run_one, jobs, gpus, on_event, cancel=lambda: None):
    """Run each of ``jobs`` by ``run_one(job, gpu, on_event)``, one at a time per GPU of ``gpus``, concurrently.

    One worker thread per GPU takes the next job from a shared queue, so a GPU never runs two
    jobs at once and none idles while jobs wait. ``on_event`` calls are serialised. An
    exception in a worker stops the others taking new jobs and is raised once every worker
    has ended; an interrupt of the caller calls ``cancel()`` (end the running jobs), waits for
    the workers to record what they ran, and is raised again.
    """
    queue, lock, errors, stop = collections.deque(jobs), threading.Lock(), [], threading.Event()

    def event(*args):
        with lock:
            on_event(*args)

    def worker(gpu):
        while not stop.is_set():
            with lock:
                if not queue:
                    return
                job = queue.popleft()
            try:
                run_one(job, gpu, event)
            except BaseException as exc:  # noqa: B036 - handed to the caller's thread
                errors.append(exc)
                stop.set()
                return

    threads = [threading.Thread(target=worker, args=(gpu,), name="dlrepro-gpu%d" % gpu, daemon=True) for gpu in gpus]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
    except BaseException:
        stop.set()
        cancel()
        for thread in threads:
            thread.join(60)
        raise
    if errors:
        raise errors[0]


EXECUTORS = {}  # name -> Executor subclass: each registers itself by its ``name`` (dlrepro.run.executors.get)


class Executor:
    """Runs groups of jobs; subclasses say how to start the supervisor (``_launch``) and where its image
    comes from (``prepare``). A subclass with a ``name`` is an executor of that name (``EXECUTORS``); ``in_images``
    says whether its jobs run in images of the matrix (a version must be served), ``create`` makes it from the
    run's settings."""

    name = None
    in_images = False
    detached = False  # True once run() returned with jobs still queued or running elsewhere (slurm --detach)
    serves = True  # whether a study's worker pool can serve its groups (``serve``)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("name"):
            EXECUTORS[cls.name] = cls

    @classmethod
    def create(cls, device, gpu, python=None, memory=None, isolation="worker", slurm=None):
        """The executor for these settings (dlrepro.run.executors.get: ``slurm`` the slurm executor's own)."""
        return cls(device, gpu, isolation=isolation)

    def __init__(self, device="cpu", gpu=0, isolation="worker"):
        """``gpu``: a host GPU index, or a list of them (jobs then run concurrently, one per GPU); ``isolation``:
        "worker" (the jobs that share their settings run in one warm process) or "process" (one per job)."""
        self.isolation = isolation
        self.pool = None  # a WorkerPool (dlrepro.run.pool): the groups of one GPU go to its serving supervisors
        self.listed = isinstance(gpu, (list, tuple))  # --gpus: also the GPUs a data-parallel job may take
        self.gpus = list(gpu) if self.listed else [gpu]
        self.device, self.gpu = device, self.gpus[0]
        self._active, self._lock = set(), threading.Lock()
        self.run_id = None  # the bundle id, once the run has one: labels what this executor starts

    def supervisor(self, python, jobs, out, serve=False):
        """The command line of the supervisor (runner.supervise) for staged ``jobs`` and output ``out`` (``serve``:
        the roots of the plans it will be sent)."""
        return [
            python,
            "-m",
            "runner.supervise",
            "--serve" if serve else "--watch-stdin",
            "--isolation",
            self.isolation,
            str(jobs),
            str(out),
        ]

    def serve_key(self, image, gpu):
        """What must be the same for groups to share a serving supervisor (dlrepro.run.pool): the executor, the
        image, the device, the GPU and the isolation (the supervisor keeps one worker per settings key)."""
        return (self.name, image.tag if image is not None else None, self.device, gpu, self.isolation)

    def serve(self, image, pool, data_root, gpu):
        """Start a supervisor that serves plans staged under ``pool.jobs`` with output under ``pool.out`` (Served)."""
        raise NotImplementedError

    def run_labels(self):
        """What marks the containers or processes of this run: the bundle id, this host and this process."""
        return {RUN_LABEL: self.run_id or "", HOST_LABEL: socket.gethostname(), PID_LABEL: str(os.getpid())}

    def preflight(self):
        """None when jobs can run here, else (reason, remedy) for recording them as skipped."""
        if self.device != "cuda":
            return None
        indices = [g["index"] for g in hostinfo.gpus()]
        missing = [g for g in self.gpus if g not in indices]
        if missing:
            return (
                "GPU %s %s not visible on this host (NVML sees %s)"
                % (", ".join(map(str, missing)), "is" if len(missing) == 1 else "are", indices or "no NVIDIA GPU"),
                "run on a machine with an NVIDIA GPU and driver, choose GPUs with --gpu / --gpus, or use --device cpu",
            )
        return None

    def prepare(self, matrix, framework, version, build_options, log, allow_ptx_jit=False):
        """The image the jobs of (framework, version) run in, built if needed; None for an executor that runs
        them in a Python of this host. Raises CannotRunHere (reason, remedy) when that image cannot run on
        this host, DlreproError when it cannot be found or built."""
        return None

    def run(self, image, jobs, out, data_root, on_event):
        """Run ``jobs`` (job.json dicts); each job's result.json and log.txt go to ``out`` the moment it ends (a
        sink: FolderSink's accept/missing/scratch, or a folder for out/<id>/), and every job gets one.

        ``on_event(kind, job_id, result)`` is called as each job starts ("start", result None)
        and ends ("end", its result.json body). With several GPUs on a cuda run, the jobs run
        concurrently, one per GPU (``run_on_gpus``).
        """
        sink = out if hasattr(out, "accept") else FolderSink(out)
        several = [j for j in jobs if self.device == "cuda" and (j.get("ranks") or 1) > 1]
        jobs = [j for j in jobs if j not in several]
        if self.device == "cuda" and len(self.gpus) > 1 and len(jobs) > 1:
            run_on_gpus(
                lambda job, gpu, event: self._run_group(image, [job], sink, data_root, event, gpu),
                jobs,
                self.gpus,
                on_event,
                self._cancel_all,
            )
        elif jobs:
            self._run_group(image, jobs, sink, data_root, on_event, self.gpu)
        for job in several:  # one at a time, each with all the GPUs it needs
            gpus = self.gpus_for(job["ranks"])
            if gpus is None:
                on_event(
                    "end",
                    job["id"],
                    sink.missing(
                        job,
                        "skipped",
                        "the job has %d ranks, one per GPU, and %s"
                        % (
                            job["ranks"],
                            "--gpus names %d (%s)" % (len(self.gpus), ",".join(map(str, self.gpus)))
                            if self.listed
                            else "this host has %d GPUs from GPU %d on" % (len(self._host_from()), self.gpu),
                        ),
                    ),
                )
                continue
            self._run_group(image, [job], sink, data_root, on_event, gpus)

    def _host_from(self):
        return [g["index"] for g in hostinfo.gpus() if g["index"] >= self.gpu]

    def gpus_for(self, count):
        """The host GPUs of a data-parallel job of ``count`` ranks: the first ``count`` of --gpus when it was
        given, else the host's GPUs from --gpu on; None when there are too few."""
        pool = self.gpus if self.listed else self._host_from()
        return pool[:count] if len(pool) >= count else None

    def cancel(self):
        """End every job process or container this executor has running (an interrupted multi-GPU run)."""

    def _cancel_all(self):
        self.cancel()
        if self.pool is not None:
            self.pool.cancel()

    def reap(self):
        """End what runs of this executor that died left running on this host; returns a line per thing ended."""
        return []

    def _run_group(self, image, jobs, sink, data_root, on_event, gpu):
        taken, started = set(), []

        def event(kind, job_id, result):
            if kind == "start":
                started.append(job_id)
            if kind == "end" and result is not None:
                taken.add(job_id)
            on_event(kind, job_id, result)

        scratch = Path(sink.scratch())
        pooled = self.pool is not None and not isinstance(gpu, list)  # a data-parallel job: a container of its own
        # beside the scratch output (or in the pool's staging root): both stay while a lost container lives
        stage = self.pool.stage_of(scratch) if pooled else Path(str(scratch) + ".jobs")
        stage.mkdir(parents=True)
        _stage(jobs, str(stage))
        reason, status, lost = "the executor ended before this job ran", "failed", False
        try:
            if pooled:
                self._serve_plan(image, stage, scratch, Path(data_root), sink, event, gpu)
            else:
                self._launch(image, str(stage), scratch, Path(data_root), sink, event, gpu)
        except EngineLost as exc:  # its container may run on: leave its folders alone, record the jobs lost
            lost = True
            running = [j for j in started if j not in taken]
            for job in jobs:
                if job["id"] not in taken:
                    sink.missing(
                        job,
                        LOST,
                        "interrupted by the machine: %s %s"
                        % (exc, "while this job ran" if job["id"] in running else "before this job started"),
                    )
            raise EngineLost(str(exc), exc.remedy, running) from None
        except ExecutorError as exc:
            reason = str(exc)
        except BaseException:  # interrupted: keep what finished, mark the rest, let the caller publish
            reason, status = INTERRUPTED, "skipped"
            raise
        finally:
            if not lost:
                self._release(scratch)
                _collect(jobs, scratch, sink, taken, reason, status)
                shutil.rmtree(scratch, ignore_errors=True)
                shutil.rmtree(stage, ignore_errors=True)

    def _launch(self, image, stage, scratch, data_root, sink, on_event, gpu):
        """Start the supervisor on the staged jobs, follow it (``follow``) until it ends; raise ExecutorError when
        it cannot start or ends badly."""
        raise NotImplementedError

    def _serve_plan(self, image, stage, scratch, data_root, sink, on_event, gpu):
        """Run the staged jobs in the pool's serving supervisor for their image and GPU (started if it has none)."""
        self.pool.serve(self, image, stage, scratch, data_root, sink, on_event, gpu)

    def _release(self, scratch):
        """Give the scratch output back to this user after the run (docker runs write as another uid)."""

    def describe(self):
        return {
            "executor": self.name,
            "device": self.device,
            "gpu": self.gpu if self.device == "cuda" else None,
            "gpus": self.gpus if self.device == "cuda" else None,
            "job_isolation": self.isolation,
        }
