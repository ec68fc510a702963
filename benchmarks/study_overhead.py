"""What jobs cost beyond their timed work: per job, its wall time minus its warm-up and its measured window; for
the whole set, the bundles' wall against their timed work, the pass's wall, and the framework starts.

    python benchmarks/study_overhead.py BUNDLE [BUNDLE ...]
    python benchmarks/study_overhead.py --run [--framework torch] [--device cuda] [--executor local]
                                        [--isolation worker|process] [--quick] [--specs a,b] [--results DIR]
                                        [--separate]
    python benchmarks/study_overhead.py --study dlbench [--framework torch] [--device cpu] [--executor docker]
                                        [--quick] [--results DIR] [--separate]

With --run, every spec is run with the one framework (one bundle per spec; jobs whose data this host lacks are
skipped, with the reason, and left out of the figures), in one warm pass: the runs share one worker pool, as the
runs of a study do (dlrepro.run.pool); --separate gives each run workers of its own (as before issue 25). With
--study, the study itself runs (dlrepro.run.study) and its bundles are measured; with --study and --separate, its
planned runs run one after another, each with workers of its own, as a study ran before issue 25.

Per job: wall = from its process's spawn (process isolation) or its start in the worker to its end (s); timed =
warm-up + measured window (s; runner.window); overhead = wall - timed. Totals: the jobs' wall, their timed work,
the median overhead, the bundles' own wall (each attempt's start to end, summed) and the pass's wall (the first
attempt's start to the last one's end). Framework starts: per (image, device, settings) the workers that ran its
jobs (result.json's ``worker``; a job in a process of its own is one start), and how many of them started for
a job without warm-up (runner.supervise.needs_fresh), after a failed job, or for memory. Goals (issue 25):
every spec with torch on one H200, the nine bundles' wall <= 90 s, per-job overhead median <= 0.5 s, one
framework start per (image, device, settings) for the jobs with warm-up.
"""

import argparse
import collections
import datetime
import json
import statistics
import tempfile
from pathlib import Path

from dlrepro.errors import DlreproError
from dlrepro.inputs import spec as specmod
from dlrepro.inputs import studies
from dlrepro.run import jobs as jobsmod
from dlrepro.run import runs
from dlrepro.run import study as studymod
from dlrepro.run.options import RunOptions
from dlrepro.run.pool import WorkerPool
from dlrepro.store import records
from runner import settings, supervise


def _seconds(stamp):
    return datetime.datetime.fromisoformat(stamp.rstrip("Z")).timestamp()


def job_costs(result):
    """(wall, warm-up, measured) seconds of one ok job's result.json body."""
    wall = (
        _seconds(result["finished"]) - _seconds(result["started"]) + max(0.0, -(result["phases"].get("spawned") or 0))
    )
    warmup = sum((result.get("timing") or {}).get("warmup_seconds") or [])
    measured = (result.get("cpu_usage") or {}).get("wall_seconds") or 0.0
    return wall, warmup, measured


def bundle_wall(body):
    """Seconds from each attempt's start to its end, summed."""
    return sum(_seconds(a["finished"]) - _seconds(a["started"]) for a in body["attempts"] if a.get("finished"))


def pass_wall(bodies):
    """Seconds from the first attempt's start to the last attempt's end over the bundles ``bodies``."""
    attempts = [a for body in bodies for a in body["attempts"] if a.get("finished")]
    return (
        max(_seconds(a["finished"]) for a in attempts) - min(_seconds(a["started"]) for a in attempts)
        if attempts
        else 0.0
    )


def starts(jobs):
    """{(image, device, settings): (starts, for a job without warm-up, after a failed job, for a run with workers
    of its own, for memory)} of ``jobs`` [(bundle body, job.json, result.json)] in the order they ran: the workers
    that ran them (a job in a process of its own: one start each); "for a run with workers of its own": the first
    start of a run that had no pool (a run alone, or a study before issue 25); "for memory": any other later start
    (a worker retired for what it kept, or its idle container ended to give the host memory back:
    runner.supervise, dlrepro.run.pool); None for a key with a worker job whose result names no worker (made
    before issue 25)."""
    found = collections.OrderedDict()
    for body, job, result in sorted(jobs, key=lambda j: j[2].get("started") or ""):
        tags = [
            i.get("tag")
            for i in body.get("images") or []
            if i["framework"] == job["framework"] and job.get("framework_version") in (None, i.get("framework_version"))
        ]
        image = tags[0] if tags else "%s (local)" % job["framework"]
        key = (image, job["device"], tuple(sorted(settings.environment(job).items())), job.get("threads"))
        seen = found.setdefault(
            key,
            {
                "workers": set(),
                "fresh": 0,
                "after_failure": 0,
                "own_run": 0,
                "memory": 0,
                "failed": False,
                "unknown": False,
                "bundle": None,
            },
        )
        worker = result.get("worker")
        seen["unknown"] |= result["isolation"] == "worker" and "worker" not in result
        own_run = body["id"] != seen["bundle"] and not any(a.get("pool") for a in body["attempts"])
        if worker is None or worker["id"] not in seen["workers"]:
            seen["workers"].add(worker["id"] if worker else id(result))
            later, fresh = len(seen["workers"]) > 1, supervise.needs_fresh(job)
            seen["fresh"] += later and fresh
            seen["after_failure"] += seen["failed"]
            seen["own_run"] += later and own_run and not fresh and not seen["failed"]
            seen["memory"] += later and worker is not None and not (own_run or fresh or seen["failed"])
        seen["failed"], seen["bundle"] = result["status"] == "failed", body["id"]
    return {
        key: None if s["unknown"] else (len(s["workers"]), s["fresh"], s["after_failure"], s["own_run"], s["memory"])
        for key, s in found.items()
    }


def report(folders):
    rows, bodies, ran = [], [], []
    for folder in map(Path, folders):
        body = json.loads((folder / "bundle.json").read_text())
        bodies.append(body)
        for row in body["jobs"]:
            result = json.loads((folder / "jobs" / row["job_id"] / "result.json").read_text())
            job_path = folder / "jobs" / row["job_id"] / "job.json"
            if result.get("isolation") and job_path.is_file():  # it reached a runner
                ran.append((body, json.loads(job_path.read_text()), result))
            if result["status"] == "ok":
                rows.append((row["job_id"], result.get("isolation"), *job_costs(result)))
    print("%-48s %9s %8s %8s %9s %9s" % ("job", "isolation", "wall s", "warm-up", "measured", "overhead"))
    for job_id, isolation, wall, warmup, measured in rows:
        print(
            "%-48s %9s %8.2f %8.2f %9.2f %9.2f" % (job_id, isolation, wall, warmup, measured, wall - warmup - measured)
        )
    if not rows:
        print("no ok job")
        return
    overheads = [w - a - m for _, _, w, a, m in rows]
    print(
        "%d ok jobs: %.1f s of job wall for %.1f s of timed work (warm-up + measured); per-job overhead median "
        "%.2f s, max %.2f s; the bundles' wall %.1f s; the pass's wall %.1f s (%d bundles)"
        % (
            len(rows),
            sum(r[2] for r in rows),
            sum(r[3] + r[4] for r in rows),
            statistics.median(overheads),
            max(overheads),
            sum(map(bundle_wall, bodies)),
            pass_wall(bodies),
            len(bodies),
        )
    )
    print("framework starts per (image, device, settings):")
    for (image, device, variables, threads), counted in starts(ran).items():
        shown = (
            "not recorded (results from before issue 25)"
            if counted is None
            else (
                "%d start%s (%d for a job without warm-up, %d after a failed "
                "job, %d for a run with workers of its own, "
                "%d for memory)" % ((counted[0], "s"[counted[0] == 1 :]) + counted[1:])
            )
        )
        print(
            "  %s %s%s%s: %s"
            % (
                image,
                device,
                " threads %s" % threads if threads else "",
                " " + " ".join("%s=%s" % v for v in variables) if variables else "",
                shown,
            )
        )


def run_every_spec(args):
    results = args.results or tempfile.mkdtemp(prefix="dlrepro-overhead-")
    pool = None if args.separate else WorkerPool(Path(results) / ".overhead.pool", "overhead")
    folders = []
    try:
        for name in args.specs.split(",") if args.specs else specmod.available():
            options = RunOptions(
                frameworks=[args.framework or "torch"],
                device=args.device,
                executor=args.executor,
                isolation=args.isolation,
                quick=args.quick,
            )
            try:
                jobsmod.expand(specmod.load(name), options)
            except DlreproError as exc:  # the framework expresses none of its variants
                print("%s: not run (%s)" % (name, str(exc).splitlines()[0]))
                continue
            folders.append(runs.run(name, options, results_dir=results, reporter=runs.Silent(), pool=pool))
    finally:
        if pool is not None:
            pool.close()
    print("bundles: %s" % ", ".join(str(f) for f in folders))
    return folders


def run_study(args):
    results = Path(args.results or tempfile.mkdtemp(prefix="dlrepro-overhead-"))
    device, frameworks = args.device if args.device_given else None, [args.framework] if args.framework else None
    if args.separate:  # the study's runs one after another, each with workers of its own (a study before issue 25)
        planned = studymod.plan(studies.load(args.study), device, frameworks, args.executor, args.quick)
        folders = [
            runs.run(item.run.spec, item.options, results_dir=results, reporter=runs.Silent())
            for item in planned
            if item.options is not None
        ]
        print("bundles: %s" % ", ".join(str(f) for f in folders))
        return folders
    record = studymod.run(
        args.study,
        device=device,
        frameworks=frameworks,
        executor=args.executor,
        quick=args.quick,
        results_dir=results,
        reporter=runs.Silent(),
    )
    folders = list(records.bundles(record, results)[0].values())
    print("study record: %s; bundles: %s" % (record.path, ", ".join(str(f) for f in folders)))
    return folders


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="*")
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--study", default="", help="a study to run and measure (e.g. dlbench)")
    parser.add_argument(
        "--framework",
        default=None,
        help="--run: the framework (default torch); --study: only this one (default: every framework of the study)",
    )
    parser.add_argument("--device", default=None)
    parser.add_argument("--executor", default="docker")
    parser.add_argument("--isolation", default="worker")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--specs", default="")
    parser.add_argument("--results", default=None)
    parser.add_argument("--separate", action="store_true", help="workers of its own for each run (--run, --study)")
    args = parser.parse_args()
    args.device_given, args.device = args.device is not None, args.device or "cpu"
    report(args.bundles + (run_every_spec(args) if args.run else []) + (run_study(args) if args.study else []))


if __name__ == "__main__":
    main()
