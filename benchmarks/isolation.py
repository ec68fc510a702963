"""Warm workers do not change the numbers: AlexNet-S, ResNet-50 and the LSTM (synthetic) run once with
``--isolation worker`` and once with ``--isolation process``, then set side by side (side_by_side.py).

    python benchmarks/isolation.py [--framework torch] [--device cpu] [--executor docker] [--results DIR]

Batch sizes: 16, 16 and 128 (cpu) or 64, 32 and 128 (cuda).
"""

import argparse

from side_by_side import compare_ways

CASES = {
    "cpu": [("alexnet", "alexnet-s", 16), ("resnet50", "resnet50", 16), ("lstm", "lstm-synthetic", 128)],
    "cuda": [("alexnet", "alexnet-s", 64), ("resnet50", "resnet50", 32), ("lstm", "lstm-synthetic", 128)],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--executor", default="docker")
    parser.add_argument("--results", default=None)
    args = parser.parse_args()
    compare_ways(
        CASES[args.device],
        {"worker": {"isolation": "worker"}, "process": {"isolation": "process"}},
        args.results,
        frameworks=[args.framework],
        device=args.device,
        executor=args.executor,
    )


if __name__ == "__main__":
    main()
