"""The process that samples one GPU for runner.telemetry's Sampler: ``serve`` runs in it (started with the job's own
interpreter), ``SamplingProcess`` is its handle in the job's process. They share nothing but a pipe, silent until
the window ends: the job's process runs no thread of the suite's while it is measured (runner.telemetry says why).
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time

from runner import nvml as nvml_api


def serve(source, index, interval_s):
    """The sampling process (``python -c ... serve(...)``, started by Sampler): reads GPU ``index`` through the
    NVML API ``source`` every ``interval_s`` seconds between a "go" line and a "stop" line on standard input,
    keeping the samples in memory. It answers in JSON lines on standard output: once NVML is open,
    {"ready": true} (or {"error": why}, and it ends), then for each "stop" {"samples": [{"t": time.monotonic(),
    field: value, ...}, ...]}. It ends at the end of its input (the job's process closed it, or died). Input is
    read from the file descriptor itself, never through a buffer that select() cannot see. It moves off the
    CPUs the job was pinned to (runner.settings), where there are others."""
    _off_the_job_cpus()
    try:
        nvml = nvml_api.load(source)
        nvml.nvmlInit()
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:  # no driver here, no nvidia-ml-py: the job's process keeps its edge readings
        _answer({"error": "%s: %s" % (type(exc).__name__, exc)})
        return
    _answer({"ready": True})
    samples, due, pending = [], None, b""
    while True:
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line == b"go":
                due = time.monotonic() + interval_s
            elif line == b"stop":
                _answer({"samples": samples})
                samples, due = [], None
        wait = None if due is None else max(0.0, due - time.monotonic())
        if select.select([0], [], [], wait)[0]:
            chunk = os.read(0, 4096)
            if not chunk:
                return
            pending += chunk
            continue
        sample = nvml_api.read(nvml, handle)
        sample["t"] = time.monotonic()
        samples.append(sample)
        due += interval_s
        if due < time.monotonic():  # a late sample: the next on the grid ahead, not a burst to catch up
            due += interval_s * (1 + int((time.monotonic() - due) / interval_s))


def _off_the_job_cpus():
    """Run on the CPUs this process may use other than those it inherited from the job (a job with a thread count
    is pinned to that many), if any; where it cannot, it stays on the job's."""
    try:
        job = os.sched_getaffinity(0)
        others = set(range(os.cpu_count() or 1)) - job
        if others:
            os.sched_setaffinity(0, others)
    except (AttributeError, OSError, ValueError):  # not Linux, or none of the others in this cgroup's cpuset
        pass


def _answer(reply):
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


class SamplingProcess(object):
    """The process that samples one GPU for a Sampler (``serve``): started with this interpreter and this
    process's import path, its standard error kept in a temporary file (a warm worker points its own at each
    job's log), whose end is the reason given when it fails. Raises RuntimeError with the reason whenever it
    cannot give what is asked."""

    REPLY_TIMEOUT_S = 10.0
    ERROR_TAIL_BYTES = 400

    def __init__(self, source, index, interval_s):
        code = "import sys; sys.path[:0] = %r; from runner import sampling; sampling.serve(%r, %d, %r)" % (
            [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] + sys.path,
            source,
            index,
            interval_s,
        )
        self.errors = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.errors,
                close_fds=True,
            )
        except Exception as exc:  # no such interpreter, no fork: the caller keeps the edge readings
            self.errors.close()
            raise RuntimeError("the sampling process could not start: %s: %s" % (type(exc).__name__, exc))
        self.pending = b""  # what was read of its output beyond the last whole line

    def ready(self):
        """Wait until it has NVML open."""
        self._reply()

    def go(self):
        self._send("go")

    def stop(self):
        """The samples taken since ``go`` ([{"t": monotonic seconds, field: value}])."""
        self._send("stop")
        return self._reply()["samples"]

    def _reply(self):
        """Its next JSON object line (a line that is not one, a library's banner, is passed over)."""
        deadline = time.monotonic() + self.REPLY_TIMEOUT_S
        while True:
            line = self._line(deadline)
            try:
                reply = json.loads(line.decode("utf-8", "replace"))
            except ValueError:
                continue
            if not isinstance(reply, dict):
                continue
            if "error" in reply:
                self._fail("could not read NVML: %s" % reply["error"])
            return reply

    def _line(self, deadline):
        """Its next line of output, read from the pipe's descriptor (no buffer hides a line from select)."""
        out = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            if not select.select([out], [], [], max(0.0, deadline - time.monotonic()))[0]:
                self._fail("gave no answer within %.0f s" % self.REPLY_TIMEOUT_S)
            chunk = os.read(out, 1 << 16)
            if not chunk:
                self._fail("ended (exit status %s)" % self.process.wait())
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line

    def _fail(self, what):
        self.close()
        self.errors.seek(0, os.SEEK_END)
        self.errors.seek(max(0, self.errors.tell() - self.ERROR_TAIL_BYTES))
        tail = self.errors.read().decode("utf-8", "replace").strip().splitlines()
        self.errors.close()
        raise RuntimeError("the sampling process %s%s" % (what, " (%s)" % tail[-1] if tail else ""))

    def _send(self, command):
        try:
            self.process.stdin.write(command.encode() + b"\n")
            self.process.stdin.flush()
        except (IOError, OSError, ValueError):  # it ended: the reply says so
            pass

    def close(self):
        """End it: its input closed, then killed if it has not ended within 0.5 s."""
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except (IOError, OSError):
                pass
        for _ in range(50):
            if self.process.poll() is not None:
                return
            time.sleep(0.01)
        self.process.kill()
        self.process.wait()
