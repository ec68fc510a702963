"""The slurm executor: the jobs of an image group go to Slurm as job arrays (one task per job), and each task runs
the same supervisor in the same container as the docker executor, on the node Slurm picked.

For each (image group, threads, GPU count) one batch script is written (``script``, a pure function): its
``#SBATCH`` lines ask for the array (``%N`` caps how many tasks run at once), ``--gres=gpu:N`` for cuda jobs,
``--cpus-per-task`` = the job's threads when set, ``--time`` = the longest job time limit plus a margin for the
container's start; its body names the container per task (``dlrepro-<bundle>-<array>_<task>``), traps TERM to
kill it, writes the task's Slurm facts (job id, node, CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS) to a small JSON
file, and runs ``docker run`` (or ``podman run``) with the command line made from the docker executor's
``create_args`` (``docker.run_command``), so the isolation has one definition. The container's standard input
is a pipe that the task holds, so it ends with the task even when the trap cannot run. The script is kept in
the bundle (``slurm/*.sbatch``) as the launch record.

Job folders live in the partial bundle (on the shared file system): each task's supervisor writes its job's
result there and prints ``@dlrepro start|end`` lines into the task's Slurm output file, which the client
follows (``base.follow``), so a result enters the bundle as its job ends. A task that ends without a result
(cancelled, timed out, failed, its node lost) is recorded with Slurm's state and reason
(``dlrepro.run.slurm_state``): CANCELLED, PREEMPTED, DEADLINE and BOOT_FAIL as skipped (a resume runs the job
again), the others as failed; what an unfinished job had measured is kept (``base.settle``).

With ``detach`` the client returns once the arrays are submitted: the bundle stays partial and records each
submission (bundle.json ``submitted``: array id, script, jobs); a resume of it (``collect``) first waits for
those arrays and takes their results, and only then runs what is still missing.
"""
import json
import math
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from dlrepro import engine
from dlrepro.errors import ExecutorError
from dlrepro.run import slurm_state
from dlrepro.run.executors.base import RUN_LABEL, FolderSink, _collect, _stage, follow
from dlrepro.run.executors.docker import DockerExecutor, create_args, gpu_flags, run_command
from runner import contract

MARGIN_S = 300  # --time beyond the job's own time limit: the container's start and the supervisor's record
POLL_S = 2.0
CANCEL_WAIT_S = 60
SLURM_LABEL = "org.dlrepro.slurm.job"
TASKS, STAGE = ".slurm", ".jobs"  # in a submission's scratch folder: task files and output; staged jobs
SKIPPED_STATES = frozenset(["CANCELLED", "PREEMPTED", "DEADLINE", "BOOT_FAIL"])
_EXPANSION = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:\[@\])?\}")


def job_gpus(job):
    """GPUs a job asks Slurm for: a data-parallel job's ranks (one GPU each; 1 for a plain job) for cuda jobs,
    0 for CPU jobs."""
    return int(job.get("ranks") or 1) if job["device"] == "cuda" else 0


def time_minutes(jobs):
    """``--time`` of an array, in minutes: the longest job time limit (``timeout_s``) plus MARGIN_S."""
    return int(math.ceil((max(int(j["timeout_s"]) for j in jobs) + MARGIN_S) / 60.0))


def shell_word(word):
    """``word`` quoted for bash, with its ``${NAME}`` (and ``${NAME[@]}``) expansions left to the shell."""
    pieces, expansions = _EXPANSION.split(word), _EXPANSION.findall(word)
    text = shlex.quote(pieces[0]) if pieces[0] else ""
    for expansion, piece in zip(expansions, pieces[1:]):
        text += '"%s"' % expansion + (shlex.quote(piece) if piece else "")
    return text or "''"


def _can_pass_gpus(engine_name):
    """A shell test that is true where ``engine_name`` on the node can pass NVIDIA GPUs into containers."""
    if engine_name == "podman":
        return "[ -e /etc/cdi/nvidia.yaml ] || [ -e /var/run/cdi/nvidia.yaml ]"
    return ("docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '\"nvidia\"' || "
            "command -v nvidia-container-runtime-hook >/dev/null")


def task_args(tag, user, scratch, data_root, memory, bundle_id, gpus, command=None):
    """``create_args`` of a task's container: the staged job of this task (``${DLREPRO_JOB}``) and the shared
    scratch output; labelled with the bundle and the task's own Slurm job id (what a site's epilog removes),
    not with the submitting host and process (which the docker executor's reaping reads); a cuda task's
    container is told the GPU index Slurm gave it (``DLREPRO_GPU``) and gets its GPUs from the script."""
    args = create_args(tag, user, "%s/%s/${DLREPRO_JOB}" % (scratch, STAGE), scratch, data_root, memory=memory,
                       labels={RUN_LABEL: bundle_id, SLURM_LABEL: "${SLURM_JOB_ID}"}, command=command)
    if gpus:  # the first of them: a data-parallel job's ranks take all that Slurm gave
        args["environment"]["DLREPRO_GPU"] = "${first_gpu}"
    return args


def script(args, engine_name, job_ids, scratch, bundle_id, threads=None, gpus=0, minutes=35, partition=None,
           options=(), max_parallel=None):
    """The batch script (text) of one array: task i runs job ``job_ids[i]`` in the container of ``args``
    (``task_args``) through ``engine_name``'s CLI; Slurm's output and each task's facts go to
    ``scratch``/.slurm/. ``threads``: --cpus-per-task (None: Slurm's default); ``gpus``: --gres=gpu:N (0: none);
    ``minutes``: --time; ``partition``: --partition (None: the cluster's default); ``options``: further sbatch
    options, one ``#SBATCH`` line each; ``max_parallel``: the array's %N (None: no cap)."""
    tasks = "%s/%s" % (scratch, TASKS)
    lines = ["#!/bin/bash",
             "# dlrepro: one Slurm array task per job of bundle %s, each in its own %s container (kept in the "
             "bundle as the launch record)" % (bundle_id, engine_name),
             "#SBATCH --job-name=dlrepro-%s" % bundle_id,
             "#SBATCH --array=0-%d%s" % (len(job_ids) - 1, "%%%d" % max_parallel if max_parallel else ""),
             "#SBATCH --output=%s/%%A_%%a.out" % tasks,
             "#SBATCH --time=%d" % minutes]
    lines += ["#SBATCH --cpus-per-task=%d" % threads] if threads else []
    lines += ["#SBATCH --gres=gpu:%d" % gpus] if gpus else []
    lines += ["#SBATCH --partition=%s" % partition] if partition else []
    lines += ["#SBATCH %s" % option for option in options]
    run = run_command(args, engine_name,
                      "dlrepro-%s-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" % bundle_id)
    image = run.index(args["image"])
    run = run[:image] + ["${gpu[@]}"] + run[image:]
    lines += [
        "set -u",
        "jobs=(%s)" % " ".join(shlex.quote(j) for j in job_ids),
        "DLREPRO_JOB=${jobs[$SLURM_ARRAY_TASK_ID]}",
        "task=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}",
        "name=dlrepro-%s-$task" % bundle_id,
        "# what this task got from Slurm, for its job's result (rendezvous and addresses, too, belong here, "
        "never inside the container)",
        "printf '{\"job_id\": \"%%s\", \"array_job_id\": \"%%s\", \"array_task_id\": %%s, \"node\": \"%%s\", "
        "\"partition\": \"%%s\", \"cuda_visible_devices\": \"%%s\", \"slurm_job_gpus\": \"%%s\"}\\n' "
        "\"$SLURM_JOB_ID\" \"$SLURM_ARRAY_JOB_ID\" \"$SLURM_ARRAY_TASK_ID\" \"${SLURMD_NODENAME:-}\" "
        "\"${SLURM_JOB_PARTITION:-}\" \"${CUDA_VISIBLE_DEVICES:-}\" \"${SLURM_JOB_GPUS:-}\" > %s/$task.json"
        % shell_word(tasks),
        "gpu=()",
        "first_gpu=${CUDA_VISIBLE_DEVICES:-}",
        "first_gpu=${first_gpu%%,*}  # a data-parallel job's ranks take every GPU Slurm gave, rank 0 the first",
        "if [ -n \"${CUDA_VISIBLE_DEVICES:-}\" ]; then",
        "  if %s; then" % _can_pass_gpus(engine_name)]
    if engine_name == "podman":
        lines += ["    for i in ${CUDA_VISIBLE_DEVICES//,/ }; do gpu+=(%s); done"
                  % " ".join(shell_word(w) for w in gpu_flags(engine_name, ["${i}"]))]
    else:
        lines += ["    gpu=(%s)" % " ".join(shell_word(w) for w in gpu_flags(engine_name, ["${CUDA_VISIBLE_DEVICES}"]))]
    lines += [
        "  else",
        "    echo \"dlrepro: %s on ${SLURMD_NODENAME:-this node} cannot pass GPUs into containers (no NVIDIA "
        "runtime or CDI spec); GPU(s) $CUDA_VISIBLE_DEVICES stay outside\"" % engine_name,
        "  fi",
        "fi",
        "if ! %s image inspect %s >/dev/null 2>&1; then" % (engine_name, shell_word(args["image"])),
        "  echo \"dlrepro: image %s is not in %s on node ${SLURMD_NODENAME:-?}: build or load it there\"; exit 3"
        % (args["image"], engine_name),
        "fi",
        "exec 3< <(exec sleep infinity)  # the container's standard input: it closes when this task ends",
        "keeper=$!",
        "trap '%s kill \"$name\" >/dev/null 2>&1; %s rm -f \"$name\" >/dev/null 2>&1; kill \"$keeper\" "
        "2>/dev/null; exit 143' TERM INT" % (engine_name, engine_name),
        _command_lines(run, run.index(args["image"])) + " <&3 &",
        "wait $!",
        "status=$?",
        "kill \"$keeper\" 2>/dev/null",
        "exit $status",
        ""]
    return "\n".join(lines)


def _command_lines(words, image):
    """``words`` as one shell command over several lines: a line per flag (with its value) up to the image
    (index ``image``), then the image and its command."""
    lines = [[shell_word(words[0]), shell_word(words[1])]]
    for word in words[2:image]:
        if word.startswith("-") or word.startswith("${"):
            lines.append([])
        lines[-1].append(shell_word(word))
    lines.append([shell_word(w) for w in words[image:]])
    return " \\\n    ".join(" ".join(line) for line in lines)


def _sbatch(path, env=None):
    """Submit the batch script at ``path``; returns the array's job id. Raises ExecutorError with sbatch's message."""
    try:
        proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True, timeout=120,
                              env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExecutorError("sbatch could not submit %s: %s" % (path, exc)) from None
    if proc.returncode != 0:
        raise ExecutorError("sbatch refused %s: %s" % (path, proc.stderr.strip() or proc.stdout.strip()))
    return proc.stdout.strip().split(";")[0]


class _Output:
    """A task's Slurm output file, read as it grows: ``lines()`` gives the complete new lines."""

    def __init__(self, path):
        self.path, self.offset, self.pending, self.seen = Path(path), 0, "", []

    def lines(self, final=False):
        try:
            with open(self.path, "rb") as f:
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
    facts, and Slurm's final state when the task ended without a result) under ``slurm``."""

    def __init__(self, sink, submission):
        self.sink, self.submission, self.ended, self.last = sink, submission, {}, None

    def record(self, job_id):
        sub = self.submission
        index = sub["jobs"].index(job_id)
        path = Path(sub["scratch"]) / TASKS / ("%s_%d.json" % (sub["array_id"], index))
        try:
            found = json.loads(path.read_text())
        except (OSError, ValueError):  # the task never started
            found = {"array_job_id": sub["array_id"], "array_task_id": index}
        found.update(script=sub["script"], gres="gpu:%d" % sub["gpus"] if sub["gpus"] else None)
        task = self.ended.get(job_id)
        if task is not None:
            found.update(state=task.state, reason=task.reason, exit_code=task.exit_code, node=found.get("node")
                         or task.node, job_id=found.get("job_id") or task.job_id, state_source=task.source)
        return found

    def accept(self, job_id, source):
        path = Path(source) / "result.json"
        result = json.loads(path.read_text())
        result["slurm"] = self.record(job_id)
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
    longer knows it) and the end of the task's output."""
    said = "; its output ends: %s" % " | ".join(output.seen) if output.seen else ""
    if task is None:
        return "failed", "Slurm no longer knows this job's task (no accounting, no jobcomp file) and it left no " \
                         "result%s" % said
    status = "skipped" if task.state in SKIPPED_STATES else "failed"
    return status, "Slurm: %s, without a result%s" % (task.describe(), said)


def collect(submissions, sink, on_event, env=None, poll_s=POLL_S, deadline=None):
    """Wait for the arrays of ``submissions`` (bundle.json ``submitted`` records) and take each job's result into
    ``sink`` as it ends (``on_event`` "start"/"end" as the supervisor reports them); a job whose task ends
    without one is recorded with Slurm's state and reason. Each submission is marked collected in the sink
    once all its jobs are taken. ``deadline`` (time.time() seconds): stop waiting then (the rest stays)."""
    waiting = {}
    for sub in submissions:
        task_sink = _TaskSink(sink, sub)
        for index, job_id in enumerate(sub["jobs"]):
            waiting[(sub["array_id"], index)] = (sub, task_sink, job_id,
                                                 _Output(Path(sub["scratch"]) / TASKS / ("%s_%d.out" % (sub["array_id"], index))))
    while waiting:
        states = slurm_state.tasks(waiting, env)
        for key, (sub, task_sink, job_id, output) in list(waiting.items()):
            taken = []

            def event(kind, found_id, result, taken=taken):
                if kind == "end" and result is not None:
                    taken.append(found_id)
                on_event(kind, found_id, result)

            task = states.get(key)
            follow(output.lines(final=task is None or not task.active), sub["scratch"], task_sink, event)
            if not taken and (task is None or not task.active):
                task_sink.ended[job_id] = task
                status, reason = _ending(task, output)
                _collect([{"id": job_id}], sub["scratch"], task_sink, set(), reason, status)
                on_event("end", job_id, task_sink.last)
                taken.append(job_id)
            if taken:
                del waiting[key]
        for sub in submissions:
            if not sub.get("collected") and not any(s is sub for s, _, _, _ in waiting.values()):
                sub["collected"] = contract.utc_now()
                sink.submitted(sub)
                if not any(s["scratch"] == sub["scratch"] for s, _, _, _ in waiting.values()):  # shared by its arrays
                    shutil.rmtree(sub["scratch"], ignore_errors=True)
        if waiting:
            if deadline is not None and time.time() > deadline:
                return
            time.sleep(poll_s)


def cluster_check(partition=None, max_parallel=None, env=None):
    """Raise ExecutorError (naming the option and the fix) when Slurm cannot take this run: no sbatch on PATH,
    ``max_parallel`` below 1, or a ``partition`` the cluster does not have."""
    if max_parallel is not None and max_parallel < 1:
        raise ExecutorError("--max-parallel %s: expected a number of tasks >= 1" % max_parallel,
                            "give --max-parallel 1 or more, or leave it out (no cap)")
    if shutil.which("sbatch") is None:
        raise ExecutorError("--executor slurm: no sbatch on PATH (this host is not a Slurm submit host)",
                            "run on a login node of the cluster (with slurm-client installed), or use --executor docker")
    if partition:
        known = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, env=env).stdout.split()
        if partition not in known:
            raise ExecutorError("--partition %s: the cluster has no such partition (it has: %s)"
                                % (partition, ", ".join(sorted(set(known))) or "none that sinfo lists"),
                                "give one of those, or leave --partition out for the cluster's default")


class SlurmExecutor(DockerExecutor):
    """Runs each image group as Slurm job arrays, one task per job, in the docker executor's container on the
    node Slurm picks (see the module's text). The image is built (or found) on this host's engine; the nodes'
    engines must have it too (the same engine, a registry, or ``docker save | docker load``)."""
    name = "slurm"

    def __init__(self, device="cpu", gpu=0, memory=None, partition=None, options=(), max_parallel=None,
                 detach=False, isolation="worker"):
        """``partition``: sbatch --partition (None: the cluster's default); ``options``: more sbatch options, e.g.
        ["--account=lab"]; ``max_parallel``: at most this many tasks of an array at once; ``detach``: return once
        submitted; ``isolation``: the supervisor's, as the docker executor's. Raises ExecutorError for options
        Slurm cannot take (``cluster_check``)."""
        cluster_check(partition, max_parallel)
        super().__init__(device, gpu, memory, isolation)
        self.partition, self.options, self.max_parallel = partition, list(options or ()), max_parallel
        self.detach, self.arrays = detach, []

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
        (scratch / TASKS).mkdir()
        for job in jobs:
            (scratch / STAGE / job["id"]).mkdir(parents=True)
            _stage([job], str(scratch / STAGE / job["id"]))
        shapes = {}
        for job in jobs:
            shapes.setdefault((job.get("threads"), job_gpus(job)), []).append(job)
        submissions = []
        for (threads, gpus), group in shapes.items():
            suffix = "".join(["-t%d" % threads if threads else "", "-gpu%d" % gpus if gpus else ""])
            name = "slurm/%s-%s-%s%s.sbatch" % (scratch.parent.name, scratch.name, image.image.name, suffix)
            args = task_args(image.tag, user, scratch, data_root, self.memory, self.run_id or "", gpus,
                             self.supervisor("python", "/jobs", "/out"))
            text = script(args, engine.name(), [j["id"] for j in group], scratch, self.run_id or "run", threads, gpus,
                          time_minutes(group), self.partition, self.options, self.max_parallel)
            try:
                array_id = _sbatch(sink.launched(name, text))
            except ExecutorError as exc:
                for job in group:
                    sink.missing(job, "failed", str(exc))
                continue
            self.arrays.append(array_id)
            sub = {"executor": self.name, "array_id": array_id, "script": name, "scratch": str(scratch),
                   "jobs": [j["id"] for j in group], "gpus": gpus, "threads": threads, "engine": engine.name(),
                   "submitted": contract.utc_now()}
            sink.submitted(sub)
            submissions.append(sub)
            for job in group:
                on_event("queued", job["id"], None)
        if self.detach:
            self.detached = self.detached or bool(submissions)
            return
        try:
            collect(submissions, sink, on_event)
        except BaseException:  # interrupted: cancel the arrays, take what they leave, let the caller publish
            self.cancel()
            collect(submissions, sink, on_event, deadline=time.time() + CANCEL_WAIT_S)
            raise

    def describe(self):
        return dict(super().describe(), partition=self.partition, slurm_options=self.options,
                    max_parallel=self.max_parallel, detach=self.detach)
