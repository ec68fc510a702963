"""The docker executor for real: the torch CPU image built from its lock, jobs run in hardened containers."""

import json
import math
import os

import pytest

from dlrepro.images import build
from dlrepro.inputs import datasets, spec
from dlrepro.plan import hostinfo
from dlrepro.run import executors, jobs, runs
from dlrepro.run.executors.base import PID_LABEL
from dlrepro.run.options import RunOptions
from tests.helpers import check_sums, files_under, fresh_cache, run_executor, unreachable

pytestmark = pytest.mark.docker


def test_second_build_is_a_cache_hit(torch_cpu_image, matrix):
    again = build.ensure(matrix, matrix.find("torch", "cpu"), build.BuildOptions(), log=print)
    assert again.built is False and again.tag == torch_cpu_image.tag and again.image_id == torch_cpu_image.image_id
    assert again.tag.startswith("dlrepro/torch:2.13.0-cpu-")
    assert "torch==2.13.0+cpu" in again.manifests["pip-freeze.txt"]
    assert again.base.source in ("registry", "bootstrap") and again.base.digest.startswith("sha256:")
    assert again.base.record["python"] == {"provider": "debian", "command": "python3"}


def test_alexnet_main_job_in_containers(torch_cpu_image, tmp_path, reporter, monkeypatch):
    unreachable(monkeypatch, "cifar10")
    fresh_cache(monkeypatch, tmp_path)
    path = runs.run("alexnet", RunOptions(frameworks=["torch"], quick=True), results_dir=tmp_path, reporter=reporter)
    bundle = json.loads((path / "bundle.json").read_text())
    image = bundle["images"][0]
    assert image["image_id"] == torch_cpu_image.image_id and image["framework_version"] == "2.13.0"
    assert image["base"]["digest"].startswith("sha256:") and image["tag"].endswith(image["recipe_digest"][:12])
    rows = {r["job_id"]: r for r in bundle["jobs"]}
    s = rows["alexnet-s.torch.cpu.b16"]
    assert s["status"] == "ok" and s["parameters"] == 62_378_344 and s["median"] > 0
    assert s["framework_version"] == "2.13.0+cpu" and s["image_id"] == torch_cpu_image.image_id
    r = rows["alexnet-r.torch.cpu.b1024"]
    assert r["status"] == "skipped" and "cifar10" in r["reason"]
    result = json.loads((path / "jobs" / "alexnet-r.torch.cpu.b1024" / "result.json").read_text())
    assert "dlrepro datasets.fetch cifar10 --from PATH" in result["remedy"]
    env = json.loads((path / "jobs" / "alexnet-s.torch.cpu.b16" / "result.json").read_text())["environment"]
    assert env["in_container"] is True and env["python"].startswith("3.11")
    assert (path / "images" / "torch-2.13.0-cpu" / "Dockerfile").read_text().startswith("# torch-2.13.0-cpu")
    assert bundle["executor"]["isolation"]["network"] == "none"
    check_sums(path)


def test_fcn_r_on_real_mnist_in_a_container_loss_falls(torch_cpu_image, mnist, tmp_path, reporter):
    path = runs.run(
        "fcn",
        RunOptions(frameworks=["torch"], variants=["fcn-r"], mode="convergence", quick=True),
        results_dir=tmp_path,
        reporter=reporter,
    )
    result = json.loads((path / "jobs" / "fcn-r.torch.cpu.b64.convergence" / "result.json").read_text())
    assert result["status"] == "ok" and result["parameters"]["measured"] == 14_205_962
    epoch = result["convergence"]["epochs"][0]
    assert epoch["iterations"] == 100 and len(epoch["loss_curve"]) == 2
    assert epoch["loss_curve"][-1] < epoch["loss_curve"][0]
    # 100 iterations leave FCN-R on its first plateau: the uniform prediction's loss, ln 10, and one digit's share
    # of the test images at least (the rarest, 5, is 892 of 10,000)
    assert epoch["loss_curve"][-1] <= math.log(10) + 0.01 and epoch["test_accuracy"] >= 0.0892
    assert result["convergence"]["test_batches"] == 157  # all 10,000


def test_a_job_failing_in_the_container_does_not_stop_the_others(torch_cpu_image, tmp_path):
    bad, good, results, events = run_executor(executors.DockerExecutor(), torch_cpu_image, tmp_path)
    assert results[bad["id"]]["status"] == "failed" and "ModelMismatch" in results[bad["id"]]["reason"]
    assert "Traceback" in (tmp_path / bad["id"] / "log.txt").read_text()
    assert results[good["id"]]["status"] == "ok"
    assert results[good["id"]]["environment"]["in_container"] is True


def test_the_container_has_no_network_and_a_read_only_runner(torch_cpu_image, tmp_path):
    from dlrepro import REPO_ROOT
    from dlrepro.engine import client

    probe = (
        "import socket, sys\n"
        "try:\n    socket.create_connection(('10.0.0.1', 80), timeout=2); print('network')\n"
        "except OSError as e:\n    print('no network')\n"
        "try:\n    open('/opt/dlrepro/runner/x', 'w'); print('writable')\n"
        "except OSError as e:\n    print('read-only')\n"
        "import os; print(os.getuid())\n"
    )
    out = client().containers.run(
        torch_cpu_image.tag,
        ["python", "-c", probe],
        network_mode="none",
        remove=True,
        read_only=True,
        user="1000:1000",
        security_opt=["no-new-privileges"],
        volumes={str(REPO_ROOT / "runner"): {"bind": "/opt/dlrepro/runner", "mode": "ro"}},
    )
    assert out.decode().split() == ["no", "network", "read-only", "1000"]


def test_a_container_that_cannot_start_is_removed_and_its_jobs_fail(torch_cpu_image, tmp_path):
    from dlrepro.engine import client

    job = jobs.expand(
        spec.load("fcn"), RunOptions(frameworks=["torch"], variants=["fcn-s"], device="cuda", quick=True)
    )[0]
    ours = {"label": "%s=%d" % (PID_LABEL, os.getpid())}  # this process's containers: another worker's come and go
    before = {c.id for c in client().containers.list(all=True, filters=ours)}
    # GPU 99 exists on no host: the engine cannot give it to the container, with or without the NVIDIA runtime
    executors.DockerExecutor(device="cuda", gpu=99).run(
        torch_cpu_image, [job], tmp_path, datasets.root(), lambda *e: None
    )
    result = json.loads((tmp_path / job["id"] / "result.json").read_text())
    assert result["status"] == "failed" and result["reason"].startswith(
        "the container for %s could not start" % torch_cpu_image.tag
    )
    assert {c.id for c in client().containers.list(all=True, filters=ours)} == before


def test_the_venv_is_written_once_and_no_layer_holds_the_transport(torch_cpu_image):
    """One stage: the virtual environment (about 1 GB) is in one layer, the pip step's, not copied into a second one;
    /tmp/transport (pip settings, CA bundle, wheels), bind-mounted into that step only, is in no layer of the image."""
    from dlrepro.engine import client

    big = [h for h in client().api.history(torch_cpu_image.image_id) if h["Size"] > 300e6]  # the base is 170 MB
    assert len(big) == 1 and "pip install --cache-dir=/tmp/pip-cache" in big[0]["CreatedBy"], big
    assert big[0]["Size"] > 700e6  # torch 2.13.0+cpu and its dependencies, in this layer only
    assert "venv/bin/python" in files_under(torch_cpu_image.image_id, "/opt/venv")
    assert files_under(torch_cpu_image.image_id, "/tmp/transport") == []  # the mount point, empty


def test_a_failed_build_leaves_no_stage_behind(cpu_images, torch_cpu_image, matrix, tmp_path, monkeypatch):
    """A build whose pip step fails (a lock pinning a package no index has) is an ImageError that shows the build's
    last lines, and leaves no image behind (once an install stage with the pip settings stayed, 410 MB). It lists the
    engine's dangling images, so it waits for the background build of every image (``cpu_images``)."""
    from dlrepro.engine import client
    from dlrepro.errors import ImageError
    from dlrepro.images import matrix as matrixmod

    entry = matrix.find("torch", "cpu")
    (tmp_path / ("%s.txt" % entry.name)).write_text(
        "dlrepro-no-such-package==1.0 \\\n    --hash=sha256:%s\n" % ("0" * 64)
    )
    monkeypatch.setattr(matrixmod, "LOCKS_DIR", tmp_path)
    before = {i.id for i in client().images.list(filters={"dangling": True})}
    with pytest.raises(ImageError, match="^building torch-2.13.0-cpu failed") as failed:
        build.ensure(matrix, entry, build.BuildOptions(), log=lambda *a: None)
    assert "dlrepro-no-such-package" in str(failed.value)
    left = [i.id for i in client().images.list(filters={"dangling": True}) if i.id not in before]
    assert left == []


def test_a_job_whose_image_cannot_run_here_is_skipped_before_any_build(docker_engine, tmp_path, reporter, monkeypatch):
    monkeypatch.setattr(hostinfo, "cpu_flags", lambda: ["sse4_2"])
    monkeypatch.setattr(build, "ensure", lambda *a, **k: pytest.fail("an image that cannot run here was built"))
    path = runs.run(
        "alexnet",
        RunOptions(frameworks=["tensorflow"], variants=["alexnet-s"], quick=True),
        results_dir=tmp_path,
        reporter=reporter,
    )
    bundle = json.loads((path / "bundle.json").read_text())
    assert bundle["counts"] == {"ok": 0, "failed": 0, "skipped": 1} and bundle["images"] == []
    row = bundle["jobs"][0]
    assert row["status"] == "skipped" and "tensorflow-2.21.0-cpu is built for CPUs with AVX" in row["reason"]
    assert row["remedy"].startswith("run on a CPU with AVX")
