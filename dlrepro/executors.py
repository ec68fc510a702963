"""Executors: where the runner runs. One interface, two backends (after ReFrame's container platforms).

Both stage the jobs the same way (a read-only folder with plan.json and <id>.json)
and start the same supervisor (``python -m runner.supervise JOBS OUT``), which runs
one process per job, so their result files are identical in form:

- ``docker``: one container per image and group of jobs; the runner and the dataset
  cache are mounted read-only, the output folder read-write; no network, non-root,
  no new privileges, all capabilities dropped, read-only root file system; with
  ``device="cuda"`` one GPU is passed in by a device request.
- ``local``: the same supervisor in a Python on this machine (the current one by
  default), for machines without a Docker engine and for the GPU lab machine.

A job that never got a result.json (the container or interpreter could not start)
is recorded as failed with the reason, so nothing is dropped silently.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import docker

from dlrepro import REPO_ROOT
from dlrepro.engine import client
from dlrepro.errors import ExecutorError
from runner import contract

CONTAINER_ROOT = "/opt/dlrepro"
CONTAINER_UID = 1000


def _stage(jobs, directory):
    for job in jobs:
        contract.write_json(os.path.join(directory, job["id"] + ".json"), job)
    contract.write_json(os.path.join(directory, "plan.json"), {"jobs": [job["id"] for job in jobs]})
    for path in [directory] + [os.path.join(directory, f) for f in os.listdir(directory)]:
        os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)


def _follow(lines, on_event):
    """Pass the supervisor's ``@dlrepro start|end`` lines to ``on_event(kind, job_id, status)``."""
    for line in lines:
        parts = line.strip().split()
        if len(parts) >= 3 and parts[0] == "@dlrepro":
            on_event(parts[1], parts[2], parts[3] if len(parts) > 3 else None)


def _fill_missing(jobs, out_dir, reason):
    for job in jobs:
        path = Path(out_dir) / job["id"] / "result.json"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            result = contract.new_result(job["id"], "failed", reason=reason)
            result["finished"] = contract.utc_now()
            contract.write_json(str(path), result)


class Executor:
    name = None

    def run(self, image, jobs, out_dir, data_root, on_event):
        """Run ``jobs`` (job.json dicts) and leave out_dir/<id>/{result.json, log.txt} for each."""
        with tempfile.TemporaryDirectory(prefix="dlrepro-jobs-") as stage:
            _stage(jobs, stage)
            reason = "the executor ended before this job ran"
            try:
                self._launch(image, stage, Path(out_dir), Path(data_root), on_event)
            except ExecutorError as exc:
                reason = str(exc)
            _fill_missing(jobs, out_dir, reason)

    def _launch(self, image, stage, out_dir, data_root, on_event):
        raise NotImplementedError

    def describe(self):
        return {"executor": self.name}


class DockerExecutor(Executor):
    name = "docker"

    def __init__(self, device="cpu", gpu=0):
        self.device, self.gpu = device, gpu

    def _user(self, out_dir):
        if os.geteuid() != 0:
            return "%d:%d" % (os.geteuid(), os.getegid())
        for path in [out_dir] + list(out_dir.rglob("*")):
            os.chown(path, CONTAINER_UID, CONTAINER_UID)
        return "%d:%d" % (CONTAINER_UID, CONTAINER_UID)

    def _launch(self, image, stage, out_dir, data_root, on_event):
        out_dir.mkdir(parents=True, exist_ok=True)
        requests = [docker.types.DeviceRequest(device_ids=[str(self.gpu)], capabilities=[["gpu"]])] \
            if self.device == "cuda" else []
        try:
            container = client().containers.run(
                image.tag, ["python", "-m", "runner.supervise", "/jobs", "/out"], detach=True,
                user=self._user(out_dir), network_mode="none", read_only=True, tmpfs={"/tmp": "rw,exec"},
                security_opt=["no-new-privileges"], cap_drop=["ALL"], device_requests=requests,
                environment={"PYTHONPATH": CONTAINER_ROOT, "DLREPRO_DATA_ROOT": "/data"},
                volumes={str(REPO_ROOT / "runner"): {"bind": CONTAINER_ROOT + "/runner", "mode": "ro"},
                         str(data_root): {"bind": "/data", "mode": "ro"},
                         stage: {"bind": "/jobs", "mode": "ro"},
                         str(out_dir): {"bind": "/out", "mode": "rw"}},
                labels={"org.dlrepro.role": "runner"})
        except docker.errors.APIError as exc:
            hint = (" The engine cannot pass GPUs into containers: install the NVIDIA Container Toolkit, "
                    "or use --device cpu." if requests and "capabilities" in str(exc) else "")
            raise ExecutorError("the container for %s could not start: %s.%s"
                                % (image.tag, exc.explanation or exc, hint)) from None
        try:
            _follow((raw.decode("utf-8", "replace") for raw in container.logs(stream=True, follow=True)), on_event)
            code = container.wait()["StatusCode"]
            if code != 0:
                tail = container.logs(tail=20).decode("utf-8", "replace")
                raise ExecutorError("the container of %s exited with status %d: %s" % (image.tag, code, tail))
        finally:
            container.remove(force=True)
            if os.geteuid() == 0:
                for path in [out_dir] + list(out_dir.rglob("*")):
                    os.chown(path, 0, 0)

    def describe(self):
        return {"executor": self.name, "engine": client().version().get("Version"), "device": self.device,
                "gpu": self.gpu if self.device == "cuda" else None,
                "isolation": {"network": "none", "read_only_root": True, "user": "non-root",
                              "no_new_privileges": True, "cap_drop": "ALL"}}


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, device="cpu", gpu=0, python=None):
        self.device, self.gpu, self.python = device, gpu, python or sys.executable

    def _launch(self, image, stage, out_dir, data_root, on_event):
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), DLREPRO_DATA_ROOT=str(data_root), PYTHONUNBUFFERED="1")
        if self.device == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        try:
            proc = subprocess.Popen([self.python, "-m", "runner.supervise", stage, str(out_dir)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as exc:
            raise ExecutorError("cannot start %s: %s" % (self.python, exc.strerror)) from None
        _follow(proc.stdout, on_event)
        if proc.wait() != 0:
            raise ExecutorError("the local supervisor (%s) exited with status %d" % (self.python, proc.returncode))

    def describe(self):
        version = subprocess.run([self.python, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True).stdout.strip()
        return {"executor": self.name, "python": self.python, "python_version": version, "device": self.device,
                "gpu": self.gpu if self.device == "cuda" else None}


def get(name, device="cpu", gpu=0, python=None):
    """The executor called ``name``; raises ExecutorError for an unknown one or a missing engine."""
    if name == "docker":
        client()
        return DockerExecutor(device, gpu)
    if name == "local":
        return LocalExecutor(device, gpu, python)
    raise ExecutorError("unknown executor %r: use docker or local" % name)
