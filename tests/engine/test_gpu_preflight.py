"""The pre-flight in a container: an image lacking the GPU's architecture is refused with the reason in result.json;
needs a Docker engine."""

import json

import pytest

from dlrepro.images import build
from dlrepro.images import matrix as matrixmod
from dlrepro.plan import hostinfo
from dlrepro.run import executors, runs
from dlrepro.run.options import RunOptions
from tests.run.gpus import H200


@pytest.mark.docker
def test_preflight_refuses_an_image_lacking_the_gpus_arch_with_the_reason_in_result_json(
    docker_engine, tmp_path, reporter, monkeypatch
):
    real = matrixmod.load()
    images = [
        i.model_copy(update={"cuda_archs": ["sm_80", "sm_86"]}) if i.name == "torch-2.13.0-cuda" else i
        for i in real.images
    ]
    monkeypatch.setattr(matrixmod, "load", lambda: real.model_copy(update={"images": images}))
    monkeypatch.setattr(hostinfo, "gpus", lambda: [H200])
    monkeypatch.setattr(executors.DockerExecutor, "preflight", lambda self: None)  # as if it had the NVIDIA runtime
    monkeypatch.setattr(build, "ensure", lambda *a, **k: pytest.fail("an image that cannot run here was built"))
    path = runs.run(
        "alexnet",
        RunOptions(frameworks=["torch"], variants=["alexnet-s"], device="cuda", quick=True),
        results_dir=tmp_path,
        reporter=reporter,
    )
    (job_dir,) = (path / "jobs").iterdir()
    result = json.loads((job_dir / "result.json").read_text())
    assert result["status"] == "skipped"
    assert result["reason"] == (
        "torch-2.13.0-cuda has no kernels for NVIDIA H200 (sm_90, compute capability 9.0); its build ships sm_80, sm_86"
    )
    assert result["remedy"].startswith("run on a GPU the build supports")
