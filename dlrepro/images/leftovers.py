"""Build steps that a lost Docker engine left running, and the wait for them before the next build.

Docker's BuildKit runs each RUN step with runc, a child of dockerd, in the cgroup ``/docker/buildkit/<step id>``.
When dockerd dies (SIGKILL, a crash) the step's processes live on without it: an ``apt-get`` goes on holding the
lock of the apt cache mounts that every image's recipe shares, and a build started once the engine is back fails
with "Could not get lock /var/cache/apt/archives/lock. It is held by process 0" (the holder is in another PID
namespace). ``steps`` finds those processes in /proc (a process in a BuildKit step's cgroup with no dockerd among
its ancestors: a live engine's steps always have theirs); ``wait_for_steps`` waits until they have ended, saying
which and how to end them at once. Nothing is killed: the lost step may still be writing into the shared cache.
Only an engine reached through a local socket can have left steps on this host; /proc entries that cannot be
read (another user's, without root) are passed over.
"""

import re
import time
from pathlib import Path

STEP_CGROUP = re.compile(r"/buildkit/[a-z0-9]+$")
ENGINE = "dockerd"
COMMAND_SHOWN = 80  # characters of a step's command line in the waiting line


def _table(proc):
    """{pid: (parent pid, command name, cgroup path, command line)} of the processes under ``proc`` that can be
    read."""
    table = {}
    for entry in Path(proc).iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cgroups = (entry / "cgroup").read_text().splitlines()
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # ended meanwhile, or not ours to read
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        path = next(
            (c.split(":", 2)[2] for c in cgroups if c.startswith("0::")),
            cgroups[-1].split(":", 2)[-1] if cgroups else "",
        )
        table[int(entry.name)] = (int(rest[1]), name, path, line)
    return table


def steps(proc="/proc"):
    """[(pid, command line, pids)] of the build steps a lost engine left running on this host (see the module's
    text), one per step, by PID: its first process (a process in a BuildKit step's cgroup that no dockerd is an
    ancestor of, whose parent is not in the step) and every process in the step (``pids``, sorted: what to end)."""
    table = _table(proc)

    def has_engine(pid):
        seen = set()
        while pid in table and pid not in seen:
            seen.add(pid)
            if table[pid][1] == ENGINE:
                return True
            pid = table[pid][0]
        return False

    left = {}
    for pid, (_, _, path, _) in sorted(table.items()):
        if STEP_CGROUP.search(path) and not has_engine(pid):
            left.setdefault(path, []).append(pid)
    found = []
    for pids in left.values():
        first = min((p for p in pids if table[p][0] not in pids), default=pids[0])
        found.append((first, table[first][3], pids))
    return sorted(found)


def wait_for_steps(log, address, proc="/proc", poll_s=1.0, say_every_s=60.0):
    """Wait until the build steps a lost engine left on this host (``steps``) have ended, when the engine is
    reached at ``address`` through a local socket (``unix://``); ``log`` gets one line when there are some (their
    first PIDs and commands, and how to end every process of them now), one every ``say_every_s`` while they
    last, and one when they have ended. Returns the seconds waited (0.0: none were there)."""
    if not address.startswith("unix://"):
        return 0.0
    found, began, said = steps(proc), time.monotonic(), time.monotonic()
    if not found:
        return 0.0
    log(
        "waiting for %d build step(s) that a lost Docker engine left running on this host, which hold the locks "
        "of the shared apt cache: %s; they end by themselves, or end them now: kill -9 %s"
        % (
            len(found),
            "; ".join("PID %d: %s" % (pid, line[:COMMAND_SHOWN]) for pid, line, _ in found),
            " ".join(str(p) for _, _, pids in found for p in pids),
        )
    )
    while found:
        time.sleep(poll_s)
        found = steps(proc)
        if found and time.monotonic() - said >= say_every_s:
            said = time.monotonic()
            log(
                "still waiting for the lost engine's build step(s) %s (%.0f s)"
                % (", ".join(str(pid) for pid, _, _ in found), said - began)
            )
    waited = time.monotonic() - began
    log("the lost engine's build steps have ended (waited %.0f s)" % waited)
    return waited
