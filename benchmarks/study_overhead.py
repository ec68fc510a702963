"""What jobs cost beyond their timed work: per job, its wall time minus its warm-up and its measured window, and
for the whole set, the bundles' wall against their timed work.

    python benchmarks/study_overhead.py BUNDLE [BUNDLE ...]
    python benchmarks/study_overhead.py --run [--framework torch] [--device cuda] [--executor local]
                                        [--isolation worker|process] [--quick] [--specs a,b] [--results DIR]

With --run, every spec is run with the one framework (one bundle per spec; jobs whose data this host lacks are
skipped, with the reason, and left out of the figures). Per job: wall = from its process's spawn (process
isolation) or its start in the worker to its end (s); timed = warm-up + measured window (s; runner.window);
overhead = wall - timed. Totals: the jobs' wall, their timed work, the median overhead, and the bundles' own
wall (each attempt's start to end). Goals (issue 15): with workers, per-job overhead median <= 1 s on one H200;
every spec with torch on it in <= 120 s of job wall.
"""
import argparse
import datetime
import json
import statistics
import tempfile
from pathlib import Path

from dlrepro import spec as specmod
from dlrepro.errors import DlreproError
from dlrepro.run import jobs as jobsmod, runs
from dlrepro.run.options import RunOptions


def _seconds(stamp):
    return datetime.datetime.fromisoformat(stamp.rstrip("Z")).timestamp()


def job_costs(result):
    """(wall, warm-up, measured) seconds of one ok job's result.json body."""
    wall = _seconds(result["finished"]) - _seconds(result["started"]) + max(0.0, -(result["phases"].get("spawned") or 0))
    warmup = sum((result.get("timing") or {}).get("warmup_seconds") or [])
    measured = (result.get("cpu_usage") or {}).get("wall_seconds") or 0.0
    return wall, warmup, measured


def bundle_wall(body):
    """Seconds from each attempt's start to its end, summed."""
    return sum(_seconds(a["finished"]) - _seconds(a["started"]) for a in body["attempts"] if a.get("finished"))


def report(folders):
    rows, walls = [], 0.0
    for folder in map(Path, folders):
        body = json.loads((folder / "bundle.json").read_text())
        walls += bundle_wall(body)
        for row in body["jobs"]:
            result = json.loads((folder / "jobs" / row["job_id"] / "result.json").read_text())
            if result["status"] == "ok":
                rows.append((row["job_id"], result.get("isolation"), *job_costs(result)))
    print("%-48s %9s %8s %8s %9s %9s" % ("job", "isolation", "wall s", "warm-up", "measured", "overhead"))
    for job_id, isolation, wall, warmup, measured in rows:
        print("%-48s %9s %8.2f %8.2f %9.2f %9.2f" % (job_id, isolation, wall, warmup, measured, wall - warmup - measured))
    if not rows:
        print("no ok job")
        return
    overheads = [w - a - m for _, _, w, a, m in rows]
    print("%d ok jobs: %.1f s of job wall for %.1f s of timed work (warm-up + measured); per-job overhead median "
          "%.2f s, max %.2f s; the bundles' wall %.1f s" % (
              len(rows), sum(r[2] for r in rows), sum(r[3] + r[4] for r in rows), statistics.median(overheads),
              max(overheads), walls))


def run_every_spec(args):
    results = args.results or tempfile.mkdtemp(prefix="dlrepro-overhead-")
    folders = []
    for name in args.specs.split(",") if args.specs else specmod.available():
        options = RunOptions(frameworks=[args.framework], device=args.device, executor=args.executor,
                             isolation=args.isolation, quick=args.quick)
        try:
            jobsmod.expand(specmod.load(name), options)
        except DlreproError as exc:  # the framework expresses none of its variants
            print("%s: not run (%s)" % (name, str(exc).splitlines()[0]))
            continue
        folders.append(runs.run(name, options, results_dir=results, reporter=runs.Silent()))
    print("bundles: %s" % ", ".join(str(f) for f in folders))
    return folders


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="*")
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--executor", default="docker")
    parser.add_argument("--isolation", default="worker")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--specs", default="")
    parser.add_argument("--results", default=None)
    args = parser.parse_args()
    report(args.bundles + (run_every_spec(args) if args.run else []))


if __name__ == "__main__":
    main()
