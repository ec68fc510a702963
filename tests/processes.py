"""The processes a test run started, found by the run's id in their environment: tests/conftest.py sets
``DLREPRO_TEST_RUN`` before any test runs, so every process a test starts (a daemon, a sampling process, a build, a
worker) inherits it unless it was given an environment of its own, wherever it was re-parented to. At the end of the
run none may be left but pytest's own processes."""

import os
import signal
import time


def marked(variable, value, exclude=()):
    """{pid: command line} of the processes on this machine whose environment holds ``variable=value``, less the
    PIDs in ``exclude`` (and this process); zombies (ended, not yet reaped) are not counted."""
    needle = ("%s=%s" % (variable, value)).encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in exclude or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as env:
                if needle not in env.read().split(b"\0"):
                    continue
            with open("/proc/%s/stat" % entry) as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open("/proc/%s/cmdline" % entry, "rb") as cmdline:
                found[int(entry)] = cmdline.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (FileNotFoundError, ProcessLookupError, PermissionError):  # ended meanwhile, or not ours to read
            continue
    return found


def left_behind(variable, value, exclude=(), grace_s=10.0):
    """``marked(...)`` once no more of them end within ``grace_s`` seconds (a process told to stop may take a moment);
    each one still there is then ended (SIGKILL, by its PID) so that the machine is left as found. Returns what was
    left: {pid: command line}."""
    deadline = time.time() + grace_s
    left = marked(variable, value, exclude)
    while left and time.time() < deadline:
        time.sleep(0.2)
        left = marked(variable, value, exclude)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left
