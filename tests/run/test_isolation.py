"""The container isolation of the docker executor: exact create arguments, no engine needed (as ReFrame tests
its launch commands), and the bundle's isolation record read off them."""

import os

import pytest

from dlrepro import REPO_ROOT
from dlrepro.run.executors import docker as docker_executor


def test_create_arguments_are_the_isolation_the_bundle_records():
    args = docker_executor.create_args(
        "dlrepro/torch:2.13.0-cpu-abc",
        "1000:1000",
        "/s/jobs",
        "/s/out",
        "/cache/ds",
        memory=8 << 30,
        labels={"org.dlrepro.run": "alexnet-x"},
    )
    assert args == {
        "image": "dlrepro/torch:2.13.0-cpu-abc",
        "command": ["python", "-m", "runner.supervise", "--watch-stdin", "--isolation", "worker", "/jobs", "/out"],
        "user": "1000:1000",
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": "rw,exec"},
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "pids_limit": 4096,
        "device_requests": [],
        "environment": {"PYTHONPATH": "/opt/dlrepro", "DLREPRO_DATA_ROOT": "/data"},
        "volumes": {
            str(REPO_ROOT / "runner"): {"bind": "/opt/dlrepro/runner", "mode": "ro"},
            "/cache/ds": {"bind": "/data", "mode": "ro"},
            "/s/jobs": {"bind": "/jobs", "mode": "ro"},
            "/s/out": {"bind": "/out", "mode": "rw"},
        },
        "labels": {"org.dlrepro.role": "runner", "org.dlrepro.run": "alexnet-x"},
        "stdin_open": True,
        "detach": False,
        "auto_remove": True,  # the host's pipe; no container outlives its run
        "mem_limit": 8 << 30,
        "memswap_limit": 8 << 30,
    }
    assert docker_executor.isolation(args) == {
        "network": "none",
        "read_only_root": True,
        "user": "non-root",
        "no_new_privileges": True,
        "cap_drop": "ALL",
        "pids_limit": 4096,
        "memory_bytes": 8 << 30,
        "cpus": None,
    }
    assert docker_executor.isolation(dict(args, user="0:0"))["user"] == "root"


def test_a_cuda_group_gets_exactly_its_gpu():
    (request,) = docker_executor.create_args("t", "1000:1000", "/j", "/o", "/d", gpu=3)["device_requests"]
    assert request["DeviceIDs"] == ["3"] and request["Capabilities"] == [["gpu"]]


def test_a_run_confined_to_some_cpus_confines_its_containers_to_them():
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: no run can be confined to fewer")
    os.sched_setaffinity(0, range(os.cpu_count()))  # tests/conftest.py puts the mask back
    assert docker_executor.caller_cpus() is None and docker_executor.DockerExecutor(memory=8 << 30).cpus is None
    last = os.cpu_count() - 1
    os.sched_setaffinity(0, {last})  # as `taskset -c LAST dlrepro run ...`
    executor = docker_executor.DockerExecutor(memory=8 << 30)
    args = docker_executor.create_args("t", "1000:1000", "/j", "/o", "/d", memory=8 << 30, cpus=executor.cpus)
    assert executor.cpus == str(last) and args["cpuset_cpus"] == str(last)
    assert docker_executor.isolation(args)["cpus"] == str(last)
    words = docker_executor.run_command(args)
    assert words[words.index("--cpuset-cpus") + 1] == str(last)


def test_the_default_memory_limit_leaves_the_host_headroom():
    assert docker_executor.default_memory(24 << 30) == (24 << 30) - (24 << 30) // 10  # 10% of 24 GiB: over 2 GiB
    assert docker_executor.default_memory(8 << 30) == 6 << 30  # 2 GiB for the host
    assert docker_executor.default_memory(3 << 30) == 3 << 29  # never below half


def test_a_study_pools_container_has_the_same_isolation_and_serves_plans(tmp_path):
    from dlrepro.run.pool import WorkerPool

    pool = WorkerPool(tmp_path / "pool", "study-tiny-20261201T000000Z")
    executor = docker_executor.DockerExecutor(memory=8 << 30)
    executor.run_id = "alexnet-x"  # the run that starts it: the container is the pool's, not the run's
    args = executor.serve_args("dlrepro/torch:2.13.0-cpu-abc", pool, "/cache/ds", 0)
    alone = docker_executor.create_args(
        "dlrepro/torch:2.13.0-cpu-abc",
        args["user"],
        pool.jobs,
        pool.out,
        "/cache/ds",
        memory=8 << 30,
        labels=args["labels"],
        cpus=executor.cpus,
    )
    assert args["command"] == ["python", "-m", "runner.supervise", "--serve", "--isolation", "worker", "/jobs", "/out"]
    assert {k: v for k, v in args.items() if k != "command"} == {k: v for k, v in alone.items() if k != "command"}
    assert args["volumes"][str(pool.jobs)] == {"bind": "/jobs", "mode": "ro"}
    assert args["volumes"][str(pool.out)] == {"bind": "/out", "mode": "rw"}
    assert args["labels"]["org.dlrepro.run"] == "study-tiny-20261201T000000Z"
    assert docker_executor.isolation(args) == docker_executor.isolation(alone)
    pool.close()
    assert not pool.folder.exists()
