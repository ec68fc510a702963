"""A real committed bundle (AlexNet-S b16, 7 frameworks, CPU, schema 1) and its copy rewritten as another run would have
written it."""

import json

from dlrepro import REPO_ROOT
from dlrepro.store.bundle import BundleWriter

REAL = REPO_ROOT / "results" / "alexnet-20261130T031432Z-74e68a2e"  # AlexNet-S b16, 7 frameworks, CPU, schema 1


def rewrite(real, results_dir, config_digest="0" * 64):
    """A schema-2 bundle written by BundleWriter from a real bundle's jobs, results and body."""
    body = json.loads((real / "bundle.json").read_text())
    writer = BundleWriter(results_dir, body["spec"]["name"], config_digest)
    for row in body["jobs"]:
        job_dir = real / "jobs" / row["job_id"]
        writer.write_job(json.loads((job_dir / "job.json").read_text()))
        writer.write_result(row["job_id"], json.loads((job_dir / "result.json").read_text()))
    keep = ("command", "spec", "options", "executor", "host", "images", "datasets", "left_out", "interrupted")
    return writer.finish({k: body[k] for k in keep})
