"""The local executor: the same supervisor in a Python on this machine (the current one by default), for
machines without a Docker engine and for GPU lab machines; a cuda job sees its GPU through
CUDA_VISIBLE_DEVICES (CUDA_DEVICE_ORDER=PCI_BUS_ID, so the index is NVML's and nvidia-smi's)."""

import os
import signal
import subprocess
import sys

from dlrepro import REPO_ROOT
from dlrepro.errors import CannotRunHere, ExecutorError
from dlrepro.run.executors.base import Executor, Served, follow, planned
from runner import frameworks


class LocalExecutor(Executor):
    name = "local"

    @classmethod
    def create(cls, device, gpu, python=None, memory=None, isolation="worker", slurm=None):
        return cls(device, gpu, python, isolation)

    def __init__(self, device="cpu", gpu=0, python=None, isolation="worker"):
        super().__init__(device, gpu, isolation)
        self.python = python or sys.executable

    def prepare(self, matrix, framework, version, build_options, log, allow_ptx_jit=False):
        """No image: the jobs run in this executor's Python, which must import the framework (of ``version`` when
        one is asked for); raises CannotRunHere with the remedy when it does not."""
        module = frameworks.FRAMEWORKS[framework].imports
        if module is None:
            raise CannotRunHere(
                "the %s adapter drives a LuaJIT process with Torch 7's packages, which only its image has" % framework,
                "run it with --executor docker (or slurm)",
            )
        probe = (
            "import importlib, importlib.util, sys; name = %r; top = name.split('.')[0]; "
            "found = importlib.util.find_spec(top); sys.exit('No module named %%r' %% top) if found is None else "
            "None; sys.stdout.write(str(getattr(importlib.import_module(top), '__version__', '')) if %r else '')"
            % (module, bool(version))
        )
        backend = frameworks.backend(framework)  # Keras reads its backend when first imported
        env = dict(os.environ, KERAS_BACKEND=backend) if backend != framework else None
        try:
            proc = subprocess.run([self.python, "-c", probe], capture_output=True, text=True, timeout=300, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CannotRunHere(
                "cannot start %s to look for %s: %s" % (self.python, framework, exc),
                "give an interpreter that exists with --python, or use --executor docker",
            ) from None
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise CannotRunHere(
                "%s cannot import %s (%s)" % (self.python, module, last),
                "install %s into that Python (e.g. `%s -m pip install %s`), choose another one with "
                "--python, or run in the framework's image: --executor docker"
                % (framework, self.python, _package(framework)),
            )
        if version and not proc.stdout.startswith(version):
            raise CannotRunHere(
                "%s has %s %s, not the %s asked for" % (self.python, framework, proc.stdout, version),
                "install %s==%s into that Python, or use --executor docker" % (module, version),
            )
        return None

    def environment(self, data_root, gpu):
        """The supervisor's environment: the runner on the path, and a cuda run pinned to host GPU ``gpu`` (a list:
        the GPUs of a data-parallel job, one per rank)."""
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), DLREPRO_DATA_ROOT=str(data_root), PYTHONUNBUFFERED="1")
        if self.device == "cuda":
            shown = ",".join(map(str, gpu)) if isinstance(gpu, list) else str(gpu)
            env.update(CUDA_VISIBLE_DEVICES=shown, CUDA_DEVICE_ORDER="PCI_BUS_ID", DLREPRO_GPU=shown.split(",")[0])
        return env

    def cancel(self):
        with self._lock:
            active = list(self._active)
        for proc in active:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)

    def serve_key(self, image, gpu):
        return super().serve_key(image, gpu) + (self.python,)

    def _start(self, command, data_root, gpu):
        """The supervisor's process: a session of its own (an interrupted run ends the supervisor and its job),
        watching the pipe this process holds: when this process dies, the pipe closes and the supervisor ends its
        job and exits."""
        try:
            return subprocess.Popen(
                command,
                env=self.environment(data_root, gpu),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            raise ExecutorError("cannot start %s: %s" % (self.python, exc.strerror)) from None

    def _launch(self, image, stage, scratch, data_root, sink, on_event, gpu):
        proc = self._start(self.supervisor(self.python, stage, scratch), data_root, gpu)
        with self._lock:
            self._active.add(proc)
        try:
            follow(proc.stdout, scratch, sink, on_event, planned(stage))
            if proc.wait() != 0:
                raise ExecutorError("the local supervisor (%s) exited with status %d" % (self.python, proc.returncode))
        finally:
            with self._lock:
                self._active.discard(proc)
            _stop(proc, kill=True)

    def serve(self, image, pool, data_root, gpu):
        proc = self._start(self.supervisor(self.python, pool.jobs, pool.out, serve=True), data_root, gpu)

        def send(text):
            proc.stdin.write(text)
            proc.stdin.flush()

        return Served(
            proc.stdout,
            send,
            lambda kill: _stop(proc, kill),
            lambda: proc.poll() is None,
            "the local supervisor (%s)" % self.python,
        )

    def describe(self):
        version = subprocess.run(
            [self.python, "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True
        ).stdout.strip()
        return dict(super().describe(), python=self.python, python_version=version)


def _package(framework):
    """What `pip install` takes for ``framework``, for a remedy (Keras: keras and its backend's)."""
    if framework == "torch":
        return "torch==2.13.0"
    backend = frameworks.backend(framework)
    return "keras %s" % _package(backend) if backend != framework else framework


def _stop(proc, kill=False, timeout=60):
    """End supervisor process ``proc`` (its session killed; or its input closed and ``timeout`` s to end, then
    killed); returns its exit status."""
    if not kill:
        try:
            proc.stdin.close()
            proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()
