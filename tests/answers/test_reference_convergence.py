"""FCN-R learns, in every framework that has a committed 5-epoch convergence bundle: MNIST test accuracy far
above a constant predictor's (at most 0.1135, the commonest digit's share of the 10,000 test images). DLF's GRU
learns the IMDB reviews in PyTorch: the committed 3-epoch bundle of six seeds.

The bundles were made with `dlrepro run --spec=fcn --variant fcn-r --mode convergence --epochs 5` on this
project's 2-CPU build machine (results/README.md). CNTK, Caffe2 and Caffe have no such bundle: their short
runs (tests/containers/test_frameworks.py) show the convergence path works, not that the model learns.
"""

import json

import pytest

from dlrepro import REPO_ROOT

BUNDLES = {
    "torch": "fcn-20261130T014428Z-a5ac0efc",
    "tensorflow": "fcn-20261130T022354Z-cc755c44",
    "mxnet": "fcn-20261130T022354Z-cc755c44",
    "jax": "fcn-20261130T022354Z-cc755c44",
}
CONSTANT_PREDICTOR = 1135 / 10000  # the digit 1's share of MNIST's test set


@pytest.mark.parametrize("framework", sorted(BUNDLES))
def test_fcn_r_learns_in_five_epochs(framework):
    job = REPO_ROOT / "results" / BUNDLES[framework] / "jobs" / ("fcn-r.%s.cpu.b64.convergence" % framework)
    result = json.loads((job / "result.json").read_text())
    epochs = result["convergence"]["epochs"]
    accuracy = [e["test_accuracy"] for e in epochs]
    assert result["status"] == "ok" and len(epochs) == 5 and result["convergence"]["test_batches"] == 157
    # DLBench's recipe (SGD 0.05, momentum 0.9, Xavier, sigmoid units) leaves the plateau in the first epoch
    assert accuracy[0] > 3 * CONSTANT_PREDICTOR and accuracy[-1] >= 0.92
    assert all(b >= a - 0.005 for a, b in zip(accuracy, accuracy[1:]))  # no epoch undoes the last one's gain
    assert epochs[-1]["loss_curve"][-1] < 0.3  # vs ln 10 = 2.303 for the uniform prediction


# `dlrepro run --spec=imdb-gru --variant=imdb-gru` in containers: the spec's 3 epochs (DLF's) and 6 seeds, on the raw
# reviews (imdb.npz cannot be had here); its PyTorch jobs
IMDB_SEEDS = "imdb-gru-20261203T135820Z-85609df9"


@pytest.mark.parametrize("seed", range(6))
def test_dlfs_gru_learns_the_imdb_reviews_in_three_epochs(seed):
    job = REPO_ROOT / "results" / IMDB_SEEDS / "jobs" / ("imdb-gru.torch.cpu.b64.s%d" % seed)
    result = json.loads((job / "result.json").read_text())
    conv = result["convergence"]
    accuracy = [e["test_accuracy"] for e in conv["epochs"]]
    assert result["status"] == "ok" and json.loads((job / "job.json").read_text())["data"]["name"] == "imdb-reviews"
    # DLF's 390 test mini-batches of 64: 24,960 reviews, 12,500 of one class (a constant predictor's 50.1%)
    assert conv["test_batches"] == 390 and len(accuracy) == 3
    assert accuracy[0] > 0.7 and accuracy[-1] >= 0.85 and accuracy == sorted(accuracy)
