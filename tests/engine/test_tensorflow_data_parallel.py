"""TensorFlow 2's data-parallel path (runner.adapters.tensorflow_parallel) in its CPU image: two logical CPU devices
of one process under tf.distribute.MirroredStrategy take the same training step as one device on the whole
mini-batch (tests/data/dp_step.py), as JAX's and MXNet's one-process paths do (tests/engine/
test_data_parallel_containers.py), with weight decay and gradient clipping too; a bundle of its jobs has their ranks,
devices and speedups. Needs a Docker engine."""

import numpy as np
import pytest

from tests.run.data_parallel_jobs import _parameters, _same_step, _step_in, one_process_bundle, whole_and_split

pytestmark = pytest.mark.all_cpus  # ranks of their own CPUs (tests/conftest.py)


@pytest.fixture(scope="module")
def tensorflow_cpu_image(cpu_image):
    """The newest TensorFlow's CPU image (Keras 3)."""
    return cpu_image("tensorflow")


@pytest.mark.docker
def test_two_logical_cpu_devices_take_the_step_of_one_device_on_the_whole_mini_batch(
    tensorflow_cpu_image, docker_engine, tmp_path
):
    _step_in(tensorflow_cpu_image, docker_engine, tmp_path, whole_and_split("tensorflow"))
    _same_step(tmp_path, 1e-6)


@pytest.mark.docker
def test_the_split_step_decays_and_clips_the_summed_gradients_as_one_device_does(
    tensorflow_cpu_image, docker_engine, tmp_path
):
    """L2 decay split over the replicas' parts, clipping by the summed gradients' norm, and momentum: the two
    devices' step is still the one device's (FCN-R, measured: 3.7e-9 apart at most). The bound bites: at learning
    rate 0.1 and bound 0.5 the step moves a parameter by 1.9e-3 at most, the same job without the bound by 2.9e-2."""
    jobs = whole_and_split("tensorflow")
    for _, job in jobs:
        job["optimizer"].update(lr=0.1, weight_decay=0.01, clip_norm=0.5, momentum=0.9)
    _step_in(tensorflow_cpu_image, docker_engine, tmp_path, jobs)
    _same_step(tmp_path, 1e-6)
    before, after = _parameters(tmp_path / "whole.npz")
    assert max(float(np.abs(a - b).max()) for a, b in zip(after, before)) < 5e-3  # clipped


@pytest.mark.docker
def test_a_bundle_of_mirrored_strategy_jobs_has_their_devices_and_speedups(
    tensorflow_cpu_image, tmp_path, reporter, monkeypatch, mnist
):
    _, results = one_process_bundle("tensorflow", tmp_path, reporter, monkeypatch, mnist)
    env, one_env = results[2]["environment"], results[1]["environment"]
    assert env["data_parallel"] == {
        "how": "tf.distribute.MirroredStrategy in one process, gradients summed by one all-reduce",
        "world_size": 2,
        "devices": ["/CPU:0", "/CPU:1"],
        "all_reduce": "ReductionToOneDevice",
    }
    assert one_env["data_parallel"] == {
        "how": "tf.distribute.MirroredStrategy in one process, gradients summed by one all-reduce",
        "world_size": 1,
        "devices": ["/CPU:0"],
        "all_reduce": "ReductionToOneDevice",
    }
