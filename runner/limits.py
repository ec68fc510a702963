"""The memory limit of this process's cgroup and its count of out-of-memory kills (cgroup v2 and v1).

A container started with a memory limit (``docker run --memory``) has it in its own cgroup: v2
``memory.max`` and ``memory.events`` ("oom_kill N"), v1 ``memory/memory.limit_in_bytes`` and
``memory/memory.oom_control`` ("oom_kill N", kernels >= 4.13). When the kernel kills a job process
for going over it, the count goes up: that is how the supervisor tells "out of memory (limit X)"
from any other SIGKILL. Outside a limited cgroup both read as None.
"""
import os

ROOT = "/sys/fs/cgroup"
NO_LIMIT = 1 << 60  # v1 reports "no limit" as a huge number (page-rounded LONG_MAX)


def _read(*parts):
    try:
        with open(os.path.join(ROOT, *parts)) as f:
            return f.read()
    except (IOError, OSError):
        return None


def _field(text, name):
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return int(value)
    return None


def memory_limit():
    """The memory limit of this cgroup in bytes, or None when there is none."""
    text = _read("memory.max")
    if text is None:
        text = _read("memory", "memory.limit_in_bytes")
    if text is None or text.strip() == "max":
        return None
    value = int(text)
    return None if value >= NO_LIMIT else value


def oom_kills():
    """How many processes of this cgroup the kernel has killed for its memory limit, or None when unknown."""
    found = _field(_read("memory.events"), "oom_kill")
    return found if found is not None else _field(_read("memory", "memory.oom_control"), "oom_kill")


def describe_bytes(n):
    """'1.5 GiB' for n bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s" % (n / float(size), unit)
    return "%d bytes" % n
