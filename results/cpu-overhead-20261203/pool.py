"""The paired rounds of every run here, pooled per framework and case: each round is a pair (its suite and bare
blocks ran back to back, ABBA), so the runs' rounds together give one median ratio with its distribution-free 95%
interval (benchmarks/overhead_rounds.py's ``paired``).

    python results/cpu-overhead-20261203/pool.py          (from the checkout's root)
"""
import collections
import glob
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.overhead_rounds import paired  # noqa: E402 (the checkout first on the path)


def main():
    pairs, timers, versions = collections.defaultdict(lambda: ([], [])), {}, {}
    for path in sorted(glob.glob(str(HERE / "round*-*.json"))):
        for row in json.loads(Path(path).read_text())["rows"]:
            key = (row["framework"], row["case"], row["batch_size"])
            pairs[key][0].extend(row["suite_rounds"])
            pairs[key][1].extend(row["bare_rounds"])
            timers[key], versions[key] = row["suite_timer"], row.get("framework_version")
    print("%-11s %-10s %5s %-9s %10s %10s %7s %19s %6s %s" % ("framework", "case", "batch", "version", "bare (ms)",
                                                             "suite (ms)", "ratio", "95% interval", "rounds", "timer"))
    for (framework, case, batch), (suites, bares) in sorted(pairs.items()):
        found = paired(suites, bares)
        interval = "[%.4f, %.4f]" % tuple(found["ci95"]) if found["ci95"] else "-"
        print("%-11s %-10s %5d %-9s %10.1f %10.1f %7.4f %19s %6d %s" % (
            framework, case, batch, versions[(framework, case, batch)], statistics.median(bares) * 1e3,
            statistics.median(suites) * 1e3, found["ratio"], interval, len(bares), timers[(framework, case, batch)]))


if __name__ == "__main__":
    main()
