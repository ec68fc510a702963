"""Durable runs in containers: a SIGKILLed run leaves no container and resumes, a dead run's container is removed, a
memory limit stops one job; needs a Docker engine."""

import json
import os

import pytest

from dlrepro.run import runs
from dlrepro.run.options import RunOptions
from tests import helpers
from tests.run.durable_runs import FIRST, GRU, SECOND, _kill_after_first_job, _resumed_completely


@pytest.mark.docker
def test_sigkill_keeps_finished_jobs_leaves_no_container_and_resume_completes(tmp_path, torch_cpu_image, docker_engine):
    results = tmp_path / "results"
    partial = _kill_after_first_job(GRU + ["--batch-size=8,64"], results, FIRST)
    run_id = partial.name[1 : -len(".partial")]
    left = helpers.containers_left(docker_engine, 10, label="org.dlrepro.run=%s" % run_id)
    assert left == [], "containers of the killed run are left: %s" % left
    _resumed_completely(partial, results, FIRST, SECOND)


@pytest.mark.docker
def test_a_dead_runs_container_is_removed_at_the_next_start(docker_engine, torch_cpu_image, reporter):
    from dlrepro.run.executors import docker as docker_executor

    orphan = docker_engine.containers.create(
        torch_cpu_image.tag,
        ["sleep", "600"],
        labels={
            "org.dlrepro.role": "runner",
            "org.dlrepro.run": "fcn-orphan",
            "org.dlrepro.host": os.uname().nodename,
            "org.dlrepro.pid": "999999999",
        },
    )
    orphan.start()
    lines = docker_executor.DockerExecutor().reap()
    assert lines == [
        "removed container %s of the dead run fcn-orphan (host process 999999999 is gone)" % orphan.short_id
    ]
    assert not helpers.containers_left(docker_engine, label="org.dlrepro.run=fcn-orphan")


@pytest.mark.docker
def test_a_memory_limit_stops_one_job_and_the_others_go_on(tmp_path, torch_cpu_image, reporter):
    options = RunOptions(frameworks=["torch"], variants=["resnet56-synthetic"], batch_sizes=[8, 2048, 16], quick=True)
    path = runs.run("resnet56", options, results_dir=tmp_path, reporter=reporter, memory=700 << 20)
    body = json.loads((path / "bundle.json").read_text())
    rows = {r["job_id"]: r for r in body["jobs"]}
    assert rows["resnet56-synthetic.torch.cpu.b2048"]["status"] == "failed"
    assert (
        rows["resnet56-synthetic.torch.cpu.b2048"]["reason"]
        == "out of memory (limit 700.0 MiB): the kernel killed the worker process running it"
    )  # isolation: worker
    assert (
        rows["resnet56-synthetic.torch.cpu.b8"]["status"] == rows["resnet56-synthetic.torch.cpu.b16"]["status"] == "ok"
    )
    assert body["executor"]["isolation"]["memory_bytes"] == 700 << 20
