"""NVML through nvidia-ml-py's ``pynvml``: which GPU a process has, one reading of it, and what its clock event
("throttle") reasons and violation counters mean. Shared by the job's process (the window's edges, runner.telemetry)
and the sampling process (runner.sampling); Python 3.6 syntax, no import beyond the standard library at load.
"""

import importlib
import os

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
THROTTLING = frozenset(
    ["sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"]
)
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


def index_of(pynvml, rank=None):
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


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def attempt(fn, *args):
    try:
        return fn(*args)
    except Exception:  # a field this GPU or driver (or this nvidia-ml-py) does not report
        return None


def missing(*args):
    raise AttributeError("not in this nvidia-ml-py")


def _reasons(nvml, handle):
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return attempt(fn, handle)


def read(nvml, handle):
    """One sample of the GPU ``handle``: {field: value or None (a field this GPU or driver does not report),
    "reasons": the clock event mask}; the same reads in the job's process (the window's edges) and in the
    sampling process (``serve``)."""
    power = attempt(nvml.nvmlDeviceGetPowerUsage, handle)
    util = attempt(nvml.nvmlDeviceGetUtilizationRates, handle)
    return {
        "sm_clock_mhz": attempt(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
        "memory_clock_mhz": attempt(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM),
        "power_w": power / 1000.0 if power is not None else None,
        "temperature_c": attempt(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
        "gpu_util_pct": util.gpu if util is not None else None,
        "memory_util_pct": util.memory if util is not None else None,
        "reasons": _reasons(nvml, handle),
    }


def load(source):
    """The NVML API named by ``source``: "module" or "module:attribute" (pynvml, or a test's stand-in)."""
    module, _, attribute = source.partition(":")
    found = importlib.import_module(module)
    return getattr(found, attribute) if attribute else found
