"""Long work shows its progress: heartbeat lines while a build or a job is silent, a job's phase and time left,
and skipped jobs told once per cause."""

import json
import threading
import time

import pytest

from dlrepro import heartbeat
from dlrepro.cli import console as consolemod
from dlrepro.cli import progress as barmod
from dlrepro.errors import DlreproError
from dlrepro.run import runs
from dlrepro.run.options import RunOptions
from tests.cli.heartbeats import SLACK_S, gaps
from tests.helpers import fresh_cache, unreachable

THROUGHPUT = {"mode": "throughput", "warmup": 2, "repeats": 5, "iterations": 10}
CONVERGENCE = {"mode": "convergence", "epochs": 4}
PHASES = {"framework_imported": 1.0, "model_built": 2.0, "data_ready": 3.0}


def running(phases, **sections):
    return dict({"status": "running", "phases": phases}, **sections)


def test_heartbeat_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(heartbeat.ENV, raising=False)
    assert heartbeat.interval() == 30.0
    monkeypatch.setenv(heartbeat.ENV, "0.5")
    assert heartbeat.interval() == 0.5
    for bad in ("soon", "0", "-3"):
        monkeypatch.setenv(heartbeat.ENV, bad)
        with pytest.raises(DlreproError, match="DLREPRO_HEARTBEAT_S=%s: expected a number of seconds > 0" % bad):
            heartbeat.interval()


def test_clock_reads_as_seconds_minutes_hours():
    assert [heartbeat.clock(s) for s in (0.4, 59.6, 185, 3725)] == ["0s", "1m00s", "3m05s", "1h02m"]


def test_a_jobs_phase_and_time_left_come_from_its_live_result():
    assert heartbeat.job_doing(THROUGHPUT, None) == ("starting", None)
    assert heartbeat.job_doing(THROUGHPUT, running({"framework_imported": 4.2})) == (
        "framework imported, building the model",
        None,
    )
    assert heartbeat.job_doing(THROUGHPUT, running({"framework_imported": 4.2, "model_built": 5.0})) == (
        "model built, loading data",
        None,
    )
    assert heartbeat.job_doing(THROUGHPUT, running(PHASES)) == ("warm-up (2 iterations)", None)
    # warm-up: 2 iterations in 1.6 s, so 0.8 s each: 5 repeats of 10 iterations left
    text, left = heartbeat.job_doing(THROUGHPUT, running(dict(PHASES, warmup_done=4.6)))
    assert text == "repeat 1 of 5" and left == pytest.approx(40.0)
    # two repeats of 10 iterations measured, median 0.6 s: 3 repeats of 10 iterations left
    warmed = dict(PHASES, warmup_done=4.6)
    text, left = heartbeat.job_doing(THROUGHPUT, running(warmed, timing={"repeats": [[0.5] * 10, [0.7] * 10]}))
    assert text == "repeat 3 of 5" and left == pytest.approx(18.0)
    # 20 s into the job: repeat 3 began at 4.6 + 5 + 7 s, 3.4 s ago
    text, left = heartbeat.job_doing(
        THROUGHPUT,
        running(warmed, timing={"repeats": [[0.5] * 10, [0.7] * 10], "repeat_wall_seconds": [5.0, 7.0]}),
        20.0,
    )
    assert text == "repeat 3 of 5" and left == pytest.approx(14.6)
    assert heartbeat.job_doing(THROUGHPUT, running(warmed), 100.0) == ("repeat 1 of 5", 0.0)  # over its estimate
    text, left = heartbeat.job_doing(
        CONVERGENCE, running(PHASES, convergence={"epochs": [{"seconds": 40.0}, {"seconds": 50.0}]})
    )
    assert text == "epoch 3 of 4" and left == pytest.approx(90.0)
    assert heartbeat.job_doing(CONVERGENCE, running(PHASES)) == ("epoch 1 of 4", None)
    assert heartbeat.job_doing(THROUGHPUT, running(dict(PHASES, measured_done=9.0))) == (
        "measured, writing the result",
        None,
    )


def test_a_runs_time_left_adds_the_running_jobs_and_the_waiting_ones():
    # running: 12 s left by its own estimate, and one without one (30 s in, median 50 s): 20 s; 2 waiting: 100 s
    assert heartbeat.time_left([40.0, 50.0, 60.0], [(5.0, 12.0), (30.0, None)], 2) == pytest.approx(132.0)
    assert heartbeat.time_left([], [(5.0, 12.0)], 0) == pytest.approx(12.0)
    assert heartbeat.time_left([], [(5.0, 12.0)], 1) is None
    assert heartbeat.time_left([], [(5.0, None)], 0) is None


def test_a_heartbeat_fills_every_silence_and_waits_after_a_line():
    stamps, said = [], []

    def log(line):
        stamps.append(time.monotonic())
        said.append(line)

    with heartbeat.Heartbeat(log, lambda: "still here", every=0.2) as beat:
        time.sleep(0.5)
        beat.touch()
        touched = time.monotonic()
        time.sleep(0.5)
    assert said and set(said) == {"still here"}
    assert max(gaps([stamps[0] - 0.2] + stamps)) <= 0.2 + SLACK_S
    assert all(not touched < t < touched + 0.19 for t in stamps)  # nothing within `every` of the touch


def test_inside_another_heartbeat_only_the_inner_one_speaks():
    # a build's heartbeat inside a run's: the build's line, not both at the same moment
    said = []
    with heartbeat.Heartbeat(said.append, lambda: "run: preparing", every=0.2):
        with heartbeat.Heartbeat(said.append, lambda: "build: step 7/15", every=0.2):
            time.sleep(0.7)
        inner = len(said)
        time.sleep(0.5)
    assert inner >= 2 and said[:inner] == ["build: step 7/15"] * inner
    assert said[inner:] and set(said[inner:]) == {"run: preparing"}  # the run's speaks again once the build ends


def test_builds_on_threads_of_their_own_each_speak():
    # dlrepro build --jobs: two builds at once, each silent in a long step, each says what it is doing
    said = []

    def build(name):
        with heartbeat.Heartbeat(said.append, lambda: "%s: step 7/15" % name, every=0.2):
            time.sleep(0.7)

    threads = [threading.Thread(target=build, args=(name,)) for name in ("torch", "jax")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert said.count("torch: step 7/15") >= 2 and said.count("jax: step 7/15") >= 2


def test_eight_jobs_skipped_for_one_cause_print_one_remedy(tmp_path, monkeypatch):
    unreachable(monkeypatch, "cifar10")
    fresh_cache(monkeypatch, tmp_path)
    with consolemod.console.capture() as captured:
        with barmod.RichReporter() as reporter:
            path = runs.run(
                "alexnet",
                RunOptions(variants=["alexnet-r"], quick=True, executor="local"),
                results_dir=tmp_path / "results",
                reporter=reporter,
            )
    text = captured.get()
    frameworks = ("torch", "tensorflow", "mxnet", "jax", "cntk", "caffe2", "caffe", "torch7")
    ids = ["alexnet-r.%s.cpu.b1024" % f for f in frameworks]
    assert text.count("remedy: ") == 1 and text.count("dlrepro datasets.fetch cifar10 --from PATH") == 1
    assert "skipped 8 jobs: dataset cifar10 is not in the cache" in text
    assert "    jobs: " + ", ".join(ids) in text
    assert text.count("the same reason as %s" % ids[0]) == 7
    for job_id in ids:  # the bundle keeps each job's own reason and remedy
        result = json.loads((path / "jobs" / job_id / "result.json").read_text())
        assert result["status"] == "skipped" and "cifar10" in result["reason"]
        assert "dlrepro datasets.fetch cifar10 --from PATH" in result["remedy"]
