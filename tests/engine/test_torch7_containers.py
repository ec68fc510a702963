"""Lua Torch 7 in its CPU image (issue 56; the host side: tests/runner/test_torch7.py): every DLBench model Torch 7
expresses has the spec's parameter count, counted by Torch 7, FCN-R trains on MNIST, a cuda job there (no cutorch) is
recorded failed with the harness's reason, and runner.buildinfo names its build. Skipped with the reason where the
source archives are not in the dataset cache, as a run skips a job whose dataset is missing."""

import json
import math

import docker
import pytest

from dlrepro.images import build
from dlrepro.inputs import spec
from dlrepro.run import jobs, probe, runs
from dlrepro.run.options import RunOptions
from runner import contract
from tests import helpers
from tests.helpers import fresh_cache
from tests.runner.torch7_sources import DLBENCH, sources_or_skip


@pytest.fixture(scope="module")
def torch7_sources():
    return sources_or_skip()


@pytest.mark.docker
def test_torch7_counts_the_specs_parameters_for_every_dlbench_model_it_expresses(
    docker_engine, torch7_sources, tmp_path, reporter, monkeypatch
):
    fresh_cache(monkeypatch, tmp_path, **torch7_sources)
    counted = {}
    for name in DLBENCH[:-1]:
        path = runs.run(
            name,
            RunOptions(frameworks=["torch7"], mode="parameters", quick=True),
            results_dir=tmp_path / name,
            reporter=reporter,
        )
        for result_file in path.glob("jobs/*/result.json"):
            result = json.loads(result_file.read_text())
            assert result["status"] == "ok", (result_file, result.get("reason"))
            params = result["parameters"]
            counted[result_file.parent.name.split(".")[0]] = (params["measured"], params["expected"])
    assert counted == {
        "fcn-s": (117997696,) * 2,
        "fcn-8": (130586752,) * 2,
        "fcn-r": (14205962,) * 2,
        "alexnet-s": (62378344,) * 2,
        "alexnet-r": (89578,) * 2,
        "resnet50": (25557032,) * 2,
        "resnet56": (853018,) * 2,
        "resnet56-synthetic": (853018,) * 2,
    }


@pytest.mark.docker
def test_torch7_trains_fcn_r_on_mnist_in_its_cpu_image(
    docker_engine, torch7_sources, tmp_path, reporter, monkeypatch, mnist
):
    """100 iterations of FCN-R (Xavier, SGD 0.05 with momentum 0.9, batch 64) on real MNIST: the loss falls and the
    evaluation covers the 10,000 test images; the accuracy is at least the rarest digit's share (0.0892, which a
    constant predictor scores), as every framework's short convergence test (tests/test_frameworks.py)."""
    fresh_cache(monkeypatch, tmp_path, mnist=mnist, **torch7_sources)
    path = runs.run(
        "fcn",
        RunOptions(frameworks=["torch7"], variants=["fcn-r"], mode="convergence", quick=True),
        results_dir=tmp_path,
        reporter=reporter,
    )
    result = json.loads(next(path.glob("jobs/*/result.json")).read_text())
    assert result["status"] == "ok", result.get("reason")
    epoch = result["convergence"]["epochs"][0]
    assert epoch["iterations"] == 100 and result["convergence"]["test_batches"] == 157
    assert epoch["loss_curve"][-1] < epoch["loss_curve"][0] and epoch["loss_curve"][-1] <= math.log(10) + 0.01
    assert 0.0892 <= epoch["test_accuracy"] <= 1.0
    env = result["environment"]
    assert env["framework"] == "torch7" and env["sources"]["torch7"] == (
        "814ea4afd6beb110705d2456de03876841fcf1fd 5a92379ca9052f0b9f80bf0cafcd091083e2af87d4093635595bc26922c2a723"
    )
    assert env["luajit"].startswith("LuaJIT 2.1")
    assert env["gradients"] == (  # the suite's step: runner.contract's default, gradients pruned
        "nn's backward less the first module's (nn.Linear) gradient with respect to the mini-batch (gradInput nil)"
    )


@pytest.mark.docker
def test_a_cuda_job_in_the_cpu_image_is_recorded_failed_with_the_reason(
    docker_engine, torch7_sources, tmp_path, monkeypatch, matrix
):
    """The real harness in the CPU image (no cutorch) answers a cuda job's setup with why, and the runner records the
    job failed with that line instead of crashing (exit status 1: a recorded failure)."""
    fresh_cache(monkeypatch, tmp_path, **torch7_sources)
    image = build.ensure(matrix, matrix.entry("torch7-7.0-cpu"), build.BuildOptions(), log=lambda line: None)
    (job,) = jobs.expand(
        spec.load("fcn"), RunOptions(frameworks=["torch7"], variants=["fcn-r"], device="cuda", quick=True)
    )
    out = tmp_path / "out"
    out.mkdir()
    contract.write_json(str(out / "job.json"), job)
    with pytest.raises(docker.errors.ContainerError) as ended:
        helpers.run_python(docker_engine, image.tag, out, "-m", "runner", "/out/job.json", "/out/result")
    assert ended.value.exit_status == 1
    result = json.loads((out / "result" / "result.json").read_text())
    assert (result["status"], result["reason"]) == (
        "failed",
        "HarnessError: the Torch 7 harness failed: device cuda: require 'cutorch' failed: module 'cutorch' not found",
    )


@pytest.mark.docker
def test_buildinfo_names_torch7s_build_in_its_cpu_image(docker_engine, torch7_sources, tmp_path, monkeypatch, matrix):
    """runner.buildinfo in the CPU image (what benchmarks/cuda_images.py runs in the CUDA one): Torch 7's libraries
    under its prefix, its version by the torch7 commit the image was built from, no CUDA runtime and no device code."""
    fresh_cache(monkeypatch, tmp_path, **torch7_sources)
    image = build.ensure(matrix, matrix.entry("torch7-7.0-cpu"), build.BuildOptions(), log=lambda line: None)
    facts = probe.run_buildinfo(image.tag, "torch7", None)
    assert facts["package_dirs"] == ["/opt/torch7/lib"] and facts["device_code"] == [] and facts["main"] is None
    assert facts["reported"] == {
        "framework_version": "scm-814ea4a",
        "cuda": None,
        "cudnn": "not linked",
        "nccl": "not linked",
        "archs": None,
        "library": None,
    }
