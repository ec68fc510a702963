"""The slurm executor: the batch script and the state parsers as pure functions (no Slurm needed, as
test_isolation.py tests the container's arguments), then end to end against a real Slurm 22.05 of the tests' own
(tests/cluster.py: two nodes on this host, two fake GPUs each) running the docker executor's containers."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dlrepro import REPO_ROOT, datasets, engine, spec
from dlrepro.errors import DlreproError, ExecutorError
from dlrepro.results import bundle as bundlemod, tables, validate
from dlrepro.run import executors, jobs as jobsmod, runs, slurm_state
from dlrepro.run.executors import base, docker as docker_executor, sbatch, slurm as slurm_executor
from dlrepro.run.options import RunOptions, slurm_settings
from runner import contract
from tests.helpers import fresh_cache, unreachable

ARGS = docker_executor.create_args("dlrepro/torch:2.13.0-cpu-abc", "1000:1000", "/s/jobs", "/s/out", "/cache/ds",
                                   gpu=None, memory=8 << 30, labels={"org.dlrepro.run": "alexnet-x"})


# ------------------------------------------------------------------ pure: the command line and the batch script


def test_the_run_command_is_the_create_arguments_as_flags():
    assert docker_executor.run_command(ARGS, "docker", "c1") == [
        "docker", "run", "--name", "c1", "--user", "1000:1000", "--network", "none", "--read-only",
        "--tmpfs", "/tmp:rw,exec", "--security-opt", "no-new-privileges", "--cap-drop", "ALL", "--pids-limit", "4096",
        "--env", "PYTHONPATH=/opt/dlrepro", "--env", "DLREPRO_DATA_ROOT=/data",
        "--volume", "%s:/opt/dlrepro/runner:ro" % (REPO_ROOT / "runner"), "--volume", "/cache/ds:/data:ro",
        "--volume", "/s/jobs:/jobs:ro", "--volume", "/s/out:/out:rw",
        "--label", "org.dlrepro.run=alexnet-x", "--label", "org.dlrepro.role=runner",
        "--interactive", "--rm", "--memory", str(8 << 30), "--memory-swap", str(8 << 30),
        "dlrepro/torch:2.13.0-cpu-abc", "python", "-m", "runner.supervise", "--watch-stdin", "--isolation", "worker",
            "/jobs", "/out"]
    gpu = docker_executor.create_args("t", "1000:1000", "/j", "/o", "/d", gpu=3)
    words = docker_executor.run_command(gpu)
    assert words[words.index("--gpus") + 1] == '"device=3"' and words.count("--gpus") == 1
    assert docker_executor.gpu_flags("podman", ["0", "1"]) == ["--device", "nvidia.com/gpu=0",
                                                                "--device", "nvidia.com/gpu=1"]
    with pytest.raises(ValueError, match="no docker run flag for container argument.s. shm_size"):
        docker_executor.run_command(dict(ARGS, shm_size="1g"))


def test_shell_words_keep_their_expansions():
    assert sbatch.shell_word("/b/.jobs/${DLREPRO_JOB}") == "/b/.jobs/\"${DLREPRO_JOB}\""
    assert sbatch.shell_word("it's ${A}_${B}") == "'it'\"'\"'s '\"${A}\"_\"${B}\""
    # an array's elements as words, none when it is empty: also under set -u in bash 4.2 (RHEL/CentOS 7)
    assert sbatch.shell_word("${gpu[@]}") == '${gpu[@]+"${gpu[@]}"}' and sbatch.shell_word("") == "''"


def _script(**kw):
    args = sbatch.task_args("dlrepro/torch:2.13.0-cpu-abc", "1000:1000", "/r/.b.partial/.work/attempt-1/1",
                                    "/cache/ds", "alexnet-x", kw.pop("gpus_arg", 0))
    return args, sbatch.script(args, kw.pop("engine_name", "docker"), ["a.b16", "a.b32", "a.b64"],
                                       "/r/.b.partial/.work/attempt-1/1", "alexnet-x", memory=8 << 30, **kw)


def test_the_batch_script_asks_slurm_for_the_array_and_runs_the_isolated_container():
    args, text = _script(threads=2, gpus=1, minutes=35, partition="gpu", options=["--account=lab"], max_parallel=2,
                         gpus_arg=1)
    sbatch = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert sbatch == ["#SBATCH --job-name=dlrepro-alexnet-x", "#SBATCH --array=0-2%2",
                      "#SBATCH --output=/r/.b.partial/.work/attempt-1/1.slurm/%A_%a.out", "#SBATCH --time=35",
                      "#SBATCH --no-requeue", "#SBATCH --cpus-per-task=2", "#SBATCH --gres=gpu:1",
                      "#SBATCH --partition=gpu",
                      "#SBATCH --account=lab"]
    assert "jobs=(a.b16 a.b32 a.b64)\nDLREPRO_JOB=${jobs[$SLURM_ARRAY_TASK_ID]}\n" in text
    assert "name=dlrepro-alexnet-x-$task\n" in text
    assert "trap 'docker kill \"$name\" >/dev/null 2>&1; docker rm -f \"$name\" >/dev/null 2>&1; kill \"$keeper\" " \
           "2>/dev/null; exit 143' TERM INT" in text
    assert "\ntrap 'stops=$((stops + 1)); echo \"suspended $(date -u +%FT%TZ)\" >> \"$tasks/$task.suspended\"; " \
           "if [ $stops -gt $continues ]; then docker pause \"$name\" >/dev/null 2>&1; fi' TSTP\n" in text
    assert "; docker unpause \"$name\" >/dev/null 2>&1' CONT\n" in text
    assert "\nwhile kill -0 \"$container\" 2>/dev/null; do wait \"$container\"; done" in text
    assert "    gpu=(--gpus '\"device='\"${host_gpus}\"'\"')\n" in text  # the host's GPUs, never the cgroup's numbers
    assert "\nelse memory=8589934592 memory_source=executor\n" in text  # where Slurm sets no memory limit
    # the container: exactly the docker executor's isolation, with the task's own job, name and Slurm job label
    command = text.split("\ntrap ")[-1].split("\n", 1)[1].split(" <&3 &")[0]
    words = docker_executor.run_command(args, "docker", "dlrepro-alexnet-x-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}")
    image = words.index(args["image"])
    assert shlex.split(command.replace("\\\n", " ")) == words[:image] + ["${limits[@]+${limits[@]}}",
                                                                         "${gpu[@]+${gpu[@]}}"] + words[image:]
    # the staged job beside the scratch output (mounted read-write), never inside it
    assert "--volume /r/.b.partial/.work/attempt-1/1.jobs/\"${DLREPRO_JOB}\":/jobs:ro" in command
    assert "--label org.dlrepro.slurm.job=\"${SLURM_JOB_ID}\"" in command
    assert "--env DLREPRO_GPU=\"${first_gpu}\"" in command and "\nfirst_gpu=${host_gpus%%,*}" in text
    assert "--env DLREPRO_GPU_UNMAPPED=\"${gpu_problem}\"" in command
    assert "--memory" not in command  # the task's own limit, in ${limits[@]}
    assert "org.dlrepro.host" not in command and "org.dlrepro.pid" not in command  # never reaped as a dead run's
    assert "--network none" in command and "--cap-drop ALL" in command and "--read-only" in command


def test_a_cpu_array_without_options_asks_for_nothing_more_and_podman_gets_cdi_devices():
    _, text = _script(minutes=31)
    assert [line for line in text.splitlines() if line.startswith("#SBATCH")][1:] == [
        "#SBATCH --array=0-2", "#SBATCH --output=/r/.b.partial/.work/attempt-1/1.slurm/%A_%a.out",
        "#SBATCH --time=31", "#SBATCH --no-requeue"]
    _, text = _script(gpus=2, engine_name="podman", gpus_arg=2)
    assert "for i in ${host_gpus//,/ }; do gpu+=(--device nvidia.com/gpu=\"${i}\"); done" in text
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
        '${limits[*]+${limits[*]}}|${gpu[*]+${gpu[*]}}|$gpu_problem"']
    tools = "/usr/bin:/bin"  # awk, paste, sort; no docker (so no GPU flags), no real nvidia-smi or scontrol
    proc = subprocess.run([bash, "-c", "\n".join(["set -u"] + lines)], capture_output=True, text=True,
                          env=dict(env, PATH="%s:%s" % (bin_dir, tools)))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1].split("|")


# lscpu -p of a node with 2 cores of 2 threads whose Linux ids number the SMT siblings 2 and 3 (core 0: CPUs 0
# and 2, core 1: CPUs 1 and 3); Slurm's abstract ids number a core's threads next to each other: 0-1 is core 0
SMT_LSCPU = "# CPU,Core,Socket\n0,0,0\n1,1,0\n2,0,0\n3,1,0\n"


BASH42 = os.environ.get("DLREPRO_BASH42")  # a bash 4.2 (RHEL/CentOS 7's), built from bash-4.2's source


def _shell(which):
    """The bash to run the script's lines with: this host's ("bash"), or a bash 4.2 ("4.2", from DLREPRO_BASH42)."""
    if which == "bash":
        return "bash"
    if not BASH42:
        pytest.skip("no bash 4.2 here: set DLREPRO_BASH42 to one built from bash-4.2's source (configure && make)")
    version = subprocess.run([BASH42, "-c", "echo $BASH_VERSION"], capture_output=True, text=True).stdout
    assert version.startswith("4.2."), version
    return BASH42


@pytest.mark.parametrize("which", ["bash", "4.2"])
def test_the_task_binds_its_container_to_the_host_gpus_cpus_and_memory_slurm_gave(tmp_path, which):
    bash = _shell(which)
    allowed = subprocess.run(["awk", '$1 == "Cpus_allowed_list:" {print $2}', "/proc/self/status"],
                             capture_output=True, text=True).stdout.strip()
    base = {"SLURM_JOB_ID": "12", "SLURM_CPUS_ON_NODE": "64"}
    # ConstrainDevices=yes: the job holds /dev/nvidia1, its CUDA_VISIBLE_DEVICES is 0 (gres.shtml); the host's is 1
    host, source, first, cpus, cpu_source, memory, memory_source, limits, gpu, problem = _binding(
        tmp_path, dict(base, CUDA_VISIBLE_DEVICES="0", SLURM_JOB_GPUS="1", SLURM_MEM_PER_NODE="300"), bash=bash)
    assert (host, source, first, problem) == ("1", "SLURM_JOB_GPUS", "1", "")
    assert (cpus, cpu_source) == (allowed, "Cpus_allowed_list")  # 64 allocated: no narrower set to find
    assert (memory, memory_source) == (str(300 << 20), "SLURM_MEM_PER_NODE")
    assert limits == "--cpuset-cpus %s --memory %d --memory-swap %d" % (allowed, 300 << 20, 300 << 20)
    assert gpu == ""  # no docker with an NVIDIA runtime here: no flags, and the script says so
    # no constraint: CUDA_VISIBLE_DEVICES is the host's index already; two GPUs; memory per CPU
    host, source, first, _, _, memory, memory_source, _, _, _ = _binding(
        tmp_path, dict(base, CUDA_VISIBLE_DEVICES="2,3", SLURM_JOB_GPUS="2,3", SLURM_MEM_PER_CPU="200",
                       SLURM_CPUS_ON_NODE="2"), scontrol="", bash=bash)
    assert (host, source, first) == ("2,3", "SLURM_JOB_GPUS", "2")
    assert (memory, memory_source) == (str(2 * 200 << 20), "SLURM_MEM_PER_CPU")
    # inside the job's device cgroup nvidia-smi lists the job's GPUs only: their UUIDs
    host, source, first = _binding(tmp_path, dict(base, CUDA_VISIBLE_DEVICES="0", SLURM_JOB_GPUS="1"),
                                   nvidia_smi="GPU-bbbb\n")[:3]
    assert (host, source, first) == ("GPU-bbbb", "nvidia-smi", "GPU-bbbb")
    # without the constraint it lists every GPU of the node: not the job's, so Slurm's indices
    assert _binding(tmp_path, dict(base, CUDA_VISIBLE_DEVICES="1", SLURM_JOB_GPUS="1"),
                    nvidia_smi="GPU-aaaa\nGPU-bbbb\n")[:2] == ["1", "SLURM_JOB_GPUS"]
    # a Slurm without SLURM_JOB_GPUS and no nvidia-smi that lists the job's GPUs: CUDA_VISIBLE_DEVICES names no
    # host GPU for certain, so no GPU is passed and the runner records the job skipped with the reason
    found = _binding(tmp_path, dict(base, CUDA_VISIBLE_DEVICES="1"), nvidia_smi="GPU-aaaa\nGPU-bbbb\n", bash=bash)
    assert found[:3] + found[8:9] == ["", "none", "", ""]
    assert found[9] == ("Slurm gave this task GPU(s) CUDA_VISIBLE_DEVICES=1 without their host indices (no "
                        "SLURM_JOB_GPUS), and nvidia-smi does not list exactly the job's GPUs (it lists: "
                        "GPU-aaaa,GPU-bbbb); CUDA_VISIBLE_DEVICES may be numbered inside the job's cgroup, so it "
                        "names no host GPU for certain and is not passed to the engine")
    assert "it lists: none)" in _binding(tmp_path, dict(base, CUDA_VISIBLE_DEVICES="0"))[9]
    assert _binding(tmp_path, base, bash=bash)[:2] + _binding(tmp_path, base)[5:7] == ["", "", str(8 << 30), "executor"]


@pytest.mark.parametrize("which", ["bash", "4.2"])
def test_slurms_abstract_cpu_ids_are_mapped_to_the_nodes_linux_cpus(tmp_path, which):
    """No task plugin binds the job (the whole node allowed): the task's CPU_IDs of ``scontrol show job -d`` (this
    task's, not the array's others) are Slurm's abstract ids, passed as the Linux CPUs they stand for."""
    allowed = subprocess.run(["awk", '$1 == "Cpus_allowed_list:" {print $2}', "/proc/self/status"],
                             capture_output=True, text=True).stdout.strip()
    env = {"SLURM_JOB_ID": "12", "SLURM_CPUS_ON_NODE": "1"}

    def shown(ids):
        return ("JobId=11 ArrayJobId=10 ArrayTaskId=0 JobName=x\n     Nodes=n1 CPU_IDs=2-3 Mem=0 GRES=\n"
                "JobId=12 ArrayJobId=10 ArrayTaskId=1 JobName=x\n     Nodes=n1 CPU_IDs=%s Mem=0 GRES=gpu:1(IDX:1)\n"
                % ids)

    found = _binding(tmp_path, env, scontrol=shown("0-1"), lscpu=SMT_LSCPU, bash=_shell(which))
    assert found[3:5] == ["0,2", "scontrol CPU_IDs 0-1 (Slurm's abstract ids), as Linux CPUs"]  # core 0, not 0-1
    assert found[7].startswith("--cpuset-cpus 0,2 ")
    assert _binding(tmp_path, env, scontrol=shown("1,3"), lscpu=SMT_LSCPU)[3] == "2,3"
    # ids beyond the node's CPUs (slurm.conf describes another node): left unmapped, the allowed list kept
    assert _binding(tmp_path, env, scontrol=shown("2,5"), lscpu=SMT_LSCPU)[3:5] == [
        allowed, "Cpus_allowed_list (scontrol CPU_IDs 2,5: not mapped to this node's Linux CPUs)"]
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
    guarded = subprocess.run([bash, "-c", 'set -u; gpu=(); printf "%s," x ${gpu[@]+"${gpu[@]}"} y'],
                             capture_output=True, text=True)
    assert (guarded.returncode, guarded.stdout) == (0, "x,y,")
    if which == "4.2":  # the form the script had before: this bash stops at it
        plain = subprocess.run([bash, "-c", 'set -u; gpu=(); printf "%s," x "${gpu[@]}" y'], capture_output=True,
                               text=True)
        assert plain.returncode != 0 and "gpu[@]: unbound variable" in plain.stderr


def test_an_sbatch_option_that_is_not_one_is_refused_everywhere():
    """A newline would end the #SBATCH line and make the rest a command of the script (run on the nodes)."""
    for bad, why in (("--account=lab\ntouch INJECTED", "holds no newline or other control character"),
                     ("--qos=x\x1b[2J", "holds no newline or other control character"),
                     ("account=lab", "starting with -")):
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


SCONTROL = ("JobId=7 ArrayJobId=7 ArrayTaskId=2-3%1 ArrayTaskThrottle=1 JobName=dlrepro-x UserId=root(0) "
            "JobState=PENDING Reason=JobArrayTaskLimit Dependency=(null) ExitCode=0:0 NodeList=(null)\n"
            "JobId=8 ArrayJobId=7 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=n1\n"
            "JobId=9 ArrayJobId=7 ArrayTaskId=1 JobState=CANCELLED Reason=None ExitCode=0:15 NodeList=n2\n")
JOBCOMP = ("JobId=3 UserId=root(0) GroupId=root(0) Name=t.sh JobState=FAILED Partition=debug TimeLimit=UNLIMITED "
           "StartTime=2026-12-01T10:10:42 EndTime=2026-12-01T10:10:45 NodeList=n1 NodeCnt=1 ProcCnt=1 "
           "WorkDir=/tmp/slurmtest ReservationName= Tres=cpu=1,mem=4000M,node=1,billing=1 Account= QOS= WcKey= "
           "Cluster=unknown SubmitTime=2026-12-01T10:10:37 EligibleTime=2026-12-01T10:10:42 ArrayJobId=1 "
           "ArrayTaskId=1 DerivedExitCode=0:0 ExitCode=1:0 \n")


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


def _tool(bin_dir, name, text):
    (bin_dir / name).write_text("#!/bin/sh\n" + text)
    (bin_dir / name).chmod(0o755)


def test_a_failed_state_query_is_told_from_a_task_slurm_no_longer_knows(tmp_path, monkeypatch):
    monkeypatch.setattr(slurm_state, "RETRY_S", 0)
    calls = tmp_path / "calls"
    env = dict(PATH="%s:/usr/bin:/bin" % tmp_path)
    # slurmctld down: every try fails, so Slurm was not asked (None), not "no such tasks" ({})
    _tool(tmp_path, "scontrol", "echo x >> %s\necho 'slurm_load_jobs error: Unable to contact slurm controller "
                                "(connect failure)' >&2; exit 1\n" % calls)
    assert slurm_state.tasks([("7", 0)], env) is None and len(calls.read_text().split()) == slurm_state.TRIES
    # it answers that the job is unknown (ended more than MinJobAge ago), no accounting, no jobcomp file
    _tool(tmp_path, "scontrol", 'if [ "$2" = config ]; then echo "AccountingStorageType = accounting_storage/none"; '
                                'echo "JobCompType = jobcomp/none"; exit 0; fi\n'
                                'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1\n')
    assert slurm_state.tasks([("7", 0)], env) == {}
    # scontrol answers for one task, the config query for the other fails: nothing is known
    _tool(tmp_path, "scontrol", 'if [ "$2" = config ]; then exit 1; fi\necho "%s"\n' % SCONTROL.splitlines()[1])
    assert slurm_state.tasks([("7", 0)], env)[("7", 0)].state == "COMPLETED"
    assert slurm_state.tasks([("7", 0), ("7", 9)], env) is None


def _submission(tmp_path, jobs=("a.b16",)):
    scratch = tmp_path / "scratch"
    scratch.mkdir(parents=True)
    sbatch.tasks_of(scratch).mkdir()
    return {"array_id": "7", "jobs": list(jobs), "scratch": str(scratch), "tasks": str(sbatch.tasks_of(scratch)),
            "script": "slurm/x.sbatch", "gpus": 0}


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
    assert result["reason"] == ("Slurm: task 7_0 (job 8) on n1: NODE_FAIL, exit code 0:0 (scontrol), without a "
                                "result; kept what it measured: 2 repeats or epochs")
    assert scratch.is_dir() and sub["collected"]  # a task that ended without its result may leave a container there
    # Slurm unanswered for longer than unanswered_s: Unanswered, the job not recorded, its scratch kept
    sub = _submission(tmp_path / "2")
    _running_result(Path(sub["scratch"]), "a.b16")
    monkeypatch.setattr(slurm_state, "tasks", lambda wanted, env=None: None)
    with pytest.raises(slurm_executor.Unanswered, match=r"^Slurm has not answered for 0 s: 1 job\(s\) of array\(s\) 7 "
                                                         r"may still run, none is recorded as ended$"):
        slurm_executor.collect([sub], base.FolderSink(tmp_path / "out2"), lambda *e: None, poll_s=0.01,
                               unanswered_s=0)
    assert not (tmp_path / "out2").exists() and "collected" not in sub
    assert json.loads((Path(sub["scratch"]) / "a.b16" / "result.json").read_text())["status"] == "running"


def test_a_task_slurm_does_not_list_is_gone_only_after_polls_in_which_its_output_stopped_growing(tmp_path,
                                                                                                 monkeypatch):
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
        "output no longer growing) and it left no result; its output ends: epoch 1 | epoch 2 | epoch 3")


def test_an_output_file_that_shrank_is_read_again_from_its_start(tmp_path):
    path = tmp_path / "7_0.out"
    path.write_text("@dlrepro start a\nepoch 1 of the first run, a long line\n")
    output = slurm_executor._Output(path)
    assert output.lines() == ["@dlrepro start a\n", "epoch 1 of the first run, a long line\n"]
    path.write_text("@dlrepro start a\n")  # Slurm truncates it as the task starts again
    assert output.lines() == ["@dlrepro start a\n"] and output.offset == 17


def test_the_end_states_of_a_task_without_a_result(tmp_path):
    output = slurm_executor._Output(tmp_path / "none.out")
    assert [slurm_executor._ending(_task(state), output)[0] for state in (
        "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "CANCELLED", "DEADLINE", "TIMEOUT", "FAILED", "OUT_OF_MEMORY")] == \
        ["interrupted"] * 3 + ["skipped"] * 2 + ["failed"] * 3


def test_a_job_whose_task_was_suspended_is_interrupted_with_what_it_measured(tmp_path, monkeypatch):
    sub = _submission(tmp_path, jobs=("a.b16", "a.b32"))
    scratch = Path(sub["scratch"])
    for index, job_id in enumerate(sub["jobs"]):
        contract.write_json(str(sbatch.tasks_of(scratch) / ("7_%d.json" % index)),
                            {"job_id": str(8 + index), "node": "n1", "cpus": str(index)})
        (scratch / job_id).mkdir()
        contract.write_json(str(scratch / job_id / "result.json"),
                            dict(contract.new_result(job_id, "ok"), timing={"repeats": [0.5, 0.5]}))
    (sbatch.tasks_of(scratch) / "7_0.suspended").write_text(
        "suspended 2026-12-01T10:00:00Z\nresumed 2026-12-01T10:00:09Z\n")
    for index, job_id in enumerate(sub["jobs"]):
        (sbatch.tasks_of(scratch) / ("7_%d.out" % index)).write_text("@dlrepro end %s\n" % job_id)
    answers = iter([{("7", 0): _task("RUNNING"), ("7", 1): _task("SUSPENDED", 1)}])
    monkeypatch.setattr(slurm_state, "tasks", lambda wanted, env=None: next(answers))
    slurm_executor.collect([sub], base.FolderSink(tmp_path / "out"), lambda *e: None, poll_s=0)
    noted, seen = (json.loads((tmp_path / "out" / j / "result.json").read_text()) for j in sub["jobs"])
    assert noted["status"] == seen["status"] == "interrupted" and noted["timing"]["repeats"] == [0.5, 0.5]
    assert noted["slurm"]["suspensions"] == ["suspended 2026-12-01T10:00:00Z", "resumed 2026-12-01T10:00:09Z"]
    assert seen["slurm"]["suspensions"] == ["SUSPENDED (seen by the client's poll)"]
    assert noted["reason"].startswith("Slurm suspended its task while the job ran (suspended 2026-12-01T10:00:00Z; "
                                      "resumed 2026-12-01T10:00:09Z): its timing spans the pause")
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
        "partition": None, "options": ["--qos=x"], "max_parallel": 2, "detach": False}
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ExecutorError, match=r"^--executor slurm: no sbatch on PATH") as err:
        executors.get("slurm")
    assert "--executor docker" in err.value.remedy


def test_podman_without_its_socket_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DLREPRO_PODMAN_SOCKET", str(tmp_path / "none.sock"))
    engine.use("podman")
    try:
        with pytest.raises(ExecutorError, match=r"^--engine podman: no Podman API answers at unix://%s"
                                                % (tmp_path / "none.sock")) as err:
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

ALEXNET = dict(frameworks=["torch"], variants=["alexnet-s"], quick=True)


def _containers(docker_engine, bundle_id):
    return docker_engine.containers.list(all=True, filters={"label": "org.dlrepro.run=%s" % bundle_id})


@pytest.mark.docker
@pytest.mark.slurm
def test_alexnet_quick_over_both_nodes_is_a_bundle_like_a_docker_runs(slurm, torch_cpu_image, tmp_path, reporter,
                                                                     monkeypatch):
    unreachable(monkeypatch, "cifar10")
    fresh_cache(monkeypatch, tmp_path)
    options = RunOptions(batch_sizes=[16, 32], threads=[2], **ALEXNET)  # 2 CPUs a task: one task fills a node
    started = time.time()
    path = runs.run("alexnet", options.model_copy(update={"executor": "slurm"}), results_dir=tmp_path / "slurm",
                    reporter=reporter, slurm={"partition": "debug"})
    print("slurm run: %.1f s" % (time.time() - started))
    body = json.loads((path / "bundle.json").read_text())
    ids = ["alexnet-s.torch.cpu.b16.t2", "alexnet-s.torch.cpu.b32.t2"]
    assert [r["job_id"] for r in body["jobs"]] == ids and body["counts"] == {"ok": 2, "failed": 0, "skipped": 0}
    assert body["executor"]["executor"] == "slurm" and body["executor"]["partition"] == "debug"
    assert body["executor"]["engine"]["name"] == "docker" and body["executor"]["isolation"]["network"] == "none"
    (submission,) = body["submitted"]
    results = {j: json.loads((path / "jobs" / j / "result.json").read_text()) for j in ids}
    assert {results[j]["slurm"]["node"] for j in ids} == {"n1", "n2"}
    assert [results[j]["slurm"]["array_task_id"] for j in ids] == [0, 1]
    assert {results[j]["slurm"]["array_job_id"] for j in ids} == {submission["array_id"]}
    assert all(results[j]["slurm"]["partition"] == "debug" and results[j]["slurm"]["gres"] is None for j in ids)
    assert results[ids[0]]["parameters"]["measured"] == 62_378_344 and results[ids[0]]["environment"]["threads"] == 2
    assert results[ids[0]]["environment"]["in_container"] is True and results[ids[0]]["attempt"]["executor"] == "slurm"
    script = (path / submission["script"]).read_text()
    assert "#SBATCH --cpus-per-task=2\n#SBATCH --partition=debug\n" in script and "#SBATCH --array=0-1\n" in script
    assert submission["script"] in (path / "SHA256SUMS").read_text()
    assert validate.check(path) == []
    local = runs.run("alexnet", options.model_copy(update={"executor": "docker"}), results_dir=tmp_path / "docker",
                     reporter=reporter)
    assert [r["job_id"] for r in json.loads((local / "bundle.json").read_text())["jobs"]] == ids
    assert sorted(body["jobs"][0]) == sorted(json.loads((local / "bundle.json").read_text())["jobs"][0])
    summary, _ = tables.merge_to([path, local], None)
    assert sorted(zip(summary["executor"], summary["job_id"])) == sorted(
        [("slurm", j) for j in ids] + [("docker", j) for j in ids])
    assert set(summary["status"]) == {"ok"} and list(summary["measurements"]) == [2, 2, 2, 2]


@pytest.mark.docker
@pytest.mark.slurm
def test_max_parallel_1_runs_one_task_at_a_time(slurm, torch_cpu_image, tmp_path, reporter):
    path = runs.run("alexnet", RunOptions(executor="slurm", batch_sizes=[8, 16, 32], **ALEXNET), results_dir=tmp_path,
                    reporter=reporter, slurm={"max_parallel": 1})
    body = json.loads((path / "bundle.json").read_text())
    assert body["counts"]["ok"] == 3 and "#SBATCH --array=0-2%1\n" in (path / body["submitted"][0]["script"]).read_text()
    spans = sorted((r["started"], r["finished"]) for r in (json.loads((path / "jobs" / j["job_id"] / "result.json")
                                                                      .read_text()) for j in body["jobs"]))
    assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:])), spans  # no two overlap


@pytest.mark.docker
@pytest.mark.slurm
def test_cuda_jobs_get_their_own_gpu_from_gres_and_are_refused_without_a_real_one(slurm, torch_cpu_image, tmp_path):
    found = jobsmod.expand(spec.load("alexnet"), RunOptions(frameworks=["torch"], variants=["alexnet-s"], device="cuda",
                                                             batch_sizes=[16, 32, 64], quick=True))
    found += jobsmod.expand(spec.load("alexnet"), RunOptions(frameworks=["torch"], variants=["alexnet-s"], device="cuda",
                                                              batch_sizes=[16], quick=True, ranks=[2]))
    events = []
    executor = slurm_executor.SlurmExecutor(device="cuda")
    executor.run_id = "cuda-test"
    executor.run(torch_cpu_image, found, tmp_path, datasets.root(), lambda *e: events.append(e[:2]))
    results = {j["id"]: json.loads((tmp_path / j["id"] / "result.json").read_text()) for j in found}
    assert [r["status"] for r in results.values()] == ["skipped"] * 4
    parallel = results.pop("alexnet-s.torch.cuda.b16.g2")  # a data-parallel job: both GPUs of one node
    assert parallel["slurm"]["gres"] == "gpu:2" and parallel["slurm"]["host_gpus"] == "0,1"
    assert parallel["environment"]["host_gpu"] == "0"  # rank 0's, the first
    seen = [(r["slurm"]["node"], r["slurm"]["host_gpus"]) for r in results.values()]
    assert all(gpu in ("0", "1") and node in ("n1", "n2") for node, gpu in seen)
    spans = [(r["started"], r["finished"], where) for r, where in zip(results.values(), seen)]
    for a in spans:  # tasks that ran at once had GPUs of their own
        assert all(a[2] != b[2] for b in spans if b is not a and a[0] < b[1] and b[0] < a[1])
    for r in results.values():
        assert r["slurm"]["gres"] == "gpu:1" and r["slurm"]["host_gpus"] == r["slurm"]["slurm_job_gpus"]
        assert r["slurm"]["gpu_source"] == "SLURM_JOB_GPUS" and r["slurm"]["cuda_visible_devices"] == "0"  # cgroup's
        assert r["reason"] == ("no NVIDIA GPU device is visible to the job (no /dev/nvidia<N>): host GPU %s, "
                               "assigned to it, was not passed in" % r["slurm"]["host_gpus"])
        assert r["environment"]["host_gpu"] == r["slurm"]["host_gpus"]
        assert "NVIDIA Container Toolkit" in r["remedy"]
    assert sorted(kind for kind, _ in events) == ["end"] * 4 + ["queued"] * 4 + ["start"] * 4


def _wait_for(condition, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.3)
    squeue = subprocess.run(["squeue", "-h", "-o", "%i %T %N"], capture_output=True, text=True)
    pytest.fail("%s: not within %d s (squeue: %s%s)" % (what, timeout, squeue.stdout, squeue.stderr))


@pytest.mark.docker
@pytest.mark.slurm
def test_scancel_is_recorded_leaves_no_container_and_resume_runs_only_the_missing(slurm, torch_cpu_image, tmp_path,
                                                                                 reporter, docker_engine):
    options = RunOptions(executor="slurm", batch_sizes=[16, 32], **ALEXNET)
    partial = runs.run("alexnet", options, results_dir=tmp_path, reporter=reporter,
                       slurm={"max_parallel": 1, "detach": True})
    assert partial.name.endswith(".partial")
    body = bundlemod.body(partial)
    (submission,) = body["submitted"]
    array, first, second = submission["array_id"], "alexnet-s.torch.cpu.b16", "alexnet-s.torch.cpu.b32"
    assert submission["jobs"] == [first, second] and body["attempts"][0]["detached"] is True
    assert "running" not in body and bundlemod.listing(tmp_path)[0]["submitted"] == [array]
    name = "dlrepro-%s-%s_1" % (body["id"], array)
    _wait_for(lambda: docker_engine.containers.list(filters={"name": name}), 240, "task 1's container started")
    subprocess.run(["scancel", "%s_1" % array], check=True)
    _wait_for(lambda: not docker_engine.containers.list(all=True, filters={"name": name}), 30,
              "task 1's container removed")
    _wait_for(lambda: not any(t.active for t in slurm_state.tasks([(array, 0), (array, 1)]).values()), 60,
              "both tasks ended")
    listed = subprocess.run([sys.executable, "-m", "invoke", "bundles", "--results", str(tmp_path)], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120)  # takes what the array has finished
    assert listed.returncode == 0 and "%s: ok" % first in listed.stdout, listed.stdout + listed.stderr
    assert "%s: skipped" % second in listed.stdout
    assert bundlemod.listing(tmp_path)[0]["counts"] == {"ok": 1, "failed": 0, "skipped": 1, "missing": 0}
    assert bundlemod.listing(tmp_path)[0]["submitted"] == []
    resumed = runs.run(None, RunOptions(), results_dir=tmp_path, reporter=reporter, resume=body["id"])
    final = json.loads((resumed / "bundle.json").read_text())
    assert [a["jobs"] for a in final["attempts"]] == [[first, second], [second]]
    assert [a["executor"] for a in final["attempts"]] == ["slurm", "slurm"] and final["counts"]["ok"] == 2
    assert [s["array_id"] == array for s in final["submitted"]] == [True, False]
    assert all(s["collected"] for s in final["submitted"])
    cancelled = json.loads((resumed / "jobs" / second / "attempts" / "1" / "result.json").read_text())
    assert cancelled["status"] == "skipped" and cancelled["attempt"]["number"] == 1
    # the job script's trap ends the task with 143 (128 + TERM), or the supervisor ends first once its standard
    # input closes (0); Slurm's record is read while it knows the task, else from its jobcomp file
    assert re.match(r"Slurm: task %s_1 \(job \d+\) on n[12]: CANCELLED, exit code (143|0):0 \((scontrol|jobcomp)\), "
                    r"without a result; its output ends: .*CANCELLED AT" % array, cancelled["reason"]), cancelled["reason"]
    assert cancelled["slurm"]["state"] == "CANCELLED" and cancelled["slurm"]["exit_code"] in ("143:0", "0:0")
    assert cancelled["slurm"]["array_task_id"] == 1 and cancelled["slurm"]["node"] in ("n1", "n2")
    assert json.loads((resumed / "jobs" / first / "result.json").read_text())["attempt"]["number"] == 1
    assert json.loads((resumed / "jobs" / second / "result.json").read_text())["attempt"]["number"] == 2
    assert validate.check(resumed) == []
    # the last task's container goes with its --rm once the task has ended, moments after its result
    _wait_for(lambda: _containers(docker_engine, body["id"]) == [], 30, "no container of the bundle left")


@pytest.mark.slurm
def test_a_partition_the_cluster_lacks_is_a_clear_error(slurm):
    with pytest.raises(ExecutorError, match=r"^--partition gpux: the cluster has no such partition \(it has: debug\)$"):
        slurm_executor.SlurmExecutor(partition="gpux")


@pytest.mark.docker
@pytest.mark.slurm
def test_a_newline_in_a_slurm_option_is_refused_on_the_command_line_and_from_a_tampered_bundle(
        slurm, torch_cpu_image, tmp_path, reporter):
    typed = subprocess.run([sys.executable, "-m", "invoke", "run", "--spec=alexnet", "--executor", "slurm",
                            "--slurm-option", "--account=lab\ntouch %s" % (tmp_path / "INJECTED"), "--results",
                            str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert typed.returncode == 2 and "Traceback" not in typed.stdout + typed.stderr
    assert typed.stdout.splitlines()[0] == ("error: --slurm-option: an sbatch option holds no newline or other control "
                                            "character (got '--account=lab\\ntouch %s')" % (tmp_path / "INJECTED"))
    partial = runs.run("alexnet", RunOptions(executor="slurm", batch_sizes=[16], **ALEXNET), results_dir=tmp_path,
                       reporter=reporter, slurm={"options": ["--comment=dlrepro-test"], "detach": True})
    path = partial / "bundle.json"
    honest = path.read_text()
    body = json.loads(honest)
    assert body["executor"]["slurm_options"] == ["--comment=dlrepro-test"]
    body["executor"]["slurm_options"] = ["--comment=x\ntouch %s" % (tmp_path / "INJECTED")]
    path.write_text(json.dumps(body))
    with pytest.raises(DlreproError) as err:
        runs.run(None, RunOptions(), results_dir=tmp_path, reporter=reporter, resume=body["id"])
    assert str(err.value) == ("%s: executor.slurm_options: an sbatch option holds no newline or other control "
                              "character (got '--comment=x\\ntouch %s')" % (path, tmp_path / "INJECTED"))
    assert err.value.remedy.startswith("restore %s as the run wrote it" % path)
    assert len(json.loads(path.read_text())["attempts"]) == 1 and len(list((partial / "slurm").iterdir())) == 1
    path.write_text(honest)  # restored: the resume waits for the array and takes its result
    resumed = runs.run(None, RunOptions(), results_dir=tmp_path, reporter=reporter, resume=body["id"])
    assert json.loads((resumed / "bundle.json").read_text())["counts"]["ok"] == 1
    assert not (tmp_path / "INJECTED").exists()


@pytest.mark.docker
@pytest.mark.slurm
def test_the_batch_script_runs_a_cpu_task_under_bash_4_2(slurm, torch_cpu_image, tmp_path, docker_engine):
    """The generated script, its interpreter a bash 4.2 (RHEL/CentOS 7's), with a CPU task: its gpu array empty."""
    bash = _shell("4.2")
    scratch = tmp_path / "s"
    for folder in (scratch, sbatch.tasks_of(scratch), sbatch.stage_of(scratch) / "j0"):
        folder.mkdir(parents=True)
    args = sbatch.task_args(torch_cpu_image.tag, "1000:1000", scratch, tmp_path, "bash42-test", 0,
                            ["sh", "-c", "echo '@dlrepro start j0'; echo \"in the container: $(id -u)\""])
    text = sbatch.script(args, "docker", ["j0"], scratch, "bash42-test", threads=1, minutes=5)
    path = tmp_path / "bash42.sbatch"
    path.write_text(text.replace("#!/bin/bash\n", "#!%s\n" % bash, 1))
    array = slurm_executor._sbatch(path)
    _wait_for(lambda: (slurm_state.tasks([(array, 0)]) or {}).get((array, 0)) is not None and not
              slurm_state.tasks([(array, 0)])[(array, 0)].active, 180, "the task ended")
    task = slurm_state.tasks([(array, 0)])[(array, 0)]
    output = _task_file(scratch, array, 0, ".out")
    assert "unbound variable" not in output and "in the container: 1000" in output, output
    assert (task.state, task.exit_code) == ("COMPLETED", "0:0")
    facts = _task_file(scratch, array, 0)
    assert facts["gpu_source"] == "" and facts["host_gpus"] == "" and facts["cpus"]
    _wait_for(lambda: _containers(docker_engine, "bash42-test") == [], 60, "the container removed")


def _task_file(scratch, array, index, suffix=".json"):
    path = sbatch.tasks_of(scratch) / ("%s_%d%s" % (array, index, suffix))
    return json.loads(path.read_text()) if suffix == ".json" else path.read_text()


@pytest.mark.docker
@pytest.mark.slurm
def test_two_tasks_on_one_node_get_their_own_host_gpu_and_cpus(slurm, torch_cpu_image, tmp_path, docker_engine):
    # the real batch script with a command that waits, on a cluster with task/cgroup and ConstrainDevices=yes
    scratch = tmp_path / "s"
    for folder in (scratch, sbatch.tasks_of(scratch), sbatch.stage_of(scratch) / "j0", sbatch.stage_of(scratch) / "j1"):
        folder.mkdir(parents=True)
    args = sbatch.task_args(torch_cpu_image.tag, "1000:1000", scratch, tmp_path, "bind-test", 1,
                                    ["sh", "-c", "echo '@dlrepro start j'; sleep 120"])
    path = tmp_path / "bind.sbatch"
    path.write_text(sbatch.script(args, "docker", ["j0", "j1"], scratch, "bind-test", threads=1, gpus=1,
                                          minutes=5, options=["--nodelist=n1"]))
    started = time.time()
    array = slurm_executor._sbatch(path)
    try:
        running = _wait_for(lambda: [c for c in _containers(docker_engine, "bind-test") if c.status == "running"]
                            if len(_containers(docker_engine, "bind-test")) == 2 else None, 120, "both containers")
        inspected = {c.name: docker_engine.api.inspect_container(c.id) for c in running}
        tasks = [_task_file(scratch, array, i) for i in (0, 1)]
    finally:
        subprocess.run(["scancel", array])
    assert [t["node"] for t in tasks] == ["n1", "n1"]
    assert sorted(t["host_gpus"] for t in tasks) == ["0", "1"] and {t["gpu_source"] for t in tasks} == {"SLURM_JOB_GPUS"}
    # with ConstrainDevices=yes Slurm numbers each job's GPUs from 0 in its cgroup: both see CUDA_VISIBLE_DEVICES=0
    assert [t["cuda_visible_devices"] for t in tasks] == (["0", "0"] if slurm.cgroups else
                                                          [t["host_gpus"] for t in tasks])
    for t in tasks:
        config = inspected["dlrepro-bind-test-%s_%d" % (array, t["array_task_id"])]
        assert "DLREPRO_GPU=%s" % t["host_gpus"] in config["Config"]["Env"]
        assert config["HostConfig"]["CpusetCpus"] == t["cpus"]
        assert t["cpu_source"] == "Cpus_allowed_list" if slurm.cgroups else t["cpu_source"].startswith(
            "scontrol CPU_IDs")  # no task plugin: Slurm's abstract ids, mapped
        # no NVIDIA runtime here: no device request is made (the flags the script would pass: tested above)
        assert not config["HostConfig"]["DeviceRequests"] and t["memory_source"] == "none"
        assert "GPU(s) %s stay outside" % t["host_gpus"] in _task_file(scratch, array, t["array_task_id"], ".out")
    cpusets = [set(slurm_state.indices(t["cpus"])) for t in tasks]
    assert len(cpusets[0]) == len(cpusets[1]) == 1 and not cpusets[0] & cpusets[1]
    _wait_for(lambda: _containers(docker_engine, "bind-test") == [], 60, "the containers removed by the trap")
    print("GPU and CPU binding on the cluster: %.1f s" % (time.time() - started))


def _wrapper(bin_dir, flag, log):
    """A scontrol on PATH that fails like an unreachable slurmctld while ``flag`` exists (each failure a line in
    ``log``)."""
    bin_dir.mkdir()
    _tool(bin_dir, "scontrol", "if [ -e %s ]; then echo failed >> %s; echo 'slurm_load_jobs error: Unable to "
                               "contact slurm controller (connect failure)' >&2; exit 1; fi\nexec %s \"$@\"\n"
          % (flag, log, shutil.which("scontrol")))


@pytest.mark.docker
@pytest.mark.slurm
def test_node_failure_suspension_requeue_and_a_silent_slurm_lose_nothing_and_resume_reruns_the_unfinished(
        slurm, torch_cpu_image, tmp_path, reporter, docker_engine, monkeypatch):
    started = time.time()
    results = tmp_path / "results"
    partial = runs.run("alexnet", RunOptions(executor="slurm", batch_sizes=[16, 32, 64], threads=[1], **ALEXNET),
                       results_dir=results, reporter=reporter, slurm={"detach": True})
    body = bundlemod.body(partial)
    (sub,) = body["submitted"]
    array, scratch, ids = sub["array_id"], Path(sub["scratch"]), sub["jobs"]
    prefix = "dlrepro-%s-%s_" % (body["id"], array)
    done, removed_under = threading.Event(), []

    def watch():  # the first array's scratch must exist while any of its containers does
        while not done.is_set():
            if docker_engine.containers.list(all=True, filters={"name": prefix}) and not scratch.exists():
                removed_under.append(time.time())
            time.sleep(0.5)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        outputs = [sbatch.tasks_of(scratch) / ("%s_%d.out" % (array, i)) for i in range(3)]
        _wait_for(lambda: all("@dlrepro start" in _read(path) for path in outputs), 300,
                  "all three jobs started (their output: %s)" % outputs)
        nodes = [_task_file(scratch, array, i)["node"] for i in range(3)]
        (solo,) = [i for i in range(3) if nodes.count(nodes[i]) == 1]  # 1 CPU a task, 2 a node: two share one
        first, suspended = [i for i in range(3) if i != solo]
        cpus = [set(slurm_state.indices(docker_engine.api.inspect_container(prefix + str(i))["HostConfig"]
                                        ["CpusetCpus"])) for i in (first, suspended)]
        assert len(cpus[0]) == len(cpus[1]) == 1 and not cpus[0] & cpus[1]  # two tasks on one node: their own CPUs
        # the solo task's node fails
        subprocess.run(["scontrol", "update", "nodename=%s" % nodes[solo], "state=down", "reason=dlrepro-test"],
                       check=True)
        _wait_for(lambda: getattr((slurm_state.tasks([(array, solo)]) or {}).get((array, solo)), "state", None)
                  == "NODE_FAIL", 60, "NODE_FAIL")
        subprocess.run(["scontrol", "update", "nodename=%s" % nodes[solo], "state=resume"], capture_output=True)
        # --no-requeue: Slurm refuses to start a task again over its own output
        requeue = subprocess.run(["scontrol", "requeue", "%s_%d" % (array, first)], capture_output=True, text=True)
        assert requeue.returncode == 1 and "Requested operation is presently disabled" in requeue.stderr
        # a suspended task: its script pauses the container where it can (best effort, below), then unpauses it
        subprocess.run(["scontrol", "suspend", "%s_%d" % (array, suspended)], check=True)
        _wait_for(lambda: getattr((slurm_state.tasks([(array, suspended)]) or {}).get((array, suspended)), "state",
                                  None) == "SUSPENDED", 30, "SUSPENDED")
        time.sleep(3)
        subprocess.run(["scontrol", "resume", "%s_%d" % (array, suspended)], check=True)
        _wait_for(lambda: not docker_engine.api.inspect_container(prefix + str(suspended))["State"]["Paused"], 60,
                  "the resumed task's container running")
        # the resume's collect meets a slurmctld that does not answer for its first 20 s
        flag, log = tmp_path / "down", tmp_path / "failed.log"
        flag.touch()
        _wrapper(tmp_path / "bin", flag, log)
        monkeypatch.setenv("PATH", "%s:%s" % (tmp_path / "bin", os.environ["PATH"]))
        monkeypatch.setattr(slurm_state, "RETRY_S", 0.2)
        threading.Timer(20, flag.unlink).start()
        resumed = runs.run(None, RunOptions(), results_dir=results, reporter=reporter, resume=body["id"])
    finally:
        done.set()
        watcher.join()
    final = json.loads((resumed / "bundle.json").read_text())
    assert len(log.read_text().split()) >= 2 * slurm_state.TRIES  # several polls went unanswered
    assert removed_under == [] and final["counts"] == {"ok": 3, "failed": 0, "skipped": 0}
    assert [a["jobs"] for a in final["attempts"]] == [ids, [ids[i] for i in sorted((solo, suspended))]]
    kept = {i: json.loads((resumed / "jobs" / ids[i] / "attempts" / "1" / "result.json").read_text())
            for i in (solo, suspended)}
    assert kept[solo]["status"] == "interrupted" and kept[solo]["slurm"]["state"] == "NODE_FAIL"
    assert re.match(r"Slurm: task %s_%d \(job \d+\) on %s: NODE_FAIL(, reason NodeDown)?(, exit code \d+:\d+)? "
                    r"\((scontrol|jobcomp)\), without a result" % (array, solo, nodes[solo]), kept[solo]["reason"])
    assert kept[suspended]["status"] == "interrupted" and len(kept[suspended]["timing"]["repeats"]) > 0
    assert sorted(line.split()[0] for line in kept[suspended]["slurm"]["suspensions"]) == ["resumed", "suspended"]
    finished = json.loads((resumed / "jobs" / ids[first] / "result.json").read_text())
    assert finished["attempt"]["number"] == 1 and finished["status"] == "ok"
    # the runner pinned its one thread inside the CPUs the container was given, which are those Slurm gave
    assert finished["environment"]["process"]["cpus"] == slurm_state.indices(finished["slurm"]["cpus"]) == \
        sorted(cpus[0])
    assert validate.check(resumed) == []
    print("faults on the cluster: %.1f s" % (time.time() - started))


def _read(path):
    try:
        return path.read_text()
    except OSError:
        return ""
