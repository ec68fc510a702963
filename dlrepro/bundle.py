"""Result bundles, schema ``dlrepro.bundle/1``: one self-describing folder per run.

    results/<spec>-<UTC yyyymmddThhmmssZ>-<config hash>/
        bundle.json      schema, suite version and git commit, command, resolved spec and its hash,
                         run options, executor, host, images (tag, image ID, base, recipe digest),
                         datasets (files, SHA-256, source), one summary entry per job
        jobs/<job id>/   job.json, result.json, log.txt
        images/<name>/   Dockerfile, requirements.lock, pip-freeze.txt, dpkg.txt (docker executor)
        summary.csv      one row per job
        SHA256SUMS       every other file, `sha256sum -c` format

The config hash is the digest of the resolved spec and the run options, so runs of
the same configuration share it. The bundle is written under ``.<id>.partial`` and
renamed when complete; it is never modified afterwards.
"""
import json
import os
import subprocess
from pathlib import Path

import pandas as pd

from dlrepro import REPO_ROOT, __version__
from dlrepro.files import sha256_file
from runner.contract import utc_now, write_json

SCHEMA = "dlrepro.bundle/1"
SUMMARY_COLUMNS = [
    "bundle_id", "job_id", "spec", "spec_sha256", "variant", "framework", "framework_version", "image",
    "image_id", "executor", "device", "mode", "batch_size", "threads", "precision", "status", "quantity", "unit",
    "median", "q1", "q3", "iqr", "ci95_low", "ci95_high", "n", "throughput", "throughput_unit",
    "parameters", "parameters_equivalent", "parameters_expected", "final_test_accuracy", "final_perplexity", "total_seconds",
    "seconds_per_1000_images", "reason", "remedy",
]

INTEGER_COLUMNS = ["batch_size", "threads", "n", "parameters", "parameters_equivalent", "parameters_expected"]


def git_state():
    """{commit, dirty} of the suite's checkout, or None outside a git work tree."""
    def git(*args):
        proc = subprocess.run(["git", "-C", str(REPO_ROOT)] + list(args), capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    return {"commit": commit, "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def summary_row(bundle_id, executor, job, result, image):
    """One row of summary.csv (and of bundle.json's job list) from a job, its result and image record."""
    timing = result.get("timing") or {}
    stats = timing.get("summary") or {}
    ci = stats.get("ci95") or [None, None]
    params = result.get("parameters") or {}
    conv = result.get("convergence") or {}
    inference = result.get("inference") or {}
    return {
        "bundle_id": bundle_id, "job_id": job["id"], "spec": job["spec"]["name"], "spec_sha256": job["spec"]["sha256"],
        "variant": job["variant"], "framework": job["framework"],
        "framework_version": (result.get("environment") or {}).get("framework_version"),
        "image": image["name"] if image else None, "image_id": image["image_id"] if image else None,
        "executor": executor, "device": job["device"], "mode": job["mode"], "batch_size": job["batch_size"],
        "threads": job["threads"], "precision": job["precision"], "status": result["status"],
        "quantity": timing.get("quantity"), "unit": timing.get("unit"), "median": stats.get("median"),
        "q1": stats.get("q1"), "q3": stats.get("q3"), "iqr": stats.get("iqr"), "ci95_low": ci[0],
        "ci95_high": ci[1], "n": stats.get("n"), "throughput": timing.get("throughput"),
        "throughput_unit": timing.get("throughput_unit"), "parameters": params.get("measured"),
        "parameters_equivalent": params.get("equivalent"),
        "parameters_expected": job["model"]["parameters"], "final_test_accuracy": conv.get("final_test_accuracy"),
        "final_perplexity": conv.get("final_perplexity"), "total_seconds": conv.get("total_seconds"),
        "seconds_per_1000_images": inference.get("seconds_per_1000_images"),
        "reason": result.get("reason"), "remedy": result.get("remedy"),
    }


class BundleWriter:
    """Collects a run into ``results/.<id>.partial`` and publishes it with ``finish``."""

    def __init__(self, results_dir, spec_name, config_digest):
        self.created = utc_now()
        stamp = self.created.replace("-", "").replace(":", "")
        self.results_dir = Path(results_dir)
        self.results_dir.mkdir(parents=True, exist_ok=True)
        base, n = "%s-%s-%s" % (spec_name, stamp, config_digest[:8]), 1
        while True:  # the partial folder reserves the id; a second run in the same second gets -2, -3, ...
            self.id = base if n == 1 else "%s-%d" % (base, n)
            self.partial = self.results_dir / (".%s.partial" % self.id)
            if not (self.results_dir / self.id).exists():
                try:
                    self.partial.mkdir()
                    break
                except FileExistsError:
                    pass
            n += 1
        self.jobs_dir = self.partial / "jobs"
        self.jobs_dir.mkdir()

    def job_dir(self, job_id):
        return self.jobs_dir / job_id

    def write_job(self, job):
        self.job_dir(job["id"]).mkdir(parents=True, exist_ok=True)
        write_json(str(self.job_dir(job["id"]) / "job.json"), job)

    def write_result(self, job_id, result):
        write_json(str(self.job_dir(job_id) / "result.json"), result)

    def read_result(self, job_id):
        return json.loads((self.job_dir(job_id) / "result.json").read_text())

    def add_image(self, built):
        folder = self.partial / "images" / built.image.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "Dockerfile").write_text(built.dockerfile)
        for name, text in built.manifests.items():
            (folder / name).write_text(text)

    def finish(self, body, rows):
        """Write bundle.json, summary.csv and SHA256SUMS, then rename into place; returns the bundle path."""
        body = dict(body, schema=SCHEMA, id=self.id, created=self.created, finished=utc_now(),
                    suite={"version": __version__, "git": git_state()}, jobs=rows)
        write_json(str(self.partial / "bundle.json"), body)
        table = pd.DataFrame(rows, columns=SUMMARY_COLUMNS).astype({c: "Int64" for c in INTEGER_COLUMNS})
        table.to_csv(self.partial / "summary.csv", index=False)
        files = sorted(p for p in self.partial.rglob("*") if p.is_file())
        with open(self.partial / "SHA256SUMS", "w") as out:
            for path in files:
                out.write("%s  %s\n" % (sha256_file(path), path.relative_to(self.partial).as_posix()))
        os.rename(self.partial, self.results_dir / self.id)
        return self.results_dir / self.id
