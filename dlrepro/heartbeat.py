"""Where long work stands: a heartbeat line while a step is silent, and a running job's phase and time left.

A build, a bootstrap or a run prints a line through its ``log`` at least every
``interval()`` seconds (``$DLREPRO_HEARTBEAT_S``, default 30) while it works, so a log
or a CI system never sees a long silence; each line says what is being done, for how
long, and the last line the step printed. A running job's phase is read from its
result.json, which the runner rewrites as each phase is reached (runner.job: ``phases``,
and the repeats and epochs measured so far).
"""

import os
import statistics
import threading
import time

from dlrepro.errors import DlreproError

ENV = "DLREPRO_HEARTBEAT_S"
DEFAULT_S = 30.0
# runner.job's phases, in the order a job reaches them, and what a job is doing once it has reached each
DOING = (
    ("framework_imported", "framework imported, building the model"),
    ("model_built", "model built, loading data"),
    ("measured_done", "measured, writing the result"),
)


def interval():
    """The heartbeat interval in seconds: ``$DLREPRO_HEARTBEAT_S`` (> 0), else 30; raises DlreproError for a bad
    value."""
    text = os.environ.get(ENV)
    if not text:
        return DEFAULT_S
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise DlreproError("%s=%s: expected a number of seconds > 0" % (ENV, text), "unset it (default 30) or fix it")
    return value


def clock(seconds):
    """``seconds`` as 45s, 3m05s or 1h02m."""
    seconds = int(round(seconds))
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % divmod(seconds, 60)
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)


_ENTERED = threading.local()  # .heartbeats: a thread's heartbeats entered and not yet left, the latest last


class Heartbeat:
    """A context manager that calls ``log(describe())`` whenever ``every`` seconds (default ``interval()``) pass
    without a line: none from itself, none announced by ``touch()``. ``describe()`` returning None prints nothing
    (nothing to say now). Of a thread's heartbeats, only the one entered last speaks: a build's inside a run's says
    what the build is doing, and the run's stays quiet instead of printing its own line at the same moment; builds on
    threads of their own (dlrepro.images.build.ensure_all) each speak. The lines come from a daemon thread, so
    ``log`` must take lines from any thread."""

    def __init__(self, log, describe, every=None):
        self.log, self.describe, self.every = log, describe, every or interval()
        self.last, self._stop, self._thread, self._entered = time.monotonic(), threading.Event(), None, []

    def touch(self):
        """A line was just printed by the work itself: the next heartbeat is due ``every`` seconds from now."""
        self.last = time.monotonic()

    def _beat(self):
        while not self._stop.wait(max(0.05, self.last + self.every - time.monotonic())):
            if time.monotonic() - self.last >= self.every:
                text = self.describe() if self._entered[-1:] == [self] else None
                if text:
                    self.log(text)
                self.last = time.monotonic()

    def __enter__(self):
        self.last = time.monotonic()
        if not hasattr(_ENTERED, "heartbeats"):
            _ENTERED.heartbeats = []
        self._entered = _ENTERED.heartbeats
        self._entered.append(self)
        self._thread = threading.Thread(target=self._beat, name="dlrepro-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._entered.remove(self)


def job_doing(job, result, elapsed=None):
    """What a running job is doing and the seconds it has left, (text, seconds or None), from ``job`` (job.json),
    its result.json as last written (None: not written yet) and the seconds since it started (``elapsed``; None:
    the estimate does not count down within a repeat).

    Throughput: "warm-up (W iterations)", then "repeat i of N" with the iterations left times the
    median measured iteration time (before the first repeat ends: the warm-up's mean, first-call
    costs included); convergence: "epoch i of N" with the mean measured epoch time (training loop,
    evaluation excluded) times the epochs left."""
    phases = (result or {}).get("phases") or {}
    if not phases or result.get("status") != "running":
        return "starting", None
    reached = [doing for name, doing in DOING if name in phases]
    if "measured_done" in phases or "data_ready" not in phases:
        return (reached or ["starting"])[-1], None
    mode = job.get("mode")
    if mode == "convergence":
        epochs = ((result.get("convergence") or {}).get("epochs")) or []
        total, done = job.get("epochs") or 0, len(epochs)
        left = statistics.mean(e["seconds"] for e in epochs) * (total - done) if epochs else None
        return "epoch %d of %d" % (min(done + 1, total), total), left
    if mode == "throughput":
        repeats = ((result.get("timing") or {}).get("repeats")) or []
        total, done, warmup = job.get("repeats") or 0, len(repeats), job.get("warmup") or 0
        if "warmup_done" not in phases:
            return "warm-up (%d iteration%s)" % (warmup, "" if warmup == 1 else "s"), None
        if repeats:
            per_iteration = statistics.median(s for r in repeats for s in r)
        elif warmup:  # the warm-up's iterations (first-call costs included: an estimate on the long side)
            per_iteration = (phases["warmup_done"] - phases["data_ready"]) / warmup
        else:
            return "repeat 1 of %d" % total, None
        left = per_iteration * job["iterations"] * (total - done)
        if elapsed is not None:  # less what the current repeat has run: it began when the warm-up and repeats ended
            began = phases["warmup_done"] + sum((result.get("timing") or {}).get("repeat_wall_seconds") or [])
            left = max(left - max(elapsed - began, 0.0), 0.0)
        return "repeat %d of %d" % (min(done + 1, total), total), left
    return "%s pass" % (mode or "measuring"), None


def time_left(walls, running, waiting):
    """Seconds left of a run, or None when it cannot be told yet (no job has finished, and a running one has no
    estimate of its own). ``walls``: the finished jobs' wall times (s); ``running``: (seconds since it started,
    seconds left or None) of each running job; ``waiting``: how many jobs have not started. A running job without
    an estimate is taken to need the median finished job's wall time; each waiting job, that median."""
    typical = statistics.median(walls) if walls else None
    if typical is None and (waiting or any(left is None for _, left in running)):
        return None
    return sum(left if left is not None else max(typical - elapsed, 0.0) for elapsed, left in running) + (
        typical * waiting if waiting else 0.0
    )
