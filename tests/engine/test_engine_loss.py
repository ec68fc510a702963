"""When the machine under a run goes away: a container engine lost mid-run stops the run with one line, keeps its
bundle partial with the lost jobs "interrupted", and a plain `--resume latest` runs exactly those; a resume never
writes checksums over a changed file; "latest" is only ever a partial bundle (of the given spec)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import EngineLost
from dlrepro.store import bundle as bundlemod
from dlrepro.store import validate
from tests import dockerd, helpers

# why an engine that went away is said to have gone: the error that showed it, or that it no longer answered
WHY = r"\((?:\w+|no answer)\)"


@pytest.fixture
def own_engine(docker_engine, mxnet_cpu_image, tmp_path):
    """A dockerd of the test's own (tests/dockerd.py) holding the MXNet CPU image and its base, loaded from the
    host's engine; ended by its PID at the end. MXNet's: the smallest image of a framework that runs FCN-R (518 MB
    with its base; PyTorch's, 1.2 GB, took 37 CPU-s and 44 s to load in CI: run 27 of results/fresh-ci-20261207)."""
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        reason = "starting an engine of the test's own needs dockerd and root"
        if os.environ.get("DLREPRO_REQUIRE_DOCKER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    folder = tempfile.mkdtemp(prefix="dlr-e-")  # short: containerd's socket paths must fit in 108 bytes
    engine = dockerd.Dockerd(folder, dockerd.data_root(mxnet_cpu_image.image_id))
    host_bridge = _has_link("docker0")
    try:
        took = engine.start()
        loaded = [engine.load(tag) for tag in (mxnet_cpu_image.base.ref, mxnet_cpu_image.tag)]
        print("test engine up in %.1f s, images loaded in %.1f s" % (took, sum(loaded)))
        yield engine
    finally:
        engine.stop()
        if not any(line.split()[1].startswith(folder) for line in open("/proc/mounts")):
            shutil.rmtree(folder, ignore_errors=True)
    # the host engine's builds need its bridge: a test engine started with --bridge=none deleted it
    assert _has_link("docker0") == host_bridge
    assert not _has_link(dockerd.BRIDGE)


def _has_link(name):
    """Whether this host has a network interface ``name``."""
    return os.path.exists("/sys/class/net/%s" % name)


def _repeats(results, job_id):
    """How many repeats job ``job_id`` has measured so far in its scratch output (0: none, or not started)."""
    for path in results.glob(".*.partial/.work/attempt-1/*/%s/result.json" % job_id):
        try:
            return len((json.loads(path.read_text()).get("timing") or {}).get("repeats") or [])
        except ValueError:  # being rewritten
            return 0
    return 0


def _invoke(engine, *args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "invoke"] + list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        env=dict(os.environ, DOCKER_HOST=engine.url),
    )


@pytest.mark.docker
def test_the_engine_killed_mid_job_leaves_a_partial_bundle_that_a_plain_resume_completes(own_engine, mnist, tmp_path):
    results, began = tmp_path / "results", time.time()
    b1, b2, b4 = ("fcn-r.mxnet.cpu.b%d" % n for n in (1, 2, 4))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "invoke",
            "run",
            "--spec=fcn",
            "--variant=fcn-r",
            "--framework=mxnet",
            "--batch-size=1,2,4",
            "--warmup=1",  # MXNet's first iteration builds its cached graph: it cannot be timed
            "--iterations=40",
            "--repeats=3",
            "--results",
            str(results),
        ],
        cwd=REPO_ROOT,
        env=dict(os.environ, DOCKER_HOST=own_engine.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.time() + 300  # 40 iterations a repeat: b2 measures for a second or more, seen by a 0.2 s poll
    while time.time() < deadline and proc.poll() is None and _repeats(results, b2) < 1:  # b2 is measuring
        time.sleep(0.2)
    assert proc.poll() is None, proc.stdout.read()
    own_engine.kill()
    out = proc.communicate(timeout=120)[0]
    print(out)
    (partial,) = results.glob(".*.partial")
    bundle_id = partial.name[1 : -len(".partial")]
    assert proc.returncode == 2 and "Traceback" not in out
    assert re.search(
        r"error: the Docker engine at %s went away %s while job %s was running; the run stopped "
        r"\(1 ok, 2 interrupted\), its bundle kept partial: %s"
        % (re.escape(own_engine.url), WHY, b2, re.escape(str(partial))),
        out,
    ), out
    assert "then `dlrepro run --resume %s`" % bundle_id in out
    statuses = {j: json.loads((partial / "jobs" / j / "result.json").read_text())["status"] for j in (b1, b2, b4)}
    assert statuses == {b1: "ok", b2: "interrupted", b4: "interrupted"}
    assert json.loads((partial / "bundle.json").read_text())["state"] == "partial"
    print("engine back in %.1f s" % own_engine.start())
    done = _invoke(own_engine, "run", "--resume", "latest", "--results", str(results))
    print(done.stdout + done.stderr)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr
    # the worker container outlives its engine (its shim runs on) and goes on with b2, then b4: what it finished
    # before the engine came back, the resume takes (after removing the container); the rest it reruns
    todo = re.search(r"resuming %s \(attempt 2\): (\d) of 3 jobs to run" % bundle_id, done.stdout)
    assert todo and todo.group(1) in ("0", "1", "2"), done.stdout
    rerun = [b2, b4][2 - int(todo.group(1)) :]
    finished = b2 not in rerun
    folder = results / bundle_id
    body = json.loads((folder / "bundle.json").read_text())
    assert [a["jobs"] for a in body["attempts"]] == [[b1, b2, b4], rerun] and body["counts"]["ok"] == 3
    if not finished:  # it may have measured all 3 repeats and not yet written its final record when the resume took it
        lost = json.loads((folder / "jobs" / b2 / "attempts" / "1" / "result.json").read_text())
        assert lost["status"] == "interrupted" and re.fullmatch(
            r"interrupted by the machine: the Docker engine at %s went away %s while this job ran; kept what "
            r"it measured: [1-3] repeats or epochs" % (re.escape(own_engine.url), WHY),
            lost["reason"],
        ), lost["reason"]
    checked = _invoke(own_engine, "validate", str(folder))
    assert checked.returncode == 0 and checked.stdout.startswith("valid "), checked.stdout + checked.stderr
    assert helpers.containers_left(own_engine.client(), label="org.dlrepro.run=%s" % bundle_id) == []
    print("killed, resumed and validated in %.1f s" % (time.time() - began))


STUDY = """name: engine-loss
title: two runs of one image, for the engine-loss tests
source: tests/engine/test_engine_loss.py
hardware: this host
tools: {MXNet: mxnet}
runs:
  first:
    spec: fcn
    variants: [fcn-r]
    device: cpu
    batch_sizes: [8]
    why: a run that ends before the engine goes away
  second:
    spec: fcn
    variants: [fcn-r]
    device: cpu
    batch_sizes: [16, 32]
    why: the run the engine goes away in
"""
SECOND = ["fcn-r.mxnet.cpu.b%d" % n for n in (16, 32)]


def _study_file(tmp_path):
    path = tmp_path / "engine-loss.yaml"
    path.write_text(STUDY)
    return path


def _pool_repeats(results, job_id):
    """How many repeats job ``job_id`` has measured so far in the study's worker pool output (0: none yet)."""
    for path in results.glob("studies/.*.pool/out/*/attempt-1/*/%s/result.json" % job_id):
        try:
            return len((json.loads(path.read_text()).get("timing") or {}).get("repeats") or [])
        except ValueError:  # being rewritten
            return 0
    return 0


def _record(results):
    (path,) = (results / "studies").glob("engine-loss-*.json")
    return json.loads(path.read_text())


@pytest.mark.docker
def test_the_engine_killed_during_a_studys_pooled_plan_leaves_the_run_partial_and_a_study_resume_reruns_its_jobs(
    own_engine, mnist, tmp_path
):
    results, study_file, began = tmp_path / "results", _study_file(tmp_path), time.time()
    proc = subprocess.Popen(
        [sys.executable, "-m", "invoke", "study", str(study_file), "--framework", "mxnet", "--results", str(results)],
        cwd=REPO_ROOT,
        env=dict(os.environ, DOCKER_HOST=own_engine.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.time() + 3600  # the first run, then the second's first repeat: minutes on a busy 2-CPU host
    while time.time() < deadline and proc.poll() is None and _pool_repeats(results, SECOND[0]) < 1:
        time.sleep(0.2)
    assert proc.poll() is None and _pool_repeats(results, SECOND[0]) >= 1, "the second run did not start measuring"
    own_engine.kill()
    out = proc.communicate(timeout=180)[0]
    print(out)
    record = _record(results)
    first, second = record["runs"]["first"], record["runs"]["second"]
    partial = results / (".%s.partial" % second["bundle"])
    assert proc.returncode == 2 and "Traceback" not in out, out
    found = re.search(
        r"error: study engine-loss stopped at run second: the Docker engine at %s went away %s "
        r"while job (\S+) was running; the run stopped \((?:(\d) ok, )?(\d) interrupted\), its bundle "
        r"kept partial: %s\n" % (re.escape(own_engine.url), WHY, re.escape(str(partial))),
        out,
    )
    assert found and found.group(1) in SECOND and int(found.group(2) or 0) + int(found.group(3)) == 2, out
    assert "then `dlrepro study %s --resume latest`" % study_file in " ".join(out.split())
    assert first["state"] == "complete" and (results / first["bundle"] / "bundle.json").is_file()
    assert second["state"] == "interrupted" and bundlemod.body(partial)["state"] == "partial"
    statuses = {j: json.loads((partial / "jobs" / j / "result.json").read_text())["status"] for j in SECOND}
    lost = [j for j in SECOND if statuses[j] != "ok"]
    assert lost == SECOND[SECOND.index(found.group(1)) :] and {statuses[j] for j in lost} == {"interrupted"}
    # the running job's output stays where its container (alive without its engine) may still write it
    assert list(results.glob("studies/.*.pool/out/%s/attempt-1/*/%s" % (second["bundle"], found.group(1))))
    print("engine back in %.1f s" % own_engine.start())
    done = _invoke(
        own_engine, "study", str(study_file), "--resume", "latest", "--results", str(results), timeout=1800
    )  # a fresh container and worker: minutes on a busy 2-CPU host
    print(done.stdout + done.stderr)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr
    todo = re.search(r"resuming %s \(attempt 2\): (\d) of 2 jobs to run" % second["bundle"], done.stdout)
    assert todo and int(todo.group(1)) <= len(lost), done.stdout
    rerun = SECOND[2 - int(todo.group(1)) :]  # what the container finished without its engine was taken, not rerun
    folder = results / second["bundle"]
    body = json.loads((folder / "bundle.json").read_text())
    assert [a["jobs"] for a in body["attempts"]] == [SECOND, rerun] and body["counts"]["ok"] == 2
    assert _record(results)["runs"]["second"]["state"] == "complete"
    checked = _invoke(own_engine, "validate", str(folder))
    assert checked.returncode == 0 and checked.stdout.startswith("valid "), checked.stdout + checked.stderr
    assert own_engine.containers_left() == []
    assert not list(results.glob("studies/.*.pool"))  # the pool's output taken, its folders gone
    print("study killed, resumed and validated in %.1f s" % (time.time() - began))


@pytest.mark.docker
def test_the_engine_killed_during_an_image_lookup_between_two_runs_leaves_the_second_partial(
    own_engine, mnist, tmp_path, monkeypatch
):
    from dlrepro import engine
    from dlrepro.images import build
    from dlrepro.run import study

    monkeypatch.setenv("DOCKER_HOST", own_engine.url)
    engine.client.cache_clear()
    results, study_file, real, looked = tmp_path / "results", _study_file(tmp_path), build.ensure, []

    def ensure(*args, **kwargs):  # the second run's lookup of its image: the engine dies just before it
        looked.append(args[1].name)
        if len(looked) == 2:
            own_engine.kill()
        return real(*args, **kwargs)

    monkeypatch.setattr(build, "ensure", ensure)
    try:
        with pytest.raises(EngineLost) as err:
            study.run(str(study_file), frameworks=["mxnet"], results_dir=results)
        record = _record(results)
        second = record["runs"]["second"]
        partial = results / (".%s.partial" % second["bundle"])
        assert str(err.value) == (
            "study engine-loss stopped at run second: the Docker engine at %s went away "
            "(ConnectionError) before a job started; the run stopped (2 interrupted), its "
            "bundle kept partial: %s" % (own_engine.url, partial)
        )
        assert err.value.remedy.endswith(
            "then `dlrepro study %s --resume latest`: it reruns the interrupted jobs, "
            "then the runs not done yet" % study_file
        )
        assert looked == ["mxnet-1.9.1-cpu"] * 2 and record["runs"]["first"]["state"] == "complete"
        assert second["state"] == "interrupted" and bundlemod.body(partial)["state"] == "partial"
        for job_id in SECOND:
            result = json.loads((partial / "jobs" / job_id / "result.json").read_text())
            assert (result["status"], result["reason"]) == (
                "interrupted",
                "interrupted by the machine: the Docker "
                "engine at %s went away (ConnectionError) before this job "
                "started" % own_engine.url,
            )
        monkeypatch.setattr(build, "ensure", real)
        print("engine back in %.1f s" % own_engine.start())
        study.run(str(study_file), results_dir=results, resume="latest")
    finally:
        engine.client.cache_clear()
    body = json.loads((results / second["bundle"] / "bundle.json").read_text())
    assert [a["jobs"] for a in body["attempts"]] == [SECOND, SECOND] and body["counts"]["ok"] == 2
    assert body["executor"]["isolation"]["shared_output"].startswith(
        "/out is the output root of study worker pool study-engine-loss-"
    )  # what the pooled container shares
    assert _record(results)["runs"]["second"]["state"] == "complete"
    assert validate.check(results / second["bundle"]) == []
    assert own_engine.containers_left() == []
