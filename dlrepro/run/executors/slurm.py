"""The slurm executor: the jobs of an image group go to Slurm as job arrays (one task per job), and each task runs
the same supervisor in the same container as the docker executor, on the node Slurm picked. The batch script,
kept in the bundle (``slurm/*.sbatch``) as the launch record, is ``dlrepro.run.executors.sbatch``'s.

Job folders live in the partial bundle (on the shared file system): each task's supervisor writes its job's
result there and prints ``@dlrepro start|end`` lines into the task's Slurm output file, which the client
follows (``base.follow``, taking only that task's own job id), so a result enters the bundle as its job ends.
The staged jobs (``<scratch>.jobs/<id>/``, each task's mounted read-only) and the tasks' Slurm output and facts
(``<scratch>.slurm/``) are beside the scratch output, never inside it: no task's container, which writes the
scratch output, can change another task's job or the lines the client reads. A task that ends without a result
(cancelled, timed out, failed, its node lost) is recorded with Slurm's state and reason
(``dlrepro.run.slurm_state``): NODE_FAIL, PREEMPTED and BOOT_FAIL as "interrupted" (the machine's fault),
CANCELLED and DEADLINE as skipped (a resume runs both again), the others as failed; what an unfinished job had
measured is kept (``base.settle``). A task ever suspended is "interrupted" too. A state query that fails is
never read as "the task is gone": see ``collect``.

With ``detach`` the client returns once the arrays are submitted: the bundle stays partial and records each
submission (bundle.json ``submitted``: array id, script, jobs); a resume of it (``collect``) first waits for
those arrays and takes their results, and only then runs what is still missing.
"""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from dlrepro import engine
from dlrepro.errors import ExecutorError
from dlrepro.run import slurm_state
from dlrepro.run.executors.base import LOST, FolderSink, _collect, _stage, follow
from dlrepro.run.executors.docker import DockerExecutor
from dlrepro.run.executors.sbatch import TASKS, job_gpus, script, stage_of, task_args, tasks_of, time_minutes
from runner import contract

POLL_S = 2.0
CANCEL_WAIT_S = 60
SKIPPED_STATES = frozenset(["CANCELLED", "DEADLINE"])
MACHINE_STATES = frozenset(["NODE_FAIL", "PREEMPTED", "BOOT_FAIL"])  # the machine's fault, not the job's
ABSENT_POLLS = 3  # answered polls in a row that must not list a task, its output not growing, before it is gone
UNANSWERED_S = 600  # Slurm unanswered this long: the wait stops, the rest stays for a later collect


def _tasks(sub):
    """The tasks' folder of submission record ``sub`` (one recorded before it was kept beside the scratch output
    has it inside: ``<scratch>/.slurm``)."""
    return Path(sub["tasks"]) if sub.get("tasks") else Path(sub["scratch"]) / TASKS


def _sbatch(path, env=None):
    """Submit the batch script at ``path``; returns the array's job id. Raises ExecutorError with sbatch's message."""
    try:
        proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExecutorError("sbatch could not submit %s: %s" % (path, exc)) from None
    if proc.returncode != 0:
        raise ExecutorError("sbatch refused %s: %s" % (path, proc.stderr.strip() or proc.stdout.strip()))
    return proc.stdout.strip().split(";")[0]


class _Output:
    """A task's Slurm output file, read as it grows: ``lines()`` gives the complete new lines (``offset``: the
    bytes read so far). A file that shrank (Slurm truncates it when a task starts again) is read again from its
    start."""

    def __init__(self, path):
        self.path, self.offset, self.pending, self.seen = Path(path), 0, "", []

    def size(self):
        """The file's size in bytes now (0 before it exists)."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def lines(self, final=False):
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size < self.offset:
                    self.offset, self.pending = 0, ""
                f.seek(self.offset)
                data = f.read()
        except OSError:
            data = b""
        self.offset += len(data)
        *found, self.pending = (self.pending + data.decode("utf-8", "replace")).split("\n")
        if final and self.pending:
            found, self.pending = found + [self.pending], ""
        self.seen = (self.seen + [line for line in found if line.strip() and not line.startswith("@dlrepro")])[-5:]
        return [line + "\n" for line in found]


class _TaskSink:
    """The run's sink for the jobs of one submission: each result taken gets the job's Slurm record (its task's
    facts, and Slurm's final state when the task ended without a result) under ``slurm``. A job whose task was
    ever suspended (seen SUSPENDED by a poll, in ``suspended``, or noted by its script) is recorded with the
    suspensions; an ok result of it becomes "interrupted" (its timing spans the pause), which a resume reruns."""

    def __init__(self, sink, submission):
        self.sink, self.submission, self.ended, self.suspended, self.last = sink, submission, {}, set(), None

    def _task_file(self, job_id, suffix):
        sub = self.submission
        return _tasks(sub) / ("%s_%d%s" % (sub["array_id"], sub["jobs"].index(job_id), suffix))

    def record(self, job_id):
        sub = self.submission
        try:
            found = json.loads(self._task_file(job_id, ".json").read_text())
        except (OSError, ValueError):  # the task never started
            found = {"array_job_id": sub["array_id"], "array_task_id": sub["jobs"].index(job_id)}
        found.update(script=sub["script"], gres="gpu:%d" % sub["gpus"] if sub["gpus"] else None)
        task = self.ended.get(job_id)
        if task is not None:
            found.update(
                state=task.state,
                reason=task.reason,
                exit_code=task.exit_code,
                node=found.get("node") or task.node,
                job_id=found.get("job_id") or task.job_id,
                state_source=task.source,
            )
        try:
            noted = self._task_file(job_id, ".suspended").read_text().split("\n")
        except OSError:
            noted = []
        if noted or job_id in self.suspended:
            found["suspensions"] = [line for line in noted if line] or ["SUSPENDED (seen by the client's poll)"]
        return found

    def accept(self, job_id, source):
        path = Path(source) / "result.json"
        result = json.loads(path.read_text())
        result["slurm"] = self.record(job_id)
        if result["slurm"].get("suspensions") and result["status"] == "ok":
            result.update(
                status=LOST,
                reason="Slurm suspended its task while the job ran (%s): its "
                "timing spans the pause, so it counts as interrupted and a resume runs it again; what it "
                "measured is kept" % "; ".join(result["slurm"]["suspensions"]),
            )
        contract.write_json(str(path), result)
        self.last = self.sink.accept(job_id, source)
        return self.last

    def missing(self, job, status, reason):
        folder = Path(self.submission["scratch"]) / job["id"]
        folder.mkdir(parents=True, exist_ok=True)
        result = contract.new_result(job["id"], status, reason=reason)
        result["started"] = result["finished"] = contract.utc_now()
        contract.write_json(str(folder / "result.json"), result)
        return self.accept(job["id"], folder)


def _ending(task, output):
    """(status, reason) of a job whose task ended without a result: Slurm's state (``task``, None when Slurm no
    longer knows it: absent for ABSENT_POLLS answered polls, its output no longer growing) and the end of the
    task's output. NODE_FAIL, PREEMPTED and BOOT_FAIL are the machine's faults: "interrupted"."""
    said = "; its output ends: %s" % " | ".join(output.seen) if output.seen else ""
    if task is None:
        return (
            "failed",
            "Slurm no longer knows this job's task (no accounting, no jobcomp file; absent from %d "
            "answered polls, its output no longer growing) and it left no result%s" % (ABSENT_POLLS, said),
        )
    status = LOST if task.state in MACHINE_STATES else "skipped" if task.state in SKIPPED_STATES else "failed"
    return status, "Slurm: %s, without a result%s" % (task.describe(), said)


class _Watch:
    """One array task being waited for: its submission, sink, job id and output, and how many answered polls in
    a row have not listed it (``absent``) at what output size (``size``)."""

    def __init__(self, sub, task_sink, job_id, output):
        self.sub, self.task_sink, self.job_id, self.output, self.absent, self.size = (
            sub,
            task_sink,
            job_id,
            output,
            0,
            -1,
        )

    def gone(self, task):
        """Whether this poll (``task``: Slurm's answer for it, None when not listed) shows the task ended: a
        final state, or absent from ABSENT_POLLS answered polls in a row while its output did not grow."""
        if task is not None:
            self.absent = 0
            return not task.active
        size = self.output.size()
        self.absent, self.size = (self.absent + 1 if size == self.size else 1), size
        return self.absent >= ABSENT_POLLS


class Unanswered(ExecutorError):
    """Slurm could not be asked about the tasks for longer than ``collect``'s ``unanswered_s``."""


def collect(submissions, sink, on_event, env=None, poll_s=POLL_S, deadline=None, unanswered_s=UNANSWERED_S):
    """Wait for the arrays of ``submissions`` (bundle.json ``submitted`` records) and take each job's result into
    ``sink`` as it ends (``on_event`` "start"/"end" as the supervisor reports them); a job whose task ends
    without one is recorded with Slurm's state and reason. Each submission is marked collected in the sink
    once all its jobs are taken; its scratch folder is removed then only if every job ended with its own
    result (a task that ended otherwise may leave a container writing there: the bundle's publication removes
    it). ``deadline`` (time.time() seconds): stop waiting then. While Slurm cannot be asked
    (slurm_state.tasks None) nothing is decided from its silence: results still enter as their jobs report
    them, and after ``unanswered_s`` seconds of it Unanswered is raised: the jobs not yet taken have no result
    and their submissions stay uncollected, for a later collect (a resume, ``dlrepro bundles``)."""
    waiting, sinks = {}, {}
    for sub in submissions:
        task_sink = sinks[id(sub)] = _TaskSink(sink, sub)
        for index, job_id in enumerate(sub["jobs"]):
            waiting[(sub["array_id"], index)] = _Watch(
                sub, task_sink, job_id, _Output(_tasks(sub) / ("%s_%d.out" % (sub["array_id"], index)))
            )
    unanswered_since = None
    while waiting:
        states = slurm_state.tasks(waiting, env)
        if states is None:
            unanswered_since = unanswered_since or time.time()
        else:
            unanswered_since = None
        for key, watch in list(waiting.items()):
            taken = []

            def event(kind, found_id, result, taken=taken):
                if kind == "end" and result is not None:
                    taken.append(found_id)
                on_event(kind, found_id, result)

            task = states.get(key) if states is not None else None
            if task is not None and task.state == "SUSPENDED":
                watch.task_sink.suspended.add(watch.job_id)
            ended = states is not None and watch.gone(task)
            follow(watch.output.lines(final=ended), watch.sub["scratch"], watch.task_sink, event, [watch.job_id])
            if not taken and ended:
                watch.task_sink.ended[watch.job_id] = task
                status, reason = _ending(task, watch.output)
                _collect([{"id": watch.job_id}], watch.sub["scratch"], watch.task_sink, set(), reason, status)
                on_event("end", watch.job_id, watch.task_sink.last)
                taken.append(watch.job_id)
            if taken:
                del waiting[key]
        for sub in submissions:
            if not sub.get("collected") and not any(w.sub is sub for w in waiting.values()):
                sub["collected"] = contract.utc_now()
                sink.submitted(sub)
                sharing = [w for w in waiting.values() if w.sub["scratch"] == sub["scratch"]]
                if not sharing and not any(sinks[id(s)].ended for s in submissions if s["scratch"] == sub["scratch"]):
                    for folder in (sub["scratch"], _tasks(sub), stage_of(sub["scratch"])):
                        shutil.rmtree(folder, ignore_errors=True)
        if waiting:
            if unanswered_since is not None and time.time() - unanswered_since > unanswered_s:
                raise Unanswered(
                    "Slurm has not answered for %d s: %d job(s) of array(s) %s may still run, none is "
                    "recorded as ended" % (unanswered_s, len(waiting), ", ".join(sorted({a for a, _ in waiting}))),
                    "`dlrepro run --resume <bundle>` once scontrol answers again takes their results",
                )
            if deadline is not None and time.time() > deadline:
                return
            time.sleep(poll_s)


def cluster_check(partition=None, max_parallel=None, env=None):
    """Raise ExecutorError (naming the option and the fix) when Slurm cannot take this run: no sbatch on PATH,
    ``max_parallel`` below 1, or a ``partition`` the cluster does not have."""
    if max_parallel is not None and max_parallel < 1:
        raise ExecutorError(
            "--max-parallel %s: expected a number of tasks >= 1" % max_parallel,
            "give --max-parallel 1 or more, or leave it out (no cap)",
        )
    if shutil.which("sbatch") is None:
        raise ExecutorError(
            "--executor slurm: no sbatch on PATH (this host is not a Slurm submit host)",
            "run on a login node of the cluster (with slurm-client installed), or use --executor docker",
        )
    if partition:
        known = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, env=env).stdout.split()
        if partition not in known:
            raise ExecutorError(
                "--partition %s: the cluster has no such partition (it has: %s)"
                % (partition, ", ".join(sorted(set(known))) or "none that sinfo lists"),
                "give one of those, or leave --partition out for the cluster's default",
            )


class SlurmExecutor(DockerExecutor):
    """Runs each image group as Slurm job arrays, one task per job, in the docker executor's container on the
    node Slurm picks (see the module's text). The image is built (or found) on this host's engine; the nodes'
    engines must have it too (the same engine, a registry, or ``docker save | docker load``)."""

    name = "slurm"
    serves = False  # one array task per job, each in a container of its own: no study-wide worker pool

    def __init__(
        self,
        device="cpu",
        gpu=0,
        memory=None,
        partition=None,
        options=(),
        max_parallel=None,
        detach=False,
        isolation="worker",
    ):
        """``partition``: sbatch --partition (None: the cluster's default); ``options``: more sbatch options, e.g.
        ["--account=lab"]; ``max_parallel``: at most this many tasks of an array at once; ``detach``: return once
        submitted; ``isolation``: the supervisor's, as the docker executor's. Raises ExecutorError for options
        Slurm cannot take (``cluster_check``)."""
        cluster_check(partition, max_parallel)
        super().__init__(device, gpu, memory, isolation)
        self.cpus = None  # not the submitting process's: each task's containers take its allocation's (sbatch)
        self.partition, self.options, self.max_parallel = partition, list(options or ()), max_parallel
        self.detach, self.arrays = detach, []

    @classmethod
    def _made(cls, device, gpu, memory, isolation, slurm):
        return cls(device, gpu, memory, isolation=isolation, **(slurm or {}))

    def preflight(self):
        """None: GPUs are the nodes', given by Slurm's GRES; a node that cannot pass them is named in the job."""
        return None

    def reap(self):
        """Nothing: a task's container is removed by its job script's trap (and the site's epilog)."""
        return []

    def cancel(self):
        if self.arrays:
            subprocess.run(["scancel"] + list(self.arrays), capture_output=True)

    def run(self, image, jobs, out, data_root, on_event):
        """Submit ``jobs`` as arrays and, unless detached, wait for them; every job ends with a result in the sink
        (the not detached case), a job that could not be submitted failed with sbatch's message."""
        sink = out if hasattr(out, "accept") else FolderSink(out)
        scratch = Path(sink.scratch())
        user = self._user(scratch)
        tasks_of(scratch).mkdir()
        for job in jobs:
            (stage_of(scratch) / job["id"]).mkdir(parents=True)
            _stage([job], str(stage_of(scratch) / job["id"]))
        shapes = {}
        for job in jobs:
            shapes.setdefault((job.get("threads"), job_gpus(job)), []).append(job)
        submissions = []
        for (threads, gpus), group in shapes.items():
            suffix = "".join(["-t%d" % threads if threads else "", "-gpu%d" % gpus if gpus else ""])
            name = "slurm/%s-%s-%s%s.sbatch" % (scratch.parent.name, scratch.name, image.image.name, suffix)
            args = task_args(
                image.tag, user, scratch, data_root, self.run_id or "", gpus, self.supervisor("python", "/jobs", "/out")
            )
            text = script(
                args,
                engine.name(),
                [j["id"] for j in group],
                scratch,
                self.run_id or "run",
                threads,
                gpus,
                time_minutes(group),
                self.partition,
                self.options,
                self.max_parallel,
                self.memory,
            )
            try:
                array_id = _sbatch(sink.launched(name, text))
            except ExecutorError as exc:
                for job in group:
                    sink.missing(job, "failed", str(exc))
                continue
            self.arrays.append(array_id)
            sub = {
                "executor": self.name,
                "array_id": array_id,
                "script": name,
                "scratch": str(scratch),
                "tasks": str(tasks_of(scratch)),
                "jobs": [j["id"] for j in group],
                "gpus": gpus,
                "threads": threads,
                "engine": engine.name(),
                "submitted": contract.utc_now(),
            }
            sink.submitted(sub)
            submissions.append(sub)
            for job in group:
                on_event("queued", job["id"], None)
        if self.detach:
            self.detached = self.detached or bool(submissions)
            return
        try:
            collect(submissions, sink, on_event)
        except Unanswered:  # the bundle stays partial with the submissions, as a detached run's
            self.detached = True
        except BaseException:  # interrupted: cancel the arrays, take what they leave, let the caller publish
            self.cancel()
            collect(submissions, sink, on_event, deadline=time.time() + CANCEL_WAIT_S)
            raise

    def describe(self):
        return dict(
            super().describe(),
            partition=self.partition,
            slurm_options=self.options,
            max_parallel=self.max_parallel,
            detach=self.detach,
        )
