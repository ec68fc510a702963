"""The local executor and the per-job supervisor: identical result files, failures recorded, others go on."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from dlrepro import engine
from dlrepro.errors import ExecutorError
from dlrepro.inputs import datasets
from dlrepro.run import executors, runs
from dlrepro.run.options import RunOptions
from runner import supervise
from tests.helpers import bad_and_good_jobs, check_sums, fresh_cache, run_executor, unreachable

pytest.importorskip("torch")


def test_local_run_writes_a_complete_bundle(tmp_path, reporter, mnist):
    path = runs.run(
        "fcn",
        RunOptions(frameworks=["torch"], executor="local", quick=True, variants=["fcn-s", "fcn-r"]),
        results_dir=tmp_path,
        reporter=reporter,
    )
    assert path.parent == tmp_path and path.name.startswith("fcn-") and not list(tmp_path.glob(".*partial"))
    bundle = json.loads((path / "bundle.json").read_text())
    assert bundle["schema"] == "dlrepro.bundle/3" and bundle["counts"] == {"ok": 2, "failed": 0, "skipped": 0}
    assert bundle["spec"]["file"] == "specs/fcn.yaml" and len(bundle["spec"]["sha256"]) == 64
    assert bundle["executor"]["executor"] == "local" and bundle["datasets"][0]["name"] == "mnist"
    rows = {r["job_id"]: r for r in bundle["jobs"]}
    assert rows["fcn-s.torch.cpu.b64"]["parameters"] == 117_997_696
    assert rows["fcn-r.torch.cpu.b1024"]["parameters"] == 14_205_962
    assert rows["fcn-s.torch.cpu.b64"]["framework_version"].startswith("2.13.0")
    result = json.loads((path / "jobs" / "fcn-s.torch.cpu.b64" / "result.json").read_text())
    assert result["timing"]["quantity"] == "seconds per mini-batch" and len(result["timing"]["repeats"][0]) == 3
    assert result["timing"]["summary"]["median"] > 0 and result["environment"]["threads"] >= 1
    table = pd.read_csv(path / "summary.csv")
    assert table["parameters"].tolist() == [117_997_696, 14_205_962] and set(table["status"]) == {"ok"}
    check_sums(path)


def test_a_failing_job_is_recorded_and_the_next_runs(tmp_path):
    bad, good, results, events = run_executor(executors.LocalExecutor(), None, tmp_path)
    assert results[bad["id"]]["status"] == "failed"
    assert (
        "ModelMismatch: model gru has 3,818,302 trainable parameters in torch, the spec states 3,818,303"
        == results[bad["id"]]["reason"]
    )
    assert "Traceback" in (tmp_path / bad["id"] / "log.txt").read_text()
    assert results[good["id"]]["status"] == "ok" and results[good["id"]]["parameters"]["measured"] == 3_818_302
    assert events == [
        ("start", bad["id"], None),
        ("end", bad["id"], "failed"),
        ("start", good["id"], None),
        ("end", good["id"], "ok"),
    ]


def test_a_crashing_job_process_is_recorded_as_failed(tmp_path):
    job = {"id": "crash", "timeout_s": 60}
    status = supervise.run_one(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], job, str(tmp_path / "crash")
    )
    result = json.loads((tmp_path / "crash" / "result.json").read_text())
    assert status == "failed" and result["reason"] == "the job process died of SIGKILL (killed: out of memory?)"


def test_a_hanging_job_is_killed_at_its_time_limit(tmp_path):
    status = supervise.run_one(
        [sys.executable, "-c", "import time; time.sleep(60)"], {"id": "hang", "timeout_s": 1}, str(tmp_path / "hang")
    )
    result = json.loads((tmp_path / "hang" / "result.json").read_text())
    assert status == "failed" and result["reason"] == "the job exceeded its time limit of 1 s and was killed"


def test_missing_engine_names_the_local_executor(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    engine.client.cache_clear()
    try:
        with pytest.raises(ExecutorError, match="--executor local"):
            executors.get("docker")
    finally:
        engine.client.cache_clear()


def test_missing_interpreter_fails_every_job_with_the_reason(tmp_path):
    bad, good = bad_and_good_jobs()
    executors.LocalExecutor(python=str(tmp_path / "no-python")).run(
        None, [good], tmp_path, datasets.root(), lambda *e: None
    )
    result = json.loads((tmp_path / good["id"] / "result.json").read_text())
    assert result["status"] == "failed" and result["reason"].startswith("cannot start %s" % (tmp_path / "no-python"))


def test_sigterm_publishes_what_finished_and_leaves_no_process(tmp_path, reporter):
    import os
    import signal
    import threading

    # a short job, then one of minutes: SIGTERM arrives during the second, a second after the first ended (a fixed
    # 10 s from the start was not enough for the first on a busy machine: it was interrupted too)
    options = RunOptions(
        frameworks=["torch"],
        executor="local",
        variants=["fcn-s"],
        batch_sizes=[8, 4096],
        warmup=0,
        iterations=3,
        repeats=1,
    )
    timer = threading.Timer(1, os.kill, (os.getpid(), signal.SIGTERM))

    def finished(job_id, result, keep=reporter.job_finished):
        keep(job_id, result)
        if job_id == "fcn-s.torch.cpu.b8":
            timer.start()

    reporter.job_finished = finished
    with pytest.raises(KeyboardInterrupt, match="bundle with the finished jobs: "):
        runs.run("fcn", options, results_dir=tmp_path, reporter=reporter)
    timer.cancel()
    bundle_dir = [p for p in tmp_path.iterdir() if not p.name.startswith(".")][0]
    bundle = json.loads((bundle_dir / "bundle.json").read_text())
    rows = {r["job_id"]: r for r in bundle["jobs"]}
    assert bundle["interrupted"] is True and rows["fcn-s.torch.cpu.b8"]["status"] == "ok"
    assert rows["fcn-s.torch.cpu.b4096"]["status"] == "skipped"
    assert rows["fcn-s.torch.cpu.b4096"]["reason"] == "the run was interrupted before this job finished"
    assert not [args for args in _descendants(os.getpid()) if "runner" in args]  # other runs on the host may go on
    assert not list(tmp_path.glob(".*partial"))


def _descendants(pid):
    """Command lines of every live process below ``pid``."""
    rows = [
        line.split(None, 2)
        for line in subprocess.run(
            ["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True
        ).stdout.splitlines()
    ]
    children, found, todo = {}, [], [pid]
    for row in rows:
        children.setdefault(int(row[1]), []).append((int(row[0]), row[2] if len(row) > 2 else ""))
    while todo:
        for child, args in children.get(todo.pop(), []):
            found.append(args)
            todo.append(child)
    return found


def test_imdb_offline_fallback_is_recorded(tmp_path, reporter, monkeypatch, imdb_reviews):
    """Where Keras's imdb.npz cannot be had, the raw npm reviews are tokenised instead, and the bundle says so. A
    --quick throughput job (1 warm-up and 3 mini-batches of the real reviews): the claim is the data's, whichever
    mode reads it. That PyTorch's GRU learns those reviews is the committed 3-epoch bundles' (six seeds, 86-87%:
    tests/answers/test_reference_convergence.py), and that a short convergence run evaluates all 24,960 test reviews
    is tests/containers/test_frameworks.py's."""
    unreachable(monkeypatch, "imdb")
    fresh_cache(monkeypatch, tmp_path, **{"imdb-reviews": imdb_reviews})
    path = runs.run(
        "imdb-gru",
        RunOptions(frameworks=["torch"], executor="local", quick=True, variants=["imdb-gru"], mode="throughput"),
        results_dir=tmp_path / "results",
        reporter=reporter,
    )
    job_dir = path / "jobs" / "imdb-gru.torch.cpu.b64.throughput"
    job = json.loads((job_dir / "job.json").read_text())
    result = json.loads((job_dir / "result.json").read_text())
    bundle = json.loads((path / "bundle.json").read_text())
    assert job["data"]["name"] == "imdb-reviews" and job["data"]["format"] == "imdb-reviews-json"
    # tokenised once on the host (dlrepro.inputs.prepared), the job read those arrays
    assert result["environment"]["prepared_data"] == job["data"]["prepared"]["sha256"]
    assert [d["name"] for d in bundle["datasets"]] == ["imdb-reviews"]
    assert "Not byte-identical to Keras's imdb.npz" in bundle["datasets"][0]["notes"]
    assert result["status"] == "ok" and result["parameters"]["measured"] == 3_818_302
    assert [len(r) for r in result["timing"]["repeats"]] == [3]


@pytest.mark.all_cpus
def test_thread_counts_are_set_and_recorded(tmp_path, reporter):
    path = runs.run(
        "imdb-gru",
        RunOptions(
            frameworks=["torch"],
            executor="local",
            quick=True,
            variants=["imdb-gru-synthetic"],
            batch_sizes=[8],
            threads=[1, 2],
        ),
        results_dir=tmp_path,
        reporter=reporter,
    )
    for threads in (1, 2):
        env = json.loads(
            (path / "jobs" / ("imdb-gru-synthetic.torch.cpu.b8.t%d" % threads) / "result.json").read_text()
        )["environment"]
        assert env["threads"] == threads and env["thread_variables"]["OMP_NUM_THREADS"] == str(threads)


def test_a_spec_whose_datasets_are_missing_completes_with_skips(tmp_path, reporter, monkeypatch):
    unreachable(monkeypatch, "ptb")
    fresh_cache(monkeypatch, tmp_path)
    path = runs.run(
        "lstm", RunOptions(frameworks=["torch"], executor="local", quick=True), results_dir=tmp_path, reporter=reporter
    )
    rows = {r["job_id"]: r for r in json.loads((path / "bundle.json").read_text())["jobs"]}
    skipped = rows["lstm.torch.cpu.b128"]
    assert skipped["status"] == "skipped" and skipped["reason"].startswith("dataset ptb is not in the cache")
    assert "tried: http://127.0.0.1:9/ptb.train.txt" in skipped["reason"]
    assert "`dlrepro datasets.fetch ptb --from PATH`" in skipped["remedy"]
    assert rows["lstm-synthetic.torch.cpu.b128"]["status"] == "ok"
    assert rows["lstm-synthetic.torch.cpu.b128"]["parameters"] == 6_182_672


def test_when_every_candidate_fails_each_is_named(tmp_path, reporter, monkeypatch):
    unreachable(monkeypatch, "imdb", "imdb-reviews")
    fresh_cache(monkeypatch, tmp_path)
    path = runs.run(
        "imdb-gru",
        RunOptions(frameworks=["torch"], executor="local", quick=True, variants=["imdb-gru"]),
        results_dir=tmp_path,
        reporter=reporter,
    )
    row = json.loads((path / "bundle.json").read_text())["jobs"][0]
    assert row["status"] == "skipped" and "dataset imdb is not in the cache" in row["reason"]
    assert "; and, as a fallback, dataset imdb-reviews is not in the cache" in row["reason"]
    assert "datasets.fetch imdb --from" in row["remedy"] and "datasets.fetch imdb-reviews --from" in row["remedy"]
