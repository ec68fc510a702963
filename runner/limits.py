"""The memory limit of this process's cgroup, its count of out-of-memory kills and of times its usage reached
the limit (cgroup v2 and v1).

A container started with a memory limit (``docker run --memory``) has it in its own cgroup: v2
``memory.max`` and ``memory.events`` ("oom_kill N", "oom N"), v1 ``memory/memory.limit_in_bytes``,
``memory/memory.oom_control`` ("oom_kill N", kernels >= 4.13) and ``memory/memory.max_usage_in_bytes``. When the
kernel kills one of its processes for want of memory, the kill count goes up: that is how the supervisor
tells "out of memory" from any other SIGKILL. The kill count also rises when the whole host ran out (the
kernel's global OOM killer picks a process of any cgroup); ``limit_reached`` tells the two apart: it rises
only when the cgroup's own usage reached its limit. Outside a limited cgroup they read as None.
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


def limit_reached():
    """How many times this cgroup's memory usage reached its limit, or None when unknown: v2 memory.events "oom"
    (an allocation was about to fail at the limit); v1 has no such count that kernels keep (memory.failcnt stayed
    0 through a limit kill on this suite's build host), so 0 while the peak usage (memory.max_usage_in_bytes, and
    the memory+swap one) is more than 1 MiB under its limit, None once it has reached it (then, not when)."""
    found = _field(_read("memory.events"), "oom")
    if found is not None:
        return found
    pairs = [
        (_read("memory", "memory%s.max_usage_in_bytes" % kind), _read("memory", "memory%s.limit_in_bytes" % kind))
        for kind in ("", ".memsw")
    ]
    pairs = [
        (int(peak), int(limit))
        for peak, limit in pairs
        if peak is not None
        and limit is not None
        and peak.strip().isdigit()
        and limit.strip().isdigit()
        and int(limit) < NO_LIMIT
    ]
    if not pairs:
        return None
    return 0 if all(peak + (1 << 20) < limit for peak, limit in pairs) else None


def counters():
    """(out-of-memory kills, times the limit was reached) of this cgroup, each None when unknown."""
    return oom_kills(), limit_reached()


def describe_bytes(n):
    """'1.5 GiB' for n bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s" % (n / float(size), unit)
    return "%d bytes" % n
