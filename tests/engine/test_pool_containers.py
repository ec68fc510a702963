"""A study's worker pool in containers: one container for the study, none left, and nothing moved out of the bundle;
needs a Docker engine."""

import json
import os
import socket

import pytest

from dlrepro.run import executors
from dlrepro.run import runs as runsmod
from dlrepro.run import study as studymod
from dlrepro.run.executors.base import HOST_LABEL, PID_LABEL
from dlrepro.run.options import RunOptions
from dlrepro.run.pool import WorkerPool
from dlrepro.store import records
from tests import helpers
from tests.helpers import Quiet
from tests.run.pools import SHARED, _seat

pytest.importorskip("torch")


class _StopAtFirstEnd(Quiet):
    """A reporter whose first job end is a Ctrl-C."""

    def job_finished(self, job_id, result):
        super().job_finished(job_id, result)
        if len(self.finished) == 1:
            raise KeyboardInterrupt


def _ours(docker_engine):
    """The job containers this test process started that the engine still lists."""
    return helpers.containers_left(
        docker_engine, label=["%s=%s" % (HOST_LABEL, socket.gethostname()), "%s=%d" % (PID_LABEL, os.getpid())]
    )


@pytest.mark.docker
def test_a_study_in_containers_uses_one_container_and_leaves_none(torch_cpu_image, docker_engine, tmp_path, reporter):
    results = tmp_path / "results"
    with pytest.raises(KeyboardInterrupt):  # a Ctrl-C as the first run's job ends
        studymod.run(str(SHARED), frameworks=["torch"], quick=True, results_dir=results, reporter=_StopAtFirstEnd())
    assert _ours(docker_engine) == []
    record = records.find("shared-study", results)
    assert record.body["runs"]["small"]["state"] == "interrupted" and record.body["runs"]["large"]["state"] == "planned"
    record = studymod.run(str(SHARED), resume=True, results_dir=results, reporter=reporter)
    assert [record.body["runs"][r]["state"] for r in ("small", "large")] == ["complete", "complete"]
    assert _ours(docker_engine) == []
    small = results / record.body["runs"]["small"]["bundle"]
    large = results / record.body["runs"]["large"]["bundle"]
    before = json.loads((small / "jobs" / "fcn-r.torch.cpu.b64.t1" / "result.json").read_text())["worker"]
    later = json.loads((large / "jobs" / "fcn-s.torch.cpu.b8.t1" / "result.json").read_text())["worker"]
    # the first run's job finished in the interrupted pass; the second ran in a fresh container of the resume
    assert before["jobs_before"] == 0 and later["jobs_before"] == 0
    assert later["id"].split("/")[0] != socket.gethostname()  # its worker's host: the container
    record = studymod.run(
        str(SHARED), frameworks=["torch"], quick=True, results_dir=tmp_path / "again", reporter=reporter
    )
    assert _ours(docker_engine) == []
    found = [
        json.loads((tmp_path / "again" / record.body["runs"][r]["bundle"] / "jobs" / j / "result.json").read_text())[
            "worker"
        ]
        for r, j in (("small", "fcn-r.torch.cpu.b64.t1"), ("large", "fcn-s.torch.cpu.b8.t1"))
    ]
    # one container, one worker for both runs
    assert _seat(found[1]) == (found[0]["id"], 1)


@pytest.mark.docker
def test_a_container_that_prints_a_job_id_climbing_out_of_its_output_moves_nothing_out_of_the_bundle(
    torch_cpu_image, tmp_path, monkeypatch, reporter
):
    """The pool's serving container writes the shared output root (/out): this one plants a result there and prints
    the end line of a "job" ``../../../evil``, which from the plan's output folder is that planted result, and from
    the bundle's jobs/ folder is outside the results folder. The host takes only the ids of the plan it sent."""
    from dlrepro.run.executors.docker import DockerExecutor

    class Planting(DockerExecutor):
        def serve_args(self, tag, pool, data_root, gpu):
            return dict(
                super().serve_args(tag, pool, data_root, gpu),
                command=[
                    "sh",
                    "-c",
                    (
                        'read stage out; mkdir -p /out/evil && echo \'{"status": "ok"}\' > /out/evil/result.json; '
                        "echo '@dlrepro start ../../../evil'; echo '@dlrepro end ../../../evil ok'; "
                        'echo "@dlrepro done $stage"; read rest'
                    ),
                ],
            )

    monkeypatch.setattr(executors, "get", lambda *args: Planting())
    pool = WorkerPool(tmp_path / "pool", "test-pool")
    try:
        path = runsmod.run(
            "fcn",
            RunOptions(frameworks=["torch"], variants=["fcn-s"], batch_sizes=[8], quick=True),
            results_dir=tmp_path / "results",
            reporter=reporter,
            pool=pool,
        )
    finally:
        pool.close()
    assert not (tmp_path / "evil").exists() and not (tmp_path / "results" / "evil").exists()
    assert sorted(p.name for p in path.iterdir()) == [
        "SHA256SUMS",
        "bundle.json",
        "images",
        "jobs",
        "samples.parquet",
        "summary.csv",
        "summary.parquet",
    ]
    assert sorted(p.name for p in (path / "jobs").iterdir()) == ["fcn-s.torch.cpu.b8"]
    result = json.loads((path / "jobs" / "fcn-s.torch.cpu.b8" / "result.json").read_text())
    assert (result["status"], result["reason"]) == ("failed", "the executor ended before this job ran")
    assert reporter.finished == {"fcn-s.torch.cpu.b8": "failed"}
    shared = json.loads((path / "bundle.json").read_text())["executor"]["isolation"]["shared_output"]
    assert shared.startswith("/out is the output root of study worker pool test-pool, read-write, shared by")
