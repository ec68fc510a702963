"""Lock files: every Python package of an image pinned by version and SHA-256.

A lock (images/locks/<image>.txt) is pip's requirements format with ``--hash``
options, installed with ``pip install --require-hashes --no-deps``. It is compiled
from the image's top-level requirements (<image>.in) by uv for the image's Python
version and platform, with the hashes of every published file of each pinned
version (pip takes whichever file fits and checks it against the list). An image's
``lock_excludes`` (a dependency the runner never imports that no wheel is published for,
e.g. TensorFlow 1.4's TensorBoard) are left out of the resolution; its ``source_builds``
(pure-Python packages served as source only, e.g. Chainer) are locked by their sdist,
with the requirements the matrix states for them.
"""

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name

from dlrepro.errors import ImageError
from dlrepro.images import transport

PLATFORM = "x86_64-manylinux_2_28"
_LINE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)$")


class Pin:
    """One locked requirement: canonical name, exact version, accepted SHA-256 hashes."""

    def __init__(self, name, version, hashes):
        self.name, self.version, self.hashes = canonicalize_name(name), version, frozenset(hashes)

    def __repr__(self):
        return "Pin(%s==%s, %d hashes)" % (self.name, self.version, len(self.hashes))


def parse(path):
    """Pins of lock file ``path``; raises ImageError for a line that is not ``name==version --hash=...``."""
    path = Path(path)
    if not path.is_file():
        raise ImageError("%s: lock file missing; create it with `dlrepro lock --image %s`" % (path, path.stem))
    text = path.read_text().replace("\\\n", " ")
    pins = []
    for line in text.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not line:
            continue
        tokens = line.split()
        match = _LINE.match(tokens[0])
        hashes = [t.split("sha256:", 1)[1] for t in tokens[1:] if t.startswith("--hash=sha256:")]
        if not match or not hashes or len(hashes) != len(tokens) - 1:
            raise ImageError(
                "%s: %r is not an exact pin with --hash=sha256 options; regenerate with "
                "`dlrepro lock --image %s`" % (path, tokens[0], path.stem)
            )
        pins.append(Pin(match["name"], match["version"], hashes))
    return pins


def compile_locks(matrix, name=None):
    """Compile the lock of image ``name`` (every image of the matrix when None), with this host's local
    find-links folders; returns the lock paths. Raises ImageError for an unknown image or a failed lock."""
    find_links = [d for d in transport.host_settings().find_links if "://" not in d]
    return [compile_lock(entry, find_links) for entry in ([matrix.entry(name)] if name else matrix.images)]


def compile_lock(image, find_links=()):
    """Regenerate ``image``'s lock from its .in file with uv; returns the lock path.

    Raises ImageError when uv is not installed or the resolution fails.
    """
    uv = shutil.which("uv")
    if uv is None:
        raise ImageError("uv is needed to compile lock files: pip install uv")
    command = [
        uv,
        "pip",
        "compile",
        str(image.lock_input),
        "-o",
        str(image.lock),
        "--quiet",
        "--python-version",
        image.python,
        "--python-platform",
        PLATFORM,
        "--only-binary",
        ":all:",
        "--generate-hashes",
        "--custom-compile-command",
        "invoke lock --image %s" % image.name,
    ]
    for directory in find_links:
        command += ["--find-links", str(directory)]
    with tempfile.TemporaryDirectory() as scratch:
        if image.source_builds:  # their metadata as stated, so that uv never runs their setup.py
            config = Path(scratch) / "uv.toml"
            config.write_text(
                "".join(
                    "[[dependency-metadata]]\nname = %s\nrequires-dist = [%s]\n"
                    % (json.dumps(name), ", ".join(json.dumps(r) for r in requires))
                    for name, requires in sorted(image.source_builds.items())
                )
            )
            command += ["--config-file", str(config)] + [
                a for name in sorted(image.source_builds) for a in ("--no-binary", name)
            ]
        if image.lock_excludes:  # an override whose marker never holds takes the package out of the resolution
            overrides = Path(scratch) / "excluded.txt"
            overrides.write_text("".join("%s ; sys_platform == 'never'\n" % name for name in image.lock_excludes))
            command += ["--override", str(overrides)]
        proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ImageError("uv could not lock %s:\n%s" % (image.lock_input, proc.stderr.strip()))
    return image.lock
