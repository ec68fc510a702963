"""The data-parallel path with one rank matches the plain job: AlexNet-S (batch 64) and ResNet-50 (batch 32) run
as plain jobs and with ``--ranks 1`` (PyTorch: DistributedDataParallel over NCCL on a GPU, gloo on the CPU; JAX:
shard_map over a one-device mesh), set side by side (side_by_side.py). Issue 17's single-GPU check.

    python benchmarks/ranks_one.py [--frameworks torch,jax] [--device cuda] [--executor local] [--results DIR]
"""

import argparse

from side_by_side import compare_ways

CASES = [("alexnet", "alexnet-s", 64), ("resnet50", "resnet50", 32)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default="torch,jax")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--executor", default="local")
    parser.add_argument("--results", default=None)
    args = parser.parse_args()
    for framework in args.frameworks.split(","):
        compare_ways(
            CASES,
            {"plain": {}, "1 rank": {"ranks": [1]}},
            args.results,
            frameworks=[framework],
            device=args.device,
            executor=args.executor,
        )


if __name__ == "__main__":
    main()
