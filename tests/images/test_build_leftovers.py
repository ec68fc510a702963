"""Build steps a lost Docker engine left running (dlrepro.images.leftovers), found in a /proc written as Linux
writes it for the process trees measured on this host's Docker 20.10 during a BuildKit RUN step: dockerd -> runc
(``run --bundle <data root>/buildkit/executor/<step>``) -> the step's ``/bin/sh -c`` in cgroup
``/docker/buildkit/<step>``. A live engine's step is left alone; a lost one's is waited for, by name."""

import shutil

from dlrepro.images import leftovers

APT = "/bin/sh -c apt-get install -y --no-install-recommends python3"


def _process(proc, pid, parent, name, cgroup, command):
    folder = proc / str(pid)
    folder.mkdir(parents=True)
    (folder / "stat").write_text("%d (%s) S %d %d 0 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0\n" % (pid, name, parent, pid))
    (folder / "cgroup").write_text("1:cpu:%s\n0::%s\n" % (cgroup, cgroup))
    (folder / "cmdline").write_bytes(command.replace(" ", "\0").encode() + b"\0")


def _host(proc):
    """init, a live dockerd with a step, a step whose dockerd was killed (runc gone too, its shell adopted by
    init) with its apt-get, and one whose runc outlived dockerd."""
    _process(proc, 1, 0, "process_api", "/", "/process_api")
    _process(proc, 100, 1, "dockerd", "/", "dockerd")
    _process(proc, 200, 100, "runc", "/", "runc run --bundle /var/lib/docker/buildkit/executor/abc")
    _process(proc, 201, 200, "sh", "/docker/buildkit/abc", "/bin/sh -c sleep 45")
    _process(proc, 300, 1, "sh", "/docker/buildkit/def", APT)
    _process(proc, 301, 300, "apt-get", "/docker/buildkit/def", "apt-get install -y python3")
    _process(proc, 400, 1, "runc", "/", "runc run --bundle /var/lib/docker/buildkit/executor/ghi")
    _process(proc, 401, 400, "sh", "/docker/buildkit/ghi", "/bin/sh -c pip install numpy")
    (proc / "self").mkdir()


def test_steps_are_those_no_engine_is_an_ancestor_of_one_per_step(tmp_path):
    _host(tmp_path)
    assert leftovers.steps(tmp_path) == [(300, APT, [300, 301]), (401, "/bin/sh -c pip install numpy", [401])]


def test_a_build_waits_for_the_lost_steps_and_says_which(tmp_path, monkeypatch):
    _host(tmp_path)
    lines, polls = [], []

    def sleep(seconds):  # the lost steps end one poll after another
        polls.append(seconds)
        shutil.rmtree(tmp_path / ("300" if len(polls) == 1 else "401"))
        shutil.rmtree(tmp_path / "301", ignore_errors=True)

    monkeypatch.setattr(leftovers.time, "sleep", sleep)
    leftovers.wait_for_steps(lines.append, "unix:///var/run/docker.sock", proc=tmp_path)
    assert polls == [1.0, 1.0]
    assert lines == [
        "waiting for 2 build step(s) that a lost Docker engine left running on this host, which hold the locks of "
        "the shared apt cache: PID 300: %s; PID 401: /bin/sh -c pip install numpy; they end by themselves, or end "
        "them now: kill -9 300 301 401" % APT[: leftovers.COMMAND_SHOWN],
        "the lost engine's build steps have ended (waited 0 s)",
    ]


def test_nothing_is_waited_for_with_none_left_or_an_engine_elsewhere(tmp_path):
    _host(tmp_path)
    lines = []
    assert leftovers.wait_for_steps(lines.append, "tcp://builder:2375", proc=tmp_path) == 0.0
    for pid in ("300", "301", "401"):
        shutil.rmtree(tmp_path / pid)
    assert leftovers.wait_for_steps(lines.append, "unix:///var/run/docker.sock", proc=tmp_path) == 0.0
    assert lines == []
