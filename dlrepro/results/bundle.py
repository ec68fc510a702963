"""Result bundles, schema ``dlrepro.bundle/1``: one self-describing folder per run.

    results/<spec>-<UTC yyyymmddThhmmssZ>-<config hash>/
        bundle.json      schema, suite version and git commit, command, resolved spec and its hash,
                         run options, executor, host, images (tag, image ID, base, recipe digest),
                         datasets (files, SHA-256, source), one summary entry per job, status counts
        jobs/<job id>/   job.json, result.json, log.txt
        images/<name>/   Dockerfile, requirements.lock, pip-freeze.txt, dpkg.txt (docker executor)
        summary.parquet  one row per job, with provenance columns (dlrepro.tables)
        summary.csv      the same rows as CSV
        samples.parquet  one row per measured iteration, epoch or inference pass
        SHA256SUMS       every other file, `sha256sum -c` format

The config hash is the digest of the resolved spec and the run options, so runs of
the same configuration share it. The bundle is written under ``.<id>.partial`` and
renamed when complete; it is never modified afterwards.
"""
import json
import os
from pathlib import Path

from dlrepro import REPO_ROOT, __version__, checkout
from dlrepro.results import tables
from dlrepro.errors import BundleError, DlreproError
from dlrepro.files import sha256_file, sums_text
from runner.contract import utc_now, write_json

SCHEMA = "dlrepro.bundle/2"  # 2: tidy tables (dlrepro.tables); 1 had summary.csv only
def locate(name):
    """The folder of bundle ``name``: a path, or a bundle id under results/. Raises DlreproError."""
    for folder in (Path(name), REPO_ROOT / "results" / name):
        if (folder / "bundle.json").is_file():
            return folder
    raise DlreproError("%s: no bundle.json there; give a bundle folder (results/<bundle-id>) or the id of one "
                       "under results/" % name)


def body(folder):
    """bundle.json of the bundle in ``folder`` as a dict; raises BundleError when it cannot be read."""
    path = Path(folder) / "bundle.json"
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BundleError("%s: cannot be read (%s); `invoke validate %s` lists what is wrong" % (path, exc, folder)) from None
    if not isinstance(found, dict) or "spec" not in found or "jobs" not in found:
        raise BundleError("%s: not a bundle's bundle.json (no spec or jobs); `invoke validate %s` lists what is wrong"
                          % (path, folder))
    return found


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
        self.job_ids = []  # in the order first written: the order of the bundle's rows

    def job_dir(self, job_id):
        return self.jobs_dir / job_id

    def write_job(self, job):
        if job["id"] not in self.job_ids:
            self.job_ids.append(job["id"])
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

    def finish(self, body):
        """Write bundle.json (with one summary row per job and the status counts), the tidy tables and
        SHA256SUMS, then rename into place; returns the bundle path."""
        body = dict(body, schema=SCHEMA, id=self.id, created=self.created, finished=utc_now(),
                    suite={"version": __version__, "git": checkout.state()})
        rows, samples = tables.build(self.partial, body, self.job_ids)
        body.update(jobs=rows, counts={s: sum(1 for r in rows if r["status"] == s) for s in ("ok", "failed", "skipped")})
        write_json(str(self.partial / "bundle.json"), body)
        tables.write(self.partial, rows, samples)
        (self.partial / "SHA256SUMS").write_text(sums_text(
            {p.relative_to(self.partial).as_posix(): sha256_file(p) for p in self.partial.rglob("*") if p.is_file()}))
        os.rename(self.partial, self.results_dir / self.id)
        return self.results_dir / self.id
