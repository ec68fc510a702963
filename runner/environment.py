"""The environment as seen from inside the container (or the local process).

Everything that could change a number and that the framework does not report
itself: Python, numpy, CPU model (name, vendor, family, model number, stepping),
the CPUs this process may use and their physical cores, thread-count variables.
The framework adapter adds its own versions (framework, CUDA, cuDNN, GPU) through
``Adapter.environment()``.
"""

import ctypes
import os
import platform
import re

from runner import settings, topology

CPUINFO = "/proc/cpuinfo"


def _first_cpu(path=CPUINFO):
    """{field: value} of the first processor in /proc/cpuinfo ({} where it cannot be read)."""
    fields = {}
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except (IOError, OSError):
        pass
    return fields


def cpu_model(path=CPUINFO):
    """The CPU's model name from /proc/cpuinfo, or platform.processor() elsewhere."""
    return _first_cpu(path).get("model name") or platform.processor() or None


def cpu_identity(path=CPUINFO):
    """{"vendor", "family", "model_number", "stepping"} of /proc/cpuinfo's vendor_id, cpu family, model and stepping
    (integers; None where absent): what dlrepro.inputs.peaks looks the FLOPs a cycle up by."""
    fields = _first_cpu(path)

    def number(key):
        value = fields.get(key, "")
        return int(value) if value.isdigit() else None

    return {
        "vendor": fields.get("vendor_id") or None,
        "family": number("cpu family"),
        "model_number": number("model"),
        "stepping": number("stepping"),
    }


def cpu_flags(path=CPUINFO):
    """Instruction-set flags that decide which kernels a CPU build can use."""
    wanted = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")
    have = set(_first_cpu(path).get("flags", "").split())
    return [flag for flag in wanted if flag in have]


def cpu_mhz():
    """The CPU's highest clock in MHz: cpufreq's maximum, else the model name's "@ 2.30GHz", else the first
    "cpu MHz" of /proc/cpuinfo (the current clock); None where none is readable."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read().strip()) / 1000.0
    except (OSError, ValueError):
        pass
    stated = re.search(r"@\s*([\d.]+)\s*GHz", cpu_model() or "")
    if stated:
        return float(stated.group(1)) * 1000.0
    try:
        return float(_first_cpu()["cpu MHz"])
    except (KeyError, ValueError):
        return None


def usable_cpus():
    """Number of CPUs this process may run on (affinity mask), or os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def usable_cores(root=topology.SYSFS):
    """Number of physical cores among the CPUs this process may run on (SMT siblings counted once:
    runner.topology.core_count), or None where the affinity mask or the topology cannot be read."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return None
    return topology.core_count(allowed, root)


def cuda_device(ordinal=0):
    """(name, compute capability "X.Y") of CUDA device ``ordinal`` as this process numbers them
    (CUDA_VISIBLE_DEVICES applied: a cuda job's GPU is 0), from the CUDA driver (libcuda, which
    the NVIDIA container runtime mounts) for frameworks that do not report it; None without one."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    device, major, minor, name = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.create_string_buffer(256)
    # CUresult 0 is CUDA_SUCCESS; attributes 75 and 76: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, _MINOR
    if (
        cuda.cuInit(0)
        or cuda.cuDeviceGet(ctypes.byref(device), ordinal)
        or cuda.cuDeviceGetName(name, len(name), device)
        or cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, device)
        or cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)
    ):
        return None
    return name.value.decode("utf-8", "replace"), "%d.%d" % (major.value, minor.value)


def in_container():
    """Whether this process runs in a container: Docker's /.dockerenv, Podman's /run/.containerenv, or the
    ``container`` variable that Podman (also where it writes no /run/.containerenv: a read-only root through its
    Docker API), systemd-nspawn and LXC set."""
    return os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv") or bool(os.environ.get("container"))


def gpu_devices(dev="/dev"):
    """The NVIDIA GPU device files this process can see (/dev/nvidia0, ...; /dev/dxg under WSL): [] where no
    GPU was passed in (a container started without one, a node whose engine cannot pass GPUs)."""
    try:
        names = os.listdir(dev)
    except OSError:
        return []
    return sorted(
        os.path.join(dev, n) for n in names if n == "dxg" or (n.startswith("nvidia") and n[len("nvidia") :].isdigit())
    )


def describe():
    """Framework-independent part of result.json's ``environment``."""
    import numpy as np  # imported here: the thread-count variables must be set first

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "os": platform.platform(),
        "cpu": dict(
            cpu_identity(),
            model=cpu_model(),
            usable_cpus=usable_cpus(),
            usable_cores=usable_cores(),
            flags=cpu_flags(),
            mhz=cpu_mhz(),
        ),
        "thread_variables": dict((k, os.environ.get(k)) for k in settings.THREAD_VARIABLES),
        "in_container": in_container(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "host_gpu": os.environ.get("DLREPRO_GPU"),
    }
