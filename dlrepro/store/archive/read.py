"""Reading an archive once, to its real end: every member hashed, all but the image tars extracted, unsafe
members refused, and damage to the gzip or tar stream reported as one problem naming the archive."""

import gzip
import hashlib
import io
import json
import tarfile
import zlib
from collections import deque
from dataclasses import dataclass, field

from dlrepro.errors import Problem

SMALL = 4 << 20  # members of an image tar up to this size are hashed when it is verified


KEEP = 1 << 16  # bytes of the tar stream kept to check padding and the end-of-archive marker


class _HashingReader(io.RawIOBase):
    """A readable stream that hashes what passes through it."""

    def __init__(self, raw):
        self.raw, self.hash = raw, hashlib.sha256()

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self.raw.read(len(buffer))
        self.hash.update(data)
        buffer[: len(data)] = data
        return len(data)

    def drain(self):
        while self.read(1 << 20):
            pass
        return self.hash.hexdigest()


def _unsafe(name, top):
    parts = name.split("/")
    if name.startswith("/") or "\\" in name or any(p in ("..", "") for p in parts[:-1]) or parts[-1] in ("..", ""):
        return "an absolute path, '..' or an empty component"
    if top is not None and parts[0] != top:
        return "outside the archive's one top folder %s/" % top
    if len(parts) < 2:
        return "a file at the top level; every member belongs below <bundle-id>/"
    return None


def _image_tar_check(stream):
    """(sha256 of the whole member, config digest or None) of a `docker save` tar read from a stream."""
    reader = _HashingReader(stream)
    buffered = io.BufferedReader(reader, 1 << 20)
    jsons, manifest = {}, None
    try:
        with tarfile.open(fileobj=buffered, mode="r|") as tar:
            for info in tar:
                if info.isfile() and info.size <= SMALL:  # configs and manifests (*.json, OCI blobs/sha256/*)
                    data = tar.extractfile(info).read()
                    jsons[info.name] = hashlib.sha256(data).hexdigest()
                    if info.name == "manifest.json":
                        manifest = data
    except (tarfile.TarError, EOFError):
        pass
    while buffered.read(1 << 20):
        pass
    try:
        config = json.loads(manifest)[0]["Config"]
        digest = "sha256:" + jsons[config]
    except (TypeError, ValueError, KeyError, IndexError):
        digest = None
    return reader.hash.hexdigest(), digest


class _Tail(io.RawIOBase):
    """A readable stream over ``raw`` that counts the bytes it passes on and keeps the last KEEP of them."""

    def __init__(self, raw):
        self.raw, self.pos, self.chunks, self.kept = raw, 0, deque(), 0

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        if data:
            self.chunks.append((self.pos, data))
            self.pos, self.kept = self.pos + len(data), self.kept + len(data)
            while self.kept - len(self.chunks[0][1]) >= KEEP:
                self.kept -= len(self.chunks.popleft()[1])
        return len(data)

    def span(self, start, end):
        """Bytes [start, end) of the stream from those kept (b"" when no longer kept)."""
        if not self.chunks or start < self.chunks[0][0]:
            return b""
        base = self.chunks[0][0]
        return b"".join(c for _, c in self.chunks)[start - base : end - base]


@dataclass
class Read:
    """What streaming an archive found: its top folder, {name below it: sha256}, {image tar: config digest},
    problems, and whether the stream is damaged (then nothing in it can be trusted)."""

    top: str | None = None
    hashes: dict = field(default_factory=dict)
    digests: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    damage: Problem | None = None  # the first sign of damage; gzip's, which explains the rest, replaces it


def read_archive(path, dest):
    """Stream the archive to its real end: hash every member, extract all but docker/*.tar into ``dest``, check
    the tar's padding and end-of-archive marker, and let gzip check its CRC and length. Returns Read."""
    read, current = Read(), None
    try:
        with gzip.open(path, "rb") as gz:
            tail = _Tail(gz)
            with tarfile.open(fileobj=tail, mode="r|") as tar:
                previous = None
                for info in tar:
                    _padding(tail, previous, read, path)
                    current, previous = info.name.split("/", 1)[-1], info
                    _read_member(tar, info, read, dest)
                    current = None
                _padding(tail, previous, read, path)
                _end_of_archive(tail, tar.offset, read, path)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        read.damage = _damage(path, exc, current)
    if read.damage:
        read.problems.append(read.damage)
    if read.top is None and not read.problems:
        read.problems.append(Problem("archive", str(path), "empty archive: it holds no member"))
    return read


def _read_member(tar, info, read, dest):
    why = _unsafe(info.name, read.top)
    if why is None and read.top is None:
        read.top = info.name.split("/", 1)[0]
    if info.isdir() and why is None:
        return
    if why is None and not info.isfile():
        why = "a %s; an archive holds regular files only" % ("link" if info.issym() or info.islnk() else "special file")
    name = info.name.split("/", 1)[-1]
    if why is None and name in read.hashes:
        why = "a second member with this name"
    if why:
        read.problems.append(Problem("archive", info.name, "unsafe member: %s; not extracted" % why))
        return
    stream = tar.extractfile(info)
    if name.startswith("docker/") and name.endswith(".tar"):
        read.hashes[name], read.digests[name] = _image_tar_check(stream)
        return
    target = dest.joinpath(*name.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with open(target, "wb") as out:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            h.update(chunk)
            out.write(chunk)
    read.hashes[name] = h.hexdigest()


def _padding(tail, info, read, path):
    """A problem when the zero padding after ``info``'s data (up to its next 512-byte block) is not zero."""
    if info is None:
        return
    start = info.offset_data + info.size
    if read.damage is None and tail.span(start, start + (-info.size % tarfile.BLOCKSIZE)).strip(b"\0"):
        read.damage = Problem(
            "tar",
            str(path),
            "non-zero bytes in the padding after member %s: the archive was altered" % info.name.split("/", 1)[-1],
        )


def _end_of_archive(tail, end, read, path):
    """Read the tar stream after its last member to its end (so gzip checks its CRC and length): it must be the
    end-of-archive marker (at least two zero blocks) and zeros only."""
    data, length, first = tail.span(end, tail.pos), 0, None
    while data:
        if first is None and data.strip(b"\0"):
            first = end + length + len(data) - len(data.lstrip(b"\0"))
        length += len(data)
        data = tail.read(1 << 20)
    if first is not None and first < end + tarfile.BLOCKSIZE:
        why = (
            "a damaged block at byte %d of the tar stream, where a member header or the end-of-archive marker "
            "belongs: the archive is corrupt" % end
        )
    elif first is not None:
        why = (
            "non-zero bytes after the end-of-archive marker (first at byte %d of the tar stream): the archive was "
            "altered" % first
        )
    elif length < 2 * tarfile.BLOCKSIZE:
        why = "truncated: the tar stream ends after %d bytes without its end-of-archive marker (two zero blocks)" % end
    else:
        return
    read.damage = read.damage or Problem("tar", str(path), why)


def _damage(path, exc, member):
    """The one problem of an archive that cannot be read to its end."""
    text, where = str(exc), " (while reading member %s)" % member if member else ""
    if isinstance(exc, EOFError) or "unexpected end of data" in text:
        check, why = "gzip" if isinstance(exc, EOFError) else "tar", "truncated: the file ends early"
    elif "CRC" in text:
        check, why = "gzip", "CRC mismatch: the decompressed data are not what was compressed"
    elif "length" in text.lower() and isinstance(exc, gzip.BadGzipFile):
        check, why = "gzip", "length mismatch: the decompressed data are not what was compressed"
    elif isinstance(exc, (gzip.BadGzipFile, zlib.error)) or "zlib" in text:
        check, why = "gzip", "not a valid gzip stream"
    elif isinstance(exc, tarfile.TarError):
        check, why = "tar", "not a valid tar stream"
    else:
        check, why = "archive", "cannot be read"
    return Problem(
        check,
        str(path),
        "%s%s (%s: %s); the archive is damaged: use an intact copy" % (why, where, exc.__class__.__name__, text),
    )
