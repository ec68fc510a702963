"""One run of a spec, end to end: expand jobs, fetch datasets, build images, execute, write the bundle.

Nothing measured is lost: a job whose dataset cannot be had is recorded as skipped
with the reason and the remedy; a job whose image cannot be built, or that fails
inside its container, is recorded as failed with its log; the other jobs go on; an
interrupted run still publishes a bundle with what finished.
"""
import hashlib
import shlex
import sys
from collections import OrderedDict

from dlrepro import REPO_ROOT, build, datasets, executors, hostinfo, jobs as jobsmod, matrix as matrixmod, spec as specmod
from dlrepro.bundle import BundleWriter, summary_row
from dlrepro.errors import DatasetError, DlreproError
from runner.contract import new_result, utc_now


class Reporter:
    """Progress callbacks; the CLI uses a rich implementation, tests this plain one."""

    def log(self, message):
        print(message)

    def started(self, total):
        pass

    def job_started(self, job_id):
        pass

    def job_finished(self, job_id, result):
        print("%s: %s" % (job_id, result["status"]))


def _record_all(writer, group, status, reason, remedy=None):
    for job in group:
        result = new_result(job["id"], status, reason=reason, remedy=remedy)
        result["finished"] = utc_now()
        writer.write_result(job["id"], result)


def _spec_record(spec, path):
    path = path.resolve()
    shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    return {"name": spec.name, "file": str(shown), "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "sha256": spec.digest(), "resolved": spec.model_dump(mode="json")}


def run(spec_name, options, build_options=None, results_dir=REPO_ROOT / "results", python=None, reporter=None):
    """Run every job of spec ``spec_name`` under ``options`` (jobs.RunOptions); returns the bundle path.

    Raises SpecError / DlreproError before anything runs when the spec or options are
    invalid, and ExecutorError when the chosen executor is unavailable.
    """
    reporter = reporter or Reporter()
    build_options = build_options or build.BuildOptions()
    spec = specmod.load(spec_name)
    catalogue = datasets.catalogue().datasets
    jobs = jobsmod.expand(spec, options, catalogue)
    executor = executors.get(options.executor, options.device, options.gpu, python)
    matrix = matrixmod.load()
    writer = BundleWriter(results_dir, spec.name, jobsmod.digest(spec, options))
    for job in jobs:
        writer.write_job(job)
    reporter.started(len(jobs))
    images, dataset_records, interrupted = {}, {}, False

    def on_event(kind, job_id, status):
        if kind == "start":
            reporter.job_started(job_id)
        elif kind == "end":
            reporter.job_finished(job_id, writer.read_result(job_id))

    try:
        runnable = []
        for name in OrderedDict.fromkeys(j["data"]["name"] for j in jobs if j["data"]["kind"] == "dataset"):
            try:
                dataset_records[name] = datasets.ensure(name, reporter.log).record
            except DatasetError as exc:
                needing = [j for j in jobs if j["data"].get("name") == name]
                _record_all(writer, needing, "skipped", str(exc), exc.remedy)
                for job in needing:
                    reporter.job_finished(job["id"], writer.read_result(job["id"]))
        skipped = {j["id"] for j in jobs if (writer.job_dir(j["id"]) / "result.json").is_file()}
        runnable = [j for j in jobs if j["id"] not in skipped]
        groups = OrderedDict()
        for job in runnable:
            groups.setdefault(job["framework"], []).append(job)
        for framework, group in groups.items():
            built = None
            if options.executor == "docker":
                try:
                    built = build.ensure(matrix, matrix.find(framework, options.device), build_options, reporter.log)
                except DlreproError as exc:
                    _record_all(writer, group, "failed", "image for %s: %s" % (framework, exc))
                    for job in group:
                        reporter.job_finished(job["id"], writer.read_result(job["id"]))
                    continue
                images[framework] = built.record
                writer.add_image(built)
            executor.run(built, group, writer.jobs_dir, datasets.root(), on_event)
    except KeyboardInterrupt:
        interrupted = True
        pending = [j for j in jobs if not (writer.job_dir(j["id"]) / "result.json").is_file()]
        _record_all(writer, pending, "skipped", "the run was interrupted before this job finished")
    rows = []
    for job in jobs:
        result = writer.read_result(job["id"])
        image = images.get(job["framework"]) if result["status"] != "skipped" else None
        rows.append(summary_row(writer.id, options.executor, job, result, image))
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in ("ok", "failed", "skipped")}
    body = {"command": " ".join(shlex.quote(a) for a in sys.argv), "spec": _spec_record(spec, specmod.spec_path(spec_name)),
            "options": options.model_dump(mode="json"), "executor": executor.describe(), "host": hostinfo.describe(),
            "images": list(images.values()), "datasets": list(dataset_records.values()), "counts": counts,
            "interrupted": interrupted}
    path = writer.finish(body, rows)
    if interrupted:
        raise KeyboardInterrupt("bundle with the finished jobs: %s" % path)
    return path
