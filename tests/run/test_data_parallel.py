"""Data-parallel jobs (runner.ranks) on the CPU: N ranks on shards of a mini-batch take the same training step as
one rank on all of it; a dead rank ends the job with the reason and nothing hangs; the scaling columns."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from dlrepro import REPO_ROOT
from dlrepro.store import tables
from tests.run.data_parallel_jobs import STEP, _job, _parameters, _write, whole_and_split

pytestmark = pytest.mark.all_cpus  # ranks of their own CPUs (tests/conftest.py)


def _env():
    return dict(os.environ, PYTHONPATH=str(REPO_ROOT))


def test_two_gloo_ranks_take_the_step_of_one_rank_on_the_whole_mini_batch(tmp_path):
    (_, whole), (_, split) = whole_and_split("torch")
    assert split["id"] == "fcn-r.torch.cpu.b8.r2" and (split["ranks"], split["rank_batch_size"]) == (2, 4)
    assert split["batch_size"] == whole["batch_size"] == 8 and split["scaling"] == "strong"
    one = subprocess.run(
        [sys.executable, str(STEP), str(_write(whole, tmp_path, "whole")), str(tmp_path / "whole.npz")],
        env=_env(),
        timeout=300,
    )
    path = _write(split, tmp_path, "split")
    procs = [
        subprocess.Popen([sys.executable, str(STEP), str(path), str(tmp_path / ("rank%d.npz" % r)), str(r)], env=_env())
        for r in range(2)
    ]
    assert one.returncode == 0 and [p.wait(300) for p in procs] == [0, 0]
    before, after = _parameters(tmp_path / "whole.npz")
    for r in range(2):
        rank_before, rank_after = _parameters(tmp_path / ("rank%d.npz" % r))
        assert [p.shape for p in rank_after] == [p.shape for p in after] and len(after) == 8  # FCN-R: 4 dense layers
        assert max(float(np.abs(a - b).max()) for a, b in zip(rank_before, before)) < 1e-7  # the same initialisation
        assert max(float(np.abs(a - b).max()) for a, b in zip(rank_after, after)) < 1e-6
    assert max(float(np.abs(a - b).max()) for a, b in zip(after, before)) > 1e-4  # the step moved them


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _measuring(job, tmp_path):
    """Rank 0 of a 2-rank job that would run for hours, once both ranks are in the timed steps: (process, rank 1)."""
    job = dict(job, warmup=1, iterations=10**7, repeats=6, timeout_s=600)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", str(_write(job, tmp_path, "long")), str(out)],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        result = out / "result.json"
        phases = json.loads(result.read_text()).get("phases", {}) if result.is_file() else {}
        if "data_ready" in phases and _children(proc.pid):
            time.sleep(1.0)  # into the steps, and their all-reduces
            return proc, _children(proc.pid)[0], out
        time.sleep(0.2)
    proc.kill()
    pytest.fail("the 2-rank job did not reach its timed steps in 120 s")


def test_a_rank_killed_mid_run_ends_the_job_with_the_reason(tmp_path):
    proc, rank1, out = _measuring(_job("torch", [2]), tmp_path)
    os.kill(rank1, signal.SIGKILL)
    start = time.time()
    assert proc.wait(60) == 1  # no collective left waiting on the dead rank
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "failed" and result["reason"].startswith("rank 1 of 2 ended with status -9")
    assert time.time() - start < 30 and result["environment"]["rendezvous"]["address"] == "127.0.0.1"


def test_ranks_end_themselves_when_rank_0_is_killed(tmp_path):
    proc, rank1, _ = _measuring(_job("torch", [2]), tmp_path)
    proc.kill()
    proc.wait(30)
    deadline = time.time() + 30
    while _alive(rank1) and time.time() < deadline:
        time.sleep(0.2)
    assert not _alive(rank1)


def _row(job_id, ranks, median, scaling="strong", batch=4096, status="ok"):
    per = batch // ranks if scaling == "strong" else batch
    total = per * ranks
    return dict(
        {c: None for c in tables.SUMMARY_COLUMNS},
        job_id=job_id,
        spec_sha256="s",
        variant="fcn-r",
        framework="torch",
        device="cuda",
        mode="throughput",
        precision="fp32",
        layout="NCHW",
        ranks=ranks,
        scaling=scaling,
        batch_size=total,
        rank_batch_size=per,
        status=status,
        median=median,
        throughput=total / median if median else None,
    )


def test_speedup_and_efficiency_from_known_times():
    rows = tables.scaling(
        [
            _row("g1", 1, 0.8),
            _row("g2", 2, 0.5),
            _row("g4", 4, 0.4),
            _row("w1", 1, 0.2, "weak", 64),
            _row("w4", 4, 0.25, "weak", 64),
            _row("failed-base", 1, 0.3, batch=1024, status="failed"),
            _row("orphan", 2, 0.2, batch=1024),
        ]
    )
    by = {r["job_id"]: r for r in rows}
    assert by["g1"]["speedup"] == 1.0 and by["g1"]["scaling_efficiency"] == 1.0
    assert by["g2"]["speedup"] == pytest.approx(1.6) and by["g2"]["scaling_efficiency"] == pytest.approx(0.8)
    assert by["g4"]["speedup"] == pytest.approx(2.0) and by["g4"]["scaling_efficiency"] == pytest.approx(0.5)
    assert by["g4"]["scaling_base"] == "g1" and by["g4"]["scaled_speedup"] is None
    # weak: 4 x 64 images in 0.25 s against 64 in 0.2 s: W = 1024 / 320 = 3.2, E = 0.8
    assert by["w4"]["scaled_speedup"] == pytest.approx(3.2) and by["w4"]["scaling_efficiency"] == pytest.approx(0.8)
    assert by["w4"]["speedup"] is None and by["w4"]["scaling_base"] == "w1"
    assert by["orphan"]["speedup"] is None and by["orphan"]["scaling_base"] is None  # its 1-rank base failed
