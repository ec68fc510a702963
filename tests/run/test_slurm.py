"""The slurm executor: the batch script and the state parsers as pure functions (no Slurm needed, as
test_isolation.py tests the container's arguments), then end to end against a real Slurm 22.05 of the tests' own
(tests/cluster.py: two nodes on this host, two fake GPUs each) running the docker executor's containers."""

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from dlrepro import REPO_ROOT, engine
from dlrepro.errors import DlreproError, ExecutorError
from dlrepro.run import executors, slurm_state
from dlrepro.run.executors import base, sbatch
from dlrepro.run.executors import docker as docker_executor
from dlrepro.run.executors import slurm as slurm_executor
from dlrepro.run.options import slurm_settings
from runner import contract
from tests.run.slurm_tools import _shell, _tool

ARGS = docker_executor.create_args(
    "dlrepro/torch:2.13.0-cpu-abc",
    "1000:1000",
    "/s/jobs",
    "/s/out",
    "/cache/ds",
    gpu=None,
    memory=8 << 30,
    labels={"org.dlrepro.run": "alexnet-x"},
)


# ------------------------------------------------------------------ pure: the command line and the batch script


def test_the_run_command_is_the_create_arguments_as_flags():
    assert docker_executor.run_command(ARGS, "docker", "c1") == [
        "docker",
        "run",
        "--name",
        "c1",
        "--user",
        "1000:1000",
        "--network",
        "none",
        "--read-only",
        "--tmpfs",
        "/tmp:rw,exec",
        "--security-opt",
        "no-new-privileges",
        "--cap-drop",
        "ALL",
        "--pids-limit",
        "4096",
        "--env",
        "PYTHONPATH=/opt/dlrepro",
        "--env",
        "DLREPRO_DATA_ROOT=/data",
        "--volume",
        "%s:/opt/dlrepro/runner:ro" % (REPO_ROOT / "runner"),
        "--volume",
        "/cache/ds:/data:ro",
        "--volume",
        "/s/jobs:/jobs:ro",
        "--volume",
        "/s/out:/out:rw",
        "--label",
        "org.dlrepro.run=alexnet-x",
        "--label",
        "org.dlrepro.role=runner",
        "--interactive",
        "--rm",
        "--memory",
        str(8 << 30),
        "--memory-swap",
        str(8 << 30),
        "dlrepro/torch:2.13.0-cpu-abc",
        "python",
        "-m",
        "runner.supervise",
        "--watch-stdin",
        "--isolation",
        "worker",
        "/jobs",
        "/out",
    ]
    gpu = docker_executor.create_args("t", "1000:1000", "/j", "/o", "/d", gpu=3)
    words = docker_executor.run_command(gpu)
    assert words[words.index("--gpus") + 1] == '"device=3"' and words.count("--gpus") == 1
    assert docker_executor.gpu_flags("podman", ["0", "1"]) == [
        "--device",
        "nvidia.com/gpu=0",
        "--device",
        "nvidia.com/gpu=1",
    ]
    with pytest.raises(ValueError, match="no docker run flag for container argument.s. shm_size"):
        docker_executor.run_command(dict(ARGS, shm_size="1g"))


def test_shell_words_keep_their_expansions():
    assert sbatch.shell_word("/b/.jobs/${DLREPRO_JOB}") == '/b/.jobs/"${DLREPRO_JOB}"'
    assert sbatch.shell_word("it's ${A}_${B}") == '\'it\'"\'"\'s \'"${A}"_"${B}"'
    # an array's elements as words, none when it is empty: also under set -u in bash 4.2 (RHEL/CentOS 7)
    assert sbatch.shell_word("${gpu[@]}") == '${gpu[@]+"${gpu[@]}"}' and sbatch.shell_word("") == "''"


def _script(**kw):
    args = sbatch.task_args(
        "dlrepro/torch:2.13.0-cpu-abc",
        "1000:1000",
        "/r/.b.partial/.work/attempt-1/1",
        "/cache/ds",
        "alexnet-x",
        kw.pop("gpus_arg", 0),
    )
    return args, sbatch.script(
        args,
        kw.pop("engine_name", "docker"),
        ["a.b16", "a.b32", "a.b64"],
        "/r/.b.partial/.work/attempt-1/1",
        "alexnet-x",
        memory=8 << 30,
        **kw,
    )


def test_the_batch_script_asks_slurm_for_the_array_and_runs_the_isolated_container():
    args, text = _script(
        threads=2, gpus=1, minutes=35, partition="gpu", options=["--account=lab"], max_parallel=2, gpus_arg=1
    )
    sbatch = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert sbatch == [
        "#SBATCH --job-name=dlrepro-alexnet-x",
        "#SBATCH --array=0-2%2",
        "#SBATCH --output=/r/.b.partial/.work/attempt-1/1.slurm/%A_%a.out",
        "#SBATCH --time=35",
        "#SBATCH --no-requeue",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=lab",
    ]
    assert "jobs=(a.b16 a.b32 a.b64)\nDLREPRO_JOB=${jobs[$SLURM_ARRAY_TASK_ID]}\n" in text
    assert "name=dlrepro-alexnet-x-$task\n" in text
    assert (
        'trap \'docker kill "$name" >/dev/null 2>&1; docker rm -f "$name" >/dev/null 2>&1; kill "$keeper" '
        "2>/dev/null; exit 143' TERM INT" in text
    )
    assert (
        '\ntrap \'stops=$((stops + 1)); echo "suspended $(date -u +%FT%TZ)" >> "$tasks/$task.suspended"; '
        'if [ $stops -gt $continues ]; then docker pause "$name" >/dev/null 2>&1; fi\' TSTP\n' in text
    )
    assert '; docker unpause "$name" >/dev/null 2>&1\' CONT\n' in text
    assert '\nwhile kill -0 "$container" 2>/dev/null; do wait "$container"; done' in text
    assert "    gpu=(--gpus '\"device='\"${host_gpus}\"'\"')\n" in text  # the host's GPUs, never the cgroup's numbers
    assert "\nelse memory=8589934592 memory_source=executor\n" in text  # where Slurm sets no memory limit
    # the container: exactly the docker executor's isolation, with the task's own job, name and Slurm job label
    command = text.split("\ntrap ")[-1].split("\n", 1)[1].split(" <&3 &")[0]
    words = docker_executor.run_command(
        args, "docker", "dlrepro-alexnet-x-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
    )
    image = words.index(args["image"])
    assert (
        shlex.split(command.replace("\\\n", " "))
        == words[:image] + ["${limits[@]+${limits[@]}}", "${gpu[@]+${gpu[@]}}"] + words[image:]
    )
    # the staged job beside the scratch output (mounted read-write), never inside it
    assert '--volume /r/.b.partial/.work/attempt-1/1.jobs/"${DLREPRO_JOB}":/jobs:ro' in command
    assert '--label org.dlrepro.slurm.job="${SLURM_JOB_ID}"' in command
    assert '--env DLREPRO_GPU="${first_gpu}"' in command and "\nfirst_gpu=${host_gpus%%,*}" in text
    assert '--env DLREPRO_GPU_UNMAPPED="${gpu_problem}"' in command
    assert "--memory" not in command  # the task's own limit, in ${limits[@]}
    assert "org.dlrepro.host" not in command and "org.dlrepro.pid" not in command  # never reaped as a dead run's
    assert "--network none" in command and "--cap-drop ALL" in command and "--read-only" in command


def test_a_cpu_array_without_options_asks_for_nothing_more_and_podman_gets_cdi_devices():
    _, text = _script(minutes=31)
    assert [line for line in text.splitlines() if line.startswith("#SBATCH")][1:] == [
        "#SBATCH --array=0-2",
        "#SBATCH --output=/r/.b.partial/.work/attempt-1/1.slurm/%A_%a.out",
        "#SBATCH --time=31",
        "#SBATCH --no-requeue",
    ]
    _, text = _script(gpus=2, engine_name="podman", gpus_arg=2)
    assert 'for i in ${host_gpus//,/ }; do gpu+=(--device nvidia.com/gpu="${i}"); done' in text
    assert "\npodman run \\\n    --name" in text and "if ! podman image inspect" in text


def _binding(tmp_path, env, nvidia_smi=None, scontrol=None, lscpu=None, bash="bash"):
    """What ``binding_lines`` finds in a task with Slurm's environment ``env``; ``nvidia_smi`` / ``scontrol`` /
    ``lscpu``: what those commands print there (None: not on PATH); ``bash``: the shell that runs them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("nvidia-smi", nvidia_smi), ("scontrol", scontrol), ("lscpu", lscpu)):
        (bin_dir / name).unlink(missing_ok=True)
        if text is not None:
            (bin_dir / name).write_text("#!/bin/sh\ncat <<'EOF'\n%sEOF\n" % text)
            (bin_dir / name).chmod(0o755)
    lines = sbatch.binding_lines("docker", memory=8 << 30) + [
        'echo "$host_gpus|$gpu_source|$first_gpu|$cpus|$cpu_source|$memory|$memory_source|'
        '${limits[*]+${limits[*]}}|${gpu[*]+${gpu[*]}}|$gpu_problem"'
    ]
    tools = "/usr/bin:/bin"  # awk, paste, sort; no docker (so no GPU flags), no real nvidia-smi or scontrol
    proc = subprocess.run(
        [bash, "-c", "\n".join(["set -u"] + lines)],
        capture_output=True,
        text=True,
        env=dict(env, PATH="%s:%s" % (bin_dir, tools)),
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1].split("|")


# lscpu -p of a node with 2 cores of 2 threads whose Linux ids number the SMT siblings 2 and 3 (core 0: CPUs 0
# and 2, core 1: CPUs 1 and 3); Slurm's abstract ids number a core's threads next to each other: 0-1 is core 0
SMT_LSCPU = "# CPU,Core,Socket\n0,0,0\n1,1,0\n2,0,0\n3,1,0\n"


@pytest.mark.parametrize("which", ["bash", "4.2"])
def test_the_task_binds_its_container_to_the_host_gpus_cpus_and_memory_slurm_gave(tmp_path, which):
    bash = _shell(which)
    allowed = subprocess.run(
        ["awk", '$1 == "Cpus_allowed_list:" {print $2}', "/proc/self/status"], capture_output=True, text=True
    ).stdout.strip()
    base = {"SLURM_JOB_ID": "12", "SLURM_CPUS_ON_NODE": "64"}
    # ConstrainDevices=yes: the job holds /dev/nvidia1, its CUDA_VISIBLE_DEVICES is 0 (gres.shtml); the host's is 1
    host, source, first, cpus, cpu_source, memory, memory_source, limits, gpu, problem = _binding(
        tmp_path, dict(base, CUDA_VISIBLE_DEVICES="0", SLURM_JOB_GPUS="1", SLURM_MEM_PER_NODE="300"), bash=bash
    )
    assert (host, source, first, problem) == ("1", "SLURM_JOB_GPUS", "1", "")
    assert (cpus, cpu_source) == (allowed, "Cpus_allowed_list")  # 64 allocated: no narrower set to find
    assert (memory, memory_source) == (str(300 << 20), "SLURM_MEM_PER_NODE")
    assert limits == "--cpuset-cpus %s --memory %d --memory-swap %d" % (allowed, 300 << 20, 300 << 20)
    assert gpu == ""  # no docker with an NVIDIA runtime here: no flags, and the script says so
    # no constraint: CUDA_VISIBLE_DEVICES is the host's index already; two GPUs; memory per CPU
    host, source, first, _, _, memory, memory_source, _, _, _ = _binding(
        tmp_path,
        dict(base, CUDA_VISIBLE_DEVICES="2,3", SLURM_JOB_GPUS="2,3", SLURM_MEM_PER_CPU="200", SLURM_CPUS_ON_NODE="2"),
        scontrol="",
        bash=bash,
    )
    assert (host, source, first) == ("2,3", "SLURM_JOB_GPUS", "2")
    assert (memory, memory_source) == (str(2 * 200 << 20), "SLURM_MEM_PER_CPU")
    # inside the job's device cgroup nvidia-smi lists the job's GPUs only: their UUIDs
    host, source, first = _binding(
        tmp_path, dict(base, CUDA_VISIBLE_DEVICES="0", SLURM_JOB_GPUS="1"), nvidia_smi="GPU-bbbb\n"
    )[:3]
    assert (host, source, first) == ("GPU-bbbb", "nvidia-smi", "GPU-bbbb")
    # without the constraint it lists every GPU of the node: not the job's, so Slurm's indices
    assert _binding(
        tmp_path, dict(base, CUDA_VISIBLE_DEVICES="1", SLURM_JOB_GPUS="1"), nvidia_smi="GPU-aaaa\nGPU-bbbb\n"
    )[:2] == ["1", "SLURM_JOB_GPUS"]
    # a Slurm without SLURM_JOB_GPUS and no nvidia-smi that lists the job's GPUs: CUDA_VISIBLE_DEVICES names no
    # host GPU for certain, so no GPU is passed and the runner records the job skipped with the reason
    found = _binding(tmp_path, dict(base, CUDA_VISIBLE_DEVICES="1"), nvidia_smi="GPU-aaaa\nGPU-bbbb\n", bash=bash)
    assert found[:3] + found[8:9] == ["", "none", "", ""]
    assert found[9] == (
        "Slurm gave this task GPU(s) CUDA_VISIBLE_DEVICES=1 without their host indices (no "
        "SLURM_JOB_GPUS), and nvidia-smi does not list exactly the job's GPUs (it lists: "
        "GPU-aaaa,GPU-bbbb); CUDA_VISIBLE_DEVICES may be numbered inside the job's cgroup, so it "
        "names no host GPU for certain and is not passed to the engine"
    )
    assert "it lists: none)" in _binding(tmp_path, dict(base, CUDA_VISIBLE_DEVICES="0"))[9]
    assert _binding(tmp_path, base, bash=bash)[:2] + _binding(tmp_path, base)[5:7] == ["", "", str(8 << 30), "executor"]


@pytest.mark.parametrize("which", ["bash", "4.2"])
@pytest.mark.all_cpus  # the script reads this process's Cpus_allowed_list
def test_slurms_abstract_cpu_ids_are_mapped_to_the_nodes_linux_cpus(tmp_path, which):
    """No task plugin binds the job (the whole node allowed): the task's CPU_IDs of ``scontrol show job -d`` (this
    task's, not the array's others) are Slurm's abstract ids, passed as the Linux CPUs they stand for."""
    allowed = subprocess.run(
        ["awk", '$1 == "Cpus_allowed_list:" {print $2}', "/proc/self/status"], capture_output=True, text=True
    ).stdout.strip()
    env = {"SLURM_JOB_ID": "12", "SLURM_CPUS_ON_NODE": "1"}

    def shown(ids):
        return (
            "JobId=11 ArrayJobId=10 ArrayTaskId=0 JobName=x\n     Nodes=n1 CPU_IDs=2-3 Mem=0 GRES=\n"
            "JobId=12 ArrayJobId=10 ArrayTaskId=1 JobName=x\n     Nodes=n1 CPU_IDs=%s Mem=0 GRES=gpu:1(IDX:1)\n" % ids
        )

    found = _binding(tmp_path, env, scontrol=shown("0-1"), lscpu=SMT_LSCPU, bash=_shell(which))
    assert found[3:5] == ["0,2", "scontrol CPU_IDs 0-1 (Slurm's abstract ids), as Linux CPUs"]  # core 0, not 0-1
    assert found[7].startswith("--cpuset-cpus 0,2 ")
    assert _binding(tmp_path, env, scontrol=shown("1,3"), lscpu=SMT_LSCPU)[3] == "2,3"
    # ids beyond the node's CPUs (slurm.conf describes another node): left unmapped, the allowed list kept
    assert _binding(tmp_path, env, scontrol=shown("2,5"), lscpu=SMT_LSCPU)[3:5] == [
        allowed,
        "Cpus_allowed_list (scontrol CPU_IDs 2,5: not mapped to this node's Linux CPUs)",
    ]
    assert _binding(tmp_path, env, scontrol=shown("0"), lscpu="# CPU,Core,Socket\n")[3] == allowed


@pytest.mark.parametrize("which", ["bash", "4.2"])
def test_every_array_of_the_batch_script_is_expanded_so_that_bash_4_2_takes_an_empty_one(which):
    """Under ``set -u`` a bash before 4.4 takes an empty array's "${a[@]}" as unbound (bash's CHANGES, 4.4-rc2): every
    CPU task's ``gpu`` is empty. Each array expansion of the script is ``${a[@]+"${a[@]}"}``, which it takes."""
    for kw in ({}, dict(gpus=1, gpus_arg=1), dict(gpus=2, engine_name="podman", gpus_arg=2)):
        _, text = _script(**kw)
        assert '${limits[@]+"${limits[@]}"}' in text and '${gpu[@]+"${gpu[@]}"}' in text
        unguarded = re.sub(r'\$\{(\w+)\[[@*]\]\+"\$\{\1\[[@*]\]\}"\}', "", text)
        assert re.findall(r"\$\{\w+\[[@*]\]\}", unguarded) == []
    bash = _shell(which)
    guarded = subprocess.run(
        [bash, "-c", 'set -u; gpu=(); printf "%s," x ${gpu[@]+"${gpu[@]}"} y'], capture_output=True, text=True
    )
    assert (guarded.returncode, guarded.stdout) == (0, "x,y,")
    if which == "4.2":  # the form the script had before: this bash stops at it
        plain = subprocess.run(
            [bash, "-c", 'set -u; gpu=(); printf "%s," x "${gpu[@]}" y'], capture_output=True, text=True
        )
        assert plain.returncode != 0 and "gpu[@]: unbound variable" in plain.stderr


def test_an_sbatch_option_that_is_not_one_is_refused_everywhere():
    """A newline would end the #SBATCH line and make the rest a command of the script (run on the nodes)."""
    for bad, why in (
        ("--account=lab\ntouch INJECTED", "holds no newline or other control character"),
        ("--qos=x\x1b[2J", "holds no newline or other control character"),
        ("account=lab", "starting with -"),
    ):
        with pytest.raises(DlreproError, match="^--slurm-option: .*%s" % re.escape(why)) as err:
            slurm_settings("slurm", options=["--exclusive", bad])
        assert err.value.remedy.startswith("give each sbatch option as its own --slurm-option")
        with pytest.raises(ValueError, match="^--slurm-option: "):
            _script(options=[bad])
    assert slurm_settings("slurm", options=["--account=lab", "--mem=16G"])["options"] == ["--account=lab", "--mem=16G"]


def test_the_time_limit_and_gpus_of_an_array():
    assert sbatch.time_minutes([{"timeout_s": 1800}, {"timeout_s": 600}]) == 35  # (1800 + 300) / 60
    assert sbatch.time_minutes([{"timeout_s": 61}]) == 7
    assert sbatch.job_gpus({"device": "cuda"}) == 1 and sbatch.job_gpus({"device": "cuda", "ranks": 4}) == 4
    assert sbatch.job_gpus({"device": "cpu", "ranks": 4}) == 0


SCONTROL = (
    "JobId=7 ArrayJobId=7 ArrayTaskId=2-3%1 ArrayTaskThrottle=1 JobName=dlrepro-x UserId=root(0) "
    "JobState=PENDING Reason=JobArrayTaskLimit Dependency=(null) ExitCode=0:0 NodeList=(null)\n"
    "JobId=8 ArrayJobId=7 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=n1\n"
    "JobId=9 ArrayJobId=7 ArrayTaskId=1 JobState=CANCELLED Reason=None ExitCode=0:15 NodeList=n2\n"
)
JOBCOMP = (
    "JobId=3 UserId=root(0) GroupId=root(0) Name=t.sh JobState=FAILED Partition=debug TimeLimit=UNLIMITED "
    "StartTime=2026-12-01T10:10:42 EndTime=2026-12-01T10:10:45 NodeList=n1 NodeCnt=1 ProcCnt=1 "
    "WorkDir=/tmp/slurmtest ReservationName= Tres=cpu=1,mem=4000M,node=1,billing=1 Account= QOS= WcKey= "
    "Cluster=unknown SubmitTime=2026-12-01T10:10:37 EligibleTime=2026-12-01T10:10:42 ArrayJobId=1 "
    "ArrayTaskId=1 DerivedExitCode=0:0 ExitCode=1:0 \n"
)


def test_slurm_state_is_read_from_scontrol_sacct_and_the_jobcomp_file():
    tasks = {(t.array_id, t.index): t for t in slurm_state.parse_scontrol(SCONTROL)}
    assert sorted(tasks) == [("7", 0), ("7", 1), ("7", 2), ("7", 3)]
    assert tasks[("7", 2)].state == "PENDING" and tasks[("7", 2)].reason == "JobArrayTaskLimit"
    assert tasks[("7", 2)].node is None and tasks[("7", 2)].active and not tasks[("7", 1)].active
    assert tasks[("7", 1)].describe() == "task 7_1 (job 9) on n2: CANCELLED, exit code 0:15 (scontrol)"
    (failed,) = slurm_state.parse_jobcomp(JOBCOMP)
    assert failed == slurm_state.Task("1", 1, "3", "FAILED", None, "n1", "1:0", "jobcomp")
    (timeout,) = slurm_state.parse_sacct("15|12_3|TIMEOUT|None|n2|0:15\n12|12_[4-5]|PENDING|None|None|0:0\n")
    assert timeout == slurm_state.Task("12", 3, "15", "TIMEOUT", None, "n2", "0:15", "sacct")
    assert slurm_state.indices("0-4%2") == [0, 1, 2, 3, 4] and slurm_state.indices("1,3-4") == [1, 3, 4]


def test_a_failed_state_query_is_told_from_a_task_slurm_no_longer_knows(tmp_path, monkeypatch):
    monkeypatch.setattr(slurm_state, "RETRY_S", 0)
    calls = tmp_path / "calls"
    env = dict(PATH="%s:/usr/bin:/bin" % tmp_path)
    # slurmctld down: every try fails, so Slurm was not asked (None), not "no such tasks" ({})
    _tool(
        tmp_path,
        "scontrol",
        "echo x >> %s\necho 'slurm_load_jobs error: Unable to contact slurm controller "
        "(connect failure)' >&2; exit 1\n" % calls,
    )
    assert slurm_state.tasks([("7", 0)], env) is None and len(calls.read_text().split()) == slurm_state.TRIES
    # it answers that the job is unknown (ended more than MinJobAge ago), no accounting, no jobcomp file
    _tool(
        tmp_path,
        "scontrol",
        'if [ "$2" = config ]; then echo "AccountingStorageType = accounting_storage/none"; '
        'echo "JobCompType = jobcomp/none"; exit 0; fi\n'
        'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1\n',
    )
    assert slurm_state.tasks([("7", 0)], env) == {}
    # scontrol answers for one task, the config query for the other fails: nothing is known
    _tool(tmp_path, "scontrol", 'if [ "$2" = config ]; then exit 1; fi\necho "%s"\n' % SCONTROL.splitlines()[1])
    assert slurm_state.tasks([("7", 0)], env)[("7", 0)].state == "COMPLETED"
    assert slurm_state.tasks([("7", 0), ("7", 9)], env) is None


def _submission(tmp_path, jobs=("a.b16",)):
    scratch = tmp_path / "scratch"
    scratch.mkdir(parents=True)
    sbatch.tasks_of(scratch).mkdir()
    return {
        "array_id": "7",
        "jobs": list(jobs),
        "scratch": str(scratch),
        "tasks": str(sbatch.tasks_of(scratch)),
        "script": "slurm/x.sbatch",
        "gpus": 0,
    }


def _running_result(scratch, job_id, repeats=2):
    (scratch / job_id).mkdir(exist_ok=True)
    result = dict(contract.new_result(job_id, "running"), timing={"repeats": [0.5] * repeats})
    contract.write_json(str(scratch / job_id / "result.json"), result)


def _task(state, index=0):
    return slurm_state.Task("7", index, str(8 + index), state, None, "n1", "0:0", "scontrol")


def test_while_slurm_cannot_be_asked_nothing_is_recorded_ended_nor_removed(tmp_path, monkeypatch):
    sub = _submission(tmp_path)
    scratch = Path(sub["scratch"])
    _running_result(scratch, "a.b16")
    answers = iter([None] * 4 + [{("7", 0): _task("RUNNING")}, None, {("7", 0): _task("NODE_FAIL")}])
    monkeypatch.setattr(slurm_state, "tasks", lambda wanted, env=None: next(answers))
    sink, events = base.FolderSink(tmp_path / "out"), []
    slurm_executor.collect([sub], sink, lambda *e: events.append(e[:2]), poll_s=0)
    assert events == [("end", "a.b16")]  # after the 7th answer, the first that says it ended
    result = json.loads((tmp_path / "out" / "a.b16" / "result.json").read_text())
    assert result["status"] == "interrupted" and result["slurm"]["state"] == "NODE_FAIL"
    assert result["reason"] == (
        "Slurm: task 7_0 (job 8) on n1: NODE_FAIL, exit code 0:0 (scontrol), without a "
        "result; kept what it measured: 2 repeats or epochs"
    )
    assert scratch.is_dir() and sub["collected"]  # a task that ended without its result may leave a container there
    # Slurm unanswered for longer than unanswered_s: Unanswered, the job not recorded, its scratch kept
    sub = _submission(tmp_path / "2")
    _running_result(Path(sub["scratch"]), "a.b16")
    monkeypatch.setattr(slurm_state, "tasks", lambda wanted, env=None: None)
    with pytest.raises(
        slurm_executor.Unanswered,
        match=r"^Slurm has not answered for 0 s: 1 job\(s\) of array\(s\) 7 "
        r"may still run, none is recorded as ended$",
    ):
        slurm_executor.collect([sub], base.FolderSink(tmp_path / "out2"), lambda *e: None, poll_s=0.01, unanswered_s=0)
    assert not (tmp_path / "out2").exists() and "collected" not in sub
    assert json.loads((Path(sub["scratch"]) / "a.b16" / "result.json").read_text())["status"] == "running"


def test_a_task_slurm_does_not_list_is_gone_only_after_polls_in_which_its_output_stopped_growing(tmp_path, monkeypatch):
    sub = _submission(tmp_path)
    output = sbatch.tasks_of(sub["scratch"]) / "7_0.out"
    polls = []

    def tasks(wanted, env=None):
        polls.append(1)
        if len(polls) <= 3:  # the output grows over the first three polls
            with open(output, "a") as f:
                f.write("epoch %d\n" % len(polls))
        return {}

    monkeypatch.setattr(slurm_state, "tasks", tasks)
    slurm_executor.collect([sub], base.FolderSink(tmp_path / "out"), lambda *e: None, poll_s=0)
    assert len(polls) == 3 + slurm_executor.ABSENT_POLLS - 1  # the third poll's size is the first one unchanged
    result = json.loads((tmp_path / "out" / "a.b16" / "result.json").read_text())
    assert result["status"] == "failed" and result["reason"].startswith(
        "Slurm no longer knows this job's task (no accounting, no jobcomp file; absent from 3 answered polls, its "
        "output no longer growing) and it left no result; its output ends: epoch 1 | epoch 2 | epoch 3"
    )


def test_an_output_file_that_shrank_is_read_again_from_its_start(tmp_path):
    path = tmp_path / "7_0.out"
    path.write_text("@dlrepro start a\nepoch 1 of the first run, a long line\n")
    output = slurm_executor._Output(path)
    assert output.lines() == ["@dlrepro start a\n", "epoch 1 of the first run, a long line\n"]
    path.write_text("@dlrepro start a\n")  # Slurm truncates it as the task starts again
    assert output.lines() == ["@dlrepro start a\n"] and output.offset == 17


def test_the_end_states_of_a_task_without_a_result(tmp_path):
    output = slurm_executor._Output(tmp_path / "none.out")
    assert [
        slurm_executor._ending(_task(state), output)[0]
        for state in (
            "NODE_FAIL",
            "PREEMPTED",
            "BOOT_FAIL",
            "CANCELLED",
            "DEADLINE",
            "TIMEOUT",
            "FAILED",
            "OUT_OF_MEMORY",
        )
    ] == ["interrupted"] * 3 + ["skipped"] * 2 + ["failed"] * 3


def test_a_job_whose_task_was_suspended_is_interrupted_with_what_it_measured(tmp_path, monkeypatch):
    sub = _submission(tmp_path, jobs=("a.b16", "a.b32"))
    scratch = Path(sub["scratch"])
    for index, job_id in enumerate(sub["jobs"]):
        contract.write_json(
            str(sbatch.tasks_of(scratch) / ("7_%d.json" % index)),
            {"job_id": str(8 + index), "node": "n1", "cpus": str(index)},
        )
        (scratch / job_id).mkdir()
        contract.write_json(
            str(scratch / job_id / "result.json"),
            dict(contract.new_result(job_id, "ok"), timing={"repeats": [0.5, 0.5]}),
        )
    (sbatch.tasks_of(scratch) / "7_0.suspended").write_text(
        "suspended 2026-12-01T10:00:00Z\nresumed 2026-12-01T10:00:09Z\n"
    )
    for index, job_id in enumerate(sub["jobs"]):
        (sbatch.tasks_of(scratch) / ("7_%d.out" % index)).write_text("@dlrepro end %s\n" % job_id)
    answers = iter([{("7", 0): _task("RUNNING"), ("7", 1): _task("SUSPENDED", 1)}])
    monkeypatch.setattr(slurm_state, "tasks", lambda wanted, env=None: next(answers))
    slurm_executor.collect([sub], base.FolderSink(tmp_path / "out"), lambda *e: None, poll_s=0)
    noted, seen = (json.loads((tmp_path / "out" / j / "result.json").read_text()) for j in sub["jobs"])
    assert noted["status"] == seen["status"] == "interrupted" and noted["timing"]["repeats"] == [0.5, 0.5]
    assert noted["slurm"]["suspensions"] == ["suspended 2026-12-01T10:00:00Z", "resumed 2026-12-01T10:00:09Z"]
    assert seen["slurm"]["suspensions"] == ["SUSPENDED (seen by the client's poll)"]
    assert noted["reason"].startswith(
        "Slurm suspended its task while the job ran (suspended 2026-12-01T10:00:00Z; "
        "resumed 2026-12-01T10:00:09Z): its timing spans the pause"
    )
    assert noted["slurm"]["cpus"] == "0" and not scratch.exists()  # each ended with its own result
    assert not sbatch.tasks_of(scratch).exists()


def test_bad_slurm_options_are_one_line_errors(monkeypatch, tmp_path):
    with pytest.raises(DlreproError, match=r"^--max-parallel: expected a number of tasks >= 1 \(got 0\)$") as err:
        slurm_settings("slurm", max_parallel=0)
    assert err.value.remedy == "give --max-parallel 1 or more, or leave it out (no cap)"
    with pytest.raises(DlreproError, match="go with --executor slurm .not docker."):
        slurm_settings("docker", partition="gpu")
    assert slurm_settings("slurm") is None
    assert slurm_settings(None, options=["--qos=x"], max_parallel=2) == {
        "partition": None,
        "options": ["--qos=x"],
        "max_parallel": 2,
        "detach": False,
    }
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ExecutorError, match=r"^--executor slurm: no sbatch on PATH") as err:
        executors.get("slurm")
    assert "--executor docker" in err.value.remedy


def test_podman_without_its_socket_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DLREPRO_PODMAN_SOCKET", str(tmp_path / "none.sock"))
    engine.use("podman")
    try:
        with pytest.raises(
            ExecutorError, match=r"^--engine podman: no Podman API answers at unix://%s" % (tmp_path / "none.sock")
        ) as err:
            engine.client()
        assert err.value.remedy.startswith("start it (`podman system service --time=0 unix://")
    finally:
        engine.use("")
    with pytest.raises(ExecutorError, match="--engine lxc: unknown engine"):
        engine.use("lxc")
    assert engine.local_name("localhost/dlrepro/base:x") == "dlrepro/base:x" and engine.name() == "docker"


def test_rootless_podman_on_cgroups_v1_is_refused_as_it_ignores_the_limits():
    # Podman 4.3 here, rootless: "Resource limits are not supported and ignored on cgroups V1 rootless systems"
    problem = engine.limits_problem({"host": {"security": {"rootless": True}, "cgroupVersion": "v1"}})
    assert str(problem).startswith("--engine podman: this Podman runs rootless on a cgroups v1 host, where it ignores")
    assert problem.remedy == "run Podman as root, or on a host with cgroups v2 (systemd.unified_cgroup_hierarchy=1)"
    assert engine.limits_problem({"host": {"security": {"rootless": True}, "cgroupVersion": "v2"}}) is None
    assert engine.limits_problem({"host": {"security": {"rootless": False}, "cgroupVersion": "v1"}}) is None
    assert engine.limits_problem(None) is None  # Docker


# ------------------------------------------------------------------ against a real Slurm
