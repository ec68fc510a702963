"""A Docker engine killed during a build (an engine of the test's own, tests/dockerd.py): the build ends with one
line naming the engine, and the step it was running lives on holding a lock in a shared cache mount, as apt's
does; the next build, once the engine is back, says which step it waits for and builds once it has ended."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from dlrepro import engine as enginemod
from dlrepro.images import build, leftovers
from tests import dockerd

CACHE = "--mount=type=cache,target=/var/cache/apt,sharing=shared"  # apt's archives mount, shared by every recipe


def _context(folder, base, step):
    """A build context whose one RUN step is ``step``, with the apt cache mounted."""
    folder.mkdir(parents=True)
    (folder / "Dockerfile").write_text("FROM %s\nRUN %s %s\n" % (base, CACHE, step))
    return SimpleNamespace(
        directory=folder,
        digest=folder.name * 12,
        tag="dlrepro-test/lock:%s" % folder.name,
        image=SimpleNamespace(name="lock-%s" % folder.name),
    )


def _in_thread(function, *args):
    """Start ``function(*args)`` in a thread; returns (thread, box): box["error"] or box["value"] once it ends."""
    box = {}

    def target():
        try:
            box["value"] = function(*args)
        except BaseException as exc:  # noqa: B902 (handed to the test)
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def _step_running(text, timeout=120):
    """The PID of the process whose command line holds ``text`` (a build step), waiting for it."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    return int(entry.name)
            except OSError:
                continue
        time.sleep(0.2)
    raise AssertionError("no process runs %r after %d s" % (text, timeout))


@pytest.mark.docker
def test_an_engine_killed_mid_build_is_one_line_and_the_next_build_waits_for_its_step(
    docker_engine, torch_cpu_image, tmp_path, monkeypatch
):
    """Built on the PyTorch image's base, once the background build has it: a fresh engine has no base before then
    (fresh-CI runs 21 and 22 skipped this test for want of one)."""
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        pytest.skip("starting an engine of the test's own needs dockerd and root")
    base = torch_cpu_image.base.ref
    folder = tempfile.mkdtemp(prefix="dlr-b-")  # short: containerd's socket paths must fit in 108 bytes
    engine = dockerd.Dockerd(folder, dockerd.data_root(docker_engine.images.get(base).id))
    orphan = None
    try:
        engine.start()
        engine.load(base)
        monkeypatch.setenv("DOCKER_HOST", engine.url)
        enginemod.client.cache_clear()
        held = _context(tmp_path / "held", base, "flock -n /var/cache/apt/lock -c 'echo locked; sleep 600'")
        thread, box = _in_thread(build._engine_call, build._docker_build, held, lambda line: None)
        orphan = _step_running("echo locked; sleep 600")
        engine.kill()
        thread.join(120)
        assert re.fullmatch(r"the Docker engine at %s went away \(\w+\)" % re.escape(engine.url), str(box["error"]))
        assert type(box["error"]).__name__ == "EngineLost" and "\n" not in str(box["error"])
        (step,) = [s for s in leftovers.steps() if "echo locked; sleep 600" in s[1]]  # no engine above it now
        assert step[1].startswith("/bin/sh -c flock -n /var/cache/apt/lock") and step[0] in step[2]
        engine.start()
        enginemod.client.cache_clear()
        lines = []
        free = _context(tmp_path / "free", base, "flock -n /var/cache/apt/lock echo free")

        def next_build():
            leftovers.wait_for_steps(lines.append, engine.url)  # what build.ensure does before a build
            return build._engine_call(build._docker_build, free, lines.append)

        thread, box = _in_thread(next_build)
        deadline = time.time() + 60
        while not lines and time.time() < deadline:
            time.sleep(0.2)
        assert lines[0] == (
            "waiting for 1 build step(s) that a lost Docker engine left running on this host, which "
            "hold the locks of the shared apt cache: PID %d: %s; they end by themselves, or end them "
            "now: kill -9 %s" % (step[0], step[1][: leftovers.COMMAND_SHOWN], " ".join(map(str, step[2])))
        )
        _kill(step[2])  # the test's own engine's step, as the line says
        orphan = None
        thread.join(300)
        assert "error" not in box, box.get("error")
        assert re.fullmatch(r"the lost engine's build steps have ended \(waited \d+ s\)", lines[1])
        assert engine.client().images.get(free.tag)
    finally:
        for _, line, pids in leftovers.steps() if orphan is not None else []:
            _kill(pids if "echo locked; sleep 600" in line else [])  # this test's step, left by a failure
        enginemod.client.cache_clear()
        with open("/proc/mounts") as mounts:  # the lost step's root file system: no engine unmounts it
            lost = [line.split()[1] for line in mounts if line.split()[1].startswith(str(engine.root / "buildkit"))]
        for path in lost:
            subprocess.run(["umount", path], check=False)
        engine.stop()
        if not any(line.split()[1].startswith(folder) for line in open("/proc/mounts")):
            shutil.rmtree(folder, ignore_errors=True)


def _kill(pids):
    """SIGKILL each of ``pids``; one already gone is skipped: the first is the step's PID 1, and when it dies the
    kernel ends the rest of its PID namespace."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
