"""DLBench's own FCN-S TensorFlow script against the suite's job, side by side on one host (issue 55).

    python benchmarks/study_parity.py --dlbench PATH [--threads 1,2] [--rounds 1] [--warmup 8] [--steps 8]
        [--results DIR]

PATH is a local copy of hclhkbu/dlbench (a git checkout: the commit read is ``git -C PATH rev-parse HEAD``; an
unpacked archive: give ``--commit``); its code is run, never copied into the project. Each round, per thread count,
runs the units P S0 S1 S1 S0 P in that order: P is DLBench's synthetic/experiments/tensorflow/fc/ffn26752bm.py
(``-e 1 -b 64 -i W+T -d -1``, OMP_NUM_THREADS = the thread count, no pinning: as the study ran it) through
benchmarks/study_parity_peer.py in the suite's tensorflow-1.4.0-cpu image (``docker run``); S0 is the suite's job
``fcn-s`` at TensorFlow 1.4.0, batch 64, with the suite's step (gradients pruned, every pool at the thread count,
pinned); S1 the same job with DLBench's step (studies/dlbench.yaml ``steps``: gradients gate_op, thread_pools
intra_op). Both sides: W warm-up steps (--warmup, 8), then T timed (--steps, 8; the peer's steps W+1 to W+T).

Printed per thread count and way: the study's and the suite's median seconds per step over every timed step of
every round, wall (the clock around the step) and CPU (process CPU seconds, every thread: the suite's
cpu_usage.cpu_seconds over the measured window / T, the peer's time.process_time around each Session.run), their
ratio suite/study and a 95% percentile bootstrap interval of that ratio (2000 resamples of the steps of each side,
rounds pooled; the suite's CPU seconds are one value per job), with the host's load average at the start, after each
unit and at the end. A first suite job, not counted, builds (or finds) the image; the peer runs in the image it
ran in.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from dlrepro.run import runs
from dlrepro.run.options import RunOptions, Step

SCRIPT = "synthetic/experiments/tensorflow/fc/ffn26752bm.py"
PEER = Path(__file__).resolve().parent / "study_parity_peer.py"
BATCH = 64
WAYS = {"suite's step": Step(), "DLBench's step": Step(gradients="gate_op", thread_pools="intra_op")}


def commit_of(path, given):
    """The commit of the study's copy at ``path``: ``git rev-parse HEAD`` there, else ``given``; exits naming
    --commit when neither."""
    found = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    if found.returncode == 0:
        return found.stdout.strip()
    if given:
        return given + " (given: %s is no git checkout)" % path
    sys.exit("--dlbench %s: not a git checkout; give --commit (e.g. `git get-tar-commit-id < the archive`)" % path)


def suite_unit(threads, step, results, warmup, timed):
    """(wall s/step list, [CPU s/step], effective parallelism, image, CPUs) of one suite job."""
    options = RunOptions(frameworks=["tensorflow@1.4.0"], variants=["fcn-s"], batch_sizes=[BATCH], threads=[threads],
                         warmup=warmup, iterations=timed, repeats=1, isolation="process",
                         steps={"tensorflow@1.4.0": step})
    folder = runs.run("fcn", options, results_dir=results, reporter=runs.Silent())
    body = json.loads((folder / "bundle.json").read_text())
    job = next((folder / "jobs").iterdir())
    result = json.loads((job / "result.json").read_text())
    if result["status"] != "ok":
        sys.exit("suite job %s: %s %s" % (job, result["status"], result.get("reason") or result.get("error")))
    cpu = result["cpu_usage"]
    wall = [s for repeat in result["timing"]["repeats"] for s in repeat]
    return (wall, [cpu["cpu_seconds"] / timed], cpu["effective_parallelism"], body["images"][0]["tag"],
            result["environment"]["process"]["cpus"])


def peer_unit(threads, dlbench, image, warmup, timed):
    """(wall s/step list, CPU s/step list, edited lines) of one run of DLBench's script in ``image``, its steps
    warmup+1 to warmup+timed."""
    command = ["docker", "run", "--rm", "-e", "OMP_NUM_THREADS=%d" % threads,
               "-v", "%s:/study:ro" % Path(dlbench).resolve(), "-v", "%s:/bench/peer.py:ro" % PEER, image,
               "/opt/venv/bin/python", "/bench/peer.py", "/study/" + SCRIPT, "--",
               "-e", "1", "-b", str(BATCH), "-i", str(warmup + timed), "-d", "-1"]
    out = subprocess.run(command, capture_output=True, text=True)
    line = next((line for line in out.stdout.splitlines() if line.startswith("PEER ")), None)
    if out.returncode or line is None:
        sys.exit("peer failed (%d): %s" % (out.returncode, out.stderr[-2000:]))
    found = json.loads(line[5:])
    steps = slice(1 + warmup, 1 + warmup + timed)  # calls[0] initialises the variables
    if len(found["wall"]) != 1 + warmup + timed:
        sys.exit("peer: %d Session.run calls, expected %d" % (len(found["wall"]), 1 + warmup + timed))
    return found["wall"][steps], found["cpu"][steps], found["edited"]


def interval(suite, peer, draws=2000, seed=0):
    """Percentile bootstrap 95% interval of median(suite) / median(peer), the steps of each side resampled."""
    rng = np.random.default_rng(seed)
    suite, peer = np.asarray(suite), np.asarray(peer)
    ratios = [np.median(rng.choice(suite, suite.size)) / np.median(rng.choice(peer, peer.size)) for _ in range(draws)]
    return np.percentile(ratios, [2.5, 97.5])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dlbench", required=True, help="a local copy of hclhkbu/dlbench")
    parser.add_argument("--commit", default="", help="its commit, when PATH is not a git checkout")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=8, help="untimed steps before the timed ones (both sides)")
    parser.add_argument("--steps", type=int, default=8, help="timed steps per unit (both sides)")
    parser.add_argument("--results", default=None, help="folder for the suite's bundles (default: a temporary one)")
    args = parser.parse_args()
    if not (Path(args.dlbench) / SCRIPT).is_file():
        sys.exit("--dlbench %s: no %s there; give a copy of hclhkbu/dlbench" % (args.dlbench, SCRIPT))
    print("dlbench %s, commit %s; load average %s" % (args.dlbench, commit_of(args.dlbench, args.commit),
                                                      " ".join("%.2f" % v for v in os.getloadavg())))
    results = Path(args.results or tempfile.mkdtemp(prefix="dlrepro-study-parity-"))
    found = {}  # (threads, side) -> {"wall": [...], "cpu": [...]}
    image = suite_unit(1, WAYS["DLBench's step"], results, 1, 1)[3]  # builds or finds the image; not counted
    print("image %s (a first suite job, not counted)" % image, flush=True)
    for round_ in range(args.rounds):
        for threads in [int(t) for t in args.threads.split(",")]:
            order = ["P"] + list(WAYS) + list(reversed(list(WAYS))) + ["P"]
            for unit in order:
                side = found.setdefault((threads, unit if unit != "P" else "DLBench"), {"wall": [], "cpu": []})
                if unit == "P":
                    wall, cpu, edited = peer_unit(threads, args.dlbench, image, args.warmup, args.steps)
                    note = "edited: %s" % "; ".join(edited)
                else:
                    wall, cpu, parallelism, image, cpus = suite_unit(threads, WAYS[unit], results, args.warmup,
                                                                     args.steps)
                    note = "effective parallelism %.2f, CPUs %s" % (parallelism, cpus or "not confined")
                side["wall"] += wall
                side["cpu"] += cpu
                print("round %d t%d %-15s wall %s cpu %.3f  %s; load %.2f" % (
                    round_ + 1, threads, unit, " ".join("%.3f" % w for w in wall), float(np.median(cpu)), note,
                    os.getloadavg()[0]), flush=True)
    print("\n| threads | suite's way | measure | DLBench s/step | suite s/step | ratio suite/DLBench [95% CI] "
          "| samples (study + suite) |")
    print("|---|---|---|---|---|---|---|")
    for (threads, side), values in sorted(found.items()):
        if side == "DLBench":
            continue
        peer = found[(threads, "DLBench")]
        for measure in ("wall", "cpu"):
            low, high = interval(values[measure], peer[measure])
            ratio = np.median(values[measure]) / np.median(peer[measure])
            print("| %d | %s | %s | %.3f | %.3f | %.3f [%.3f, %.3f] | %d + %d |" % (
                threads, side, measure, np.median(peer[measure]), np.median(values[measure]), ratio, low, high,
                len(peer[measure]), len(values[measure])))
    print("load average at the end %s; bundles under %s" % (" ".join("%.2f" % v for v in os.getloadavg()), results))


if __name__ == "__main__":
    main()
