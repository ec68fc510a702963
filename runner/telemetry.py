"""GPU telemetry through NVML (nvidia-ml-py's ``pynvml``), sampled while a job's measured iterations run.

Every ``interval_s`` (default 0.025 s, 40 Hz, so that even a window of 0.1 s has five readings) a
sample reads the SM and memory clocks (MHz), power (W), GPU temperature (C), utilisation of the GPU
and of its memory interface (%, NVML's own averages over its last sample period) and the clock
event ("throttle") reasons as a bit mask, decoded to names.

Where the samples are read: in a process of their own (runner.sampling, started with the job's own
interpreter), not in a thread of the job's. A thread's NVML reads are ctypes calls that give the
GIL back and take it again seven times a sample, and a launch-bound step (the LSTM b128 on an
H200, the GPU waiting on the host) holds the GIL between its kernel launches: each hand-over is a
wake-up of the other thread, which on a virtual machine's idle CPU costs tens of microseconds the
step waits for. The sampling process shares nothing with the job but a pipe it is silent on until
the window ends: the job's process runs no thread of the suite's while it is measured. The readings
at the window's edges (its start, each pause and resume, its end) are taken in the job's process,
outside the timed iterations and outside the counters' window: at every edge the counters are read innermost
(the start and a resume: the reading, then the counters; a pause and the end: the counters, then the reading), so
the energy's seconds are the measured window's (runner.window) and hold none of the sampler's own NVML calls
(before, up to 2.27x the measured time on an H200: issue 52). Where the sampling process cannot start or read
NVML, the record has the edge readings only and says why (``sampling``). ``stop`` may be called more than once: only
the first ends the window.

NVML also keeps cumulative violation counters (time spent held back by the power cap,
thermal limits, ...) and, since Volta, the board's total energy (mJ). They are read at the
start and the end of the window, so a slowdown shorter than the sampling interval is still
seen and the energy is exact over the window; on older GPUs the energy is the power
samples integrated (trapezoids) and says so. ``pause()`` .. ``resume()`` leaves a stretch out of the window
(runner.window: result rewrites, evaluation passes): the samples taken in it are dropped, and its energy,
violation time and seconds are subtracted (the counters are read at its edges).

The result (result.json's ``telemetry``):
  status "ok" | "unavailable", reason (why unavailable: CPU job, no pynvml, no NVML),
  window ("measured iterations"), interval_s, sampling (where the periodic samples were read, or why
  only the edges were), device {nvml_index, name, uuid, pci_bus_id,
  driver, nvml_version, power_limit_w, max_sm_clock_mhz, max_memory_clock_mhz, persistence_mode},
  samples {t_s, sm_clock_mhz, memory_clock_mhz, power_w, temperature_c, gpu_util_pct,
  memory_util_pct, reasons} (columns, one entry per sample; t_s from the window's first reading, taken just
  before the counters' window opens), window_s (the counters' window, s, its pauses left out),
  summary {field: {min, median, max}}, reasons_seen {name: samples}, violation_s
  {power, thermal, ...: seconds inside the window}, throttled (bool), throttle_reasons
  [names], energy {status, joules, mean_w, seconds, method, note} (board level: the whole
  GPU board, not a certified measurement). ``throttled`` is true when a sample shows, or a violation counter grew by
  power cap, HW slowdown, HW thermal, SW thermal or HW power brake; idle, application or
  user clock settings, sync boost and display clocks are normal operation and do not count.

Which NVML device: in a container that sees one GPU, that one; otherwise DLREPRO_GPU
(the host index the executor pinned the job to), else the entry of CUDA_VISIBLE_DEVICES
for the process's rank (the first for a job of one GPU) when it is an index, else the rank. A process that
drives several GPUs (JAX's data-parallel mesh) has one Sampler per device: ``for_job(job, device=d)`` samples
its d-th one as if it were rank d. NVML numbers GPUs in PCI bus order,
so the local executor also sets CUDA_DEVICE_ORDER=PCI_BUS_ID.
"""

import time

from runner import nvml as nvml_api
from runner import sampling

DEFAULT_INTERVAL_S = 0.025
ENERGY_NOTE = "board-level (the whole GPU board, from NVML); not a certified measurement"


def _seconds(elapsed):
    """A reading's time in the window, in seconds to 0.1 ms, rounded down: never after the window's end."""
    return int(elapsed * 1e4) / 1e4


class Sampler(object):
    """Samples one GPU between ``start()`` and ``stop()`` (every ``interval_s``, in a SamplingProcess; the edges
    here); ``result()`` gives the record. ``nvml``: the NVML API for the edge readings, ``source``: its import
    name for the sampling process ("pynvml", or "module:attribute").

    ``Sampler.for_job(job)`` returns a sampler that records why telemetry is unavailable
    (CPU job, no pynvml, no NVML) instead of failing the job.
    """

    def __init__(self, interval_s=DEFAULT_INTERVAL_S, nvml=None, source="pynvml"):
        self.interval_s = interval_s
        self.nvml, self.source = nvml, source
        self.problem = None
        self.device = None
        self.handle = None
        self.samples = dict((k, []) for k in ("t_s",) + nvml_api.FIELDS + ("reasons",))
        self.sampling = None
        self._process = None
        self._rows = []  # (t_s, sample) of every reading, the edges' and the sampling process's
        self._started = self._stopped = self._paused = False
        self._t0 = None
        self._mark = None  # (monotonic, energy mJ, violation counters) at the start of the running stretch
        self._gaps = []  # (t_s, t_s) of each pause, from the window's start
        self._active = {"seconds": 0.0, "energy_mj": 0, "violations": {}}
        self.violation_s = None
        self.energy = None
        self.seconds = None

    @classmethod
    def for_job(cls, job, interval_s=DEFAULT_INTERVAL_S, device=None):
        """``device``: which of the process's GPUs (None: its rank's own). The sampling process is started
        here, before the job's warm-up, so that its start-up is over by the window's."""
        sampler = cls(interval_s)
        if job.get("device") != "cuda":
            sampler.problem = "a %s job: GPU telemetry applies to cuda jobs" % job.get("device")
            return sampler
        try:
            import pynvml
        except ImportError as exc:
            sampler.problem = "pynvml (nvidia-ml-py) is not installed: %s" % exc
            return sampler
        sampler.nvml = pynvml
        try:
            pynvml.nvmlInit()
            sampler.handle = pynvml.nvmlDeviceGetHandleByIndex(nvml_api.index_of(pynvml, device))
            sampler.device = sampler._describe(nvml_api.index_of(pynvml, device))
        except Exception as exc:  # no driver, no libnvidia-ml.so in the container, ...
            sampler.problem = "NVML is unavailable: %s: %s" % (type(exc).__name__, exc)
            return sampler
        sampler.launch()
        return sampler

    def launch(self):
        """Start the sampling process for this sampler's device, if it is not running (``start`` does it too)."""
        if self._process is not None or self.problem is not None:
            return
        try:
            self._process = sampling.SamplingProcess(self.source, self.device["nvml_index"], self.interval_s)
        except RuntimeError as exc:
            self._lost(exc)

    def _get(self, name, *args):
        return nvml_api.attempt(getattr(self.nvml, name, nvml_api.missing), *args)

    def _describe(self, index):
        n, h, get = self.nvml, self.handle, self._get
        limit = get("nvmlDeviceGetEnforcedPowerLimit", h)
        return {
            "nvml_index": index,
            "name": nvml_api.text(get("nvmlDeviceGetName", h)),
            "uuid": nvml_api.text(get("nvmlDeviceGetUUID", h)),
            "pci_bus_id": nvml_api.text(getattr(get("nvmlDeviceGetPciInfo", h), "busId", None)),
            "driver": nvml_api.text(get("nvmlSystemGetDriverVersion")),
            "nvml_version": nvml_api.text(get("nvmlSystemGetNVMLVersion")),
            "power_limit_w": limit / 1000.0 if limit is not None else None,
            "max_sm_clock_mhz": get("nvmlDeviceGetMaxClockInfo", h, n.NVML_CLOCK_SM),
            "max_memory_clock_mhz": get("nvmlDeviceGetMaxClockInfo", h, n.NVML_CLOCK_MEM),
            "persistence_mode": get("nvmlDeviceGetPersistenceMode", h),
        }

    def _violations(self):
        out = {}
        for key, policy, _ in nvml_api.VIOLATIONS:
            value = self._get("nvmlDeviceGetViolationStatus", self.handle, policy)
            out[key] = value.violationTime if value is not None else None
        return out

    def sample(self):
        """Read every field once, here, and keep it; returns its t_s."""
        t = _seconds(time.monotonic() - self._t0)
        self._rows.append((t, nvml_api.read(self.nvml, self.handle)))
        return t

    def _energy_mj(self):
        """(monotonic s, the board's total energy in mJ or None): the time is the middle of the counter's read."""
        before = time.monotonic()
        found = self._get("nvmlDeviceGetTotalEnergyConsumption", self.handle)
        return (before + time.monotonic()) / 2.0, found

    def _begin(self):
        """Open a running stretch: the violation counters, then the energy counter, innermost."""
        violations = self._violations()
        self._mark = self._energy_mj() + (violations,)

    def _end(self):
        """Add the running stretch since the last mark to the window's seconds, violation time and energy: the
        energy counter first, then the violation counters (the reverse of ``_begin``)."""
        end_s, energy = self._energy_mj()
        t0, energy0, violations0 = self._mark
        end, active = self._violations(), self._active
        active["seconds"] += end_s - t0
        for k in end:
            if end[k] is not None and violations0.get(k) is not None:
                active["violations"][k] = active["violations"].get(k, 0) + end[k] - violations0[k]
        active["energy_mj"] = (
            None if None in (energy, energy0, active["energy_mj"]) else active["energy_mj"] + energy - energy0
        )
        self._mark = None

    def start(self):
        if self.problem is not None or self._started:
            return
        self._started = True
        self.launch()
        if self._process is not None:
            try:
                self._process.ready()
            except RuntimeError as exc:
                self._lost(exc)
        if self._process is not None:
            self._process.go()
        self._t0 = time.monotonic()
        self.sample()
        self._begin()

    def pause(self):
        """Leave what follows out of the window until ``resume()``: the counters read, then one reading at the
        pause's start."""
        if not self._started or self._stopped or self._paused:
            return
        self._paused = True
        self._end()
        self._gaps.append(self.sample())

    def resume(self):
        """One reading at the pause's end, then the counters read: the window runs again."""
        if not self._started or self._stopped or not self._paused:
            return
        self._gaps[-1] = (self._gaps[-1], self.sample())
        self._begin()
        self._paused = False

    def stop(self):
        """End the window: the sampling process's readings taken, one last reading at the very end; a second call
        does nothing."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        if self._paused:
            self._gaps[-1] = (self._gaps[-1], None)
            self._collect()
        else:  # the window ends here: its counters, then its last reading, before the sampling process's transfer
            self._end()
            self._collect(self.sample())
        rows = sorted(self._rows, key=lambda row: row[0])
        for key in self.samples:
            self.samples[key] = [t if key == "t_s" else row.get(key) for t, row in rows]
        active = self._active
        self.seconds = active["seconds"]
        self.violation_s = dict((k, v / 1e9) for k, v in active["violations"].items())
        self.energy = _energy(active["energy_mj"], self.seconds, self.samples, self._gaps)

    def _collect(self, end=None):
        """The sampling process's readings, less those inside a pause or after ``end`` (t_s of the window's last
        reading), into the rows; ``sampling`` says how."""
        if self._process is None:
            return
        try:
            found = self._process.stop()
        except RuntimeError as exc:
            self._lost(exc)
            return
        gaps = [gap if isinstance(gap, tuple) else (gap, None) for gap in self._gaps]  # (from, to or None) t_s
        for sample in found:
            t = _seconds(sample.pop("t") - self._t0)
            if not any(low < t and (high is None or t < high) for low, high in gaps) and (end is None or t <= end):
                self._rows.append((t, sample))
        self.sampling = (
            "every %g s in a process of its own (runner.sampling.serve); the window's edges in the "
            "job's" % self.interval_s
        )

    def _lost(self, why):
        self._process = None
        self.sampling = "the window's edges only: %s" % why

    def close(self):
        self.stop()
        if self._process is not None:
            self._process.close()
            self._process = None
        if self.nvml is not None and self.problem is None:
            nvml_api.attempt(self.nvml.nvmlShutdown)

    def result(self):
        if self.problem is not None:
            return nvml_api.unavailable(self.problem)
        if not self.samples["t_s"]:
            return dict(nvml_api.unavailable("no sample was taken (nothing was measured)"), device=self.device)
        seen, throttled, reasons = nvml_api.judge(self.samples, self.violation_s)
        return {
            "status": "ok",
            "reason": None,
            "window": "measured iterations",
            "interval_s": self.interval_s,
            "sampling": self.sampling,
            "window_s": self.seconds,
            "device": self.device,
            "samples": self.samples,
            "summary": nvml_api.summarize(self.samples),
            "reasons_seen": seen,
            "violation_s": self.violation_s,
            "throttled": throttled,
            "throttle_reasons": reasons,
            "energy": self.energy,
        }


def _energy(counted_mj, seconds, samples, gaps=()):
    """The board's energy over the window (J): NVML's total-energy counter (``counted_mj``, mJ, its rises over
    the window's running stretches; None where the GPU has none), else the power samples integrated by
    trapezoids, none across a pause (``gaps``: its (first, last) t_s); with the mean power (W) over the window."""
    if counted_mj is not None:
        joules, method = counted_mj / 1000.0, "NVML total energy counter at the window's edges"
    else:
        points = [(t, p) for t, p in zip(samples["t_s"], samples["power_w"]) if p is not None]
        if len(points) < 2:
            return {"status": "unavailable", "reason": "no energy counter and fewer than two power readings"}
        joules = sum(
            (t1 - t0) * (p0 + p1) / 2.0
            for (t0, p0), (t1, p1) in zip(points, points[1:])
            if not any(t0 <= gap[0] < t1 for gap in gaps)
        )
        method = "power samples integrated (trapezoids; the GPU has no total energy counter)"
    return {
        "status": "ok",
        "joules": joules,
        "seconds": seconds,
        "mean_w": joules / seconds if seconds else None,
        "method": method,
        "note": ENERGY_NOTE,
    }


def summary_columns(result):
    """The telemetry and option columns of a job's row in the summary table, from its result.json body."""
    tel = result.get("telemetry") or {}
    device = tel.get("device") or {}
    summary = tel.get("summary") or {}
    options = result.get("options") or {}

    def median(field):
        return (summary.get(field) or {}).get("median")

    return {
        "throttled": tel.get("throttled"),
        "throttle_reasons": ",".join(tel.get("throttle_reasons") or []) or None,
        "gpu_name": device.get("name"),
        "driver": device.get("driver"),
        "sm_clock_median_mhz": median("sm_clock_mhz"),
        "memory_clock_median_mhz": median("memory_clock_mhz"),
        "power_median_w": median("power_w"),
        "temperature_max_c": (summary.get("temperature_c") or {}).get("max"),
        "telemetry_samples": len((tel.get("samples") or {}).get("t_s") or []) or None,
        "precision": options.get("precision"),
        "layout": options.get("layout"),
        "cudnn_autotune": options.get("cudnn_autotune"),
        "ptx_jit": options.get("ptx_jit"),
    }
