"""The CPU-seconds each test costs: a pytest plugin and the summary of what it wrote.

fresh_ci.sh's -tests.tsv gives each test's wall seconds beside another worker, which on a CPU-bound CI says little
about what a test costs; what shortens such a CI is less CPU work. As a plugin, this records for each test (setup,
call and teardown) its wall seconds, the host's busy CPU-seconds (as ci_phases.py counts them from /proc/stat: the
test's processes, its containers, the engine and daemons it drives, and whatever else runs on the host) and the Docker
engine's container CPU-seconds (the cgroup v1 cpuacct "docker" group, 0 where there is none). Run the tests on one
worker, on an otherwise quiet host, so that the host's counter is the test's:

    python -m pytest -n 0 -p benchmarks.cpu_per_test   # appends to $CPU_PER_TEST_OUT (default cpu-per-test.tsv)

Then ``python benchmarks/cpu_per_test.py TSV [--top N]`` prints the totals, the N tests of most host CPU-seconds and
the seconds per test file. Columns of the TSV: wall s, host CPU s, container CPU s, test id."""

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ci_phases import busy  # noqa: E402 (the checkout first on the path)

OUT = os.environ.get("CPU_PER_TEST_OUT", "cpu-per-test.tsv")
DOCKER_CPUACCT = "/sys/fs/cgroup/cpuacct/docker/cpuacct.usage"  # nanoseconds


def host_cpu_seconds():
    """The host's busy CPU-seconds so far, as ci_phases.py counts them from /proc/stat (USER_HZ 100)."""
    with open("/proc/stat") as stat:
        return busy([int(v) for v in stat.readline().split()[1:]]) / 100.0


def container_cpu_seconds():
    """The Docker engine's containers' CPU-seconds so far (cgroup v1 cpuacct), 0.0 without that group."""
    try:
        with open(DOCKER_CPUACCT) as usage:
            return int(usage.read()) / 1e9
    except OSError:
        return 0.0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before = (time.monotonic(), host_cpu_seconds(), container_cpu_seconds())
    yield
    after = (time.monotonic(), host_cpu_seconds(), container_cpu_seconds())
    with open(OUT, "a") as out:
        out.write("%.1f\t%.1f\t%.1f\t%s\n" % (*(b - a for a, b in zip(before, after)), item.nodeid))


def read(path):
    """(wall s, host CPU s, container CPU s, test id) per line of a TSV this plugin wrote."""
    with open(path) as tsv:
        fields = (line.rstrip("\n").split("\t") for line in tsv)
        return [(float(wall), float(host), float(contained), test) for wall, host, contained, test in fields]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tsv", help="the file the plugin wrote")
    parser.add_argument("--top", type=int, default=25, help="how many of the costliest tests to list (default 25)")
    args = parser.parse_args(argv)
    rows = read(args.tsv)
    totals = [sum(r[i] for r in rows) for i in range(3)]
    print("%d tests: %.0f s wall, %.0f host CPU-s, of which %.0f in containers" % (len(rows), *totals))
    print("\n%7s %7s %7s  the %d tests of most host CPU-seconds" % ("wall", "host", "contain", args.top))
    for wall, host, contained, test in sorted(rows, key=lambda r: -r[1])[: args.top]:
        print("%7.1f %7.1f %7.1f  %s" % (wall, host, contained, test))
    files = defaultdict(lambda: [0.0, 0.0, 0.0])
    for row in rows:
        for i in range(3):
            files[row[3].split("::")[0]][i] += row[i]
    print("\n%7s %7s %7s  per file (host CPU-s %% of all)" % ("wall", "host", "contain"))
    for name, (wall, host, contained) in sorted(files.items(), key=lambda f: -f[1][1]):
        if host >= 0.005 * totals[1]:
            share = 100 * host / totals[1] if totals[1] else 0.0
            print("%7.1f %7.1f %7.1f  %s (%.1f%%)" % (wall, host, contained, name, share))
    return 0


if __name__ == "__main__":
    sys.exit(main())
