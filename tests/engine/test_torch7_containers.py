"""Lua Torch 7 in its CPU image (issue 56; the host side: tests/runner/test_torch7.py): every DLBench model Torch 7
expresses has the spec's parameter count, counted by Torch 7, and FCN-R trains on MNIST. Skipped with the reason
where the source archives are not in the dataset cache, as a run skips a job whose dataset is missing."""

import json
import math

import pytest

from dlrepro.inputs import datasets
from dlrepro.run import runs
from dlrepro.run.options import RunOptions
from tests.helpers import fresh_cache
from tests.runner.torch7_sources import ARCHIVES, DLBENCH


def _sources_or_skip():
    absent = [name for name in ARCHIVES if datasets.missing(name)]
    if absent:
        pytest.skip(
            "Torch 7's source archives %s are not in the dataset cache: `dlrepro datasets.fetch NAME` (or "
            "--from FOLDER, archives made with git archive as dlrepro/inputs/datasets.yaml says)" % ", ".join(absent)
        )
    return {name: datasets.ensure(name) for name in ARCHIVES}


@pytest.fixture(scope="module")
def torch7_sources():
    return _sources_or_skip()


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
