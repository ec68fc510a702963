"""Heartbeats of real builds and container jobs: never silent for a heartbeat; needs a Docker engine."""

import os
import subprocess
import sys
import threading
import time
import uuid
from types import SimpleNamespace

import pytest

from dlrepro import REPO_ROOT, heartbeat
from dlrepro.engine import client
from dlrepro.images import bases, build
from tests.cli.heartbeats import SLACK_S, gaps


@pytest.mark.docker
def test_a_small_build_is_never_silent_for_a_heartbeat(docker_engine, matrix, tmp_path, monkeypatch):
    monkeypatch.setenv(heartbeat.ENV, "1")
    base = bases.ensure(matrix, matrix.find("torch", "cpu").base, "auto", log=lambda line: None)
    # a step BuildKit's cache has never seen (the engine keeps its cache across runs): it must run, not be CACHED
    run = ": %s && echo fetching-the-package && sleep 4 && echo fetched" % uuid.uuid4().hex
    (tmp_path / "context").mkdir()
    (tmp_path / "context" / "Dockerfile").write_text("FROM %s\nRUN %s\n" % (base.ref, run))
    tag = "dlrepro-test/progress:%d" % os.getpid()
    ctx = SimpleNamespace(
        directory=tmp_path / "context",
        digest="%012d" % os.getpid(),
        tag=tag,
        image=SimpleNamespace(name="progress-test"),
    )
    stamps, said = [], []
    try:
        build._docker_build(ctx, lambda line: (stamps.append(time.monotonic()), said.append(line)))
    finally:
        client().images.remove(tag, force=True)
    headers = [line for line in said if line.startswith("progress-test [")]  # BuildKit's steps, as each starts
    assert headers[0] == "progress-test [0s] [internal] load remote build context"
    assert [h.split("] ", 1)[1].replace("CACHED ", "") for h in headers if "/2] " in h] == [
        "[1/2] FROM docker.io/%s" % base.ref,
        "[2/2] RUN " + run,
    ]
    beats = [line for line in said if line.startswith("progress-test: [2/2], ")]
    # the step's last line in each heartbeat: what it printed before its silent 4 s, then what it printed after
    assert sum(line.endswith(" building: fetching-the-package") for line in beats) >= 3
    assert max(gaps(stamps)) <= 1 + SLACK_S


@pytest.mark.docker
def test_a_quick_job_through_a_pipe_is_never_silent_for_a_heartbeat(torch_cpu_image, tmp_path):
    env = dict(os.environ, DLREPRO_HEARTBEAT_S="2", PYTHONPATH=str(REPO_ROOT))
    command = [
        sys.executable,
        "-m",
        "invoke",
        "run",
        "--spec=alexnet",
        "--framework=torch",
        "--quick",
        "--variant=alexnet-s",
        "--batch-size=1",
        "--results=%s" % tmp_path,
    ]
    proc = subprocess.Popen(
        command, cwd=str(REPO_ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    stamps, said = [], []
    reader = threading.Thread(
        target=lambda: [(stamps.append(time.monotonic()), said.append(line.rstrip())) for line in proc.stdout]
    )
    reader.start()
    assert proc.wait(timeout=600) == 0, "\n".join(said)
    reader.join()
    job = "alexnet-s.torch.cpu.b1"
    assert any(line.startswith("torch-2.13.0-cpu: cache hit, ") for line in said)
    beats = [line for line in said if line.startswith("0 of 1 jobs done, ")]
    assert any(("; %s: " % job) in line for line in beats), "\n".join(said)
    assert any(line.startswith("ok %s" % job) for line in said)
    assert max(gaps(stamps)) <= 2 + SLACK_S, "\n".join(
        "%.1f %s" % (t - stamps[0], line) for t, line in zip(stamps, said)
    )
