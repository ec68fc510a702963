"""What the data-parallel tests share: a job of N ranks, its files, its parameters; one step of jobs in an image (one
process over several devices) against one device's on the whole mini-batch."""

import json
from pathlib import Path

import numpy as np

from dlrepro import REPO_ROOT
from dlrepro.inputs import spec
from dlrepro.run import jobs
from dlrepro.run.executors.base import free_port
from dlrepro.run.options import RunOptions
from tests import helpers
from tests.helpers import fresh_cache

STEP = REPO_ROOT / "tests" / "data" / "dp_step.py"


def _job(framework, ranks, batch=8, variant="fcn-s", spec_name="fcn"):
    (job,) = jobs.expand(
        spec.load(spec_name),
        RunOptions(frameworks=[framework], variants=[variant], batch_sizes=[batch], quick=True, ranks=ranks),
    )
    if ranks:
        job["rendezvous"] = {"address": "127.0.0.1", "port": free_port()}
    return job


def whole_and_split(framework, variant="fcn-r"):
    """[("whole", the job on one device), ("split", the job on 2)]: FCN-R (14.2 M parameters, DLBench's multi-GPU
    network) by default, whose parameters before and after a step are an eighth of FCN-S's to write and compare."""
    return [("whole", _job(framework, None, variant=variant)), ("split", _job(framework, [2], variant=variant))]


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
    for name, job in jobs:
        _write(job, tmp_path, name)
        helpers.run_python(
            docker_engine,
            image.tag,
            tmp_path,
            "/opt/dlrepro/dp_step.py",
            "/out/%s.json" % name,
            "/out/%s.npz" % name,
            mounts={STEP: "/opt/dlrepro/dp_step.py"},
        )


def _same_step(tmp_path, tolerance):
    before, after = _parameters(tmp_path / "whole.npz")
    split_before, split_after = _parameters(tmp_path / "split.npz")
    assert len(after) == len(split_after) == 8  # FCN-S and FCN-R: 4 dense layers each
    assert max(float(np.abs(a - b).max()) for a, b in zip(split_before, before)) == 0.0  # the same initialisation
    assert max(float(np.abs(a - b).max()) for a, b in zip(split_after, after)) < tolerance
    assert max(float(np.abs(a - b).max()) for a, b in zip(after, before)) > 1e-4  # the step moved them


def one_process_bundle(framework, tmp_path, reporter, monkeypatch, mnist):
    """FCN-R on MNIST (``mnist``: the real cache's record; DLBench's data-parallel network) at mini-batch 8 on 1
    and 2 ranks of ``framework``'s one-process path (--quick): checks that both jobs are ok, each rank's mini-batch
    (8 and 4), the 2-rank job's scaling base and its speedup (the 1-rank median over its own); returns the bundle's
    path and the two jobs' results as dicts {ranks: result.json}."""
    from dlrepro.run import runs
    from dlrepro.store import tables

    fresh_cache(monkeypatch, tmp_path, mnist=mnist)
    path = runs.run(
        "fcn",
        RunOptions(frameworks=[framework], variants=["fcn-r"], batch_sizes=[8], quick=True, ranks=[1, 2]),
        results_dir=tmp_path,
        reporter=reporter,
    )
    ids = {r: "fcn-r.%s.cpu.b8.r%d" % (framework, r) for r in (1, 2)}
    summary = tables.summary(path).set_index("job_id")
    assert sorted(summary.index) == sorted(ids.values()) and set(summary["status"]) == {"ok"}
    one, two = summary.loc[ids[1]], summary.loc[ids[2]]
    assert (two["rank_batch_size"], one["rank_batch_size"]) == (4, 8)
    assert two["scaling_base"] == ids[1] and one["speedup"] == 1.0
    assert abs(two["speedup"] - one["median"] / two["median"]) < 1e-9 * two["speedup"]
    assert abs(two["scaling_efficiency"] - two["speedup"] / 2) < 1e-9
    return path, {r: json.loads((path / "jobs" / ids[r] / "result.json").read_text()) for r in (1, 2)}
