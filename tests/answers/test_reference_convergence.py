"""FCN-R learns, in every framework that has a committed 5-epoch convergence bundle: MNIST test accuracy far
above a constant predictor's (at most 0.1135, the commonest digit's share of the 10,000 test images).

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
