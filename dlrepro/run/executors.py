"""Executors: where the runner runs. One interface, two backends (after ReFrame's container platforms).

Both stage the jobs the same way (a read-only folder with plan.json and <id>.json),
start the same supervisor (``python -m runner.supervise JOBS OUT``), which runs one
process per job, into a scratch output folder of their own, and then move each job's
result.json and log.txt into the bundle, so their result files are identical in form:

- ``docker``: one container per image and group of jobs; the runner and the dataset
  cache are mounted read-only, the scratch output read-write; no network, non-root,
  no new privileges, all capabilities dropped, read-only root file system, a process
  limit; with ``device="cuda"`` one GPU is passed in by a device request.
- ``local``: the same supervisor in a Python on this machine (the current one by
  default), for machines without a Docker engine and for the GPU lab machine; a cuda
  job sees its GPU through CUDA_VISIBLE_DEVICES (CUDA_DEVICE_ORDER=PCI_BUS_ID, so the
  index is NVML's and nvidia-smi's).

With several GPUs (``gpus=[0, 1, ...]``, ``invoke run --gpus``) the jobs of a group are
independent: one worker thread per GPU takes the next job from a shared queue and runs
it alone, pinned to its GPU (docker: a device request for that device id; local:
CUDA_VISIBLE_DEVICES), so as many jobs run at once as there are GPUs. Each job still
gets its own staging, scratch output and result files, exactly as in a sequential run;
the progress callback is serialised by a lock.

A job that never got a result.json (the container or interpreter could not start,
the engine went away) is recorded as failed with the reason: nothing is dropped.
"""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import docker
import requests

from dlrepro import REPO_ROOT
from dlrepro.run import hostinfo
from dlrepro.engine import client, engine_version
from dlrepro.errors import ExecutorError
from runner import contract

INTERRUPTED = "the run was interrupted before this job finished"
CONTAINER_ROOT = "/opt/dlrepro"
CONTAINER_UID = 1000
PIDS_LIMIT = 4096


def _stage(jobs, directory):
    for job in jobs:
        contract.write_json(os.path.join(directory, job["id"] + ".json"), job)
    contract.write_json(os.path.join(directory, "plan.json"), {"jobs": [job["id"] for job in jobs]})
    for path in [directory] + [os.path.join(directory, f) for f in os.listdir(directory)]:
        os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)


def _follow(lines, scratch, on_event):
    """Turn the supervisor's ``@dlrepro start|end <id>`` lines into ``on_event(kind, job_id, result)``.

    ``result`` is the finished job's result.json body for "end", None for "start".
    """
    for line in lines:
        parts = line.strip().split()
        if len(parts) >= 3 and parts[0] == "@dlrepro":
            path = Path(scratch) / parts[2] / "result.json"
            result = json.loads(path.read_text()) if parts[1] == "end" and path.is_file() else None
            on_event(parts[1], parts[2], result)


def _collect(jobs, scratch, out_dir, reason, status):
    """Move each job's result.json and log.txt into out_dir/<id>/; record the missing ones with ``status``."""
    for job in jobs:
        source, target = Path(scratch) / job["id"], Path(out_dir) / job["id"]
        target.mkdir(parents=True, exist_ok=True)
        for name in ("result.json", "log.txt"):
            if (source / name).is_file():
                shutil.move(str(source / name), str(target / name))
        if not (target / "result.json").is_file():
            result = contract.new_result(job["id"], status, reason=reason)
            result["started"] = result["finished"] = contract.utc_now()
            contract.write_json(str(target / "result.json"), result)


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


class Executor:
    name = None

    def __init__(self, device="cpu", gpu=0):
        """``gpu``: a host GPU index, or a list of them (jobs then run concurrently, one per GPU)."""
        self.gpus = list(gpu) if isinstance(gpu, (list, tuple)) else [gpu]
        self.device, self.gpu = device, self.gpus[0]
        self._active, self._lock = set(), threading.Lock()

    def preflight(self):
        """None when jobs can run here, else (reason, remedy) for recording them as skipped."""
        if self.device != "cuda":
            return None
        indices = [g["index"] for g in hostinfo.gpus()]
        missing = [g for g in self.gpus if g not in indices]
        if missing:
            return ("GPU %s %s not visible on this host (NVML sees %s)"
                    % (", ".join(map(str, missing)), "is" if len(missing) == 1 else "are", indices or "no NVIDIA GPU"),
                    "run on a machine with an NVIDIA GPU and driver, choose GPUs with --gpu / --gpus, "
                    "or use --device cpu")
        return None

    def run(self, image, jobs, out_dir, data_root, on_event):
        """Run ``jobs`` (job.json dicts) and leave out_dir/<id>/{result.json, log.txt} for each.

        ``on_event(kind, job_id, result)`` is called as each job starts ("start", result None)
        and ends ("end", its result.json body). With several GPUs on a cuda run, the jobs run
        concurrently, one per GPU (``run_on_gpus``).
        """
        if self.device == "cuda" and len(self.gpus) > 1 and len(jobs) > 1:
            run_on_gpus(lambda job, gpu, event: self._run_group(image, [job], out_dir, data_root, event, gpu),
                        jobs, self.gpus, on_event, self.cancel)
            return
        self._run_group(image, jobs, out_dir, data_root, on_event, self.gpu)

    def cancel(self):
        """End every job process or container this executor has running (an interrupted multi-GPU run)."""

    def _run_group(self, image, jobs, out_dir, data_root, on_event, gpu):
        with tempfile.TemporaryDirectory(prefix="dlrepro-jobs-") as stage, \
                tempfile.TemporaryDirectory(prefix="dlrepro-out-") as scratch:
            _stage(jobs, stage)
            reason, status = "the executor ended before this job ran", "failed"
            try:
                self._launch(image, stage, Path(scratch), Path(data_root), on_event, gpu)
            except ExecutorError as exc:
                reason = str(exc)
            except (docker.errors.DockerException, requests.RequestException) as exc:
                reason = "the Docker engine failed during the run: %s" % exc
            except BaseException:  # interrupted: keep what finished, mark the rest, let the caller publish
                reason, status = INTERRUPTED, "skipped"
                raise
            finally:
                self._release(Path(scratch))
                _collect(jobs, scratch, out_dir, reason, status)

    def _launch(self, image, stage, scratch, data_root, on_event, gpu):
        raise NotImplementedError

    def _release(self, scratch):
        """Give the scratch output back to this user after the run (docker runs write as another uid)."""

    def describe(self):
        return {"executor": self.name, "device": self.device, "gpu": self.gpu if self.device == "cuda" else None,
                "gpus": self.gpus if self.device == "cuda" else None}


class DockerExecutor(Executor):
    name = "docker"

    def preflight(self):
        problem = super().preflight()
        if problem is None and self.device == "cuda":
            runtimes = client().info().get("Runtimes") or {}
            if "nvidia" not in runtimes and shutil.which("nvidia-container-runtime-hook") is None:
                return ("the Docker engine has no NVIDIA runtime, so it cannot pass GPUs into containers",
                        "install the NVIDIA Container Toolkit (nvidia-ctk runtime configure --runtime=docker), "
                        "or run without containers: --executor local")
        return problem

    def _user(self, scratch):
        if os.geteuid() != 0:
            return "%d:%d" % (os.geteuid(), os.getegid())
        os.chown(scratch, CONTAINER_UID, CONTAINER_UID)
        return "%d:%d" % (CONTAINER_UID, CONTAINER_UID)

    def _release(self, scratch):
        if os.geteuid() == 0:
            for path in [scratch] + list(scratch.rglob("*")):
                os.chown(path, 0, 0)

    def cancel(self):
        with self._lock:
            active = list(self._active)
        for container in active:
            try:
                container.kill()
            except docker.errors.DockerException:
                pass

    def _launch(self, image, stage, scratch, data_root, on_event, gpu):
        requests_ = [docker.types.DeviceRequest(device_ids=[str(gpu)], capabilities=[["gpu"]])] \
            if self.device == "cuda" else []
        container = client().containers.create(
            image.tag, ["python", "-m", "runner.supervise", "/jobs", "/out"],
            user=self._user(scratch), network_mode="none", read_only=True, tmpfs={"/tmp": "rw,exec"},
            security_opt=["no-new-privileges"], cap_drop=["ALL"], pids_limit=PIDS_LIMIT, device_requests=requests_,
            environment={"PYTHONPATH": CONTAINER_ROOT, "DLREPRO_DATA_ROOT": "/data"},
            volumes={str(REPO_ROOT / "runner"): {"bind": CONTAINER_ROOT + "/runner", "mode": "ro"},
                     str(data_root): {"bind": "/data", "mode": "ro"},
                     stage: {"bind": "/jobs", "mode": "ro"},
                     str(scratch): {"bind": "/out", "mode": "rw"}},
            labels={"org.dlrepro.role": "runner"})
        with self._lock:
            self._active.add(container)
        try:
            try:
                container.start()
            except docker.errors.APIError as exc:
                raise ExecutorError("the container for %s could not start: %s" % (image.tag, exc.explanation or exc)) \
                    from None
            _follow((raw.decode("utf-8", "replace") for raw in container.logs(stream=True, follow=True)), scratch,
                    on_event)
            code = container.wait()["StatusCode"]
            if code != 0:
                tail = container.logs(tail=20).decode("utf-8", "replace")
                raise ExecutorError("the container of %s exited with status %d: %s" % (image.tag, code, tail))
        finally:
            with self._lock:
                self._active.discard(container)
            container.remove(force=True)

    def describe(self):
        return dict(super().describe(), engine=engine_version(),
                    isolation={"network": "none", "read_only_root": True, "user": "non-root",
                               "no_new_privileges": True, "cap_drop": "ALL", "pids_limit": PIDS_LIMIT})


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, device="cpu", gpu=0, python=None):
        super().__init__(device, gpu)
        self.python = python or sys.executable

    def environment(self, data_root, gpu):
        """The supervisor's environment: the runner on the path, and a cuda run pinned to host GPU ``gpu``."""
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), DLREPRO_DATA_ROOT=str(data_root), PYTHONUNBUFFERED="1")
        if self.device == "cuda":
            env.update(CUDA_VISIBLE_DEVICES=str(gpu), CUDA_DEVICE_ORDER="PCI_BUS_ID", DLREPRO_GPU=str(gpu))
        return env

    def cancel(self):
        with self._lock:
            active = list(self._active)
        for proc in active:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)

    def _launch(self, image, stage, scratch, data_root, on_event, gpu):
        env = self.environment(data_root, gpu)
        try:  # a session of its own: an interrupted run ends the supervisor and its job, nothing is orphaned
            proc = subprocess.Popen([self.python, "-m", "runner.supervise", stage, str(scratch)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
        except OSError as exc:
            raise ExecutorError("cannot start %s: %s" % (self.python, exc.strerror)) from None
        with self._lock:
            self._active.add(proc)
        try:
            _follow(proc.stdout, scratch, on_event)
            if proc.wait() != 0:
                raise ExecutorError("the local supervisor (%s) exited with status %d" % (self.python, proc.returncode))
        finally:
            with self._lock:
                self._active.discard(proc)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def describe(self):
        version = subprocess.run([self.python, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True).stdout.strip()
        return dict(super().describe(), python=self.python, python_version=version)


def get(name, device="cpu", gpu=0, python=None):
    """The executor called ``name`` (``gpu``: an index or a list of them); raises ExecutorError for an
    unknown one or a missing engine."""
    if name == "docker":
        client()
        return DockerExecutor(device, gpu)
    if name == "local":
        return LocalExecutor(device, gpu, python)
    raise ExecutorError("unknown executor %r: use docker or local" % name)
