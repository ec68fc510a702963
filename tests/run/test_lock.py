"""A partial bundle's owner lock (dlrepro.run.lock) and write_json's temporary names: two writers on one results
folder, as two hosts sharing it would be (their host names faked), never publish half a bundle.json, and the
second is refused a bundle the first owns."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import DlreproError, ResultsUnwritable
from dlrepro.run import lock, recover, runs
from dlrepro.store.bundle import BundleWriter
from runner import contract

WRITER = """
import json, os, socket, sys
socket.gethostname = lambda: %(host)r
from dlrepro.errors import DlreproError
from dlrepro.run import lock
from runner import contract
folder = sys.argv[1]
try:
    owner = lock.take(folder)
    print("taken", flush=True)
except DlreproError as exc:
    owner = None
    print("refused:", exc, flush=True)
body = {"writer": %(host)r, "rows": [{"job_id": "job%%d" %% i, "seconds": [0.1] * 50} for i in range(400)]}
while not os.path.exists(folder + ".stop"):  # until the test has seen both write
    contract.write_json(folder + "/bundle.json", body)
if owner:
    owner.release()
print("done", flush=True)
"""


def _writer(host, folder):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER % {"host": host}, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
    )


def test_two_hosts_writers_never_publish_half_a_file_and_the_second_is_refused(tmp_path):
    folder = tmp_path / ".x.partial"
    folder.mkdir()
    first = _writer("login-a", folder)
    assert first.stdout.readline() == "taken\n"
    second = _writer("login-b", folder)
    read, seen, stop = [], set(), threading.Event()

    def reader():
        while not stop.is_set():
            try:
                text = (folder / "bundle.json").read_text()
            except FileNotFoundError:
                continue
            read.append(text)
            seen.add(json.loads(text)["writer"])  # a half-written file would not parse

    thread = threading.Thread(target=reader)
    thread.start()
    refusal = second.stdout.readline()
    deadline = time.time() + 60
    while seen != {"login-a", "login-b"} and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(1)  # both writing at once
    (tmp_path / ".x.partial.stop").touch()
    assert second.stdout.read() == "done\n" and first.stdout.read() == "done\n"
    stop.set()
    thread.join()
    assert first.wait() == second.wait() == 0
    assert refusal.startswith(
        "refused: %s is being written by another run: pid %d on host login-a since 20" % (folder, first.pid)
    ), refusal
    assert seen == {"login-a", "login-b"} and len(read) > 10  # both wrote, every read parsed
    assert not (folder / ".work").exists()  # the first released its lock, and its empty scratch folder
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def _foreign(folder, host="login-b", pid=4242, age_s=0, boot=None):
    path = folder / ".work" / lock.NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": host, "pid": pid, "boot_id": boot or "other-boot", "since": "2026-12-01"}))
    os.utime(path, (time.time() - age_s, time.time() - age_s))
    return path


def test_a_lock_is_stale_after_its_heartbeat_stops_or_its_process_on_this_boot_ends(tmp_path):
    path = _foreign(tmp_path, age_s=10)
    assert lock.stale(path) is None
    with pytest.raises(
        DlreproError,
        match=r"is being written by another run: pid 4242 on host login-b since "
        r"2026-12-01 \(heartbeat 1[01] s ago\)$",
    ) as err:
        lock.take(tmp_path)
    assert "wait 300 s after its last heartbeat" in err.value.remedy
    _foreign(tmp_path, age_s=lock.STALE_S + 5)  # its host is gone: no heartbeat for longer than STALE_S
    assert lock.stale(path) == "no heartbeat for 305 s (more than 300 s)"
    taken = lock.take(tmp_path)
    assert json.loads(path.read_text())["pid"] == os.getpid() and lock.take(tmp_path) is taken  # one owner, again
    taken.release()
    assert not path.exists()
    dead = subprocess.Popen(["true"])
    dead.wait()
    _foreign(tmp_path, host=socket.gethostname(), pid=dead.pid, boot=lock.boot_id())
    assert lock.stale(path) == "its process %d on this host has ended" % dead.pid
    lock.take(tmp_path).release()


def test_the_heartbeat_keeps_the_lock_fresh(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "HEARTBEAT_S", 0.05)
    taken = lock.take(tmp_path)
    os.utime(taken.path, (time.time() - 100, time.time() - 100))
    time.sleep(0.3)
    assert time.time() - os.stat(taken.path).st_mtime < 5
    taken.release()


def test_publish_and_invoke_bundles_leave_a_bundle_another_host_owns(tmp_path):
    writer = BundleWriter(tmp_path, "alexnet", "abc")
    writer.save(
        spec={"name": "alexnet"}, jobs=[], submitted=[{"array_id": "7", "jobs": [], "scratch": str(tmp_path / "s")}]
    )
    _foreign(writer.partial, age_s=1)
    with pytest.raises(DlreproError, match="is being written by another run: pid 4242 on host login-b"):
        recover.finalize(writer.id, results_dir=tmp_path)
    with pytest.raises(DlreproError, match="is being written by another run: pid 4242 on host login-b"):
        runs.run(None, None, results_dir=tmp_path, resume=writer.id)
    assert runs.take_submitted(tmp_path) == []


def test_write_json_leaves_no_temporary_file_when_the_body_cannot_be_written(tmp_path):
    with pytest.raises(TypeError):
        contract.write_json(str(tmp_path / "bundle.json"), {"x": object()})
    assert list(tmp_path.iterdir()) == []


TAKER = """
import sys
from dlrepro.errors import DlreproError
from dlrepro.run import lock
try:
    lock.take(sys.argv[1])
    print("took it")
except DlreproError as exc:
    print("refused:", exc)
"""


def _another_process_takes(folder):
    """What a second process that tries to take the lock of the bundle in ``folder`` prints."""
    return subprocess.run(
        [sys.executable, "-c", TAKER, str(folder)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        timeout=60,
    ).stdout.strip()


def test_no_other_process_takes_the_lock_while_the_bundle_is_published(tmp_path, monkeypatch):
    from dlrepro.store import bundle as bundlemod

    writer = BundleWriter(tmp_path, "alexnet", "abc")
    writer.owner = owner = lock.take(writer.partial)
    writer.save(spec={"name": "alexnet"})
    (writer.work_dir / "attempt-1" / "1").mkdir(parents=True)  # scratch output: it goes first
    seen = {}

    def build(folder, body, job_ids):  # the tables are built: the scratch output is gone, the lock is not
        seen["scratch"] = sorted(p.name for p in writer.work_dir.iterdir())
        seen["building"] = _another_process_takes(folder)
        return [], []

    moved = owner.moved

    def renamed(folder):  # the folder is in place, the lock in it still held
        seen["renamed"] = _another_process_takes(folder)
        moved(folder)

    monkeypatch.setattr(bundlemod.tables, "build", build)
    monkeypatch.setattr(bundlemod.tables, "write", lambda folder, rows, samples: None)
    monkeypatch.setattr(owner, "moved", renamed)
    published = writer.finish({})
    assert seen["scratch"] == [lock.NAME]
    for when in ("building", "renamed"):
        assert seen[when].startswith(
            "refused: %s is being written by another run: pid %d on host %s"
            % (writer.partial if when == "building" else published, os.getpid(), socket.gethostname())
        ), seen
    assert published == tmp_path / writer.id and not (published / ".work").exists()
    assert ".work" not in (published / "SHA256SUMS").read_text() and str(owner.path) not in lock._held
    assert _another_process_takes(published) == "took it"  # given up once published


def test_an_owner_whose_lock_another_took_over_stops_writing_and_leaves_that_lock_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "HEARTBEAT_S", 0.05)
    writer = BundleWriter(tmp_path, "alexnet", "abc")
    writer.owner = owner = lock.take(writer.partial)
    writer.save(spec={"name": "alexnet"})
    # this process was gone past STALE_S (suspended, an NFS hang): another host broke its lock and took the bundle
    owner.path.unlink()
    theirs = _foreign(writer.partial, host="login-b", pid=4242, age_s=100)
    time.sleep(0.5)  # several heartbeats of this process's
    assert owner.lost["host"] == "login-b" and time.time() - os.stat(theirs).st_mtime > 99  # never refreshed
    with pytest.raises(ResultsUnwritable) as err:
        writer.save(spec={"name": "alexnet"}, note="written after the takeover")
    assert str(err.value).startswith(
        "%s: this run no longer owns the bundle: its lock was taken over by pid 4242 on host login-b" % writer.partial
    )
    assert "note" not in json.loads((writer.partial / "bundle.json").read_text())
    with pytest.raises(ResultsUnwritable):
        writer.finish({})
    assert writer.partial.is_dir() and not (tmp_path / writer.id).exists()  # not published
    owner.release()
    assert json.loads(theirs.read_text())["pid"] == 4242  # the other owner's lock stays
