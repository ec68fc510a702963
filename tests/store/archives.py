"""What the archive tests share: a real bundle of results/ copied, an archive rewritten, a byte flipped, the problems
naming a file."""

import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from dlrepro import REPO_ROOT


def real_bundle():
    """The newest bundle under results/ that ran in images (it has images/<name>/ folders)."""
    found = sorted(
        (p for p in (REPO_ROOT / "results").glob("*/bundle.json") if (p.parent / "images").is_dir()),
        key=lambda p: json.loads(p.read_text()).get("created", ""),
    )
    return found[-1].parent if found else None


def rewrite(path, change):
    """Unpack the archive into memory, let ``change`` edit {name below <bundle-id>/: bytes}, repack it."""
    with tarfile.open(path) as tar:
        top = tar.getmembers()[0].name.split("/")[0]
        files = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar if m.isfile()}
    change(files)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo("%s/%s" % (top, name))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def flip(data, at=None):
    at = len(data) // 2 if at is None else at
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def named(problems, name):
    return [p for p in problems if p.file == name or name in p.message]


def copied_bundle(tmp_path):
    """A copy of real_bundle() under ``tmp_path``/bundles (the test skipped where results/ has none)."""
    source = real_bundle()
    if source is None:
        pytest.skip("no bundle with images under results/")
    return Path(shutil.copytree(source, tmp_path / "bundles" / source.name))
