"""What the data-parallel tests share: a job of N ranks, its files, its parameters."""

import json
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
