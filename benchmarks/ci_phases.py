"""Where a fresh-clone CI run's time went, from the stamped log that benchmarks/fresh_ci.sh writes (each line prefixed
with the seconds since the start): the host's speed on a fixed piece of work (benchmarks/host_speed.py, where the log
has it: runs on different machines compare through it), install (the README's install, up to the lint), lint,
collection, the tests' wall seconds, the background image build's window (its start and end, written by fresh_ci.sh)
and each image's build seconds (from the build log beside LOG, where there is one), and the tests' own seconds summed
by folder of tests/ (engine, containers, the rest: pytest's durations, complete when the run had --durations=0, as
fresh_ci.sh sets), and, from the CPU counters beside LOG (-cpu.log, where there is one), how busy the host's CPUs
were during the tests: CPU- seconds used (user, system, irq) of those the host had, those used by niced processes
(nothing of CI's is niced: another user's work beside it) and those waiting on I/O, and of the busy ones those in the
Docker engine's image build steps and in its containers (its cgroups' counters, where the log has them; the engine's
own processes, layer unpacking and export, are in neither). A run whose CPUs were busy all through its tests cannot
be shortened by more workers, only by less work. Where the run has each test's start and end (-tests.tsv, which
fresh_ci.sh writes from pytest-reportlog's log), a timeline: each xdist worker's seconds in tests and idle, and per
window of WINDOW seconds the CPU-seconds of the host (build steps, containers, the rest) beside the tests each
worker spent that window in, the longest first.

Usage: python benchmarks/ci_phases.py LOG"""

import re
import sys
from collections import Counter
from pathlib import Path

STAMP = re.compile(r"^ *([0-9.]+) (.*)$")
DURATION = re.compile(r"^([0-9.]+)s (?:call|setup|teardown) +tests/([^/]+)/")
SUMMARY = re.compile(r"=+ .*(passed|failed).* in ([0-9.]+)s")
BUILT = re.compile(r"^(\S+): built in (?:(\d+)m)?(\d+)s")
BUSY = (0, 2, 5, 6)  # of /proc/stat's "cpu" ticks (user nice system idle iowait irq softirq steal ...): CI's own work


def busy(ticks):
    """The busy ticks of /proc/stat's "cpu" counters ``ticks`` (after the "cpu" label): user, system, irq and
    softirq; nice is another user's work, not CI's."""
    return sum(ticks[i] for i in BUSY)


def stamped(path):
    """[(seconds since the start, line)] of a stamped log."""
    return [(float(m.group(1)), m.group(2)) for m in map(STAMP.match, Path(path).read_text().splitlines()) if m]


def first(lines, pattern):
    """The stamp of the first line matching ``pattern``, or None."""
    return next((t for t, line in lines if re.search(pattern, line)), None)


def phases(lines):
    """{phase: seconds} and {folder: test seconds} of a stamped log's lines."""
    lint, tests, collected = first(lines, r"^\+ ruff check"), first(lines, r"^\+ pytest$"), first(lines, r"workers \[")
    ended = first(lines, SUMMARY.pattern)
    found = {}
    if lint is not None:
        found["install"] = lint
    if lint is not None and tests is not None:
        found["lint"] = tests - lint
    if tests is not None and collected is not None:
        found["collection"] = collected - tests
    if collected is not None and ended is not None:
        found["tests (wall)"] = ended - collected
    start, end = first(lines, r"image build started"), first(lines, r"image build ended")
    if start is not None and end is not None:
        found["image build (wall, from its start to its end)"] = end - start
    if ended is not None:
        found["whole run"] = ended
    folders = Counter()
    for _, line in lines:
        m = DURATION.match(line)
        if m:
            folder = m.group(2)
            folders[folder if folder in ("engine", "containers") else "the rest"] += float(m.group(1))
    return found, folders


def built(path):
    """[(image, seconds)] of a build log's "built in" lines."""
    if not Path(path).is_file():
        return []
    return [
        (m.group(1), int(m.group(2) or 0) * 60 + int(m.group(3)))
        for m in map(BUILT.match, Path(path).read_text().splitlines())
        if m
    ]


def cpu_use(path, start, end):
    """(busy, niced, iowait, available) CPU-seconds of the host between ``start`` and ``end`` (seconds on the log's
    clock), from the /proc/stat "cpu" lines that fresh_ci.sh samples (USER_HZ ticks, 100 a second); None without
    samples."""
    if not Path(path).is_file() or start is None or end is None:
        return None
    samples = [(t, [int(v) for v in line.split()[1:]]) for t, line in stamped(path) if line.startswith("cpu ")]
    inside = [s for s in samples if start <= s[0] <= end]
    if len(inside) < 2:
        return None
    (_, a), (_, b) = inside[0], inside[-1]
    ticks = [y - x for x, y in zip(a, b)]  # user nice system idle iowait irq softirq steal ...
    return busy(ticks) / 100.0, ticks[1] / 100.0, ticks[4] / 100.0, sum(ticks[:8]) / 100.0


def cgroup_use(path, start, end):
    """{cgroup: CPU-seconds} between ``start`` and ``end`` of the "cgroup NAME NANOSECONDS" lines that fresh_ci.sh
    samples: "docker" (every container and build step of the engine) and "buildkit" (the build steps); {} without."""
    if not Path(path).is_file() or start is None or end is None:
        return {}
    used = {}
    for name in ("docker", "buildkit"):
        inside = [
            int(line.split()[2])
            for t, line in stamped(path)
            if line.startswith("cgroup %s " % name) and start <= t <= end
        ]
        if len(inside) >= 2:
            used[name] = (inside[-1] - inside[0]) / 1e9
    return used


def host_speed(lines):
    """The CPU-seconds of benchmarks/host_speed.py's reference work in a stamped log's lines, or None."""
    return next((float(line.split()[2]) for _, line in lines if line.startswith("host speed: ")), None)


WINDOW = 300


def test_phases(path):
    """[(worker, start, stop, nodeid)] of the -tests.tsv that fresh_ci.sh writes (seconds on the log's clock); []
    without one."""
    if not Path(path).is_file():
        return []
    rows = [line.split("\t") for line in Path(path).read_text().splitlines() if line]
    return [(w, float(a), float(b), node.split("@")[0]) for w, _, a, b, _, node in rows]


def overlap(a, b, start, end):
    """Seconds of [a, b] inside [start, end]."""
    return max(0.0, min(b, end) - max(a, start))


def timeline(phases, cpu_log):
    """Print each worker's test and idle seconds, then per window the host's CPU-seconds by kind and each worker's
    tests in it (the longest first, their seconds in the window)."""
    workers = sorted({w for w, *_ in phases})
    begin, end = min(a for _, a, _, _ in phases), max(b for _, _, b, _ in phases)
    for worker in workers:
        mine = [(a, b) for w, a, b, _ in phases if w == worker]
        busy = sum(b - a for a, b in mine)
        print(
            "%-40s %7.0f s in tests, %.0f s idle, done at %.0f s"
            % ("worker " + worker, busy, max(b for _, b in mine) - begin - busy, max(b for _, b in mine))
        )
    for start in range(int(begin // WINDOW) * WINDOW, int(end) + 1, WINDOW):
        stop = start + WINDOW
        use, cgroups = cpu_use(cpu_log, start, stop), cgroup_use(cpu_log, start, stop)
        build, containers = cgroups.get("buildkit", 0), cgroups.get("docker", 0) - cgroups.get("buildkit", 0)
        cpu = (
            "CPU-s: build %.0f, containers %.0f, rest %.0f" % (build, containers, use[0] - build - containers)
            if use
            else ""
        )
        print("%5d-%5d s  %s" % (start, stop, cpu))
        for worker in workers:
            seconds = Counter()
            for w, a, b, node in phases:
                if w == worker:
                    seconds[node] += overlap(a, b, start, stop)
            named = ["%s %.0f" % (node.split("/")[-1], t) for node, t in seconds.most_common(3) if t >= 1]
            print("  %-5s %3.0f s: %s" % (worker, sum(seconds.values()), "; ".join(named)))


def main(log):
    stem = re.sub(r"\.log$", "", log)  # the files fresh_ci.sh writes beside LOG
    found, folders = phases(stamped(log))
    speed = host_speed(stamped(log))
    if speed is not None:
        print("%-40s %7.2f CPU-s (less is faster)" % ("host speed (benchmarks/host_speed.py)", speed))
    for name, seconds in found.items():
        print("%-40s %7.0f s" % (name, seconds))
    for folder, seconds in sorted(folders.items()):
        print("%-40s %7.0f test-seconds" % ("tests/%s" % folder if folder != "the rest" else "other tests", seconds))
    lines = stamped(log)
    window = first(lines, r"workers \["), first(lines, SUMMARY.pattern)
    use = cpu_use(stem + "-cpu.log", *window)
    if use:
        busy, niced, iowait, available = use
        print(
            "%-40s %7.0f of %.0f CPU-seconds (%.0f%%), %.0f niced (not CI's), %.0f waiting on I/O"
            % ("CPUs busy during the tests", busy, available, 100 * busy / available, niced, iowait)
        )
    cgroups = cgroup_use(stem + "-cpu.log", *window)
    if "buildkit" in cgroups:
        print("%-40s %7.0f CPU-seconds" % ("  of them in image build steps", cgroups["buildkit"]))
    if "docker" in cgroups:
        print("%-40s %7.0f CPU-seconds" % ("  in containers", cgroups["docker"] - cgroups.get("buildkit", 0)))
    images = built(stem + "-build.log")
    for image, seconds in images:
        print("%-40s %7d s" % ("built " + image, seconds))
    if images:
        print("%-40s %7d s" % ("images built, summed", sum(s for _, s in images)))
    tests = test_phases(stem + "-tests.tsv")
    if tests:
        timeline(tests, stem + "-cpu.log")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
