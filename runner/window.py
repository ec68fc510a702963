"""The measured window of a job and what is recorded over it.

From its ``start`` (before the first measured iteration, epoch or pass) to its ``stop`` (after the last,
the device synchronised): the wall time (s), the process's CPU time (s, every thread of the process),
and their ratio, the effective parallelism: how many CPUs the job kept busy on average, which is what a
thread count really did (a 1-thread job that kept two cores busy reads 2.0). A cuda job adds the GPU's
telemetry and board energy (runner.telemetry); a CPU job the CPU packages' energy where the host lets it
be read (runner.energy), else the reason there is none. ``start`` and ``stop`` may be called again: only
the first of each counts.
"""
import time

from runner import energy, settings, telemetry


class Window(object):
    def __init__(self, sampler, counter=None):
        self.sampler, self.counter = sampler, counter
        self.wall = self.cpu = None
        self._t0 = self._c0 = None

    @classmethod
    def for_job(cls, job):
        """The window of ``job``: GPU telemetry for cuda jobs, the CPU energy counter for CPU jobs."""
        cuda = job.get("device") == "cuda"
        return cls(telemetry.Sampler.for_job(job), None if cuda else energy.Counter())

    def start(self):
        if self._t0 is not None:
            return
        if self.counter is not None:
            self.counter.start()
        self.sampler.start()
        self._t0, self._c0 = time.perf_counter(), time.process_time()

    def stop(self):
        if self._t0 is None or self.wall is not None:
            return
        self.wall, self.cpu = time.perf_counter() - self._t0, time.process_time() - self._c0
        self.sampler.stop()
        if self.counter is not None:
            self.counter.stop()

    def close(self):
        self.stop()
        self.sampler.close()

    def cpu_usage(self):
        """result.json's cpu_usage: {wall_seconds, cpu_seconds, effective_parallelism, usable_cpus}, or None
        when nothing was measured."""
        if self.wall is None:
            return None
        return {"wall_seconds": self.wall, "cpu_seconds": self.cpu,
                "effective_parallelism": self.cpu / self.wall if self.wall > 0 else None,
                "usable_cpus": len(settings.allowed_cpus())}

    def energy(self):
        """result.json's energy: the GPU board's (cuda jobs) or the CPU packages' (CPU jobs) over the window."""
        if self.counter is None:
            found = (self.sampler.result() or {}).get("energy")
            return found or {"status": "unavailable", "reason": self.sampler.problem or "nothing was measured"}
        return self.counter.result(self.wall)
