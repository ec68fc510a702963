"""Where a CI run's CPU-seconds went, by process, from the kernel's process accounting (acct(5), version 3 records:
`accton FILE` before the run, `accton off` after; benchmarks/fresh_ci.sh does both where `accton` is installed, from
Debian's acct package). Each process that ended is one record: its command name (16 bytes), PID, parent's PID, start
(seconds since the epoch), elapsed time and user + system CPU time (in 1/100 s, as comp_t); a container's processes
are recorded too (the kernel writes a record to every accounting file of its PID namespace's ancestors). A record's
parent is the record of its parent's PID whose lifetime holds its start (PIDs are reused), so each process has a chain
of ancestors' names, and its CPU-seconds go to the first KINDS rule that chain matches:

- containers: below a containerd-shim (Docker's containers) or a conmon (Podman's);
- image build steps: below a runc that dockerd started (BuildKit's RUN steps);
- container engines: dockerd and what it starts outside a build step (containerd, its own re-executions that
  unpack and pack layers), and the CLIs that talk to an engine (docker, podman);
- host pip install: a pip outside the engine (the README's install);
- pytest workers: the processes that pytest started (xdist's workers, that run the tests in process);
- test subprocesses: whatever the workers started (the dlrepro CLI, local-executor jobs, the site's drawing pool,
  the background image build's client and its mmdebstrap, Slurm's and Podman's commands, the browser);
- the rest.

Processes that had not ended when accounting was turned off have no record: turn it off after the engines stop.

Usage: python benchmarks/cpu_by_process.py ACCT [TOP]   (TOP: the commands listed per kind, default 6)"""

import struct
import sys
from collections import Counter, defaultdict

RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3: flag, version, tty, exitcode, uid, gid, pid, ppid,
# btime, etime, then the comp_t fields utime, stime, mem, io, rw, minflt, majflt, swaps, and comm
HZ = 100  # AHZ: acct's ticks per second
KINDS = ("containers", "image build steps", "container engines", "host pip install", "pytest workers")
OTHER, SUBPROCESSES = "the rest", "test subprocesses"
ENGINES = {"dockerd", "containerd", "docker", "podman", "runc"}


def comp_t(value):
    """A comp_t (13-bit mantissa, 3-bit base-8 exponent) as an integer."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def records(path):
    """[(name, pid, ppid, start s, end s, cpu s)] of the acct v3 file ``path``, in the order written (by exit).
    Raises ValueError when a record is not version 3."""
    data = open(path, "rb").read()
    out = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        f = RECORD.unpack_from(data, offset)
        if f[1] & 0x0F != 3:
            raise ValueError("%s: record %d is acct version %d, not 3" % (path, offset // RECORD.size, f[1] & 0x0F))
        start, cpu = float(f[8]), (comp_t(f[10]) + comp_t(f[11])) / HZ
        out.append((f[18].split(b"\0")[0].decode(errors="replace"), f[6], f[7], start, start + f[9] / HZ, cpu))
    return out


def chains(recs):
    """Each record's names from its oldest known ancestor down to itself."""
    by_pid = defaultdict(list)
    for i, r in enumerate(recs):
        by_pid[r[1]].append(i)

    def parent(i):
        start = recs[i][3]
        held = [j for j in by_pid.get(recs[i][2], ()) if j != i and recs[j][3] <= start + 1 and recs[j][4] >= start - 1]
        return max(held, key=lambda j: recs[j][3]) if held else None

    parents = [parent(i) for i in range(len(recs))]
    out = []
    for i in range(len(recs)):
        names, j = [], i
        while j is not None and len(names) < 64:
            names.append(recs[j][0])
            j = parents[j]
        out.append(names[::-1])
    return out


def kind(chain):
    """The KINDS entry (or OTHER, SUBPROCESSES) of a process with ancestors' names ``chain`` (oldest first)."""
    if "containerd-shim" in chain or "conmon" in chain:
        return KINDS[0]
    if "dockerd" in chain and "runc" in chain[chain.index("dockerd") :]:
        return KINDS[1]
    if "dockerd" in chain or chain[-1] in ENGINES:
        return KINDS[2]
    if "pytest" not in chain:
        return KINDS[3] if "pip" in chain else OTHER
    below = len(chain) - chain.index("pytest") - 1
    return KINDS[4] if below == 1 else SUBPROCESSES if below > 1 else OTHER


def by_kind(path):
    """{kind: Counter({command name: CPU-seconds})} of the accounting file ``path``."""
    recs = records(path)
    out = defaultdict(Counter)
    for r, chain in zip(recs, chains(recs)):
        out[kind(chain)][r[0]] += r[5]
    return out


def main(path, top=6):
    found = by_kind(path)
    total = sum(sum(c.values()) for c in found.values())
    print("%-22s %8.0f CPU-s" % ("all processes", total))
    for name in KINDS + (SUBPROCESSES, OTHER):
        commands = found.get(name, Counter())
        listed = ", ".join("%s %.0f" % kv for kv in commands.most_common(top) if kv[1] >= 0.5)
        print("%-22s %8.0f CPU-s  %s" % (name, sum(commands.values()), listed))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.rsplit("\n\n", 1)[-1])
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
