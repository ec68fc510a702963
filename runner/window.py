"""The measured window of a job and what is recorded over it.

From its ``start`` (before the first measured iteration, epoch or pass) to its ``stop`` (after the last,
the device synchronised), less the stretches ``excluded(what)`` leaves out (the result rewrites between
repeats and epochs, a convergence run's evaluation passes: runner.measure): the wall time (s), the
process's CPU time (s, every thread of the process, and of its live child processes where it has any: Torch 7's
LuaJIT), and their ratio, the effective parallelism: how many
CPUs the job kept busy on average, which is what a thread count really did (a 1-thread job that kept two
cores busy reads 2.0). A cuda job adds the GPU's telemetry and board energy (runner.telemetry; a process
that drives several GPUs, JAX's data-parallel mesh, samples each of them and sums their energy); a CPU
job the CPU packages' energy where the host lets it be read (runner.energy), else the reason there is
none. Every counter is paused over an excluded stretch, and cpu_usage's and energy's ``excluded`` name
what was left out. ``start`` and ``stop`` may be called again: only the first of each counts.
"""

import contextlib
import glob
import os
import time

from runner import energy, ranks, settings, telemetry


def child_pids():
    """The PIDs of this process's live child processes (/proc/self/task/*/children; [] where /proc does not list
    them)."""
    pids = []
    for path in glob.glob("/proc/self/task/*/children"):
        try:
            with open(path) as f:
                pids += f.read().split()
        except OSError:
            continue
    return pids


def child_cpu_seconds():
    """CPU seconds (user + system, every thread) of this process's live child processes, from /proc (a framework
    that computes in a process of its own: Torch 7's LuaJIT, runner.adapters.torch7_adapter); 0.0 without any.
    Resolution: the kernel's clock tick (10 ms)."""
    total = 0.0
    for pid in child_pids():
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))
        except (OSError, ValueError, IndexError):
            continue  # a child that ended meanwhile
    return total


def _cpu_seconds():
    return time.process_time() + child_cpu_seconds()


class Window(object):
    """``sampler``: the job's (first) GPU's telemetry.Sampler; ``counter``: energy.Counter (CPU jobs);
    ``others``: Samplers of the process's other GPUs."""

    def __init__(self, sampler, counter=None, others=()):
        self.sampler, self.counter, self.others = sampler, counter, list(others)
        self.wall = self.cpu = None
        self.children = False  # whether live child processes' CPU time counts (runner.adapters.torch7_adapter's)
        self.left_out = []
        self._t0 = self._c0 = None
        self._run = [0.0, 0.0]  # wall, CPU seconds of the running stretches that ended
        self._paused = False

    @classmethod
    def for_job(cls, job):
        """The window of ``job``: GPU telemetry for cuda jobs (every device of a one-process data-parallel
        job), the CPU energy counter for CPU jobs."""
        if job.get("device") != "cuda":
            return cls(telemetry.Sampler.for_job(job), energy.Counter())
        devices = 1 if job["framework"] in ranks.PROCESS_PER_RANK else (job.get("ranks") or 1)
        return cls(
            telemetry.Sampler.for_job(job, device=0 if devices > 1 else None),
            None,
            [telemetry.Sampler.for_job(job, device=d) for d in range(1, devices)],
        )

    def _counters(self):
        return [self.sampler] + self.others + ([self.counter] if self.counter is not None else [])

    def start(self):
        if self._t0 is not None:
            return
        for counter in self._counters():
            counter.start()
        self._t0, self._c0 = time.perf_counter(), _cpu_seconds()
        self.children = bool(child_pids())

    def _running(self):
        return self._t0 is not None and self.wall is None and not self._paused

    def _close_stretch(self):
        self._run[0] += time.perf_counter() - self._t0
        self._run[1] += _cpu_seconds() - self._c0

    @contextlib.contextmanager
    def excluded(self, what):
        """Leave the block out of the window: its wall and CPU time, its energy and telemetry (``what``: named
        in the record). Outside the window (not started, stopped, already paused), the block just runs."""
        if not self._running():
            yield
            return
        self._close_stretch()
        self._paused = True
        for counter in self._counters():
            counter.pause()
        if what not in self.left_out:
            self.left_out.append(what)
        try:
            yield
        finally:
            for counter in self._counters():
                counter.resume()
            self._paused = False
            self._t0, self._c0 = time.perf_counter(), _cpu_seconds()

    def stop(self):
        if self._t0 is None or self.wall is not None:
            return
        if not self._paused:
            self._close_stretch()
        self.wall, self.cpu = self._run
        for counter in self._counters():
            counter.stop()

    def close(self):
        self.stop()
        for sampler in [self.sampler] + self.others:
            sampler.close()

    def telemetry(self):
        """result.json's telemetry: the (first) GPU's record; with several GPUs, ``devices``: each other one's
        device, summary, throttling and energy, and ``throttled`` true when any was held back."""
        found = self.sampler.result()
        if self.others:
            others = [s.result() for s in self.others]
            found = dict(
                found,
                devices=[
                    {
                        k: r.get(k)
                        for k in ("status", "reason", "device", "summary", "throttled", "throttle_reasons", "energy")
                    }
                    for r in others
                ],
            )
            if any(r.get("throttled") for r in others):
                found["throttled"] = True
                found["throttle_reasons"] = sorted(
                    set(found.get("throttle_reasons") or []).union(*[r.get("throttle_reasons") or [] for r in others])
                )
        return found

    def cpu_usage(self):
        """result.json's cpu_usage: {wall_seconds, cpu_seconds, effective_parallelism, usable_cpus, excluded},
        or None when nothing was measured."""
        if self.wall is None:
            return None
        return {
            "wall_seconds": self.wall,
            "cpu_seconds": self.cpu,
            "effective_parallelism": self.cpu / self.wall if self.wall > 0 else None,
            "usable_cpus": len(settings.allowed_cpus()),
            "excluded": list(self.left_out),
            "method": "process CPU time (every thread%s) over the measured window%s"
            % (
                "; with its child processes'" if self.children else "",
                "; %s left out (counters paused)" % ", ".join(self.left_out) if self.left_out else "",
            ),
        }

    def energy(self):
        """result.json's energy over the window: the GPU board's (cuda jobs; the sum of every GPU's board, each
        named in ``boards``, for several) or the CPU packages' (CPU jobs), with ``excluded``; ``seconds``: the
        energy counters' window (s; the first GPU's, read innermost at every edge: runner.telemetry; the RAPL
        packages', read next to the measured window's edges: its wall time), ``measured_seconds``: the measured
        window's wall time (s, cpu_usage's ``wall_seconds``). Pauses are left out of both."""
        if self.counter is not None:
            found = self.counter.result(self.wall)
        else:
            samplers = [self.sampler] + self.others
            boards = [(s.result() or {}).get("energy") for s in samplers]
            missing = [
                (b or {}).get("reason") or s.problem or "nothing was measured"
                for s, b in zip(samplers, boards)
                if (b or {}).get("status") != "ok"
            ]
            if missing:
                return {"status": "unavailable", "reason": missing[0]}
            found = dict(boards[0])
            if self.others:
                found.update(
                    joules=sum(b["joules"] for b in boards),
                    boards=[b["joules"] for b in boards],
                    method="sum of %d GPU boards: %s" % (len(boards), boards[0]["method"]),
                )
                found["mean_w"] = found["joules"] / found["seconds"] if found["seconds"] else None
        if found.get("status") == "ok":
            found["measured_seconds"] = self.wall
        if found.get("status") == "ok" and self.left_out:
            found.update(
                excluded=list(self.left_out),
                method="%s; %s left out (counters paused)" % (found["method"], ", ".join(self.left_out)),
            )
        return found
