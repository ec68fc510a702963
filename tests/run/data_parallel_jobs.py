"""What the data-parallel tests share: a job of N ranks, its files, its parameters; one step of jobs in an image (one
process over several devices) against one device's on the whole mini-batch."""

import json
import os
from pathlib import Path

import numpy as np

from dlrepro import REPO_ROOT
from dlrepro.inputs import spec
from dlrepro.run import jobs
from dlrepro.run.executors.base import free_port
from dlrepro.run.options import RunOptions

STEP = REPO_ROOT / "tests" / "data" / "dp_step.py"


def _job(framework, ranks, batch=8, variant="fcn-s", spec_name="fcn"):
    (job,) = jobs.expand(
        spec.load(spec_name),
        RunOptions(frameworks=[framework], variants=[variant], batch_sizes=[batch], quick=True, ranks=ranks),
    )
    if ranks:
        job["rendezvous"] = {"address": "127.0.0.1", "port": free_port()}
    return job


def _write(job, folder, name):
    path = Path(folder) / (name + ".json")
    path.write_text(json.dumps(job))
    return path


def _parameters(path):
    with np.load(str(path)) as found:
        count = len([k for k in found.files if k.startswith("after")])
        return [found["before%d" % i] for i in range(count)], [found["after%d" % i] for i in range(count)]


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
