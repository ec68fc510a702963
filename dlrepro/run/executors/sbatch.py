"""The batch script of a Slurm array (``script``, a pure function): one task per job, each running the docker
executor's container on the node Slurm picked.

For each (image group, threads, GPU count) one script is written: its ``#SBATCH`` lines ask for the array
(``%N`` caps how many tasks run at once), ``--gres=gpu:N`` for cuda jobs, ``--cpus-per-task`` = the job's
threads when set, ``--time`` = the longest job time limit plus a margin for the container's start,
``--no-requeue``, and the user's ``--slurm-option`` values (each checked to be one sbatch option: a newline
would make the rest of it a command of the script); its body names the container per task
(``dlrepro-<bundle>-<array>_<task>``), traps TERM to kill it (TSTP/CONT to pause and unpause it), finds the
task's host GPUs, CPUs and memory limit (``binding_lines``: the engine starts the container outside the job's
cgroup, so it gets them as flags), writes the task's Slurm facts and that binding to a small JSON file, and
runs ``docker run`` (or ``podman run``) with the command line made from the docker executor's ``create_args``
(``docker.run_command``), so the isolation has one definition. The container's standard input is a pipe that
the task holds, so it ends with the task even when the trap cannot run. The script runs under ``set -u`` on
bash 4.2 too (RHEL/CentOS 7): every array is expanded as ``${a[@]+"${a[@]}"}``, which an older bash does not
take as unbound when the array is empty.

The staged jobs (``stage_of``: ``<scratch>.jobs/<id>/``, each task's mounted read-only) and the tasks' Slurm
output and facts (``tasks_of``: ``<scratch>.slurm/``) are beside the scratch output, never inside it.
"""

import math
import re
import shlex
from pathlib import Path

from dlrepro.run.executors.base import RUN_LABEL
from dlrepro.run.executors.docker import create_args, gpu_flags, run_command
from dlrepro.run.options import slurm_option_problem

MARGIN_S = 300  # --time beyond the job's own time limit: the container's start and the supervisor's record
SLURM_LABEL = "org.dlrepro.slurm.job"
TASKS, STAGE = ".slurm", ".jobs"  # beside a submission's scratch folder (its name + these): task files; staged jobs
_EXPANSION = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:\[@\])?\}")


def tasks_of(scratch):
    """The folder of the tasks' Slurm output and facts of a submission whose scratch output is ``scratch``."""
    return Path(str(scratch) + TASKS)


def stage_of(scratch):
    """The folder of the staged jobs (one folder per job) of a submission whose scratch output is ``scratch``."""
    return Path(str(scratch) + STAGE)


def job_gpus(job):
    """GPUs a job asks Slurm for: a data-parallel job's ranks (one GPU each; 1 for a plain job) for cuda jobs,
    0 for CPU jobs."""
    return int(job.get("ranks") or 1) if job["device"] == "cuda" else 0


def time_minutes(jobs):
    """``--time`` of an array, in minutes: the longest job time limit (``timeout_s``) plus MARGIN_S."""
    return int(math.ceil((max(int(j["timeout_s"]) for j in jobs) + MARGIN_S) / 60.0))


def shell_word(word):
    """``word`` quoted for bash, with its ``${NAME}`` expansions left to the shell. An array's ``${NAME[@]}``
    becomes ``${NAME[@]+"${NAME[@]}"}``: its elements as words, none for an empty array, also under ``set -u``
    in a bash before 4.4 (RHEL/CentOS 7's 4.2), which takes an empty array's ``"${NAME[@]}"`` as unbound."""
    pieces, expansions = _EXPANSION.split(word), _EXPANSION.findall(word)
    text = shlex.quote(pieces[0]) if pieces[0] else ""
    for expansion, piece in zip(expansions, pieces[1:]):
        text += ('%s+"%s"}' % (expansion[:-1], expansion) if expansion.endswith("[@]}") else '"%s"' % expansion) + (
            shlex.quote(piece) if piece else ""
        )
    return text or "''"


def _can_pass_gpus(engine_name):
    """A shell test that is true where ``engine_name`` on the node can pass NVIDIA GPUs into containers."""
    if engine_name == "podman":
        return "[ -e /etc/cdi/nvidia.yaml ] || [ -e /var/run/cdi/nvidia.yaml ]"
    return (
        "docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '\"nvidia\"' || "
        "command -v nvidia-container-runtime-hook >/dev/null"
    )


def task_args(tag, user, scratch, data_root, bundle_id, gpus, command=None):
    """``create_args`` of a task's container: the staged job of this task (``${DLREPRO_JOB}``) and the shared
    scratch output; labelled with the bundle and the task's own Slurm job id (what a site's epilog removes),
    not with the submitting host and process (which the docker executor's reaping reads); a cuda task's
    container is told the first host GPU of its allocation (``DLREPRO_GPU``: its UUID, or Slurm's host index),
    or why the task's GPUs could not be mapped to host GPUs (``DLREPRO_GPU_UNMAPPED``: the runner then records
    the job skipped with that reason).
    Its CPUs, memory limit and GPUs come from the script (``binding_lines``), as the task finds them."""
    args = create_args(
        tag,
        user,
        "%s/${DLREPRO_JOB}" % stage_of(scratch),
        scratch,
        data_root,
        labels={RUN_LABEL: bundle_id, SLURM_LABEL: "${SLURM_JOB_ID}"},
        command=command,
    )
    if gpus:  # the first of them: a data-parallel job's ranks take all that Slurm gave
        args["environment"].update(DLREPRO_GPU="${first_gpu}", DLREPRO_GPU_UNMAPPED="${gpu_problem}")
    return args


def binding_lines(engine_name, memory=None):
    """Bash lines that find what Slurm allocated to the task and give it to the container, which the engine
    starts outside the job's cgroup: ``limits`` (--cpuset-cpus, --memory) and ``gpu`` (the engine's GPU flags),
    with ``host_gpus``/``gpu_source``/``gpu_problem``, ``cpus``/``cpu_source``, ``memory``/``memory_source``
    for the task's record.

    - GPUs: the UUIDs that ``nvidia-smi`` lists inside the job (its device cgroup shows only the job's GPUs)
      when it lists as many as Slurm gave, else ``SLURM_JOB_GPUS`` (the host indices of the gres.conf files).
      ``CUDA_VISIBLE_DEVICES`` alone is never passed: under ``ConstrainDevices=yes`` it is renumbered from 0
      inside the job's cgroup and so names other GPUs outside it (Slurm's gres documentation). A task with only
      that has ``gpu_problem`` (the reason), no GPU flags, and its job is recorded skipped by the runner.
    - CPUs: the task's ``Cpus_allowed_list`` (the cgroup cpuset or affinity Slurm set), or, where it spans more
      CPUs than Slurm allocated (no task plugin binds the job), the ``CPU_IDs`` of ``scontrol show job -d``
      mapped to Linux CPUs: they are Slurm's abstract ids, which number a core's threads next to each other
      (socket, core, thread), while Linux often numbers the SMT siblings N..2N-1; the map is the node's CPUs
      in that order (``lscpu -p=CPU,CORE,SOCKET``). Ids it cannot map leave the ``Cpus_allowed_list``.
    - Memory (bytes): ``SLURM_MEM_PER_NODE``, else ``SLURM_MEM_PER_CPU`` x ``SLURM_CPUS_ON_NODE`` (MiB), else
      ``memory`` (the executor's limit; None: no limit)."""
    if engine_name == "podman":
        flags = [
            "    for i in ${host_gpus//,/ }; do gpu+=(%s); done"
            % " ".join(shell_word(w) for w in gpu_flags(engine_name, ["${i}"]))
        ]
    else:
        flags = ["    gpu=(%s)" % " ".join(shell_word(w) for w in gpu_flags(engine_name, ["${host_gpus}"]))]
    return (
        [
            "items() { local IFS=,; set -- $1; echo $#; }  # in a comma-separated list",
            "cpu_count() { local n=0 r; for r in ${1//,/ }; do if [[ $r == "
            "*-* ]]; then n=$((n + ${r#*-} - ${r%-*} + 1)); "
            "else n=$((n + 1)); fi; done; echo $n; }  # in a CPU list: 0-3,8",
            "linux_cpus() {  # this node's Linux CPU ids in Slurm's abstract order: by socket, core, then thread",
            "  lscpu -p=CPU,CORE,SOCKET 2>/dev/null | grep -v '^#' | sort -t, -k3,3n -k2,2n -k1,1n | cut -d, -f1",
            "}",
            "map_cpus() {  # Slurm's abstract CPU ids $1 (0-1,4) as Linux ids; nothing when one does not map",
            "  local order=($(linux_cpus)) out='' r i",
            "  for r in ${1//,/ }; do",
            "    for ((i = ${r%-*}; i <= ${r#*-}; i++)); do",
            '      if [ "$i" -ge "${#order[@]}" ]; then return 0; fi',
            "      out=${out:+$out,}${order[$i]}",
            "    done",
            "  done",
            '  echo "$out"',
            "}",
            "host_gpus='' gpu_source='' gpu_problem=''",
            'if [ -n "${SLURM_JOB_GPUS:-}${CUDA_VISIBLE_DEVICES:-}" ]; then',
            "  given=${SLURM_JOB_GPUS:-$CUDA_VISIBLE_DEVICES}",
            "  uuids=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | paste -sd, -)",
            '  if [ -n "$uuids" ] && [ "$(items "$uuids")" = "$(items "$given")" ]; then '
            "host_gpus=$uuids gpu_source=nvidia-smi",
            '  elif [ -n "${SLURM_JOB_GPUS:-}" ]; then host_gpus=$SLURM_JOB_GPUS gpu_source=SLURM_JOB_GPUS',
            '  else gpu_source=none gpu_problem="Slurm gave this task '
            "GPU(s) CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES "
            "without their host indices (no SLURM_JOB_GPUS), and nvidia-smi does not list exactly the job's GPUs (it "
            "lists: ${uuids:-none}); CUDA_VISIBLE_DEVICES may be numbered inside the job's cgroup, so it names no host "
            'GPU for certain and is not passed to the engine"',
            "  fi",
            "fi",
            "first_gpu=${host_gpus%%,*}  # a data-parallel job's ranks take every GPU Slurm gave, rank 0 the first",
            "cpus=$(awk '$1 == \"Cpus_allowed_list:\" {print $2}' /proc/self/status) cpu_source=Cpus_allowed_list",
            'if [ "${SLURM_CPUS_ON_NODE:-0}" -gt 0 ] && [ "$(cpu_count "$cpus")" -gt "$SLURM_CPUS_ON_NODE" ]; then',
            '  ids=$(scontrol show job -d "$SLURM_JOB_ID" 2>/dev/null | awk -v id="JobId=$SLURM_JOB_ID" '
            "'$1 ~ /^JobId=/ {mine = ($1 == id)} mine && /CPU_IDs=/ {sub(/.*CPU_IDs=/, \"\"); print $1; exit}')",
            '  mapped=$(map_cpus "$ids")',
            '  if [ -n "$mapped" ]; then cpus=$mapped cpu_source="scontrol CPU_IDs $ids (Slurm\'s abstract ids), as '
            'Linux CPUs"',
            '  elif [ -n "$ids" ]; then cpu_source="Cpus_allowed_list (scontrol CPU_IDs $ids: not mapped to this '
            "node's Linux CPUs)\"",
            "  fi",
            "fi",
            'if [ -n "${SLURM_MEM_PER_NODE:-}" ]; then memory=$((SLURM_MEM_PER_NODE * 1048576)) '
            "memory_source=SLURM_MEM_PER_NODE",
            'elif [ -n "${SLURM_MEM_PER_CPU:-}" ]; then memory=$((SLURM_MEM_PER_CPU * ${SLURM_CPUS_ON_NODE:-1} * '
            "1048576)) memory_source=SLURM_MEM_PER_CPU",
            "else memory=%s memory_source=%s" % ("%d" % memory if memory else "''", "executor" if memory else "none"),
            "fi",
            "limits=()",
            'if [ -n "$cpus" ]; then limits+=(--cpuset-cpus "$cpus"); fi',
            'if [ -n "$memory" ]; then limits+=(--memory "$memory" --memory-swap "$memory"); fi',
            "gpu=()",
            'if [ -n "$host_gpus" ]; then',
            "  if %s; then" % _can_pass_gpus(engine_name),
        ]
        + flags
        + [
            "  else",
            '    echo "dlrepro: %s on ${SLURMD_NODENAME:-this node} cannot pass GPUs into containers (no NVIDIA '
            'runtime or CDI spec); GPU(s) $host_gpus stay outside"' % engine_name,
            "  fi",
            "fi",
        ]
    )


def script(
    args,
    engine_name,
    job_ids,
    scratch,
    bundle_id,
    threads=None,
    gpus=0,
    minutes=35,
    partition=None,
    options=(),
    max_parallel=None,
    memory=None,
):
    """The batch script (text) of one array: task i runs job ``job_ids[i]`` in the container of ``args``
    (``task_args``) through ``engine_name``'s CLI, bound to the task's CPUs, memory and GPUs
    (``binding_lines``; ``memory``: the limit in bytes where Slurm sets none); Slurm's output and each task's
    facts go to ``tasks_of(scratch)``, beside the scratch output. ``threads``: --cpus-per-task (None: Slurm's default);
    ``gpus``: --gres=gpu:N (0: none); ``minutes``: --time; ``partition``: --partition (None: the cluster's default);
    ``options``: further sbatch options, one ``#SBATCH`` line each; ``max_parallel``: the array's %N (None: no
    cap). ``--no-requeue``: a task whose node fails ends (NODE_FAIL) rather than starting again over its own
    output. A suspended task (SIGTSTP, before Slurm's SIGSTOP) notes it in ``.slurm/<task>.suspended`` and pauses
    its container (best effort: the stop may come first; a TSTP handled only after its CONT pauses nothing);
    SIGCONT notes it and unpauses it. Raises ValueError for an option that is not one sbatch option
    (dlrepro.run.options.slurm_option_problem): it would end its ``#SBATCH`` line and become a command."""
    for option in options:
        problem = slurm_option_problem(option)
        if problem:
            raise ValueError("--slurm-option: %s" % problem)
    tasks = str(tasks_of(scratch))
    lines = [
        "#!/bin/bash",
        "# dlrepro: one Slurm array task per job of bundle %s, each in its own %s container (kept in the "
        "bundle as the launch record)" % (bundle_id, engine_name),
        "#SBATCH --job-name=dlrepro-%s" % bundle_id,
        "#SBATCH --array=0-%d%s" % (len(job_ids) - 1, "%%%d" % max_parallel if max_parallel else ""),
        "#SBATCH --output=%s/%%A_%%a.out" % tasks,
        "#SBATCH --time=%d" % minutes,
        "#SBATCH --no-requeue",
    ]
    lines += ["#SBATCH --cpus-per-task=%d" % threads] if threads else []
    lines += ["#SBATCH --gres=gpu:%d" % gpus] if gpus else []
    lines += ["#SBATCH --partition=%s" % partition] if partition else []
    lines += ["#SBATCH %s" % option for option in options]
    run = run_command(args, engine_name, "dlrepro-%s-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" % bundle_id)
    image = run.index(args["image"])
    run = run[:image] + ["${limits[@]}", "${gpu[@]}"] + run[image:]
    lines += [
        "set -u",
        "jobs=(%s)" % " ".join(shlex.quote(j) for j in job_ids),
        "DLREPRO_JOB=${jobs[$SLURM_ARRAY_TASK_ID]}",
        "task=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}",
        "name=dlrepro-%s-$task" % bundle_id,
        "tasks=%s" % shell_word(tasks),
    ]
    lines += binding_lines(engine_name, memory)
    lines += [
        "# what this task got from Slurm, for its job's result (rendezvous and addresses, too, belong here, "
        "never inside the container)",
        'printf \'{"job_id": "%s", "array_job_id": "%s", "array_task_id": %s, "node": "%s", '
        '"partition": "%s", "cuda_visible_devices": "%s", "slurm_job_gpus": "%s", '
        '"host_gpus": "%s", "gpu_source": "%s", "gpu_problem": "%s", "cpus": "%s", '
        '"cpu_source": "%s", "memory_bytes": %s, "memory_source": "%s"}\\n\' '
        '"$SLURM_JOB_ID" "$SLURM_ARRAY_JOB_ID" "$SLURM_ARRAY_TASK_ID" "${SLURMD_NODENAME:-}" '
        '"${SLURM_JOB_PARTITION:-}" "${CUDA_VISIBLE_DEVICES:-}" "${SLURM_JOB_GPUS:-}" "$host_gpus" '
        '"$gpu_source" "$gpu_problem" "$cpus" "$cpu_source" "${memory:-null}" "$memory_source" > '
        '"$tasks/$task.json"',
        "if ! %s image inspect %s >/dev/null 2>&1; then" % (engine_name, shell_word(args["image"])),
        '  echo "dlrepro: image %s is not in %s on node ${SLURMD_NODENAME:-?}: build or load it there"; exit 3'
        % (args["image"], engine_name),
        "fi",
        "exec 3< <(exec sleep infinity)  # the container's standard input: it closes when this task ends",
        "keeper=$!",
        'trap \'%s kill "$name" >/dev/null 2>&1; %s rm -f "$name" >/dev/null 2>&1; kill "$keeper" '
        "2>/dev/null; exit 143' TERM INT" % (engine_name, engine_name),
        "stops=0 continues=0  # a TSTP handled only after the CONT (both pending once resumed) must not pause",
        'trap \'stops=$((stops + 1)); echo "suspended $(date -u +%%FT%%TZ)" >> "$tasks/$task.suspended"; '
        'if [ $stops -gt $continues ]; then %s pause "$name" >/dev/null 2>&1; fi\' TSTP' % engine_name,
        'trap \'continues=$((continues + 1)); echo "resumed $(date -u +%%FT%%TZ)" >> "$tasks/$task.suspended"; '
        '%s unpause "$name" >/dev/null 2>&1\' CONT' % engine_name,
        _command_lines(run, image) + " <&3 &",
        "container=$!",
        'while kill -0 "$container" 2>/dev/null; do wait "$container"; done  # a trap ends a wait early',
        'wait "$container"',
        "status=$?",
        'kill "$keeper" 2>/dev/null',
        "exit $status",
        "",
    ]
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
