"""The CNTK adapter's learners make PyTorch's updates (its module docstring's claim): SGD, SGD with momentum and
weight decay, Nesterov and Adam, three steps each on one linear softmax problem, CNTK in its image against
torch.optim here."""

import json

import numpy as np
import pytest
import torch

from dlrepro import REPO_ROOT
from tests import helpers
from tests.data import optimizer_steps

pytestmark = pytest.mark.docker


def _torch_steps(opt):
    w0, x, y = optimizer_steps.problem()
    w = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    if opt["name"] == "sgd":
        optimizer = torch.optim.SGD(
            [w],
            lr=opt["lr"],
            momentum=opt.get("momentum", 0),
            nesterov=opt.get("nesterov", False),
            weight_decay=opt.get("weight_decay", 0),
        )
    else:
        optimizer = torch.optim.Adam([w], lr=opt["lr"])
    for _ in range(optimizer_steps.STEPS):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(torch.from_numpy(x) @ w, torch.from_numpy(y)).backward()
        optimizer.step()
    return w.detach().numpy()


def test_cntk_learners_take_pytorchs_steps(cntk_cpu_image, docker_engine, tmp_path):
    helpers.run_python(
        docker_engine,
        cntk_cpu_image.tag,
        tmp_path,
        "/opt/dlrepro/tests/data/optimizer_steps.py",
        "/out/steps.json",
        mounts={REPO_ROOT / "tests": "/opt/dlrepro/tests"},
    )
    found = [np.array(w, dtype=np.float32) for w in json.loads((tmp_path / "steps.json").read_text())]
    w0 = optimizer_steps.problem()[0]
    for opt, cntk_w in zip(optimizer_steps.SETTINGS, found):
        expected = _torch_steps(opt)
        assert np.abs(expected - w0).max() > 1e-3, opt  # the steps moved the weights
        assert np.abs(cntk_w - expected).max() < 1e-5, (opt, np.abs(cntk_w - expected).max())
