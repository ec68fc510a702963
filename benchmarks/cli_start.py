"""How long each task of the command line takes to start: the wall time and the CPU time (user + system, which
other load on the machine disturbs less) of `--list`, `specs` and every task's `--help`, the median of a few runs
each, in seconds; the first row is a bare `python -c pass` for scale.

    python benchmarks/cli_start.py                      # `python -m invoke` in this checkout
    python benchmarks/cli_start.py --command dlrepro    # the installed console command
    python benchmarks/cli_start.py --repeats 5

A task's `--help` parses the task module and prints its options: what every call of the task pays before it does
anything. Run it from the checkout (its tasks.py is what `invoke` loads).
"""

import argparse
import json
import resource
import shlex
import statistics
import subprocess
import sys
import time


def _cpu():
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def seconds(argv, repeats):
    """(median wall time, median CPU time) in seconds of ``repeats`` runs of ``argv``; raises CalledProcessError
    when it fails."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), _cpu()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def task_names(command):
    """The task names `COMMAND --list --list-format=json` gives, sub-collections' as COLLECTION.TASK."""
    listing = json.loads(
        subprocess.run(command + ["--list", "--list-format=json"], check=True, capture_output=True, text=True).stdout
    )

    def names(collection, prefix=""):
        for t in collection["tasks"]:
            yield prefix + t["name"]
        for sub in collection["collections"]:
            yield from names(sub, prefix + sub["name"] + ".")

    return list(names(listing))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--command",
        default="%s -m invoke" % shlex.quote(sys.executable),
        help="the command line to time (default: python -m invoke)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (default 3)")
    args = parser.parse_args()
    command = shlex.split(args.command)
    rows = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("--list", command + ["--list"]),
        ("specs", command + ["specs"]),
    ]
    rows += [("%s --help" % name, command + ["--help", name]) for name in task_names(command)]
    print("%s: seconds, median of %d runs" % (args.command, args.repeats))
    print("%-28s %6s %6s" % ("", "wall", "cpu"))
    for label, argv in rows:
        print("%-28s %6.2f %6.2f" % ((label,) + seconds(argv, args.repeats)))


if __name__ == "__main__":
    main()
