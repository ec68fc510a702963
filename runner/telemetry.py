"""GPU telemetry through NVML (nvidia-ml-py's ``pynvml``), sampled while a job's measured iterations run.

A ``Sampler`` thread reads, every ``interval_s`` (default 0.025 s, 40 Hz, so that even a window of
0.1 s has five readings; the first at the window's start, the last at its end): the SM and memory
clocks (MHz), power (W), GPU temperature (C), utilisation of the GPU and of its memory
interface (%, NVML's own averages over its last sample period) and the clock event
("throttle") reasons as a bit mask, decoded to names. Each NVML read is a ctypes call,
which releases the GIL, and the thread is idle well over 95% of the time; but each of a
sample's seven reads takes the GIL back from the job's thread, which a launch-bound step
(the host the bottleneck) may feel: benchmarks/overhead.py measures the bare loop with and
without this thread running (bare+telemetry). ``stop``
may be called more than once: only the first ends the window.

NVML also keeps cumulative violation counters (time spent held back by the power cap,
thermal limits, ...) and, since Volta, the board's total energy (mJ). They are read at the
start and the end of the window, so a slowdown shorter than the sampling interval is still
seen and the energy is exact over the window; on older GPUs the energy is the power
samples integrated (trapezoids) and says so. ``pause()`` .. ``resume()`` leaves a stretch out of the window
(runner.window: result rewrites, evaluation passes): nothing is sampled in it, and its energy, violation time
and seconds are subtracted (the counters are read at its edges).

The result (result.json's ``telemetry``):
  status "ok" | "unavailable", reason (why unavailable: CPU job, no pynvml, no NVML),
  window ("measured iterations"), interval_s, device {nvml_index, name, uuid, pci_bus_id,
  driver, nvml_version, power_limit_w, max_sm_clock_mhz, max_memory_clock_mhz, persistence_mode},
  samples {t_s, sm_clock_mhz, memory_clock_mhz, power_w, temperature_c, gpu_util_pct,
  memory_util_pct, reasons} (columns, one entry per sample; t_s from the window's start),
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
import os
import threading
import time

DEFAULT_INTERVAL_S = 0.025
ENERGY_NOTE = "board-level (the whole GPU board, from NVML); not a certified measurement"

# NVML clock event reason bits (nvml.h, nvmlClocksEventReason*)
REASONS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
THROTTLING = frozenset(["sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                        "hw_power_brake_slowdown"])
# NVML perf policies (nvmlPerfPolicyType_t) whose violation time means the clocks were held back
VIOLATIONS = (("power", 0, "sw_power_cap"), ("thermal", 1, "sw_thermal_slowdown"))
FIELDS = ("sm_clock_mhz", "memory_clock_mhz", "power_w", "temperature_c", "gpu_util_pct", "memory_util_pct")


def decode(mask):
    """Names of the clock event reasons set in ``mask``."""
    return [name for bit, name in REASONS if mask & bit]


def unavailable(reason):
    return {"status": "unavailable", "reason": reason, "throttled": None, "throttle_reasons": []}


def summarize(samples):
    """{field: {min, median, max}} over the sample columns (None where a field was never read)."""
    from runner import stats  # numpy: imported only once the job's thread count is set (runner.job)

    out = {}
    for field in FIELDS:
        values = [v for v in samples.get(field, []) if v is not None]
        out[field] = {k: stats.summarize(values)[k] for k in ("min", "median", "max")} if values else None
    return out


def judge(samples, violation_s):
    """(reasons_seen {name: count}, throttled, throttle_reasons) from sampled masks and violation times."""
    seen = {}
    for mask in samples.get("reasons", []):
        if mask is None:
            continue
        for name in decode(mask):
            seen[name] = seen.get(name, 0) + 1
    reasons = set(name for name in seen if name in THROTTLING)
    for key, _, name in VIOLATIONS:
        if (violation_s or {}).get(key):
            reasons.add(name)
    reasons = sorted(reasons)
    return seen, bool(reasons), reasons


def _index(pynvml, rank=None):
    """The NVML index of this process's GPU (``rank``: of its rank, this process's by default): rank r of a
    data-parallel job has the r-th visible one."""
    if pynvml.nvmlDeviceGetCount() == 1:
        return 0
    rank = int(os.environ.get("DLREPRO_RANK", "0")) if rank is None else rank
    visible = (os.environ.get("CUDA_VISIBLE_DEVICES") or "").split(",")
    for text in (os.environ.get("DLREPRO_GPU") if not rank else None, visible[rank] if rank < len(visible) else None):
        if text and text.strip().isdigit():
            return int(text)
    return rank


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception:  # a field this GPU or driver (or this nvidia-ml-py) does not report
        return None


def _missing(*args):
    raise AttributeError("not in this nvidia-ml-py")


class Sampler(object):
    """Samples one GPU in a background thread between ``start()`` and ``stop()``; ``result()`` gives the record.

    ``Sampler.for_job(job)`` returns a sampler that records why telemetry is unavailable
    (CPU job, no pynvml, no NVML) instead of failing the job.
    """

    def __init__(self, interval_s=DEFAULT_INTERVAL_S, nvml=None):
        self.interval_s = interval_s
        self.nvml = nvml
        self.problem = None
        self.device = None
        self.handle = None
        self.samples = dict((k, []) for k in ("t_s",) + FIELDS + ("reasons",))
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._lock = threading.Lock()  # a pause reads from the job's thread while the sampler's may be reading
        self._thread = None
        self._t0 = None
        self._mark = None  # (perf_counter, violation counters, energy mJ) at the start of the running stretch
        self._gaps = []  # (t_s, t_s) of each pause, from the window's start
        self._active = {"seconds": 0.0, "energy_mj": 0, "violations": {}}
        self.violation_s = None
        self.energy = None
        self.seconds = None

    @classmethod
    def for_job(cls, job, interval_s=DEFAULT_INTERVAL_S, device=None):
        """``device``: which of the process's GPUs (None: its rank's own)."""
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
            sampler.handle = pynvml.nvmlDeviceGetHandleByIndex(_index(pynvml, device))
            sampler.device = sampler._describe(_index(pynvml, device))
        except Exception as exc:  # no driver, no libnvidia-ml.so in the container, ...
            sampler.problem = "NVML is unavailable: %s: %s" % (type(exc).__name__, exc)
        return sampler

    def _get(self, name, *args):
        return _try(getattr(self.nvml, name, _missing), *args)

    def _describe(self, index):
        n, h, get = self.nvml, self.handle, self._get
        limit = get("nvmlDeviceGetEnforcedPowerLimit", h)
        return {"nvml_index": index, "name": _text(get("nvmlDeviceGetName", h)),
                "uuid": _text(get("nvmlDeviceGetUUID", h)),
                "pci_bus_id": _text(getattr(get("nvmlDeviceGetPciInfo", h), "busId", None)),
                "driver": _text(get("nvmlSystemGetDriverVersion")),
                "nvml_version": _text(get("nvmlSystemGetNVMLVersion")),
                "power_limit_w": limit / 1000.0 if limit is not None else None,
                "max_sm_clock_mhz": get("nvmlDeviceGetMaxClockInfo", h, n.NVML_CLOCK_SM),
                "max_memory_clock_mhz": get("nvmlDeviceGetMaxClockInfo", h, n.NVML_CLOCK_MEM),
                "persistence_mode": get("nvmlDeviceGetPersistenceMode", h)}

    def _violations(self):
        out = {}
        for key, policy, _ in VIOLATIONS:
            value = self._get("nvmlDeviceGetViolationStatus", self.handle, policy)
            out[key] = value.violationTime if value is not None else None
        return out

    def _reasons(self):
        n, h = self.nvml, self.handle
        fn = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or n.nvmlDeviceGetCurrentClocksThrottleReasons
        return _try(fn, h)

    def sample(self):
        """Read every field once and append it to the columns."""
        n, h = self.nvml, self.handle
        power = _try(n.nvmlDeviceGetPowerUsage, h)
        util = _try(n.nvmlDeviceGetUtilizationRates, h)
        row = {"t_s": round(time.perf_counter() - self._t0, 4),
               "sm_clock_mhz": _try(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
               "memory_clock_mhz": _try(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
               "power_w": power / 1000.0 if power is not None else None,
               "temperature_c": _try(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
               "gpu_util_pct": util.gpu if util is not None else None,
               "memory_util_pct": util.memory if util is not None else None,
               "reasons": self._reasons()}
        with self._lock:
            for key, value in row.items():
                self.samples[key].append(value)

    def _loop(self):
        while True:
            if not self._paused.is_set():
                self.sample()
            if self._stop.wait(self.interval_s):
                return

    def _energy_mj(self):
        return self._get("nvmlDeviceGetTotalEnergyConsumption", self.handle)

    def _begin(self):
        self._mark = (time.perf_counter(), self._violations(), self._energy_mj())

    def _end(self):
        """Add the running stretch since the last mark to the window's seconds, violation time and energy."""
        t0, violations0, energy0 = self._mark
        end, energy, active = self._violations(), self._energy_mj(), self._active
        active["seconds"] += time.perf_counter() - t0
        for k in end:
            if end[k] is not None and violations0.get(k) is not None:
                active["violations"][k] = active["violations"].get(k, 0) + end[k] - violations0[k]
        active["energy_mj"] = None if None in (energy, energy0, active["energy_mj"]) \
            else active["energy_mj"] + energy - energy0
        self._mark = None

    def start(self):
        if self.problem is not None or self._thread is not None:
            return
        self._begin()
        self._t0 = self._mark[0]
        self._thread = threading.Thread(target=self._loop, name="dlrepro-telemetry")
        self._thread.daemon = True
        self._thread.start()

    def pause(self):
        """Leave what follows out of the window until ``resume()``: one reading at the pause's start."""
        if self._thread is None or self._stop.is_set() or self._paused.is_set():
            return
        self._paused.set()
        self.sample()
        self._end()
        self._gaps.append(self.samples["t_s"][-1])

    def resume(self):
        if self._thread is None or self._stop.is_set() or not self._paused.is_set():
            return
        self._begin()
        self.sample()
        self._gaps[-1] = (self._gaps[-1], self.samples["t_s"][-1])
        self._paused.clear()

    def stop(self):
        """End the window: one last reading at its very end; a second call does nothing."""
        if self._thread is None or self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        if self._paused.is_set():
            self._gaps[-1] = (self._gaps[-1], None)
        else:
            self.sample()
            self._end()
        active = self._active
        self.seconds = active["seconds"]
        self.violation_s = dict((k, v / 1e9) for k, v in active["violations"].items())
        self.energy = _energy(active["energy_mj"], self.seconds, self.samples, self._gaps)

    def close(self):
        self.stop()
        if self.nvml is not None and self.problem is None:
            _try(self.nvml.nvmlShutdown)

    def result(self):
        if self.problem is not None:
            return unavailable(self.problem)
        if not self.samples["t_s"]:
            return dict(unavailable("no sample was taken (nothing was measured)"), device=self.device)
        seen, throttled, reasons = judge(self.samples, self.violation_s)
        return {"status": "ok", "reason": None, "window": "measured iterations", "interval_s": self.interval_s,
                "window_s": self.seconds, "device": self.device, "samples": self.samples,
                "summary": summarize(self.samples), "reasons_seen": seen, "violation_s": self.violation_s,
                "throttled": throttled, "throttle_reasons": reasons, "energy": self.energy}


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
        joules = sum((t1 - t0) * (p0 + p1) / 2.0 for (t0, p0), (t1, p1) in zip(points, points[1:])
                     if not any(t0 <= gap[0] < t1 for gap in gaps))
        method = "power samples integrated (trapezoids; the GPU has no total energy counter)"
    return {"status": "ok", "joules": joules, "seconds": seconds, "mean_w": joules / seconds if seconds else None,
            "method": method, "note": ENERGY_NOTE}


def summary_columns(result):
    """The telemetry and option columns of a job's row in the summary table, from its result.json body."""
    tel = result.get("telemetry") or {}
    device = tel.get("device") or {}
    summary = tel.get("summary") or {}
    options = result.get("options") or {}

    def median(field):
        return (summary.get(field) or {}).get("median")

    return {"throttled": tel.get("throttled"), "throttle_reasons": ",".join(tel.get("throttle_reasons") or []) or None,
            "gpu_name": device.get("name"), "driver": device.get("driver"),
            "sm_clock_median_mhz": median("sm_clock_mhz"), "memory_clock_median_mhz": median("memory_clock_mhz"),
            "power_median_w": median("power_w"), "temperature_max_c": (summary.get("temperature_c") or {}).get("max"),
            "telemetry_samples": len((tel.get("samples") or {}).get("t_s") or []) or None,
            "precision": options.get("precision"), "layout": options.get("layout"),
            "cudnn_autotune": options.get("cudnn_autotune"), "ptx_jit": options.get("ptx_jit")}
