"""Warm workers do not change the numbers: AlexNet-S, ResNet-50 and the LSTM (synthetic) run once with
``--isolation worker`` and once with ``--isolation process``, then set side by side.

    python benchmarks/isolation.py [--framework torch] [--device cpu] [--executor docker] [--results DIR]

Prints per job: the median seconds per mini-batch and its repeat-level 95% CI (runner.stats) in each isolation,
whether each median lies inside the other's interval, and compare --against's verdict (Mann-Whitney U on the
repeat medians). Batch sizes: 16, 16 and 128 (cpu) or 64, 32 and 128 (cuda).
"""
import argparse
import tempfile

from dlrepro.results import compare, tables
from dlrepro.run import runs
from dlrepro.run.options import RunOptions

CASES = {"cpu": [("alexnet", "alexnet-s", 16), ("resnet50", "resnet50", 16), ("lstm", "lstm-synthetic", 128)],
         "cuda": [("alexnet", "alexnet-s", 64), ("resnet50", "resnet50", 32), ("lstm", "lstm-synthetic", 128)]}


def _inside(value, low, high):
    return "yes" if low <= value <= high else "no"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--executor", default="docker")
    parser.add_argument("--results", default=None)
    args = parser.parse_args()
    results = args.results or tempfile.mkdtemp(prefix="dlrepro-isolation-")
    print("%-34s %10s %21s %10s %21s %7s %7s  %s" % ("job", "worker s", "95% CI", "process s", "95% CI", "w in p",
                                                     "p in w", "compare --against"))
    for spec, variant, batch in CASES[args.device]:
        folders = {isolation: runs.run(spec, RunOptions(frameworks=[args.framework], variants=[variant],
                                                         batch_sizes=[batch], device=args.device,
                                                         executor=args.executor, isolation=isolation),
                                       results_dir=results, reporter=runs.Silent())
                   for isolation in ("worker", "process")}
        rows = {i: tables.summary(f).iloc[0] for i, f in folders.items()}
        verdicts = compare.against_bundle(tables.samples(folders["worker"]), tables.samples(folders["process"]))
        w, p = rows["worker"], rows["process"]
        print("%-34s %10.4f %10.4f-%-10.4f %10.4f %10.4f-%-10.4f %7s %7s  %s (%+.1f%%)" % (
            w.job_id, w.median, w.ci95_low, w.ci95_high, p.median, p.ci95_low, p.ci95_high,
            _inside(w.median, p.ci95_low, p.ci95_high), _inside(p.median, w.ci95_low, w.ci95_high),
            verdicts["verdict"].iloc[0], 100 * verdicts["change"].iloc[0]))
    print("bundles under %s" % results)


if __name__ == "__main__":
    main()
