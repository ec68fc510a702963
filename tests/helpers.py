"""Helpers shared by test modules."""
import hashlib
import json

from dlrepro import datasets, jobs, spec


def check_sums(bundle):
    for line in (bundle / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((bundle / name).read_bytes()).hexdigest() == digest, name


def bad_and_good_jobs():
    found = jobs.expand(spec.load("fcn"), jobs.RunOptions(variants=["fcn-s"], batch_sizes=[8, 16], quick=True))
    bad, good = found
    bad["model"] = dict(bad["model"], parameters=bad["model"]["parameters"] + 1)
    return bad, good


def run_executor(executor, image, tmp_path):
    """Run a job that fails inside the runner (wrong expected parameter count), then a good one."""
    bad, good = bad_and_good_jobs()
    events = []
    executor.run(image, [bad, good], tmp_path, datasets.root(),
                 lambda kind, job_id, result: events.append((kind, job_id, result and result["status"])))
    results = {j["id"]: json.loads((tmp_path / j["id"] / "result.json").read_text()) for j in (bad, good)}
    return bad, good, results, events
