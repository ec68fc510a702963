"""Workers that outlive a run (dlrepro.run.pool) and workers that stay clean (runner.supervise): the runs of a
study share one warm worker per (image, device, settings), a failed job retires its worker, a job without warm-up
gets a fresh one, and a job computes the same after another job in its worker as alone."""

import json
import math
import os
import subprocess
import sys
import time
import types

import pytest

from dlrepro import REPO_ROOT
from dlrepro.inputs import datasets, spec
from dlrepro.run import executors, jobs, recover
from dlrepro.run import study as studymod
from dlrepro.run.executors.base import FolderSink
from dlrepro.run.options import RunOptions
from dlrepro.run.pool import WorkerPool
from runner import supervise
from tests.helpers import bad_and_good_jobs
from tests.run.pools import SHARED, _seat

pytest.importorskip("torch")

MIB = 1 << 20


def _served(tmp_path, groups):
    """Run each group of jobs as one run of a study would, all through one pool of the local executor; returns
    ({job id: result}, the pool's starts, the supervisor's exit status, whether the pool's folder is left)."""
    pool = WorkerPool(tmp_path / "pool", "test-pool")
    sink = FolderSink(tmp_path / "out", scratch_root=pool.out)
    try:
        for group in groups:
            executor = executors.LocalExecutor()  # one per run, as runs.run makes them
            executor.pool = pool
            executor.run(None, group, sink, datasets.root(), lambda *event: None)
        (server,) = pool.servers.values()
    finally:
        pool.close()
    results = {
        j["id"]: json.loads((tmp_path / "out" / j["id"] / "result.json").read_text()) for group in groups for j in group
    }
    return results, dict(pool.starts), server.code, pool.folder.exists()


def test_a_failed_job_retires_its_worker_and_a_job_without_warm_up_gets_a_fresh_one(tmp_path):
    bad, good = bad_and_good_jobs()
    again, after = dict(good, id="again"), dict(good, id="after")
    cold = dict(good, id="cold", warmup=0)
    results, starts, code, left = _served(tmp_path, [[bad, good, again], [cold, after]])
    assert {k: r["status"] for k, r in results.items()} == {
        bad["id"]: "failed",
        good["id"]: "ok",
        "again": "ok",
        "cold": "ok",
        "after": "ok",
    }
    worker = {k: r["worker"] for k, r in results.items()}
    assert worker[bad["id"]]["jobs_before"] == 0
    # the failed job's worker was retired: the next job is the first of a new one
    assert worker[good["id"]]["jobs_before"] == 0 and worker[good["id"]]["id"] != worker[bad["id"]]["id"]
    assert _seat(worker["again"]) == (worker[good["id"]]["id"], 1)
    assert worker[bad["id"]]["started_for"] == supervise.FIRST
    assert (
        worker[good["id"]]["started_for"]
        == worker["again"]["started_for"]
        == ("the worker before it failed (job %s)" % bad["id"])
    )
    assert worker["cold"]["started_for"] == supervise.FRESH
    # a fresh worker holds the interpreter only (torch is imported by its first job); the next job finds torch in it
    assert worker[good["id"]]["held_bytes"] < 100 * MIB < 200 * MIB < worker["again"]["held_bytes"]
    # no warm-up: a fresh worker, which then serves the next job (of the same group)
    assert worker["cold"]["jobs_before"] == 0 and worker["cold"]["id"] not in (
        worker[bad["id"]]["id"],
        worker[good["id"]]["id"],
    )
    assert _seat(worker["after"]) == (worker["cold"]["id"], 1)
    # both groups went to one supervisor, which ended cleanly, and the pool left no folder
    assert list(starts.values()) == [1] and code == 0 and left is False


def test_the_runs_of_a_study_share_one_worker_and_keep_their_bundles(tmp_path, reporter):
    results = tmp_path / "results"
    record = studymod.run(
        str(SHARED), executor="local", frameworks=["torch"], quick=True, results_dir=results, reporter=reporter
    )
    runs = record.body["runs"]
    assert [runs[r]["state"] for r in ("small", "large")] == ["complete", "complete"]
    assert set(runs["small"]) == {
        "spec",
        "variants",
        "device",
        "why_here",
        "notes",
        "jobs",
        "what",
        "options",
        "bundle",
        "state",
        "done",
    }
    found = {}
    for run_id, job_id in (("small", "fcn-r.torch.cpu.b64.t1"), ("large", "fcn-s.torch.cpu.b8.t1")):
        bundle = results / runs[run_id]["bundle"]
        body = json.loads((bundle / "bundle.json").read_text())
        assert body["state"] == "complete" and body["counts"] == {"ok": 1, "failed": 0, "skipped": 0}
        assert body["attempts"][0]["pool"]["id"] == "study-" + record.path.stem
        found[run_id] = json.loads((bundle / "jobs" / job_id / "result.json").read_text())["worker"]
    # the second run's job ran in the first run's worker, after its job
    assert _seat(found["large"]) == (found["small"]["id"], 1) and found["small"]["jobs_before"] == 0
    assert [p.name for p in (results / "studies").iterdir()] == [record.path.name]  # the pool's folder is gone


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def test_a_study_killed_outright_resumes_and_keeps_what_the_running_job_left(tmp_path, reporter):
    results = tmp_path / "results"
    study = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "invoke",
            "study",
            str(SHARED),
            "--executor",
            "local",
            "--framework",
            "torch",
            "--quick",
            "--results",
            str(results),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline, running = time.time() + 300, []
    while not running and time.time() < deadline:  # the first job's result.json, written before torch is imported
        running = list((results / "studies").glob(".*.pool/out/*/attempt-1/*/*/result.json"))
        time.sleep(0.05)
    study.kill()  # SIGKILL: nothing of the study's own code runs after it
    study.wait()
    left = json.loads(running[0].read_text())
    assert left["status"] == "running" and left["worker"]["jobs_before"] == 0
    worker = int(left["worker"]["id"].split("/")[1])
    deadline = time.time() + 60
    while _alive(worker) and time.time() < deadline:  # its supervisor saw its input close and ended the job
        time.sleep(0.1)
    assert not _alive(worker)
    record = studymod.run(str(SHARED), resume=True, results_dir=results, reporter=reporter)
    assert [record.body["runs"][r]["state"] for r in ("small", "large")] == ["complete", "complete"]
    job = results / record.body["runs"]["small"]["bundle"] / "jobs" / "fcn-r.torch.cpu.b64.t1"
    earlier = json.loads((job / "attempts" / "1" / "result.json").read_text())
    assert earlier["status"] == "skipped" and earlier["reason"].startswith(recover.KILLED)
    assert earlier["worker"] == left["worker"] and json.loads((job / "result.json").read_text())["status"] == "ok"
    assert [p.name for p in (results / "studies").iterdir()] == [record.path.name]


def _alexnet_s(repeats):
    return jobs.expand(
        spec.load("alexnet"),
        RunOptions(
            frameworks=["torch"],
            variants=["alexnet-s"],
            batch_sizes=[4],
            warmup=2,
            iterations=3,
            repeats=repeats,
            threads=[1],
        ),
    )


def test_a_job_after_another_in_its_worker_computes_what_it_computes_alone(tmp_path):
    """AlexNet-S (batch 4, 2 repeats of 3 iterations, 1 thread) after ResNet-50 (batch 2, 1 thread: the same
    settings, so the same worker) in one worker, against the same job alone in a fresh worker (local executor: the
    docker one runs the same supervisor and worker). What could leak from the job before (its random state, the
    framework's global switches, its modules' state) shows in what the later job computes and records, so that is
    compared exactly: its first and last loss bit for bit, its parameter count, its threads as measured. How long it
    takes is a speed figure, not a test: on this shared 2-core machine a median moves by a percent or so between any two
    runs (CI saw 0.369 s against an alone interval of 0.352-0.366 s); ``benchmarks/isolation.py`` sets worker against
    process isolation side by side with Mann-Whitney U on the repeat medians."""
    (alone,) = _alexnet_s(2)
    (resnet,) = jobs.expand(
        spec.load("resnet50"),
        RunOptions(frameworks=["torch"], batch_sizes=[2], warmup=1, iterations=2, repeats=1, threads=[1]),
    )
    later = dict(alone, id="after-resnet50")
    before, _, _, _ = _served(tmp_path / "before", [[alone]])
    second, starts, _, _ = _served(tmp_path / "after", [[resnet], [later]])
    first, then = before[alone["id"]], second["after-resnet50"]
    assert [r["status"] for r in (first, second[resnet["id"]], then)] == ["ok"] * 3
    assert _seat(then["worker"]) == (second[resnet["id"]]["worker"]["id"], 1)
    assert first["worker"]["jobs_before"] == 0 and list(starts.values()) == [1]
    assert then["environment"]["threads"] == first["environment"]["threads"] == 1
    assert then["loss"] == first["loss"] and math.isfinite(first["loss"]["last"])
    assert then["parameters"] == first["parameters"]


class _Holding(supervise.Worker):
    """A worker that runs nothing: each job's line reports the memory the job's ``held_mib`` says it keeps."""

    started = []

    def __init__(self, first_job_path, why):
        self.jobs, self.held, self.first_held, self.closed, self.why = 0, None, None, False, why
        self.proc = types.SimpleNamespace(pid=len(self.started), poll=lambda: None)
        self.started.append(self)

    def run(self, job, job_path, outdir):
        self.jobs += 1
        return self._done("done %s ok %d" % (job["id"], job["held_mib"] * MIB))

    def close(self, kill=False):
        self.closed = True


def test_a_worker_that_keeps_memory_from_job_to_job_is_retired(tmp_path, monkeypatch):
    """Constructed, as TensorFlow 2.21 held on the CPU in a DLBench study (MiB after each FCN-S, FCN-8, AlexNet-S
    job): 1,629, 2,049, 2,518, then 3,300, past twice the first and 512 MiB more, and the worker is retired; the
    next job of its settings gets a new one. A worker that goes from 157 to 330 MiB (MXNet's pools, past twice but
    not 512 MiB more) and one that holds 300 MiB after every job serve all their jobs."""
    monkeypatch.setattr(supervise, "Worker", _Holding)
    monkeypatch.setattr(supervise, "_retired", {})
    monkeypatch.setattr(_Holding, "started", [])
    (job,) = _alexnet_s(1)
    for held, served in (
        ([1629, 2049, 2518, 3300, 1700, 2000], [(4, 1629, 3300, True), (2, 1700, 2000, False)]),
        ([157, 157, 230, 330, 331], [(5, 157, 331, False)]),
        ([300] * 5, [(5, 300, 300, False)]),
    ):
        _Holding.started[:] = []
        jobs_ = [(str(n), dict(job, id=str(n), held_mib=mib)) for n, mib in enumerate(held)]
        supervise._in_workers(jobs_, str(tmp_path), str(tmp_path), {})
        assert [(w.jobs, w.first_held // MIB, w.held // MIB, w.closed) for w in _Holding.started] == served
    whys = [w.why for w in _Holding.started]
    assert whys == [supervise.FIRST]
    _Holding.started[:] = []
    supervise._in_workers(
        [(str(n), dict(job, id=str(n), held_mib=mib)) for n, mib in enumerate([1629, 3300, 1700])],
        str(tmp_path),
        str(tmp_path),
        {},
    )
    assert [w.why for w in _Holding.started] == [
        supervise.FIRST,
        "the worker before it kept memory: 3300 MiB after job 1, 1629 MiB after its first",
    ]


class _Server(object):
    def __init__(self, name, ended):
        self.name, self.ended = name, ended

    def alive(self):
        return True

    def plan(self, *args):
        pass

    def end(self, kill=False):
        self.ended.append(self.name)


class _Executor(object):
    def __init__(self, ended):
        self.ended = ended

    def serve_key(self, image, gpu):
        return ("docker", image, gpu)

    def serve(self, image, pool, data_root, gpu):
        return _Server(image, self.ended)


def test_idle_supervisors_are_ended_least_recently_used_first_while_the_host_is_short_of_memory(tmp_path, monkeypatch):
    """Constructed: a 20 GiB host. With 12 GiB available, a plan starts on the supervisors it has; with 6 GiB, the
    idle ones are ended, least recently used first, until half the host is available again (each ending gives
    3 GiB back here); the supervisor the plan needs is never ended."""
    from dlrepro.plan import hostinfo

    memory = {"available": 12 << 30}
    ended = []
    monkeypatch.setattr(hostinfo, "memory_bytes", lambda: 20 << 30)
    monkeypatch.setattr(hostinfo, "available_memory_bytes", lambda: memory["available"])
    told = []
    pool = WorkerPool(tmp_path / "pool", "test-pool", told.append)
    executor = _Executor(ended)

    def serve(image):
        stage = pool.jobs / image
        stage.mkdir(exist_ok=True)
        (stage / "plan.json").write_text('{"jobs": []}')
        pool.serve(executor, image, stage, pool.out / image, None, None, None, 0)

    for image in ("torch", "tensorflow", "mxnet", "jax"):
        serve(image)
    assert ended == [] and sorted(k[1] for k in pool.servers) == ["jax", "mxnet", "tensorflow", "torch"]
    serve("tensorflow")  # used again: now the most recently used after the plan below
    memory["available"] = 6 << 30

    def end(self, kill=False):
        ended.append(self.name)
        memory["available"] += 3 << 30

    monkeypatch.setattr(_Server, "end", end)
    serve("jax")
    assert ended == ["torch", "mxnet"] and sorted(k[1] for k in pool.servers) == ["jax", "tensorflow"]
    assert {k[1]: n for k, n in pool.ended_for_memory.items()} == {"torch": 1, "mxnet": 1}
    assert told == [
        "ended the idle docker supervisor of torch to give memory back: the host had 6.0 of 20.0 GiB available",
        "ended the idle docker supervisor of mxnet to give memory back: the host had 9.0 of 20.0 GiB available",
    ]
    memory["available"] = 1 << 30
    serve("jax")  # short of memory and the only idle one is tensorflow: it goes, jax stays
    assert ended[2:] == ["tensorflow"] and list(pool.servers) == [("docker", "jax", 0)]
