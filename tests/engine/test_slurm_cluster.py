"""The Slurm executor on a Slurm of the tests' own (tests/cluster.py: two nodes on this host, two fake GPUs each)
running the docker executor's containers; needs Slurm and a Docker engine."""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import DlreproError, ExecutorError
from dlrepro.inputs import datasets, spec
from dlrepro.run import jobs as jobsmod
from dlrepro.run import runs, slurm_state
from dlrepro.run.executors import sbatch
from dlrepro.run.executors import slurm as slurm_executor
from dlrepro.run.options import RunOptions
from dlrepro.store import bundle as bundlemod
from dlrepro.store import tables, validate
from tests import helpers
from tests.helpers import fresh_cache, unreachable
from tests.run.slurm_tools import _shell, _tool

ALEXNET = dict(frameworks=["torch"], variants=["alexnet-s"], quick=True)


def _containers(docker_engine, bundle_id):
    return helpers.containers(docker_engine, label="org.dlrepro.run=%s" % bundle_id)


@pytest.mark.docker
@pytest.mark.slurm
def test_alexnet_quick_over_both_nodes_is_a_bundle_like_a_docker_runs(
    slurm, torch_cpu_image, tmp_path, reporter, monkeypatch
):
    unreachable(monkeypatch, "cifar10")
    fresh_cache(monkeypatch, tmp_path)
    # 2 CPUs a task: one task fills a node; mini-batches of 2 and 4, the model's size whatever the batch's
    options = RunOptions(batch_sizes=[2, 4], threads=[2], **ALEXNET)
    started = time.time()
    path = runs.run(
        "alexnet",
        options.model_copy(update={"executor": "slurm"}),
        results_dir=tmp_path / "slurm",
        reporter=reporter,
        slurm={"partition": "debug"},
    )
    print("slurm run: %.1f s" % (time.time() - started))
    body = json.loads((path / "bundle.json").read_text())
    ids = ["alexnet-s.torch.cpu.b2.t2", "alexnet-s.torch.cpu.b4.t2"]
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
    local = runs.run(
        "alexnet", options.model_copy(update={"executor": "docker"}), results_dir=tmp_path / "docker", reporter=reporter
    )
    assert [r["job_id"] for r in json.loads((local / "bundle.json").read_text())["jobs"]] == ids
    assert sorted(body["jobs"][0]) == sorted(json.loads((local / "bundle.json").read_text())["jobs"][0])
    summary, _ = tables.merge_to([path, local], None)
    assert sorted(zip(summary["executor"], summary["job_id"])) == sorted(
        [("slurm", j) for j in ids] + [("docker", j) for j in ids]
    )
    assert set(summary["status"]) == {"ok"} and list(summary["measurements"]) == [2, 2, 2, 2]


@pytest.mark.docker
@pytest.mark.slurm
def test_max_parallel_1_runs_one_task_at_a_time(slurm, torch_cpu_image, tmp_path, reporter):
    path = runs.run(
        "alexnet",
        RunOptions(executor="slurm", batch_sizes=[1, 2, 4], **ALEXNET),
        results_dir=tmp_path,
        reporter=reporter,
        slurm={"max_parallel": 1},
    )
    body = json.loads((path / "bundle.json").read_text())
    assert (
        body["counts"]["ok"] == 3 and "#SBATCH --array=0-2%1\n" in (path / body["submitted"][0]["script"]).read_text()
    )
    spans = sorted(
        (r["started"], r["finished"])
        for r in (json.loads((path / "jobs" / j["job_id"] / "result.json").read_text()) for j in body["jobs"])
    )
    assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:])), spans  # no two overlap


@pytest.mark.docker
@pytest.mark.slurm
def test_cuda_jobs_get_their_own_gpu_from_gres_and_are_refused_without_a_real_one(slurm, torch_cpu_image, tmp_path):
    found = jobsmod.expand(
        spec.load("alexnet"),
        RunOptions(frameworks=["torch"], variants=["alexnet-s"], device="cuda", batch_sizes=[16, 32, 64], quick=True),
    )
    found += jobsmod.expand(
        spec.load("alexnet"),
        RunOptions(
            frameworks=["torch"], variants=["alexnet-s"], device="cuda", batch_sizes=[16], quick=True, ranks=[2]
        ),
    )
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
        assert r["reason"] == (
            "no NVIDIA GPU device is visible to the job (no /dev/nvidia<N>): host GPU %s, "
            "assigned to it, was not passed in" % r["slurm"]["host_gpus"]
        )
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
def test_scancel_is_recorded_leaves_no_container_and_resume_runs_only_the_missing(
    slurm, torch_cpu_image, tmp_path, reporter, docker_engine
):
    options = RunOptions(executor="slurm", batch_sizes=[2, 4], **ALEXNET)
    partial = runs.run(
        "alexnet", options, results_dir=tmp_path, reporter=reporter, slurm={"max_parallel": 1, "detach": True}
    )
    assert partial.name.endswith(".partial")
    body = bundlemod.body(partial)
    (submission,) = body["submitted"]
    array, first, second = submission["array_id"], "alexnet-s.torch.cpu.b2", "alexnet-s.torch.cpu.b4"
    assert submission["jobs"] == [first, second] and body["attempts"][0]["detached"] is True
    assert "running" not in body and bundlemod.listing(tmp_path)[0]["submitted"] == [array]
    name = "dlrepro-%s-%s_1" % (body["id"], array)
    _wait_for(lambda: docker_engine.containers.list(filters={"name": name}), 240, "task 1's container started")
    subprocess.run(["scancel", "%s_1" % array], check=True)
    _wait_for(
        lambda: not docker_engine.containers.list(all=True, filters={"name": name}), 30, "task 1's container removed"
    )
    _wait_for(
        lambda: not any(t.active for t in slurm_state.tasks([(array, 0), (array, 1)]).values()), 60, "both tasks ended"
    )
    listed = subprocess.run(
        [sys.executable, "-m", "invoke", "bundles", "--results", str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )  # takes what the array has finished
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
    assert re.match(
        r"Slurm: task %s_1 \(job \d+\) on n[12]: CANCELLED, exit code (143|0):0 \((scontrol|jobcomp)\), "
        r"without a result; its output ends: .*CANCELLED AT" % array,
        cancelled["reason"],
    ), cancelled["reason"]
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
    slurm, torch_cpu_image, tmp_path, reporter
):
    typed = subprocess.run(
        [
            sys.executable,
            "-m",
            "invoke",
            "run",
            "--spec=alexnet",
            "--executor",
            "slurm",
            "--slurm-option",
            "--account=lab\ntouch %s" % (tmp_path / "INJECTED"),
            "--results",
            str(tmp_path),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert typed.returncode == 2 and "Traceback" not in typed.stdout + typed.stderr
    assert typed.stdout.splitlines()[0] == (
        "error: --slurm-option: an sbatch option holds no newline or other control "
        "character (got '--account=lab\\ntouch %s')" % (tmp_path / "INJECTED")
    )
    partial = runs.run(
        "alexnet",
        RunOptions(executor="slurm", batch_sizes=[16], **ALEXNET),
        results_dir=tmp_path,
        reporter=reporter,
        slurm={"options": ["--comment=dlrepro-test"], "detach": True},
    )
    path = partial / "bundle.json"
    honest = path.read_text()
    body = json.loads(honest)
    assert body["executor"]["slurm_options"] == ["--comment=dlrepro-test"]
    body["executor"]["slurm_options"] = ["--comment=x\ntouch %s" % (tmp_path / "INJECTED")]
    path.write_text(json.dumps(body))
    with pytest.raises(DlreproError) as err:
        runs.run(None, RunOptions(), results_dir=tmp_path, reporter=reporter, resume=body["id"])
    assert str(err.value) == (
        "%s: executor.slurm_options: an sbatch option holds no newline or other control "
        "character (got '--comment=x\\ntouch %s')" % (path, tmp_path / "INJECTED")
    )
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
    args = sbatch.task_args(
        torch_cpu_image.tag,
        "1000:1000",
        scratch,
        tmp_path,
        "bash42-test",
        0,
        ["sh", "-c", "echo '@dlrepro start j0'; echo \"in the container: $(id -u)\""],
    )
    text = sbatch.script(args, "docker", ["j0"], scratch, "bash42-test", threads=1, minutes=5)
    path = tmp_path / "bash42.sbatch"
    path.write_text(text.replace("#!/bin/bash\n", "#!%s\n" % bash, 1))
    array = slurm_executor._sbatch(path)
    _wait_for(
        lambda: (
            (slurm_state.tasks([(array, 0)]) or {}).get((array, 0)) is not None
            and not slurm_state.tasks([(array, 0)])[(array, 0)].active
        ),
        180,
        "the task ended",
    )
    task = slurm_state.tasks([(array, 0)])[(array, 0)]
    output = _task_file(scratch, array, 0, ".out")
    assert "unbound variable" not in output and "in the container: 1000" in output, output
    assert (task.state, task.exit_code) == ("COMPLETED", "0:0")
    facts = _task_file(scratch, array, 0)
    assert facts["gpu_source"] == "" and facts["host_gpus"] == "" and facts["cpus"]
    _wait_for(lambda: _containers(docker_engine, "bash42-test") == [], 60, "the container removed")


def _both_running(docker_engine, bundle_id):
    """The bundle's two containers once both are running, else None (one may still be created)."""
    running = [c for c in _containers(docker_engine, bundle_id) if c["State"] == "running"]
    return running if len(running) == 2 else None


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
    args = sbatch.task_args(
        torch_cpu_image.tag,
        "1000:1000",
        scratch,
        tmp_path,
        "bind-test",
        1,
        ["sh", "-c", "echo '@dlrepro start j'; sleep 120"],
    )
    path = tmp_path / "bind.sbatch"
    path.write_text(
        sbatch.script(
            args, "docker", ["j0", "j1"], scratch, "bind-test", threads=1, gpus=1, minutes=5, options=["--nodelist=n1"]
        )
    )
    started = time.time()
    array = slurm_executor._sbatch(path)
    try:
        running = _wait_for(lambda: _both_running(docker_engine, "bind-test"), 120, "both containers running")
        inspected = {c["Names"][0].lstrip("/"): docker_engine.api.inspect_container(c["Id"]) for c in running}
        tasks = [_task_file(scratch, array, i) for i in (0, 1)]
    finally:
        subprocess.run(["scancel", array])
    assert [t["node"] for t in tasks] == ["n1", "n1"]
    assert sorted(t["host_gpus"] for t in tasks) == ["0", "1"] and {t["gpu_source"] for t in tasks} == {
        "SLURM_JOB_GPUS"
    }
    # with ConstrainDevices=yes Slurm numbers each job's GPUs from 0 in its cgroup: both see CUDA_VISIBLE_DEVICES=0
    assert [t["cuda_visible_devices"] for t in tasks] == (
        ["0", "0"] if slurm.cgroups else [t["host_gpus"] for t in tasks]
    )
    for t in tasks:
        config = inspected["dlrepro-bind-test-%s_%d" % (array, t["array_task_id"])]
        assert "DLREPRO_GPU=%s" % t["host_gpus"] in config["Config"]["Env"]
        assert config["HostConfig"]["CpusetCpus"] == t["cpus"]
        assert (
            t["cpu_source"] == "Cpus_allowed_list" if slurm.cgroups else t["cpu_source"].startswith("scontrol CPU_IDs")
        )  # no task plugin: Slurm's abstract ids, mapped
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
    _tool(
        bin_dir,
        "scontrol",
        "if [ -e %s ]; then echo failed >> %s; echo 'slurm_load_jobs error: Unable to "
        'contact slurm controller (connect failure)\' >&2; exit 1; fi\nexec %s "$@"\n'
        % (flag, log, shutil.which("scontrol")),
    )


@pytest.mark.docker
@pytest.mark.slurm
def test_node_failure_suspension_requeue_and_a_silent_slurm_lose_nothing_and_resume_reruns_the_unfinished(
    slurm, torch_cpu_image, tmp_path, reporter, docker_engine, monkeypatch
):
    started = time.time()
    results = tmp_path / "results"
    partial = runs.run(
        "alexnet",
        RunOptions(executor="slurm", batch_sizes=[16, 32, 64], threads=[1], **ALEXNET),
        results_dir=results,
        reporter=reporter,
        slurm={"detach": True},
    )
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
        _wait_for(
            lambda: all("@dlrepro start" in _read(path) for path in outputs),
            300,
            "all three jobs started (their output: %s)" % outputs,
        )
        nodes = [_task_file(scratch, array, i)["node"] for i in range(3)]
        (solo,) = [i for i in range(3) if nodes.count(nodes[i]) == 1]  # 1 CPU a task, 2 a node: two share one
        first, suspended = [i for i in range(3) if i != solo]
        cpus = [
            set(slurm_state.indices(docker_engine.api.inspect_container(prefix + str(i))["HostConfig"]["CpusetCpus"]))
            for i in (first, suspended)
        ]
        assert len(cpus[0]) == len(cpus[1]) == 1 and not cpus[0] & cpus[1]  # two tasks on one node: their own CPUs
        # the solo task's node fails
        subprocess.run(
            ["scontrol", "update", "nodename=%s" % nodes[solo], "state=down", "reason=dlrepro-test"], check=True
        )
        _wait_for(
            lambda: (
                getattr((slurm_state.tasks([(array, solo)]) or {}).get((array, solo)), "state", None) == "NODE_FAIL"
            ),
            60,
            "NODE_FAIL",
        )
        subprocess.run(["scontrol", "update", "nodename=%s" % nodes[solo], "state=resume"], capture_output=True)
        # --no-requeue: Slurm refuses to start a task again over its own output
        requeue = subprocess.run(["scontrol", "requeue", "%s_%d" % (array, first)], capture_output=True, text=True)
        assert requeue.returncode == 1 and "Requested operation is presently disabled" in requeue.stderr
        # a suspended task: its script pauses the container where it can (best effort, below), then unpauses it
        subprocess.run(["scontrol", "suspend", "%s_%d" % (array, suspended)], check=True)
        _wait_for(
            lambda: (
                getattr((slurm_state.tasks([(array, suspended)]) or {}).get((array, suspended)), "state", None)
                == "SUSPENDED"
            ),
            30,
            "SUSPENDED",
        )
        time.sleep(3)
        subprocess.run(["scontrol", "resume", "%s_%d" % (array, suspended)], check=True)
        _wait_for(
            lambda: not docker_engine.api.inspect_container(prefix + str(suspended))["State"]["Paused"],
            60,
            "the resumed task's container running",
        )
        # the resume's collect meets a slurmctld that does not answer its first two polls (each tried TRIES times),
        # then answers again (a fixed 20 s of silence left both CPUs idle for 10 s of it)
        flag, log = tmp_path / "down", tmp_path / "failed.log"
        flag.touch()
        _wrapper(tmp_path / "bin", flag, log)
        monkeypatch.setenv("PATH", "%s:%s" % (tmp_path / "bin", os.environ["PATH"]))
        monkeypatch.setattr(slurm_state, "RETRY_S", 0.2)
        threading.Thread(target=_answer_after, args=(log, flag, 2 * slurm_state.TRIES)).start()
        resumed = runs.run(None, RunOptions(), results_dir=results, reporter=reporter, resume=body["id"])
    finally:
        done.set()
        watcher.join()
    final = json.loads((resumed / "bundle.json").read_text())
    assert len(log.read_text().split()) >= 2 * slurm_state.TRIES  # several polls went unanswered
    assert removed_under == [] and final["counts"] == {"ok": 3, "failed": 0, "skipped": 0}
    assert [a["jobs"] for a in final["attempts"]] == [ids, [ids[i] for i in sorted((solo, suspended))]]
    kept = {
        i: json.loads((resumed / "jobs" / ids[i] / "attempts" / "1" / "result.json").read_text())
        for i in (solo, suspended)
    }
    assert kept[solo]["status"] == "interrupted" and kept[solo]["slurm"]["state"] == "NODE_FAIL"
    assert re.match(
        r"Slurm: task %s_%d \(job \d+\) on %s: NODE_FAIL(, reason NodeDown)?(, exit code \d+:\d+)? "
        r"\((scontrol|jobcomp)\), without a result" % (array, solo, nodes[solo]),
        kept[solo]["reason"],
    )
    assert kept[suspended]["status"] == "interrupted" and len(kept[suspended]["timing"]["repeats"]) > 0
    assert sorted(line.split()[0] for line in kept[suspended]["slurm"]["suspensions"]) == ["resumed", "suspended"]
    finished = json.loads((resumed / "jobs" / ids[first] / "result.json").read_text())
    assert finished["attempt"]["number"] == 1 and finished["status"] == "ok"
    # the runner pinned its one thread inside the CPUs the container was given, which are those Slurm gave
    assert (
        finished["environment"]["process"]["cpus"] == slurm_state.indices(finished["slurm"]["cpus"]) == sorted(cpus[0])
    )
    assert validate.check(resumed) == []
    print("faults on the cluster: %.1f s" % (time.time() - started))


def _answer_after(log, flag, failures):
    """Remove ``flag`` (the scontrol of _wrapper answers again) once ``log`` holds ``failures`` unanswered calls, or
    after 120 s."""
    deadline = time.time() + 120
    while len(_read(log).splitlines()) < failures and time.time() < deadline:
        time.sleep(0.1)
    flag.unlink()


def _read(path):
    try:
        return path.read_text()
    except OSError:
        return ""
