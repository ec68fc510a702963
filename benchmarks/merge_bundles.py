"""Seconds for `tables.merge` over many synthetic bundles (target: 1,000 bundles' summaries in < 5 s).

    python benchmarks/merge_bundles.py [--bundles 1000] [--jobs 8] [--iterations 24]

Writes N bundles shaped like real ones (bundle.json, summary.parquet, samples.parquet: JOBS jobs
of ITERATIONS timed iterations each, four frameworks, two hosts, every fifth bundle a repeat of
an earlier configuration) into a temporary folder, then times a merge of their summaries, and one
of summaries and samples. Prints the seconds, the rows merged and how many repeated measurements
were labelled.
"""

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from dlrepro.store import tables

FRAMEWORKS = ("torch", "tensorflow", "mxnet", "jax")


def _bundle(root, number, jobs, iterations, rng):
    config = number - number % 5 if number % 5 == 4 else number  # every fifth repeats an earlier one
    bundle_id = "alexnet-20261130T%06dZ-%08x" % (number, config)
    folder = root / bundle_id
    folder.mkdir()
    body = {"id": bundle_id, "created": "2026-11-30T00:00:%02dZ" % (number % 60)}
    (folder / "bundle.json").write_text(json.dumps(body))
    summary, samples = [], []
    for j in range(jobs):
        framework = FRAMEWORKS[j % len(FRAMEWORKS)]
        base = {
            "tables_schema": tables.SCHEMA,
            "bundle_id": bundle_id,
            "bundle_created": body["created"],
            "job_id": "alexnet-s.%s.cpu.b%d" % (framework, 16 << (j // 4)),
            "spec": "alexnet",
            "spec_sha256": "%064x" % config,
            "variant": "alexnet-s",
            "framework": framework,
            "image_id": "sha256:%064x" % j,
            "host": "host-%d" % (config % 2),
            "device": "cpu",
            "device_name": "AMD EPYC",
            "mode": "throughput",
            "batch_size": 16 << (j // 4),
            "threads": 2,
            "precision": "fp32",
        }
        seconds = [rng.uniform(1.0, 2.0) for _ in range(iterations)]
        summary.append(dict(base, status="ok", median=sorted(seconds)[iterations // 2], n=iterations))
        samples += [dict(base, sample="iteration", repeat=1, index=i + 1, seconds=s) for i, s in enumerate(seconds)]
    tables.write(folder, summary, samples)
    return folder


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=24)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        folders = [_bundle(Path(tmp), n, args.jobs, args.iterations, rng) for n in range(args.bundles)]
        start = time.perf_counter()
        summary, _ = tables.merge(folders, with_samples=False)
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        _, samples = tables.merge(folders)
        both = time.perf_counter() - start
    print(
        "summaries of %d bundles merged in %.2f s: %d rows, %d labelled as repeated measurements"
        % (args.bundles, seconds, len(summary), int((summary["measurements"] > 1).sum()))
    )
    print("summaries and samples merged in %.2f s: %d sample rows" % (both, len(samples)))


if __name__ == "__main__":
    main()
