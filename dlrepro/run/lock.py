"""Who owns a partial bundle: a lock file that one process at a time holds, on any host that shares the results
folder.

The lock is ``<partial>/.work/owner.lock`` (the scratch folder, which publication removes), created with
``O_CREAT|O_EXCL`` so that of two claims exactly one wins, before the claimant reads or writes anything else of
the bundle. It names its owner: host, pid, boot id and start time (JSON). Its modification time is the
heartbeat: a thread of the owner touches it every HEARTBEAT_S seconds. A lock is stale, and may be broken,
when its heartbeat is older than STALE_S seconds (its owner is gone, whatever host it ran on), or at once when it
names this host and boot and a pid that is no longer alive. Breaking happens under a second lock file
(``owner.lock.break``, itself stale after STALE_S), and the lock is looked at again under it, so two processes
never both break and take it. A process that holds the lock and asks again gets it again (one run resuming
what it detached from).
"""
import atexit
import json
import os
import socket
import threading
import time
from pathlib import Path

from dlrepro.errors import DlreproError
from dlrepro.results.bundle import WORK
from runner.contract import utc_now

NAME = "owner.lock"
HEARTBEAT_S = 30
STALE_S = 300  # no heartbeat for this long: the owner is gone (five minutes allow for clock skew between hosts)
_held = {}  # lock path -> Lock, those this process holds


def boot_id():
    """This boot's id (Linux: /proc/sys/kernel/random/boot_id), "" where there is none."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError):  # another user's process: alive
        return True
    return True


class Lock:
    """A bundle's lock held by this process: ``path``, the ``owner`` record it wrote; ``release()`` gives it up."""

    def __init__(self, path, owner):
        self.path, self.owner, self.stop = Path(path), owner, threading.Event()
        self.thread = threading.Thread(target=self._beat, name="bundle lock %s" % path, daemon=True)
        self.thread.start()

    def _beat(self):
        while not self.stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except OSError:  # removed with the scratch folder as the bundle was published
                return

    def release(self):
        """Stop the heartbeat and remove the lock file if it is still this process's."""
        self.stop.set()
        _held.pop(str(self.path), None)
        if _read(self.path) == self.owner:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass


def _read(path):
    """The owner record of the lock file at ``path``; None when there is none; {} when it cannot be parsed (being
    written this instant, or cut off)."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}


def _create(path, owner):
    """Create the lock file with ``owner`` in it, atomically; False when it exists."""
    try:
        fd = os.open(str(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        json.dump(owner, f)
    return True


def stale(path, now=None):
    """Why the lock file at ``path`` is stale (a text), or None while its owner may be alive."""
    found = _read(path)
    try:
        age = (now or time.time()) - os.stat(str(path)).st_mtime
    except FileNotFoundError:
        return "gone"
    if age > STALE_S:
        return "no heartbeat for %d s (more than %d s)" % (age, STALE_S)
    if found and found.get("host") == socket.gethostname() and found.get("boot_id") == boot_id() and \
            not _alive(found.get("pid")):
        return "its process %s on this host has ended" % found.get("pid")
    return None


def describe(found, path):
    """One line naming the owner of a lock: host, pid, start and heartbeat age."""
    try:
        age = "%d s ago" % (time.time() - os.stat(str(path)).st_mtime)
    except OSError:
        age = "?"
    return "pid %s on host %s since %s (heartbeat %s)" % (found.get("pid"), found.get("host"), found.get("since"),
                                                          age)


def take(folder):
    """Take the lock of the partial bundle in ``folder`` (creating its scratch folder); returns the Lock. Raises
    DlreproError naming the owner when another live process (on any host) holds it."""
    work = Path(folder) / WORK
    work.mkdir(parents=True, exist_ok=True)
    path = work / NAME
    if str(path) in _held:
        return _held[str(path)]
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "boot_id": boot_id(), "since": utc_now()}
    for _ in range(3):
        if _create(path, owner):
            _held[str(path)] = Lock(path, owner)
            return _held[str(path)]
        if not _break(path):
            found = _read(path) or {}
            raise DlreproError("%s is being written by another run: %s" % (folder, describe(found, path)),
                               "wait for it to end (`dlrepro bundles` shows it), or, if that run is gone, wait %d s "
                               "after its last heartbeat" % STALE_S)
    raise DlreproError("%s: its lock %s was taken and broken again three times in a row" % (folder, path),
                       "try again")


def _break(path):
    """Remove the lock file at ``path`` if it is stale, under the breaker's lock; returns whether it is gone."""
    breaker = Path(str(path) + ".break")
    if not _create(breaker, {"host": socket.gethostname(), "pid": os.getpid()}):
        if stale(breaker) is None:
            return False  # another process is breaking it: treat it as held for now
        breaker.unlink(missing_ok=True)  # a breaker that died while breaking
        return _break(path)
    try:
        why = stale(path)
        if why is None:
            return False
        if why != "gone":
            path.unlink()
        return True
    finally:
        breaker.unlink(missing_ok=True)


@atexit.register
def _release_all():
    for held in list(_held.values()):
        held.release()
