"""Description of the host a bundle was measured on (the runner records what it sees inside)."""

import os
import platform
import socket

from runner.environment import cpu_flags, cpu_model, usable_cpus


def gpus():
    """NVIDIA GPUs as NVML reports them: name, driver, memory; [] where there is no NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVIDIA driver or library on this host
        return []
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        found = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            found.append(
                {
                    "index": index,
                    "name": pynvml.nvmlDeviceGetName(handle),
                    "driver": driver,
                    "capability": "%d.%d" % (major, minor),
                    "memory_bytes": pynvml.nvmlDeviceGetMemoryInfo(handle).total,
                }
            )
        return found
    finally:
        pynvml.nvmlShutdown()


def devices():
    """The devices jobs can use here: ["cpu"], plus "cuda" when NVML sees an NVIDIA GPU."""
    return ["cpu", "cuda"] if gpus() else ["cpu"]


def facts():
    """What the image pre-flight (dlrepro.images.feasibility) checks of this host: CPU flags and model, GPUs."""
    return {"cpu_flags": cpu_flags(), "cpu_model": cpu_model(), "gpus": gpus()}


def memory_bytes():
    """This host's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def available_memory_bytes():
    """The memory this host can give without swapping (bytes; /proc/meminfo's MemAvailable), or None where it
    cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def alive(running):
    """Whether the process recorded as ``running`` ({host, pid}) is alive on this host (False for another host
    or no record)."""
    if not running or running.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(running["pid"]), 0)
    except (OSError, ValueError, TypeError):
        return False
    return True


def describe():
    """Host record for bundle.json: machine, OS, CPU, memory (bytes), GPUs."""
    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu": {
            "model": cpu_model(),
            "logical_cpus": os.cpu_count(),
            "usable_cpus": usable_cpus(),
            "flags": cpu_flags(),
        },
        "memory_bytes": memory_bytes(),
        "python": platform.python_version(),
        "gpus": gpus(),
    }
