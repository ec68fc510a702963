"""Where an image's CPython comes from, and how the Dockerfile gets it.

Three providers (recorded with the base in every bundle):
- ``debian``: the suite's own python3 package (bookworm 3.11, bullseye 3.9);
- ``image``: an official Python image pulled by digest, which has it at /usr/local;
- ``relocatable``: offline, for a Python no Debian suite here has (3.6, 3.9 on bookworm): a
  CPython build made with --enable-shared and an RPATH into its own prefix (pyenv's) copied
  into the image at the same prefix, the only place it works, plus the libraries it links.
"""

import hashlib
import os
import subprocess
from pathlib import Path

from dlrepro.errors import ImageError

CONTEXT_DIR = "python"  # the copied build's folder in the build context


class Provider:
    """How a Dockerfile gets Python: ``command`` (the interpreter that makes the venv), ``packages``
    (Debian packages to install with it) and, for a copied build, its ``source`` folder, ``prefix``
    and ``tree_sha256``."""

    def __init__(self, kind, command, packages, source=None, prefix=None, tree_sha256=None):
        self.kind, self.command, self.packages = kind, command, list(packages)
        self.source, self.prefix, self.tree_sha256 = source, prefix, tree_sha256

    @property
    def parents(self):
        """The prefix's parent folders, which the image's non-root user must be able to enter."""
        return [str(p) for p in reversed(Path(self.prefix).parents) if str(p) != "/"] if self.prefix else []

    @property
    def record(self):
        out = {"provider": self.kind, "command": self.command}
        if self.prefix:
            out.update(source=str(self.source), prefix=self.prefix, tree_sha256=self.tree_sha256)
        return out


def system(base):
    """The provider of a base that has Python itself: Debian's package, or an official Python image."""
    return Provider("debian" if base.python.packages else "image", "python3", base.python.packages)


def pyenv_root():
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def tree_sha256(root):
    """SHA-256 over every path under ``root`` (sorted) with its file bytes or link target."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, root).encode() + b"\0")
            if os.path.islink(path):
                h.update(b"L" + os.readlink(path).encode())
            else:
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
            h.update(b"\0")
    return h.hexdigest()


def relocatable(name, spec):
    """The provider for matrix base ``name``'s ``relocatable`` entry: pyenv's build of ``spec.pyenv``.

    Raises ImageError when the build is missing or does not live at the prefix it was built for.
    """
    source = pyenv_root() / "versions" / spec.pyenv
    binary = source / "bin" / "python3"
    if not binary.is_file():
        raise ImageError(
            "base %s needs CPython %s offline, from pyenv's build at %s, which is missing: install it "
            "(`pyenv install %s`) or make the registry reachable (--base-source=registry)"
            % (name, spec.pyenv, source, spec.pyenv)
        )
    proc = subprocess.run([str(binary), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True)
    prefix = proc.stdout.strip()
    if proc.returncode != 0 or Path(prefix).resolve() != source.resolve():
        raise ImageError(
            "base %s: %s does not run from its own prefix (%s): a relocatable build only works at the "
            "path it was built for" % (name, binary, prefix or proc.stderr.strip()[-200:])
        )
    return Provider(
        "relocatable",
        prefix + "/bin/python3",
        spec.packages,
        source=source,
        prefix=prefix,
        tree_sha256=tree_sha256(source),
    )
