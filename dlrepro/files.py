"""File digests and canonical JSON, computed and listed in one way everywhere on the host (`sha256sum` format)."""

import hashlib
import json


def sha256_file(path):
    """Hex SHA-256 of the file at ``path``, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tree_digest(root, tops):
    """Hex SHA-256 of every file under the folders ``tops`` of ``root`` (Python caches left out), each by its path
    relative to ``root`` and its bytes."""
    digest = hashlib.sha256()
    for top in tops:
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def sums_text(digests):
    """`sha256sum -c` lines for {path: hex SHA-256}, sorted by path."""
    return "".join("%s  %s\n" % (digest, name) for name, digest in sorted(digests.items()))


def parse_sums(text):
    """({path: hex SHA-256}, [(line number, line)] of lines that are not `<sha256>  <path>`)."""
    listed, bad = {}, []
    for n, line in enumerate(text.splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            bad.append((n, line))
            continue
        listed[name.lstrip("*")] = digest
    return listed, bad


def canonical_json(obj):
    """The canonical JSON text of ``obj``: keys sorted, no spaces; its SHA-256 is what the suite records as the
    hash of a resolved spec (spec hash, validate, archive)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
