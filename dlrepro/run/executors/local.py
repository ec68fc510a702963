"""The local executor: the same supervisor in a Python on this machine (the current one by default), for
machines without a Docker engine and for GPU lab machines; a cuda job sees its GPU through
CUDA_VISIBLE_DEVICES (CUDA_DEVICE_ORDER=PCI_BUS_ID, so the index is NVML's and nvidia-smi's)."""
import os
import signal
import subprocess
import sys

from dlrepro import REPO_ROOT
from dlrepro.errors import ExecutorError
from dlrepro.run.executors.base import Executor, follow


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
            follow(proc.stdout, scratch, on_event)
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
