"""One run of a spec, end to end: expand jobs, fetch datasets, build images, execute, write the bundle.

Nothing measured is lost: a job whose dataset cannot be had, or that cannot run on
this host, is recorded as skipped with the reason and the remedy; a job whose image
cannot be built, or that fails inside its container, is recorded as failed with its
log; the other jobs go on. A run interrupted (Ctrl-C, SIGTERM) or broken by an
unexpected error still publishes a bundle with what finished, the rest marked.
"""
import shlex
import signal
import sys
from collections import OrderedDict

from dlrepro import REPO_ROOT, datasets, spec as specmod
from dlrepro.images import build, matrix as matrixmod
from dlrepro.run import executors, hostinfo, jobs as jobsmod
from dlrepro.results.bundle import BundleWriter
from dlrepro.errors import CannotRunHere, DatasetError, DlreproError, RunBroken
from dlrepro.files import sha256_file
from runner.contract import new_result, utc_now
from runner.environment import usable_cpus


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


def _spec_record(spec, path):
    path = path.resolve()
    shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    return {"name": spec.name, "file": str(shown), "file_sha256": sha256_file(path),
            "sha256": spec.digest(), "resolved": spec.model_dump(mode="json")}


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


class _Run:
    """The mutable state of one run: the bundle being written and the images used."""

    def __init__(self, writer, reporter):
        self.writer, self.reporter, self.images, self.datasets = writer, reporter, {}, {}

    def done(self, job):
        return (self.writer.job_dir(job["id"]) / "result.json").is_file()

    def record(self, group, status, reason, remedy=None):
        """Write a host-made result for each job of ``group`` and report it."""
        for job in group:
            result = new_result(job["id"], status, reason=reason, remedy=remedy)
            result["started"] = result["finished"] = utc_now()
            self.writer.write_result(job["id"], result)
            self.reporter.job_finished(job["id"], result)

    def on_event(self, kind, job_id, result):
        if kind == "start":
            self.reporter.job_started(job_id)
        elif kind == "end" and result is not None:
            self.reporter.job_finished(job_id, result)

    def dataset(self, candidates):
        """The first of ``candidates`` (dataset names) that the cache holds or can fetch.

        Returns (DatasetRecord, None), or (None, a DatasetError naming every candidate's failure).
        """
        errors = []
        for name in candidates:
            try:
                record = datasets.ensure(name, self.reporter.log)
            except DatasetError as exc:
                errors.append(exc)
                continue
            self.datasets[name] = record.record
            return record, None
        if len(errors) == 1:
            return None, errors[0]
        return None, DatasetError("; and, as a fallback, ".join(str(e) for e in errors),
                                  " Or: ".join(e.remedy for e in errors if e.remedy))

    def resolve(self, jobs):
        """Fill each job's dataset and weight files; jobs whose files cannot be had are skipped."""
        found = {}
        for job in jobs:
            if job["mode"] == "parameters":  # counts need no data
                self.writer.write_job(job)
                continue
            for section in ("data", "weights"):
                part = job.get(section)
                if not part or part.get("kind", "dataset") != "dataset":
                    continue
                candidates = tuple(part.get("candidates") or [part["name"]])
                if candidates not in found:
                    found[candidates] = self.dataset(candidates)
                record, error = found[candidates]
                if record is None:
                    self.record([job], "skipped", str(error), error.remedy)
                    break
                jobsmod.resolve(job, section, record)
            self.writer.write_job(job)

    def execute(self, jobs, options, executor, matrix, build_options):
        problem = executor.preflight()
        if problem is not None:
            self.record(jobs, "skipped", *problem)
        self.resolve([j for j in jobs if not self.done(j)])
        groups = OrderedDict()
        for job in jobs:
            if not self.done(job):
                groups.setdefault((job["framework"], job["framework_version"]), []).append(job)
        for (framework, version), group in groups.items():
            try:
                built = executor.prepare(matrix, framework, version, build_options, self.reporter.log,
                                         options.allow_ptx_jit)
            except CannotRunHere as exc:
                self.record(group, "skipped", str(exc), exc.remedy)
                continue
            except DlreproError as exc:
                self.record(group, "failed", "image for %s: %s" % (framework, exc))
                continue
            if built is not None:
                self.images[(framework, version)] = dict(built.record, jobs=[j["id"] for j in group])
                self.writer.add_image(built)
                for job in group:  # the matrix's table of the build's GPU architectures, for the runner's check
                    job["cuda_archs"] = list(built.image.cuda_archs)
                    self.writer.write_job(job)
            executor.run(built, group, self.writer.jobs_dir, datasets.root(), self.on_event)

def run(spec_name, options, build_options=None, results_dir=REPO_ROOT / "results", python=None, reporter=None):
    """Run every job of spec ``spec_name`` under ``options`` (dlrepro.run.options.RunOptions); returns the bundle path.

    Raises SpecError / DlreproError before anything runs when the spec or options are
    invalid, and ExecutorError when the chosen executor is unavailable. After that,
    KeyboardInterrupt (Ctrl-C or SIGTERM) and RunBroken (any other error) are raised
    only once the bundle with the finished jobs is published; their message names it.
    """
    reporter = reporter or Reporter()
    build_options = build_options or build.BuildOptions()
    spec = specmod.load(spec_name)
    jobs = jobsmod.expand(spec, options)
    executor = executors.get(options.executor, options.device, options.gpus or options.gpu, python)
    matrix = matrixmod.load()
    writer = BundleWriter(results_dir, spec.name, jobsmod.digest(spec, options))
    for job in jobs:
        writer.write_job(job)  # written again once its files are resolved
    reporter.started(len(jobs))
    left_out = jobsmod.left_out(spec, options)
    for item in left_out:
        reporter.log("variant %s%s left out: %s" % (item["variant"], " on " + item["framework"] if item["framework"]
                                                    else "", item["reason"]))
    usable = usable_cpus()
    for threads in sorted({j["threads"] for j in jobs if j["threads"] and j["threads"] > usable}):
        reporter.log("%d threads on a host where this process may use %d CPUs: oversubscribed" % (threads, usable))
    state = _Run(writer, reporter)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    stopped = None
    try:
        state.execute(jobs, options, executor, matrix, build_options)
    except KeyboardInterrupt as exc:
        stopped = exc
        state.record([j for j in jobs if not state.done(j)], "skipped", executors.INTERRUPTED)
    except Exception as exc:  # publish what was measured before reporting the error
        stopped = RunBroken("the run stopped on %s: %s" % (type(exc).__name__, exc))
        state.record([j for j in jobs if not state.done(j)], "failed", str(stopped))
    finally:
        signal.signal(signal.SIGTERM, previous)
    body = {"command": " ".join(shlex.quote(a) for a in sys.argv), "spec": _spec_record(spec, specmod.spec_path(spec_name)),
            "options": options.model_dump(mode="json"), "executor": executor.describe(), "host": hostinfo.describe(),
            "images": list(state.images.values()), "datasets": list(state.datasets.values()), "left_out": left_out,
            "interrupted": isinstance(stopped, KeyboardInterrupt)}
    path = writer.finish(body)
    if stopped is not None:
        raise type(stopped)("%s; bundle with the finished jobs: %s" % (stopped, path)) from stopped
    return path
