"""Podman as the container engine, through its Docker-compatible API socket: the suite's own build of a framework's
CPU image (MXNet 1.9.1: its wheel installed by the pip step through a bind mount, as for every pip-installed
framework, with a smaller wheel than torch 2.13.0's) and one AlexNet-S quick job in the docker executor's hardened
container, the engine recorded."""

import json
import time

import docker
import pytest

from dlrepro import engine
from dlrepro.images import bases, build
from dlrepro.run import runs
from dlrepro.run.executors import docker as docker_executor
from dlrepro.run.options import RunOptions
from tests import helpers
from tests.helpers import files_under

pytestmark = [pytest.mark.docker, pytest.mark.podman]


def _base_from_docker(matrix, name):
    """Load the bootstrapped base ``name`` from the Docker engine (``docker save``) into Podman (``podman load``)
    when Docker has it and Podman has none, so that no second bootstrap is needed; returns what was done."""
    podman = engine.client()
    label = "%s=%s" % (bases.LABEL, name)
    if podman.images.list(name=bases.BOOTSTRAP_REPO, filters={"label": label}):
        return "podman has it"
    try:
        found = docker.from_env().images.list(name=bases.BOOTSTRAP_REPO, filters={"label": label})
    except docker.errors.DockerException:
        found = []
    if not found:
        return "bootstrapped"  # bases.ensure bootstraps it (mmdebstrap)
    started = time.time()
    podman.images.load(b"".join(found[0].save(named=True)))
    return "loaded from docker in %.1f s" % (time.time() - started)


def test_a_framework_image_builds_and_an_alexnet_job_runs_through_podman(podman, matrix, tmp_path, reporter):
    entry = matrix.find("mxnet", "cpu")
    engine.use("podman")
    try:
        base = _base_from_docker(matrix, entry.base)
        started = time.time()
        built = build.ensure(matrix, entry, build.BuildOptions(), log=print)
        print(
            "podman: base %s; mxnet image %s in %.0f s"
            % (base, "built" if built.built else "found", time.time() - started)
        )
        assert built.tag.startswith("dlrepro/mxnet:1.9.1-cpu-") and "mxnet==1.9.1" in built.manifests["pip-freeze.txt"]
        assert not files_under(built.image_id, "/tmp/transport")  # a bind mount of the pip step (Buildah): in no layer
        started = time.time()
        path = runs.run(
            "alexnet",
            RunOptions(frameworks=["mxnet"], variants=["alexnet-s"], quick=True, batch_sizes=[2]),
            results_dir=tmp_path,
            reporter=reporter,
            memory=4 << 30,
        )
        print("podman: AlexNet-S quick job in %.0f s" % (time.time() - started))
        body = json.loads((path / "bundle.json").read_text())
        assert body["executor"]["executor"] == "docker" and body["executor"]["engine"]["name"] == "podman"
        assert body["executor"]["engine"]["version"].startswith("4.") and body["executor"]["isolation"] == {
            "network": "none",
            "read_only_root": True,
            "user": "non-root",
            "no_new_privileges": True,
            "cap_drop": "ALL",
            "pids_limit": 4096,
            "memory_bytes": 4 << 30,
            "cpus": docker_executor.caller_cpus(),  # this xdist worker's share: Podman confines the container to it
        }
        (row,) = body["jobs"]
        assert row["status"] == "ok" and row["parameters"] == 62_378_344 and row["image_id"] == built.image_id
        result = json.loads((path / "jobs" / "alexnet-s.mxnet.cpu.b2" / "result.json").read_text())
        assert result["environment"]["in_container"] is True and len(result["timing"]["repeats"][0]) == 3
        assert helpers.containers_left(engine.client(), label="org.dlrepro.run=%s" % body["id"]) == []
    finally:
        engine.use("")
