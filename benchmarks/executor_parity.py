"""Seconds per mini-batch of the same jobs in the container (docker executor) and in this Python
(local executor): AlexNet-S at batch 16 and FCN-S at batch 64, DLBench's CPU settings.

    python benchmarks/executor_parity.py [--repeats N] [--results DIR]

Prints one row per job: median and IQR from each executor and their ratio (docker / local).
The bundles are kept under --results (default: a temporary folder) for inspection.
"""

import argparse
import json
import tempfile
from pathlib import Path

from dlrepro.run import runs
from dlrepro.run.options import RunOptions

CASES = [("alexnet", "alexnet-s"), ("fcn", "fcn-s")]


def job_rows(bundle):
    rows = json.loads((bundle / "bundle.json").read_text())["jobs"]
    return {r["job_id"]: r for r in rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", default=None)
    args = parser.parse_args()
    results = Path(args.results or tempfile.mkdtemp(prefix="dlrepro-parity-"))
    print("%-26s %12s %9s %12s %9s %8s" % ("job", "docker (s)", "IQR", "local (s)", "IQR", "ratio"))
    for spec, variant in CASES:
        got = {}
        for executor in ("docker", "local"):
            options = RunOptions(variants=[variant], executor=executor, repeats=args.repeats)
            got[executor] = job_rows(runs.run(spec, options, results_dir=results, reporter=runs.Silent()))
        for job_id, d in got["docker"].items():
            loc = got["local"][job_id]
            print(
                "%-26s %12.4f %9.4f %12.4f %9.4f %8.3f"
                % (job_id, d["median"], d["iqr"], loc["median"], loc["iqr"], d["median"] / loc["median"])
            )
    print("bundles: %s" % results)


if __name__ == "__main__":
    main()
