"""Data-parallel training in one process over several devices, on the CPU, in the framework's image: MXNet's 2 CPU
contexts with a kvstore take the same training step as one device on the whole mini-batch (tests/data/dp_step.py), as
PyTorch's ranks and JAX's devices do
(tests/test_data_parallel.py); a bundle of 1- and 2-rank jobs has their speedups."""

import json
import os

import numpy as np
import pytest

from dlrepro import REPO_ROOT
from dlrepro.run.options import RunOptions
from dlrepro.store import tables
from tests.run.data_parallel_jobs import STEP, _job, _parameters, _write

pytestmark = pytest.mark.docker


def _step_in(image, docker_engine, tmp_path, jobs):
    """Run dp_step.py in ``image`` for each (name, job): OUT/<name>.npz."""
    tmp_path.chmod(0o777)
    for name, job in jobs:
        _write(job, tmp_path, name)
        docker_engine.containers.run(
            image.tag,
            ["python", "/opt/dlrepro/dp_step.py", "/out/%s.json" % name, "/out/%s.npz" % name],
            network_mode="none",
            remove=True,
            user="%d:%d" % (os.getuid(), os.getgid()),
            environment={"PYTHONPATH": "/opt/dlrepro"},
            volumes={
                str(REPO_ROOT / "runner"): {"bind": "/opt/dlrepro/runner", "mode": "ro"},
                str(STEP): {"bind": "/opt/dlrepro/dp_step.py", "mode": "ro"},
                str(tmp_path): {"bind": "/out"},
            },
        )


def _same_step(tmp_path, tolerance):
    before, after = _parameters(tmp_path / "whole.npz")
    split_before, split_after = _parameters(tmp_path / "split.npz")
    assert len(after) == len(split_after) == 8  # FCN-S: 4 dense layers
    assert max(float(np.abs(a - b).max()) for a, b in zip(split_before, before)) == 0.0  # the same initialisation
    assert max(float(np.abs(a - b).max()) for a, b in zip(split_after, after)) < tolerance
    assert max(float(np.abs(a - b).max()) for a, b in zip(after, before)) > 1e-4  # the step moved them


@pytest.mark.parametrize("framework", ["mxnet"])
def test_two_cpu_devices_take_the_step_of_one_device_on_the_whole_mini_batch(
    framework, request, docker_engine, tmp_path
):
    image = request.getfixturevalue("%s_cpu_image" % framework)
    _step_in(image, docker_engine, tmp_path, [("whole", _job(framework, None)), ("split", _job(framework, [2]))])
    _same_step(tmp_path, 1e-6)


def test_a_bundle_of_one_process_data_parallel_jobs_has_their_devices_and_speedups(mxnet_cpu_image, tmp_path, reporter):
    from dlrepro.run import runs

    path = runs.run(
        "fcn",
        RunOptions(frameworks=["mxnet"], variants=["fcn-s"], batch_sizes=[8], quick=True, ranks=[1, 2]),
        results_dir=tmp_path,
        reporter=reporter,
    )
    summary = tables.summary(path).set_index("job_id")
    assert set(summary["status"]) == {"ok"} and len(summary) == 2
    for framework in ("mxnet",):
        two, one = summary.loc["fcn-s.%s.cpu.b8.r2" % framework], summary.loc["fcn-s.%s.cpu.b8.r1" % framework]
        assert (two["rank_batch_size"], one["rank_batch_size"]) == (4, 8)
        assert two["scaling_base"] == "fcn-s.%s.cpu.b8.r1" % framework
        assert two["speedup"] == pytest.approx(one["median"] / two["median"])
    mx_env = json.loads((path / "jobs" / "fcn-s.mxnet.cpu.b8.r2" / "result.json").read_text())["environment"]
    assert (
        mx_env["data_parallel"]["contexts"] == ["cpu(0)", "cpu(1)"] and mx_env["data_parallel"]["kvstore"] == "device"
    )
