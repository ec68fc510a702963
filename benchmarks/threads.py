"""Whether a thread count is real in every framework: AlexNet-S (batch 16, CPU) at --threads 1 and 2 in all
seven frameworks' containers, one bundle.

    python benchmarks/threads.py [--threads 1,2] [--frameworks ...] [--iterations 4] [--repeats 6] [--results DIR]

Prints one row per job: the threads asked for, what the framework reported using, the CPUs the job was confined
to, the effective parallelism over the measured window (process CPU seconds / wall seconds; runner.window) and
the median seconds per mini-batch. The goal (issue 13): effective parallelism <= 1.2 at 1 thread everywhere.
Measure on a quiet machine: other load on the job's CPUs lowers the parallelism it can reach.
"""

import argparse
import tempfile

import pandas as pd

from dlrepro.run import runs
from dlrepro.run.options import RunOptions
from dlrepro.store import tables

FRAMEWORKS = "torch,tensorflow,mxnet,jax,cntk,caffe2,caffe"


def _shown(value, fmt="%s"):
    return "-" if pd.isna(value) else fmt % value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--frameworks", default=FRAMEWORKS)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--results", default=None)
    args = parser.parse_args()
    options = RunOptions(
        frameworks=args.frameworks.split(","),
        variants=["alexnet-s"],
        batch_sizes=[16],
        threads=[int(t) for t in args.threads.split(",")],
        warmup=2,
        iterations=args.iterations,
        repeats=args.repeats,
    )
    path = runs.run(
        "alexnet",
        options,
        results_dir=args.results or tempfile.mkdtemp(prefix="dlrepro-threads-"),
        reporter=runs.Silent(),
    )
    summary = tables.summary(path).sort_values(["framework", "threads"])
    print(
        "%-11s %8s %10s %6s %12s %14s %7s"
        % ("framework", "threads", "framework", "CPUs", "effective", "s/mini-batch", "status")
    )
    print("%-11s %8s %10s %6s %12s %14s" % ("", "asked", "reported", "", "parallelism", "(median)"))
    for row in summary.itertuples():
        print(
            "%-11s %8s %10s %6s %12s %14s %7s"
            % (
                row.framework,
                _shown(row.threads),
                _shown(row.framework_threads),
                _shown(row.usable_cpus),
                _shown(row.effective_parallelism, "%.2f"),
                _shown(row.median, "%.4f"),
                row.status,
            )
        )
    over = summary[(summary["threads"] == 1) & (summary["effective_parallelism"] > 1.2)]
    print("at 1 thread, effective parallelism above 1.2: %s" % (", ".join(over["framework"]) or "none"))
    print("bundle: %s" % path)


if __name__ == "__main__":
    main()
