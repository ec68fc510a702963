"""One run of a spec, end to end: expand jobs, fetch datasets, build images, execute, write the bundle.

Nothing measured is lost: a job whose dataset cannot be had, or that cannot run on
this host, is recorded as skipped with the reason and the remedy; a job whose image
cannot be built, or that fails inside its container, is recorded as failed with its
log; the other jobs go on. Each job's result enters the partial bundle the moment the
job ends (dlrepro.store.bundle), so a run killed outright (SIGKILL, a closed terminal,
the OOM killer) leaves every finished job, and what the running one had measured, in a
bundle that ``resume`` completes: only the jobs without an ok result run again (failed
ones too with ``retry_failed``, any named in ``rerun``; dlrepro.run.resumes), each attempt recorded. A run interrupted
(Ctrl-C, SIGTERM) or broken by an unexpected error still publishes a bundle with what finished, the rest
marked; a results folder that cannot be written stops the run with ResultsUnwritable,
the partial bundle kept for a resume. So does a container engine that goes away (EngineLost):
the jobs it lost are recorded "interrupted" (not failed), and a plain resume, once the engine is
back, removes the lost run's containers, takes what they left and runs those jobs again.
"""

import json
import os
import shlex
import signal
import socket
import sys
import time
from collections import OrderedDict
from pathlib import Path

from dlrepro import REPO_ROOT, heartbeat
from dlrepro.errors import CannotRunHere, DatasetError, DlreproError, EngineLost, ResultsUnwritable, RunBroken
from dlrepro.files import sha256_file
from dlrepro.images import build
from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import datasets
from dlrepro.inputs import prepared as preparedmod
from dlrepro.inputs import spec as specmod
from dlrepro.plan import hostinfo
from dlrepro.run import executors, lock, recover, resumes
from dlrepro.run import jobs as jobsmod
from dlrepro.run.executors.base import INTERRUPTED, LOST
from dlrepro.run.options import recorded_slurm
from dlrepro.store import bundle as bundlemod
from dlrepro.store.bundle import BundleWriter
from runner.contract import new_result, utc_now
from runner.data import DataError
from runner.environment import usable_cpus


class Reporter:
    """Progress callbacks; the CLI uses a rich implementation, tests this plain one."""

    def log(self, message):
        print(message)

    def started(self, total):
        pass

    def job_queued(self, job_id):
        pass

    def job_started(self, job_id):
        pass

    def job_finished(self, job_id, result):
        print("%s: %s" % (job_id, result["status"]))


class Silent(Reporter):
    """A Reporter that prints nothing (benchmark scripts print their own tables)."""

    def log(self, message):
        pass

    def job_finished(self, job_id, result):
        pass


def _spec_record(spec, path):
    path = path.resolve()
    shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    return {
        "name": spec.name,
        "file": str(shown),
        "file_sha256": sha256_file(path),
        "sha256": spec.digest(),
        "resolved": spec.model_dump(mode="json"),
    }


def scratch_root(writer, attempt):
    """The folder under which attempt ``attempt`` of ``writer``'s bundle has its supervisors' output: its work
    folder's ``attempt-<n>``, or the one its worker pool (``attempt["pool"]``) gave it."""
    pooled = attempt.get("pool")
    return Path(pooled["scratch"]) if pooled else writer.work_dir / ("attempt-%d" % attempt["number"])


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


class _Run:
    """The mutable state of one run: the bundle being written, the images and datasets used; also the executors'
    sink (``scratch``, ``accept``, ``missing``), so each job's result enters the bundle as the job ends."""

    def __init__(self, writer, reporter, attempt):
        self.writer, self.reporter, self.attempt = writer, reporter, attempt
        # where the supervisors write: the bundle's work folder, or a study's worker pool (dlrepro.run.pool)
        self.root = scratch_root(writer, attempt)
        self.images, self.datasets, self.scratches = {}, {}, 0
        self.jobs, self.running, self.walls, self.ended, self.skipped = {}, {}, [], 0, 0  # progress lines (``doing``)
        self.heartbeat = heartbeat.Heartbeat(reporter.log, self.doing)  # started by ``execute``
        self.earlier = {"images": writer.body.get("images") or [], "datasets": writer.body.get("datasets") or []}

    def records(self):
        """bundle.json's images and datasets: those of earlier attempts and this one's."""
        return {
            "images": _images(self.earlier["images"], self.images.values()),
            "datasets": list(
                {d["name"]: d for d in list(self.earlier["datasets"]) + list(self.datasets.values())}.values()
            ),
        }

    def done(self, job):
        return (self.writer.job_dir(job["id"]) / "result.json").is_file()

    def scratch(self):
        self.scratches += 1
        folder = self.root / str(self.scratches)
        folder.mkdir(parents=True)
        return folder

    def accept(self, job_id, source):
        return self.writer.accept(job_id, source, self.stamp())

    def missing(self, job, status, reason):
        self.record([job], status, reason)

    def launched(self, name, text):
        return self.writer.keep(name, text)

    def submitted(self, record):
        self.writer.submitted(dict(record, attempt=record.get("attempt") or self.attempt["number"]))

    def stamp(self):
        return {key: self.attempt[key] for key in ("number", "host", "executor")}

    def record(self, group, status, reason, remedy=None):
        """Write a host-made result for each job of ``group`` and report it."""
        for job in group:
            result = new_result(job["id"], status, reason=reason, remedy=remedy)
            result["started"] = result["finished"] = utc_now()
            result["attempt"] = self.stamp()
            self.writer.write_result(job["id"], result)
            self.ended += 1
            self.skipped += status == "skipped"
            self.reporter.job_finished(job["id"], result)

    def on_event(self, kind, job_id, result):
        if kind == "queued":
            self.reporter.job_queued(job_id)
        elif kind == "start":
            self.running[job_id] = time.monotonic()
            self.reporter.job_started(job_id)
        elif kind == "end" and result is not None:
            started = self.running.pop(job_id, None)
            if started is not None and result.get("status") == "ok":
                self.walls.append(time.monotonic() - started)
            self.ended += 1
            self.reporter.job_finished(job_id, result)

    def live(self, job_id):
        """The result.json that running job ``job_id`` last wrote into its scratch output, or None."""
        for path in self.root.glob("*/%s/result.json" % job_id):
            try:
                return json.loads(path.read_text())
            except (OSError, ValueError):  # being rewritten at this moment
                return None
        return None

    def doing(self):
        """The run's progress line (heartbeat.Heartbeat): jobs done of the total, each running job's phase and time
        left (heartbeat.job_doing), and the run's time left."""
        running = dict(self.running)
        now, parts, estimates = time.monotonic(), [], []
        for job_id, started in running.items():
            text, left = heartbeat.job_doing(self.jobs.get(job_id, {}), self.live(job_id), now - started)
            estimates.append((now - started, left))
            parts.append(
                "%s: %s, %s in%s"
                % (
                    job_id,
                    text,
                    heartbeat.clock(now - started),
                    ", about %s left" % heartbeat.clock(left) if left is not None else "",
                )
            )
        waiting = max(len(self.jobs) - self.ended - len(running), 0)
        done = "%d of %d jobs done%s" % (
            self.ended,
            len(self.jobs),
            " (%d skipped)" % self.skipped if self.skipped else "",
        )
        if not parts:
            return done + (
                "; ending the jobs' container or process"
                if not waiting
                else "; preparing the next job's image, data or container"
            )
        left = heartbeat.time_left(self.walls, estimates, waiting)
        return "%s, %s; %s" % (
            done,
            "about %s left" % heartbeat.clock(left) if left is not None else "time left known once a job ends",
            "; ".join(parts),
        )

    def log(self, message):
        """A progress line of the run's own work (builds, downloads): printed, and the heartbeat put off."""
        self.heartbeat.touch()
        self.reporter.log(message)

    def dataset(self, candidates):
        """The first of ``candidates`` (dataset names) that the cache holds or can fetch.

        Returns (DatasetRecord, None), or (None, a DatasetError naming every candidate's failure).
        """
        errors = []
        for name in candidates:
            try:
                record = datasets.ensure(name, self.log)
            except DatasetError as exc:
                errors.append(exc)
                continue
            self.datasets[name] = record.record
            return record, None
        if len(errors) == 1:
            return None, errors[0]
        return None, DatasetError(
            "; and, as a fallback, ".join(str(e) for e in errors), " Or: ".join(e.remedy for e in errors if e.remedy)
        )

    def resolve(self, jobs):
        """Fill each job's dataset and weight files; jobs whose files cannot be had are skipped."""
        found, prepared = {}, {}
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
                if section == "data":
                    job["data"]["prepared"] = self.prepared(job["data"], prepared)
            self.writer.write_job(job)
        self.writer.save(**self.records())

    def prepared(self, data, known):
        """dlrepro.inputs.prepared's section for a job's resolved ``data``, once per format, files and options
        (``known``: the run's so far); None where the loader failed on the host (each job then runs it itself, and
        fails with its reason)."""
        key = json.dumps([data["format"], data["files"], data.get("options")], sort_keys=True)
        if key not in known:
            try:
                known[key] = preparedmod.prepare(data, self.log)
            except DataError as exc:
                self.log("%s: not prepared on the host (%s); each job loads it" % (data["name"], exc))
                known[key] = None
        return known[key]

    def execute(self, jobs, options, executor, matrix, build_options):
        self.jobs = {job["id"]: job for job in jobs}
        with self.heartbeat:
            self._execute(jobs, options, executor, matrix, build_options)

    def _execute(self, jobs, options, executor, matrix, build_options):
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
                built = executor.prepare(matrix, framework, version, build_options, self.log, options.allow_ptx_jit)
            except CannotRunHere as exc:
                self.record(group, "skipped", str(exc), exc.remedy)
                continue
            except EngineLost:  # not the image's fault: the run stops, its jobs interrupted
                raise
            except DlreproError as exc:
                self.record(group, "failed", "image for %s: %s" % (framework, exc))
                continue
            if built is not None:
                self.images[(framework, version)] = dict(built.record, jobs=[j["id"] for j in group])
                self.writer.add_image(built)
                self.writer.save(**self.records())
                for job in group:  # the matrix's table of the build's GPU architectures, for the runner's check
                    job["cuda_archs"] = list(built.image.cuda_archs)
                    self.writer.write_job(job)
            executor.run(built, group, self, datasets.root(), self.on_event)


def _stop_lost(exc, writer, state, attempt, left):
    """Record the jobs ``left`` (not run) as interrupted, end the attempt and keep the bundle partial after the
    engine was lost (``exc``); returns the EngineLost to raise: one line naming what was lost, the job that ran,
    the bundle, and the remedy."""
    ran = "while job %s was running" % ", ".join(exc.running) if exc.running else "before a job started"
    state.record(left, LOST, "interrupted by the machine: %s before this job started" % exc)
    attempt.update(finished=utc_now(), interrupted=True, lost=str(exc))
    writer.body.pop("running", None)
    writer.save(**state.records())
    counts = bundlemod.counts(list(writer.statuses().values()))
    return EngineLost(
        "%s %s; the run stopped (%s), its bundle kept partial: %s"
        % (exc, ran, ", ".join("%d %s" % (n, s) for s, n in counts.items() if n), writer.partial),
        "start the engine again (e.g. `sudo systemctl start docker`), then `dlrepro run --resume %s` as soon as it "
        "answers: it runs the interrupted jobs, and an image it builds first waits for the build steps the lost "
        "engine left running on this host" % writer.id,
        exc.running,
    )


def _images(earlier, now):
    """The image records of every attempt: one per image ID, with the jobs that ran in it in any attempt."""
    found = {}
    for image in list(earlier) + list(now):
        key = (image["name"], image["image_id"])
        jobs = (
            found[key]["jobs"] + [j for j in image.get("jobs", []) if j not in found[key]["jobs"]]
            if key in found
            else list(image.get("jobs", []))
        )
        found[key] = dict(image, jobs=jobs)
    return list(found.values())


def _collect_submitted(writer, reporter, wait=True):
    """Take the results of the scheduler arrays that earlier attempts submitted (a detached or killed run), each
    stamped with the attempt that submitted it, waiting for the arrays to end (``wait``) or not (one look);
    returns the ids of the jobs whose arrays were pending."""
    pending = writer.pending()
    if not pending:
        return []
    jobs = [j for r in pending for j in r["jobs"]]
    if wait:
        reporter.log(
            "%s: waiting for %d job(s) of earlier attempts in Slurm array(s) %s"
            % (writer.id, len(jobs), ", ".join(r["array_id"] for r in pending))
        )
        reporter.started(len(jobs))
    attempts = {a["number"]: a for a in writer.body["attempts"]}
    for number in sorted({r["attempt"] for r in pending}):
        state = _Run(writer, reporter, attempts[number])
        executors.collect(
            [r for r in pending if r["attempt"] == number],
            state,
            state.on_event,
            deadline=None if wait else time.time(),
        )
    return jobs


def take_submitted(results_dir=REPO_ROOT / "results", reporter=None):
    """Take into each partial bundle under ``results_dir`` the results that its detached Slurm arrays have
    finished so far, without waiting (``dlrepro bundles`` does, so that its counts are current); bundles that a
    live run is writing are left to it. Returns the ids of the bundles looked at."""
    reporter = reporter or Reporter()
    looked = []
    for row in bundlemod.listing(results_dir):
        if row["state"] == "partial" and row["submitted"]:
            try:
                owner = lock.take(row["folder"])
            except DlreproError:  # a live run (on any host) owns it
                continue
            _collect_submitted(BundleWriter.reopen(row["folder"], owner), reporter, wait=False)
            owner.release()
            looked.append(row["id"])
    return looked


def run(
    spec_name,
    options,
    build_options=None,
    results_dir=REPO_ROOT / "results",
    python=None,
    reporter=None,
    resume=None,
    retry_failed=False,
    memory=None,
    on_start=None,
    slurm=None,
    pool=None,
    rerun=None,
):
    """Run every job of spec ``spec_name`` under ``options`` (dlrepro.run.options.RunOptions); returns the bundle path.

    ``resume``: a bundle (folder, id, ``.<id>.partial`` or "latest") to continue instead of a new one: only
    its jobs without an ok result run (failed ones too with ``retry_failed``, and the job ids ``rerun`` whatever
    their result: e.g. jobs measured beside another load; each earlier result stays under jobs/<id>/attempts/<n>/);
    ``spec_name`` may then be None. Raises DlreproError for a ``rerun`` id that is no job of the bundle.
    ``memory``: the memory limit of each job container in bytes (docker; default: the host's less headroom).
    ``on_start(bundle_id)`` is called once the (partial) bundle exists.
    ``slurm``: the slurm executor's settings {partition, options, max_parallel, detach} (default: none, or on a
    resume those the bundle recorded). A detached Slurm run returns the partial bundle's path at once, its
    jobs queued; a resume of it first waits for them and takes their results (and those of a killed run's
    arrays), then runs only what is still missing.
    ``pool``: a study's WorkerPool (dlrepro.run.pool): the jobs go to its warm supervisors, which outlive the
    run (not with Slurm: one task per job there); the attempt records it (``pool``: {id, scratch}).
    Raises SpecError / DlreproError before anything runs when the spec or options are invalid (or do not
    match the resumed bundle's), and ExecutorError when the chosen executor is unavailable. After that,
    KeyboardInterrupt (Ctrl-C or SIGTERM) and RunBroken (any other error) are raised only once the bundle
    with the finished jobs is complete; their message names it. ResultsUnwritable leaves it partial.
    """
    reporter = reporter or Reporter()
    build_options = build_options or build.BuildOptions()
    if resume:
        of = specmod.load(spec_name).name if spec_name and resume == "latest" else None
        folder = bundlemod.locate(resume, results_dir, partial=True, spec=of)
        if folder.name.endswith(".partial"):  # before anything else (a complete one: once reopened as partial)
            lock.take(folder)  # refused while another run, on any host, owns the bundle
        prior = bundlemod.body(folder)
        spec, spec_path, options = resumes.checked(prior, spec_name, options)
    else:
        spec, spec_path = specmod.load(spec_name), specmod.spec_path(spec_name)
        options = options.model_copy(update={"executor": options.executor or "docker"})
    jobs = jobsmod.expand(spec, options)
    resumes.known(jobs, rerun)
    matrix = matrixmod.load()
    if options.executor in executors.IN_IMAGES:  # a version no image runs: refused before the bundle exists
        matrix.check_versions(options.frameworks, [options.device])
    if slurm is not None and options.executor != "slurm":
        raise DlreproError(
            "--partition, --slurm-option, --max-parallel and --detach go with --executor slurm (this "
            "run's executor is %s)" % options.executor,
            "add --executor slurm, or leave them out",
        )
    if resume and slurm is None and options.executor == prior["options"].get("executor") == "slurm":
        slurm = recorded_slurm(prior.get("executor") or {}, Path(folder) / "bundle.json")
    executor = executors.get(
        options.executor, options.device, options.gpus or options.gpu, python, memory, options.isolation, slurm
    )
    for line in executor.reap():
        reporter.log(line)
    if pool is not None and executor.serves:
        executor.pool = pool
    described = executor.describe()  # asks the engine: before the bundle is touched
    if resume:  # a complete bundle too is locked before it is reopened: one being published is refused
        owner = lock.take(folder)
        try:
            writer = BundleWriter.reopen(folder, owner)
        except BaseException:
            owner.release()
            raise
    else:
        writer = BundleWriter(results_dir, spec.name, jobsmod.digest(spec, options))
        writer.owner = owner = lock.take(writer.partial)
    executor.run_id = writer.id
    if on_start:
        on_start(writer.id)
    attempt = {
        "number": len(writer.body["attempts"]) + 1,
        "started": utc_now(),
        "host": socket.gethostname(),
        "executor": executor.name,
        "command": " ".join(shlex.quote(a) for a in sys.argv),
        "cwd": os.getcwd(),
        "results": str(Path(results_dir).resolve()),
    }
    if executor.pool is not None:
        attempt["pool"] = {"id": pool.id, "scratch": str(pool.out / writer.id / ("attempt-%d" % attempt["number"]))}
    state = _Run(writer, reporter, attempt)
    collected = _collect_submitted(writer, reporter) if resume else []
    try:
        gone = recover.containers_gone(writer)
    except EngineLost:  # nothing was run: the bundle stays partial, for a resume once the engine is back
        owner.release()
        raise
    for line in gone:
        reporter.log(line)
    recovered = recover.recover(writer, state.stamp())
    todo = resumes.to_run(jobs, writer.statuses(), retry_failed, rerun)
    for job in todo:
        writer.retire(job["id"])
        writer.write_job(job)  # written again once its files are resolved
    attempt["jobs"] = [j["id"] for j in todo]
    left_out = jobsmod.left_out(spec, options)
    writer.save(
        command=attempt["command"],
        spec=_spec_record(spec, spec_path),
        options=options.model_dump(mode="json"),
        left_out=left_out,
        attempts=writer.body["attempts"] + [attempt],
        executor=described,
        host=hostinfo.describe(),
        running={"host": attempt["host"], "pid": os.getpid(), "since": attempt["started"]},
        **state.records(),
    )
    if resume:
        reporter.log(
            "resuming %s (attempt %d): %d of %d jobs to run%s%s"
            % (
                writer.id,
                attempt["number"],
                len(todo),
                len(jobs),
                "; took the results of %d submitted job(s)" % len(collected) if collected else "",
                "; took what jobs %s of an earlier attempt left" % ", ".join(recovered) if recovered else "",
            )
        )
    reporter.started(len(todo))
    for item in left_out:
        reporter.log(
            "variant %s%s left out: %s"
            % (item["variant"], " on " + item["framework"] if item["framework"] else "", item["reason"])
        )
    usable = usable_cpus()
    for threads in sorted({j["threads"] for j in todo if j["threads"] and j["threads"] > usable}):
        reporter.log("%d threads on a host where this process may use %d CPUs: oversubscribed" % (threads, usable))
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    stopped = None
    try:
        state.execute(todo, options, executor, matrix, build_options)
    except ResultsUnwritable:
        raise
    except EngineLost as exc:  # not published: the lost containers may still write their scratch output
        lost = _stop_lost(exc, writer, state, attempt, [j for j in todo if not state.done(j)])
        owner.release()
        raise lost from None
    except KeyboardInterrupt as exc:
        stopped = exc
        state.record([j for j in todo if not state.done(j)], "skipped", INTERRUPTED)
    except Exception as exc:  # publish what was measured before reporting the error
        stopped = RunBroken("the run stopped on %s: %s" % (type(exc).__name__, exc))
        state.record([j for j in todo if not state.done(j)], "failed", str(stopped))
    finally:
        signal.signal(signal.SIGTERM, previous)
    attempt.update(finished=utc_now(), interrupted=isinstance(stopped, KeyboardInterrupt))
    if executor.detached and stopped is None:  # its jobs run on: the bundle stays partial, for a resume
        attempt["detached"] = True
        writer.body.pop("running", None)
        writer.save(**state.records())
        owner.release()
        return writer.partial
    with heartbeat.Heartbeat(reporter.log, lambda: "writing the bundle %s (tables, checksums)" % writer.id):
        path = writer.finish(dict(state.records(), interrupted=attempt["interrupted"]))
    owner.release()
    if stopped is not None:
        raise type(stopped)("%s; bundle with the finished jobs: %s" % (str(stopped) or "Ctrl-C", path)) from stopped
    return path
