"""The suite's own git checkout: its commit and state, and the versions of its files in history."""

import hashlib
import subprocess

from dlrepro import REPO_ROOT
from dlrepro.files import sha256_file


def git(*args):
    """Standard output (bytes) of ``git -C REPO_ROOT ARGS``, or None when git fails (no checkout, no git)."""
    try:
        proc = subprocess.run(["git", "-C", str(REPO_ROOT)] + list(args), capture_output=True)
    except OSError:
        return None
    return proc.stdout if proc.returncode == 0 else None


def state():
    """{commit, dirty} of the suite's checkout (dirty: tracked files changed), or None outside a git work tree."""
    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    return {
        "commit": commit.decode().strip(),
        "dirty": bool((git("status", "--porcelain", "--untracked-files=no") or b"").strip()),
    }


def versioned_file(relpath, sha256, commit=None):
    """(bytes, revision) of the repository file ``relpath`` whose SHA-256 is ``sha256``: the work tree
    (revision None), then ``commit``, then every commit that touched it; None when no version matches."""
    disk = REPO_ROOT / relpath
    if disk.is_file() and sha256_file(disk) == sha256:
        return disk.read_bytes(), None
    history = (git("log", "--format=%H", "--", relpath) or b"").decode().split()
    for rev in ([commit] if commit else []) + history:
        data = git("show", "%s:%s" % (rev, relpath))
        if data is not None and hashlib.sha256(data).hexdigest() == sha256:
            return data, rev
    return None


def repository_file(relpath, rev):
    """Bytes of ``relpath`` in the work tree (rev None) or at a git revision; None when absent."""
    if rev is None:
        path = REPO_ROOT / relpath
        return path.read_bytes() if path.is_file() else None
    return git("show", "%s:%s" % (rev, relpath))
