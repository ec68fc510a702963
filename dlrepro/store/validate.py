"""Check a bundle against its schema: one small check per concern, each naming the file and the fix.

The checks, in order (CHECKS): checksums (SHA256SUMS covers every file and every hash matches),
bundle (bundle.json parses, has a known schema and the keys that schema requires, its id is the
folder's name), spec (the recorded spec hash is the hash of the resolved spec it carries), jobs
(every job row has job.json and result.json with a known result schema, a valid status and a
reason when not ok; the counts add up), tables (bundle schema 2: summary.parquet, samples.parquet
and summary.csv exist with exactly the columns of the tables version they declare, one summary
row per job),
statistics (each ok job timed per mini-batch: its samples reproduce the recorded n and median (the
median of its repeat medians where result.json's summary says so, ``point_estimate``; earlier results:
the median of every sample pooled), the 95% CI is the interval of its repeat medians (tables v4;
earlier: it holds the median within the samples' range), throughput = batch size / median).
"""

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from dlrepro.errors import BundleError, Problem
from dlrepro.files import canonical_json, parse_sums, sha256_file
from dlrepro.store import tables
from dlrepro.store.bundle import STATUSES
from dlrepro.store.bundle import counts as status_counts
from runner import stats
from runner.contract import RESULT_SCHEMA

BUNDLE_KEYS = {
    "dlrepro.bundle/1": (
        "schema",
        "id",
        "created",
        "finished",
        "suite",
        "spec",
        "options",
        "executor",
        "host",
        "images",
        "jobs",
        "counts",
    )
}
BUNDLE_KEYS["dlrepro.bundle/2"] = BUNDLE_KEYS["dlrepro.bundle/1"]
BUNDLE_KEYS["dlrepro.bundle/3"] = BUNDLE_KEYS["dlrepro.bundle/2"] + ("state", "attempts")


def checksums(folder, body):
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        return [Problem("checksums", "SHA256SUMS", "missing: the bundle cannot be verified (re-run to get one)")]
    listed, bad = parse_sums(sums.read_text(errors="replace"))
    problems = [
        Problem("checksums", "SHA256SUMS", "line %d is not '<sha256>  <path>': %r" % (n, line[:80])) for n, line in bad
    ]
    problems += [
        Problem("checksums", name, "listed in SHA256SUMS but missing")
        for name in listed
        if not (folder / name).is_file()
    ]
    problems += [
        Problem("checksums", name, "SHA-256 differs from SHA256SUMS: the file was changed after the run")
        for name, digest in listed.items()
        if (folder / name).is_file() and sha256_file(folder / name) != digest
    ]
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    problems += [
        Problem("checksums", name, "not listed in SHA256SUMS: added after the run")
        for name in sorted(present - set(listed))
    ]
    return problems


def bundle(folder, body):
    if body is None:
        return [Problem("bundle", "bundle.json", "missing or not JSON")]
    keys = BUNDLE_KEYS.get(body.get("schema"))
    if keys is None:
        return [
            Problem(
                "bundle",
                "bundle.json",
                "schema %r is not one of %s: written by another suite version?"
                % (body.get("schema"), ", ".join(BUNDLE_KEYS)),
            )
        ]
    problems = [Problem("bundle", "bundle.json", "lacks key %r" % k) for k in keys if k not in body]
    if body.get("id") != folder.name:
        problems.append(
            Problem(
                "bundle", "bundle.json", "id %r is not the folder's name %r (renamed?)" % (body.get("id"), folder.name)
            )
        )
    return problems


def spec(folder, body):
    record = (body or {}).get("spec") or {}
    if "resolved" not in record:
        return [Problem("spec", "bundle.json", "spec.resolved is missing")]
    text = canonical_json(record["resolved"])
    if hashlib.sha256(text.encode()).hexdigest() != record.get("sha256"):
        return [Problem("spec", "bundle.json", "spec.sha256 is not the SHA-256 of spec.resolved")]
    return []


def jobs(folder, body):
    problems, statuses = [], []
    for row in (body or {}).get("jobs") or []:
        job_dir = "jobs/%s" % row["job_id"]
        for name in ("job.json", "result.json"):
            if not (folder / job_dir / name).is_file():
                problems.append(Problem("jobs", "%s/%s" % (job_dir, name), "missing"))
        if not (folder / job_dir / "result.json").is_file():
            continue
        try:
            result = json.loads((folder / job_dir / "result.json").read_text())
        except ValueError as exc:
            problems.append(Problem("jobs", job_dir + "/result.json", "not JSON (%s)" % exc))
            continue
        statuses.append(result.get("status"))
        if result.get("schema") != RESULT_SCHEMA:
            problems.append(
                Problem("jobs", job_dir + "/result.json", "schema %r is not %r" % (result.get("schema"), RESULT_SCHEMA))
            )
        if result.get("status") not in STATUSES:
            problems.append(
                Problem(
                    "jobs",
                    job_dir + "/result.json",
                    "status %r is not one of %s" % (result.get("status"), ", ".join(STATUSES)),
                )
            )
        elif result["status"] != "ok" and not result.get("reason"):
            problems.append(Problem("jobs", job_dir + "/result.json", "a %s job without a reason" % result["status"]))
    counts = status_counts(statuses)
    if body and body.get("counts") != counts:
        problems.append(
            Problem(
                "jobs", "bundle.json", "counts %s do not match the results' statuses %s" % (body.get("counts"), counts)
            )
        )
    return problems


def _columns(path, name):
    version = tables.schema_of(path)
    expected = tables.columns_of(version, name)
    if expected is None:
        return ["declares tables schema %r, which this suite does not know (newest: %s)" % (version, tables.SCHEMA)]
    names = pq.read_schema(path).names
    if names != expected:
        return [
            "columns differ from %s: missing %s, unexpected %s"
            % (version, sorted(set(expected) - set(names)) or "none", sorted(set(names) - set(expected)) or "none")
        ]
    return []


def table_files(folder, body):
    if (body or {}).get("schema") == "dlrepro.bundle/1":
        return []  # written before the tables existed: they are derived from the JSON files on reading
    problems = [
        Problem("tables", name, "missing") for name in tables.FILES + ("summary.csv",) if not (folder / name).is_file()
    ]
    if problems:
        return problems
    for name in ("summary", "samples"):
        problems += [
            Problem("tables", name + ".parquet", text) for text in _columns(folder / (name + ".parquet"), name)
        ]
    summary = pq.read_table(folder / "summary.parquet", columns=["job_id"]).column("job_id").to_pylist()
    if sorted(summary) != sorted(r["job_id"] for r in body.get("jobs") or []):
        problems.append(Problem("tables", "summary.parquet", "its jobs are not bundle.json's jobs"))
    return problems


def _interval_problem(row, seconds, repeats):
    """Why the recorded 95% CI does not follow from the samples, or None: an interval over repeat medians
    (tables v4) is recomputed exactly; an older pooled one must hold the median within the samples' range."""
    if row.ci95_method in (stats.CI_METHOD, stats.CI_METHOD_MEANS):
        medians = sorted(float(np.median(g)) for _, g in seconds.groupby(repeats))
        expected = stats.median_ci(medians) or [None, None]
        recorded = [None if pd.isna(v) else float(v) for v in (row.ci95_low, row.ci95_high)]
        if any(
            (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-12 * max(1.0, abs(b)))
            for a, b in zip(recorded, expected)
        ):
            return "95%% CI %s s is not the interval of its %d repeat medians, %s s" % (
                recorded,
                len(medians),
                expected,
            )
        return None
    if pd.notna(row.ci95_low) and not seconds.min() <= row.ci95_low <= row.median <= row.ci95_high <= seconds.max():
        return "95%% CI %.6g-%.6g s does not hold the median %.6g s within the samples' range" % (
            row.ci95_low,
            row.ci95_high,
            row.median,
        )
    return None


def _point_estimate(folder, job_id, seconds, repeats):
    """The median the samples give for the estimator the job's result.json names: the median of the repeat
    medians (runner.stats.POINT_ESTIMATE), or for results written before it the median of every sample."""
    try:
        summary = json.loads((folder / "jobs" / job_id / "result.json").read_text())["timing"]["summary"]
    except (OSError, ValueError, KeyError, TypeError):
        summary = {}
    if summary.get("point_estimate") in (stats.POINT_ESTIMATE, stats.POINT_ESTIMATE_MEANS):
        return float(np.median([np.median(g) for _, g in seconds.groupby(repeats)]))
    return float(seconds.median())


def statistics(folder, body):
    problems = []
    summary, samples = tables.summary(folder), tables.samples(folder)
    iterations = samples[samples["sample"].isin(["iteration", "repeat mean"])].groupby("job_id")
    for row in summary[(summary["status"] == "ok") & (summary["quantity"] == "seconds per mini-batch")].itertuples():
        if row.job_id not in iterations.groups:
            problems.append(Problem("statistics", "samples.parquet", "no timed iterations for %s" % row.job_id))
            continue
        rows, where = iterations.get_group(row.job_id), "jobs/%s/result.json" % row.job_id
        seconds = rows["seconds"]
        interval = _interval_problem(row, seconds, rows["repeat"])
        median = _point_estimate(folder, row.job_id, seconds, rows["repeat"])
        if len(seconds) != row.n or abs(median - row.median) > 1e-9 * max(1.0, row.median):
            problems.append(
                Problem(
                    "statistics",
                    where,
                    "%d samples with median %.6g s do not give the recorded "
                    "n=%s, median %.6g s" % (len(seconds), median, row.n, row.median),
                )
            )
        elif interval:
            problems.append(Problem("statistics", where, interval))
        elif abs(row.throughput * row.median - row.batch_size) > 1e-6 * row.batch_size:
            problems.append(
                Problem(
                    "statistics",
                    where,
                    "throughput %.6g samples/s is not batch size %d / median "
                    "%.6g s" % (row.throughput, row.batch_size, row.median),
                )
            )
    return problems


CHECKS = (checksums, bundle, spec, jobs, table_files, statistics)


def check(folder):
    """Every problem of the bundle in ``folder`` as Problem(check, file, message); [] when it is valid.

    A bundle.json that does not parse stops every check that reads it; a damaged file that stops
    one check is reported as that check's problem, and the other checks go on."""
    folder = Path(folder)
    try:
        body = json.loads((folder / "bundle.json").read_text())
    except (OSError, ValueError):
        body = None
    problems = []
    for step in CHECKS:
        if body is None and step is not checksums and step is not bundle:
            continue
        try:
            problems += step(folder, body)
        except tables.UNREADABLE + (BundleError,) as exc:  # a damaged file stops this check, not the others
            problems.append(
                Problem(
                    step.__name__,
                    getattr(exc, "filename", None) or "bundle",
                    "could not be checked: %s: %s" % (type(exc).__name__, exc),
                )
            )
    return problems
