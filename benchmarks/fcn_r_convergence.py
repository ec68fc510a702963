"""FCN-R trained with DLBench's recipe in every framework: MNIST test accuracy per epoch, side by side.

    python benchmarks/fcn_r_convergence.py [--epochs 5] [--frameworks torch,tensorflow,mxnet,jax]

Same initialisation (Caffe's Xavier), optimizer (SGD lr 0.05, momentum 0.9), batch size (64),
inputs (x / 256) and epochs in each framework's container; one bundle. Prints each framework's
test accuracy after every epoch, its median seconds per epoch, and the gap to PyTorch's final
accuracy (the target: within 1.5 points).
"""

import argparse
import json

from dlrepro.run import runs
from dlrepro.run.options import RunOptions


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--frameworks", default="torch,tensorflow,mxnet,jax")
    args = parser.parse_args()
    frameworks = args.frameworks.split(",")
    options = RunOptions(frameworks=frameworks, variants=["fcn-r"], mode="convergence", epochs=args.epochs)
    path = runs.run("fcn", options, reporter=runs.Silent())
    results = {}
    for job_dir in path.glob("jobs/*"):
        job = json.loads((job_dir / "job.json").read_text())
        results[job["framework"]] = json.loads((job_dir / "result.json").read_text())
    reference = results.get("torch", {}).get("convergence")
    print(
        "%-11s %s %10s %8s" % ("framework", " ".join("ep%-5d" % (e + 1) for e in range(args.epochs)), "s/epoch", "gap")
    )
    for framework in frameworks:
        result = results[framework]
        if result["status"] != "ok":
            print("%-11s %s" % (framework, result["reason"]))
            continue
        accs = [100 * e["test_accuracy"] for e in result["convergence"]["epochs"]]
        gap = "%+.2f" % (accs[-1] - 100 * reference["final_test_accuracy"]) if reference else "-"
        print(
            "%-11s %s %10.1f %8s"
            % (framework, " ".join("%6.2f" % a for a in accs), result["timing"]["summary"]["median"], gap)
        )
    print("bundle: %s" % path)


if __name__ == "__main__":
    main()
