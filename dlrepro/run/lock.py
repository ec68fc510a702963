"""Who owns a partial bundle: a lock file that one process at a time holds, on any host that shares the results
folder.

The lock is ``<bundle>/.work/owner.lock`` (the scratch folder), created with ``O_CREAT|O_EXCL`` so that of two
claims exactly one wins, before the claimant reads or writes anything else of the bundle. It moves with the
bundle's folder (``Lock.moved``: a complete bundle reopened as partial, a partial one published) and is given
up only once the published folder is in place, so no other process can take a bundle while it is published. It names its
owner: host, pid, boot id and start time (JSON). Its modification time is the heartbeat: a thread of the owner touches
it every HEARTBEAT_S seconds. A lock is stale, and may be broken, when its heartbeat is older than STALE_S seconds (its
owner is gone, whatever host it ran on), or at once when it names this host and boot and a pid that is no longer alive.
Breaking happens under a second lock file (``owner.lock.break``, itself stale after STALE_S), and the lock is looked at
again under it, so two processes never both break and take it. A process that holds the lock and asks again gets it
again (one run resuming what it detached from).

Fencing: an owner that was gone so long (suspended, an NFS hang) that another process broke its lock and took
the bundle finds, at its next heartbeat or write (``Lock.check``), that the lock file no longer names it: it
stops writing (ResultsUnwritable) and never touches the other owner's lock, so two processes never write one
bundle.
"""

import atexit
import json
import os
import socket
import threading
import time
from pathlib import Path

from dlrepro.errors import DlreproError, ResultsUnwritable
from dlrepro.store.bundle import LOCK, WORK
from runner.contract import utc_now

NAME = LOCK
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
    """A bundle's lock held by this process: ``path``, the ``owner`` record it wrote; ``lost``: the record of the
    process that took it over (None while it is this process's); ``release()`` gives it up."""

    def __init__(self, path, owner):
        self.path, self.owner, self.stop, self.lost = Path(path), owner, threading.Event(), None
        self._mutex = threading.Lock()  # the path, as the bundle's folder moves, and the heartbeat on it
        self.thread = threading.Thread(target=self._beat, name="bundle lock %s" % path, daemon=True)
        self.thread.start()

    def _beat(self):
        while not self.stop.wait(HEARTBEAT_S):
            with self._mutex:
                if self._taken_over():
                    return
                try:
                    os.utime(self.path)
                except OSError:  # gone: taken over (told at the next check)
                    return

    def _taken_over(self):
        """Whether the lock file no longer names this process (another broke and took it, or only broke it): sets
        ``lost`` to what is there instead."""
        if self.lost is None and not self.stop.is_set():
            found = _read(self.path)
            if found != self.owner and found != {}:  # {}: being written this instant
                self.lost = found or {"host": None, "pid": None, "since": None}
        return self.lost is not None

    def check(self):
        """Raise ResultsUnwritable when this process no longer owns the bundle (fencing: see the module's text)."""
        with self._mutex:
            if self._taken_over():
                raise ResultsUnwritable(
                    "%s: this run no longer owns the bundle: its lock %s (%s): it stops writing, so that two "
                    "processes never write one bundle"
                    % (
                        self.path.parent.parent,
                        "was taken over by " + describe(self.lost, self.path) if self.lost.get("pid") else "was broken",
                        self.path,
                    ),
                    "let the run that took it finish it (`dlrepro bundles` shows it); what this run measured after "
                    "that is in its scratch output, not in the bundle",
                )

    def moved(self, folder):
        """The bundle's folder was renamed to ``folder`` (with the lock in it): follow it."""
        with self._mutex:
            _held.pop(str(self.path), None)
            self.path = Path(folder) / WORK / NAME
            _held[str(self.path)] = self

    def release(self):
        """Stop the heartbeat and remove the lock file if it is still this process's (and its ``.work`` folder once
        empty: a published bundle's)."""
        self.stop.set()
        with self._mutex:
            _held.pop(str(self.path), None)
            if _read(self.path) == self.owner:
                try:
                    self.path.unlink()
                    self.path.parent.rmdir()
                except OSError:  # gone already, or the folder still holds scratch output
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
    if (
        found
        and found.get("host") == socket.gethostname()
        and found.get("boot_id") == boot_id()
        and not _alive(found.get("pid"))
    ):
        return "its process %s on this host has ended" % found.get("pid")
    return None


def describe(found, path):
    """One line naming the owner of a lock: host, pid, start and heartbeat age."""
    try:
        age = "%d s ago" % (time.time() - os.stat(str(path)).st_mtime)
    except OSError:
        age = "?"
    return "pid %s on host %s since %s (heartbeat %s)" % (found.get("pid"), found.get("host"), found.get("since"), age)


def take(folder):
    """Take the lock of the bundle in ``folder`` (creating its scratch folder); returns the Lock. Raises
    DlreproError naming the owner when another live process (on any host) holds it, or when the folder is gone."""
    work = Path(folder) / WORK
    try:
        work.mkdir(exist_ok=True)
    except FileNotFoundError:  # published or removed meanwhile
        raise DlreproError("%s: no such bundle folder (any more)" % folder, "`dlrepro bundles` lists them") from None
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
            raise DlreproError(
                "%s is being written by another run: %s" % (folder, describe(found, path)),
                "wait for it to end (`dlrepro bundles` shows it), or, if that run is gone, wait %d s "
                "after its last heartbeat" % STALE_S,
            )
    raise DlreproError("%s: its lock %s was taken and broken again three times in a row" % (folder, path), "try again")


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
