"""Archives of result bundles: one tar.gz that a third party can check years later.

``create`` writes, and ``verify`` rechecks, this layout (every member a regular file):

    <bundle-id>/
        bundle/...                     the bundle folder as published: bundle.json, jobs/, images/<image>/
                                       (rendered Dockerfile, requirements.lock, pip-freeze.txt, dpkg.txt),
                                       tables, SHA256SUMS
        specs/<spec>.yaml              the spec file as run; its SHA-256 is bundle.json's spec.file_sha256
                                       (from the work tree or, when edited since, from git history)
        specs/<spec>.resolved.json     the resolved spec as canonical JSON; its SHA-256 is bundle.json's
                                       spec.sha256
        images/<image>/requirements.in the input of images/locks/<image>.txt at the version equal to the
                                       bundle's lock (and requirements.lock itself when the bundle has none)
        docker/<image>.tar             `docker save` of the image by the ID bundle.json records (--images)
        ro-crate-metadata.json         RO-Crate (rocrate library): a Dataset root, every other file but the manifest as
                                       a File (sha256, contentSize, encodingFormat), the run as a
                                       CreateAction whose instrument is the images and the suite
        MANIFEST.sha256                every other member, `sha256sum -c` format, relative to <bundle-id>/

Members are sorted by name with a fixed mtime (the bundle's finish time), owner 0:0 and mode 0644,
and the gzip header has no name or time, so one bundle archives to the same bytes each time
(docker save output aside). ``create`` refuses a bundle that ``dlrepro.validate.check`` finds invalid.
``verify`` streams the archive once, to its real end (gzip checks its CRC and length; the tar's padding
and everything after its end-of-archive marker must be zeros; a damaged stream is one problem and
nothing more is checked): it rejects unsafe members
(absolute paths, '..', links, devices, duplicates), hashes every member, extracts all but the
image tars to a temporary folder, and then checks MANIFEST.sha256, the bundle's SHA256SUMS, the
RO-Crate's sha256 values, the specs against bundle.json, each image tar's config digest against
its recorded image ID, and the bundle's schema (``dlrepro.validate.check``).
"""
import gzip
import hashlib
import io
import json
import mimetypes
import os
import subprocess
import tarfile
import tempfile
import zlib
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import unquote

from dlrepro import REPO_ROOT, __version__, validate
from dlrepro.bundle import locate
from dlrepro.errors import DlreproError
from dlrepro import files
from dlrepro.files import sha256_file

MANIFEST = "MANIFEST.sha256"
CRATE = "ro-crate-metadata.json"
SUMS = "SHA256SUMS"
DEFAULT_LICENSE = "CC-BY-4.0"
FORMATS = {".json": "application/json", ".csv": "text/csv", ".parquet": "application/vnd.apache.parquet",
           ".yaml": "application/yaml", ".txt": "text/plain", ".lock": "text/plain", ".in": "text/plain",
           ".tar": "application/x-tar", ".md": "text/markdown", ".html": "text/html", ".png": "image/png",
           ".svg": "image/svg+xml", ".log": "text/plain"}
SMALL = 4 << 20  # members of an image tar up to this size are hashed when it is verified
KEEP = 1 << 16  # bytes of the tar stream kept to check padding and the end-of-archive marker
PLAIN_NAMES = {"Dockerfile": "text/plain", SUMS: "text/plain", MANIFEST: "text/plain"}


class ArchiveError(DlreproError):
    """An archive cannot be written or read; the message names the file and the fix."""


@dataclass
class Member:
    """One file of the archive: its name below <bundle-id>/ and its bytes or a file holding them."""
    name: str
    data: bytes | None = None
    path: Path | None = None
    sha256: str = ""
    size: int = 0

    def __post_init__(self):
        if self.data is not None:
            self.sha256, self.size = hashlib.sha256(self.data).hexdigest(), len(self.data)
        else:
            self.sha256, self.size = sha256_file(self.path), self.path.stat().st_size


@dataclass
class Created:
    path: Path
    bundle_id: str
    members: list
    warnings: list = field(default_factory=list)


@dataclass(frozen=True)
class Problem:
    """One failed check: which check, which file (relative to <bundle-id>/), what is wrong."""
    check: str
    file: str
    message: str

    def __str__(self):
        return "%s: %s: %s" % (self.file, self.check, self.message)


@dataclass
class Verified:
    archive: Path
    bundle_id: str | None
    files: int
    problems: list

    @property
    def ok(self):
        return not self.problems


# ---------------------------------------------------------------- finding what the bundle references

def _git(*args):
    proc = subprocess.run(["git", "-C", str(REPO_ROOT)] + list(args), capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


def versioned_file(relpath, sha256, commit=None):
    """(bytes, revision) of the repository file ``relpath`` whose SHA-256 is ``sha256``: the work tree
    (revision None), then ``commit``, then every commit that touched it; None when no version matches."""
    disk = REPO_ROOT / relpath
    if disk.is_file() and sha256_file(disk) == sha256:
        return disk.read_bytes(), None
    history = (_git("log", "--format=%H", "--", relpath) or b"").decode().split()
    for rev in ([commit] if commit else []) + history:
        data = _git("show", "%s:%s" % (rev, relpath))
        if data is not None and hashlib.sha256(data).hexdigest() == sha256:
            return data, rev
    return None


def repository_file(relpath, rev):
    """Bytes of ``relpath`` in the work tree (rev None) or at a git revision; None when absent."""
    if rev is None:
        path = REPO_ROOT / relpath
        return path.read_bytes() if path.is_file() else None
    return _git("show", "%s:%s" % (rev, relpath))


def _canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def spec_members(body):
    """The spec file as run and the resolved spec; warnings for what cannot be found."""
    spec = body["spec"]
    members = [Member("specs/%s.resolved.json" % spec["name"], data=_canonical(spec["resolved"]))]
    commit = ((body.get("suite") or {}).get("git") or {}).get("commit")
    recorded = Path(spec["file"])
    if recorded.is_absolute():
        found = (recorded.read_bytes(), str(recorded)) if recorded.is_file() and \
            sha256_file(recorded) == spec["file_sha256"] else None
    else:
        found = versioned_file(recorded.as_posix(), spec["file_sha256"], commit)
    if found:
        members.append(Member("specs/%s.yaml" % spec["name"], data=found[0]))
        return members, []
    return members, ["spec file %s with sha256 %s is neither in the work tree nor in git history: the archive "
                     "holds the resolved spec only (specs/%s.resolved.json)" % (spec["file"], spec["file_sha256"],
                                                                                 spec["name"])]


def lock_members(bundle_dir, body):
    """Each image's lock input (images/locks/<image>.in) at the version whose compiled lock is the bundle's;
    for a bundle without its lock, the lock and its input at the suite commit the bundle records."""
    members, warnings = [], []
    commit = ((body.get("suite") or {}).get("git") or {}).get("commit")
    for image in body.get("images") or []:
        name = image["name"]
        lock, txt = bundle_dir / "images" / name / "requirements.lock", "images/locks/%s.txt" % name
        if lock.is_file():
            found = versioned_file(txt, sha256_file(lock), commit)
        else:
            found = commit and repository_file(txt, commit)
            found = (found, commit) if found else None
            if found:
                members.append(Member("images/%s/requirements.lock" % name, data=found[0]))
        source = found and repository_file("images/locks/%s.in" % name, found[1])
        if source:
            members.append(Member("images/%s/requirements.in" % name, data=source))
        else:
            warnings.append("image %s: no version of images/locks/%s.in belongs to the bundle's lock; archived "
                            "without it" % (name, name))
    return members, warnings


def bundle_members(bundle_dir):
    members = []
    for path in sorted(bundle_dir.rglob("*")):
        if path.is_symlink():
            raise ArchiveError("%s: a symbolic link in a bundle; bundles hold regular files only (replace it "
                               "with the file)" % path)
        if path.is_file():
            members.append(Member("bundle/" + path.relative_to(bundle_dir).as_posix(), path=path))
    return members


# ---------------------------------------------------------------- docker images

def image_config_digest(tar):
    """'sha256:<hex>' of the image config in a `docker save` tar (an open TarFile), or None."""
    try:
        manifest = json.load(tar.extractfile("manifest.json"))
        config = manifest[0]["Config"]
        return "sha256:" + hashlib.sha256(tar.extractfile(config).read()).hexdigest()
    except (KeyError, IndexError, TypeError, ValueError, tarfile.TarError):
        return None


def save_image(image, dest, log):
    """`docker save` the image recorded in bundle.json (by its image ID) into ``dest``."""
    import docker

    from dlrepro import engine

    client = engine.client()
    try:
        found = client.images.get(image["image_id"])
    except docker.errors.ImageNotFound:
        raise ArchiveError("image %s (%s, ID %s) recorded in bundle.json is not in this Docker engine: load it "
                           "(`docker load`) or archive without --images" % (image["name"], image.get("tag"),
                                                                           image["image_id"])) from None
    log("docker save %s (%s)" % (image["name"], image["image_id"][:19]))
    named = image.get("tag") if image.get("tag") in found.tags else False
    with open(dest, "wb") as out:
        for chunk in found.save(named=named):
            out.write(chunk)
    with tarfile.open(dest) as tar:
        digest = image_config_digest(tar)
    if digest != image["image_id"]:
        raise ArchiveError("docker save of %s gave an image with config digest %s, not the recorded %s; the engine's "
                           "copy differs from the one the bundle ran" % (image["name"], digest, image["image_id"]))


# ---------------------------------------------------------------- RO-Crate

def encoding_format(name):
    base = name.rsplit("/", 1)[-1]
    return PLAIN_NAMES.get(base) or FORMATS.get(Path(base).suffix) or mimetypes.guess_type(base)[0] or \
        "application/octet-stream"


def schema_versions(bundle_dir):
    """{file below bundle/: schema version} of every JSON file with a top-level 'schema' and of the tables."""
    found = {}
    for path in sorted(bundle_dir.rglob("*.json")):
        try:
            schema = json.loads(path.read_text()).get("schema")
        except (ValueError, AttributeError):
            continue
        if isinstance(schema, str):
            found[path.relative_to(bundle_dir).as_posix()] = schema
    for path in sorted(bundle_dir.glob("*.parquet")):
        try:
            import pyarrow.parquet as pq

            value = (pq.read_schema(path).metadata or {}).get(b"dlrepro.tables")
        except Exception:  # an unreadable table is validate's concern, not the archive's
            continue
        if value:
            found[path.name] = value.decode()
    return found


def crate_json(body, members, schemas, license_id, author):
    """ro-crate-metadata.json's bytes for the members (none of which is the crate or the manifest)."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.model.person import Person
    from rocrate.rocrate import ROCrate

    crate = ROCrate()
    crate.root_dataset["datePublished"] = body.get("finished") or body.get("created")
    crate.name = "dlrepro result bundle %s" % body["id"]
    crate.description = "Benchmark results of spec %s (%s executor, %s) with the exact specs, image locks, " \
                        "rendered Dockerfiles%s" % (body["spec"]["name"], (body.get("executor") or {}).get("executor"),
                                                    (body.get("executor") or {}).get("device"),
                                                    " and image archives" if any(m.name.startswith("docker/")
                                                                                 for m in members) else "")
    lic = crate.add(ContextEntity(crate, "https://spdx.org/licenses/%s" % license_id,
                                  properties={"@type": "CreativeWork", "name": license_id,
                                              "identifier": license_id}))
    crate.license = lic
    crate.root_dataset["identifier"] = body["id"]
    crate.root_dataset["schemaVersion"] = sorted(set(schemas.values()))
    files = {}
    for m in members:
        props = {"name": m.name.rsplit("/", 1)[-1], "sha256": m.sha256, "contentSize": str(m.size),
                 "encodingFormat": encoding_format(m.name)}
        schema = schemas.get(m.name[len("bundle/"):]) if m.name.startswith("bundle/") else None
        if schema:
            props["schemaVersion"] = schema
        files[m.name] = crate.add_file(dest_path=m.name, properties=props)
    suite = (body.get("suite") or {})
    git = suite.get("git") or {}
    tools = [crate.add(ContextEntity(crate, "#dlrepro", properties={
        "@type": "SoftwareApplication", "name": "dlrepro", "version": suite.get("version") or __version__,
        **({"identifier": "git:%s%s" % (git["commit"], "-dirty" if git.get("dirty") else "")} if git else {})}))]
    for image in body.get("images") or []:
        saved = files.get("docker/%s.tar" % image["name"])
        props = {"@type": "SoftwareApplication", "name": image["name"], "identifier": image["image_id"],
                 "alternateName": image.get("tag"), "softwareVersion": image.get("framework_version"),
                 "applicationCategory": "container image"}
        parts = [files[n] for n in ("bundle/images/%s/Dockerfile" % image["name"],
                                    "bundle/images/%s/requirements.lock" % image["name"]) if n in files]
        if parts:
            props["softwareRequirements"] = parts
        if saved:
            props["distribution"] = saved
        tools.append(crate.add(ContextEntity(crate, "#image-%s" % image["name"],
                                             properties={k: v for k, v in props.items() if v is not None})))
    action = {"@type": "CreateAction", "name": "dlrepro run %s" % body["id"], "description": body.get("command"),
              "startTime": body.get("created"), "endTime": body.get("finished"),
              "actionStatus": "http://schema.org/CompletedActionStatus"}
    if author:
        person = crate.add(Person(crate, "#author", properties={"name": author}))
        crate.creator = person
        action["agent"] = person
    inputs = [files[n] for n in sorted(files) if n.startswith("specs/")]
    outputs = [files[n] for n in sorted(files) if n.startswith("bundle/")]
    crate.add_action(tools, identifier="#run-%s" % body["id"], object=inputs, result=outputs,
                     properties={k: v for k, v in action.items() if v is not None})
    return json.dumps(crate.metadata.generate(), indent=1, sort_keys=True, ensure_ascii=False).encode() + b"\n"


# ---------------------------------------------------------------- writing

def _mtime(body):
    try:
        return int(datetime.fromisoformat(body["finished"].replace("Z", "+00:00")).timestamp())
    except (KeyError, AttributeError, ValueError):
        return 0


def write_tar(out, top, members, mtime):
    """A deterministic tar.gz of ``members`` below ``top/`` at ``out`` (written aside, then renamed; on any error
    the partial file is removed)."""
    partial = out.with_name("." + out.name + ".partial")
    try:
        with open(partial, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                       compresslevel=6) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for m in sorted(members, key=lambda m: m.name):
                add_member(tar, "%s/%s" % (top, m.name), m, mtime)
        os.replace(partial, out)
    except BaseException as exc:
        partial.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ArchiveError("%s: could not be written (%s); nothing was written: free space or choose another "
                               "--out" % (out, exc)) from None
        raise


def add_member(tar, name, member, mtime):
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.uid, info.gid = member.size, mtime, 0o644, 0, 0
    info.uname = info.gname = ""
    if member.data is not None:
        tar.addfile(info, io.BytesIO(member.data))
    else:
        with open(member.path, "rb") as f:
            tar.addfile(info, f)


def require_valid(bundle_dir):
    """Raise ArchiveError listing what `invoke validate` finds in the bundle: an archive holds a valid bundle only."""
    try:
        problems = validate.check(bundle_dir)
    except DlreproError as exc:
        problems = [validate.Problem("validate", bundle_dir.name, "could not finish: %s" % exc)]
    if problems:
        lines = ["  %s: %s: %s" % (p.file, p.check, p.message) for p in problems[:20]]
        if len(problems) > 20:
            lines.append("  ... and %d more" % (len(problems) - 20))
        raise ArchiveError("%s: not a valid bundle (%d problem(s)), so it is not archived; an archive holds a valid "
                           "bundle only:\n%s\nrun `invoke validate %s` and fix the bundle or re-run it"
                           % (bundle_dir, len(problems), "\n".join(lines), bundle_dir))


def out_path(out, bundle_id):
    """The archive to write: ``out``, ``out``/<bundle-id>.tar.gz when it is a folder, or ./<bundle-id>.tar.gz."""
    name = "%s.tar.gz" % bundle_id
    out = Path(out) if out else Path.cwd() / name
    if out.is_dir():
        out = out / name
    if not out.parent.is_dir():
        raise ArchiveError("--out %s: folder %s does not exist; create it or give an existing folder"
                           % (out, out.parent))
    return out


def scratch(folder):
    try:
        return tempfile.TemporaryDirectory(prefix=".dlrepro-archive-", dir=folder)
    except OSError as exc:
        raise ArchiveError("--out: cannot write in folder %s (%s); choose a writable folder" % (folder, exc)) from None


def create(bundle, out=None, images=False, license_id=DEFAULT_LICENSE, author=None, log=print):
    """Archive a bundle (folder or id) into one tar.gz; returns Created(path, bundle_id, members, warnings)."""
    bundle_dir = locate(bundle)
    require_valid(bundle_dir)
    try:
        body = json.loads((bundle_dir / "bundle.json").read_text())
        bundle_id = body["id"]
        body["spec"]["file_sha256"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ArchiveError("%s: unreadable or incomplete bundle.json (%s); run `invoke validate %s`"
                           % (bundle_dir / "bundle.json", exc, bundle_dir)) from None
    out = out_path(out, bundle_id)
    members = bundle_members(bundle_dir)
    specs, warnings = spec_members(body)
    locks, more = lock_members(bundle_dir, body)
    members += specs + locks
    warnings += more
    with scratch(out.parent) as tmp:
        if images:
            recorded = [i for i in body.get("images") or [] if i.get("image_id")]
            if not recorded:
                warnings.append("--images: bundle.json records no image (executor %s); nothing saved"
                                % (body.get("executor") or {}).get("executor"))
            for image in recorded:
                dest = Path(tmp) / ("%s.tar" % image["name"])
                save_image(image, dest, log)
                members.append(Member("docker/%s.tar" % image["name"], path=dest))
        crate = Member(CRATE, data=crate_json(body, members, schema_versions(bundle_dir), license_id, author))
        members.append(crate)
        manifest = files.sums_text({m.name: m.sha256 for m in members})
        members.append(Member(MANIFEST, data=manifest.encode()))
        write_tar(out, bundle_id, members, _mtime(body))
    return Created(out, bundle_id, members, warnings)


# ---------------------------------------------------------------- reading and verifying

class _HashingReader(io.RawIOBase):
    """A readable stream that hashes what passes through it."""

    def __init__(self, raw):
        self.raw, self.hash = raw, hashlib.sha256()

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self.raw.read(len(buffer))
        self.hash.update(data)
        buffer[:len(data)] = data
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
        buffer[:len(data)] = data
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
        return b"".join(c for _, c in self.chunks)[start - base:end - base]


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
        read.damage = Problem("tar", str(path), "non-zero bytes in the padding after member %s: the archive was "
                              "altered" % info.name.split("/", 1)[-1])


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
        why = "a damaged block at byte %d of the tar stream, where a member header or the end-of-archive marker " \
              "belongs: the archive is corrupt" % end
    elif first is not None:
        why = "non-zero bytes after the end-of-archive marker (first at byte %d of the tar stream): the archive was " \
              "altered" % first
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
    return Problem(check, str(path), "%s%s (%s: %s); the archive is damaged: use an intact copy" % (
        why, where, exc.__class__.__name__, text))


def parse_sums(text, where):
    """{path: sha256} from `sha256sum` lines; problems for lines that are not."""
    listed, bad = files.parse_sums(text)
    return listed, [Problem("manifest" if where == MANIFEST else "sha256sums", where,
                            "line %d is not '<sha256>  <path>': %r" % (n, line[:80])) for n, line in bad]


def check_listing(check, listing, listed, actual, prefix="", others=()):
    """Problems of one checksum listing against the members actually there.

    ``others`` are other {name: sha256} records: a mismatch they do not share blames the listing."""
    problems = []
    for name, digest in sorted(listed.items()):
        full = prefix + name
        if full not in actual:
            problems.append(Problem(check, full, "listed in %s but missing from the archive" % listing))
        elif actual[full] != digest:
            listing_others = [o for o in others if full in o]
            if listing_others and all(o[full] == actual[full] for o in listing_others):
                problems.append(Problem(check, listing, "lists %s with sha256 %s, but the file and the other "
                                        "checksum records agree on %s: %s was modified" % (
                                            full, digest[:16], actual[full][:16], listing)))
            else:
                problems.append(Problem(check, full, "sha256 %s, but %s lists %s: the file was modified" % (
                    actual[full][:16], listing, digest[:16])))
    return problems


def crate_hashes(data):
    """{file path: sha256} of the RO-Crate's File entities."""
    graph = json.loads(data)["@graph"]
    out = {}
    for entity in graph:
        types = entity.get("@type")
        types = types if isinstance(types, list) else [types]
        if "File" in types and entity.get("@id") != CRATE:
            out[unquote(entity["@id"])] = entity.get("sha256")
    return out


def check_specs(root, body, actual):
    problems, spec = [], body.get("spec") or {}
    name = spec.get("name")
    resolved, original = "specs/%s.resolved.json" % name, "specs/%s.yaml" % name
    if resolved not in actual:
        problems.append(Problem("spec", resolved, "missing: the archive must hold the resolved spec"))
    else:
        if actual[resolved] != spec.get("sha256"):
            problems.append(Problem("spec", resolved, "sha256 %s, but bundle.json's spec.sha256 is %s" % (
                actual[resolved][:16], str(spec.get("sha256"))[:16])))
        elif (root / resolved).read_bytes() != _canonical(spec.get("resolved")):
            problems.append(Problem("spec", "bundle/bundle.json", "spec.resolved differs from %s" % resolved))
    if original in actual and actual[original] != spec.get("file_sha256"):
        problems.append(Problem("spec", original, "sha256 %s, but bundle.json's spec.file_sha256 is %s" % (
            actual[original][:16], str(spec.get("file_sha256"))[:16])))
    return problems


def check_images(body, digests):
    recorded = {"docker/%s.tar" % i["name"]: i.get("image_id") for i in body.get("images") or []}
    problems = []
    for name, digest in sorted(digests.items()):
        if name not in recorded:
            problems.append(Problem("docker", name, "an image archive of no image that bundle.json records"))
        elif digest != recorded[name]:
            problems.append(Problem("docker", name, "image config digest %s, but bundle.json records image ID %s"
                                    % (digest, recorded[name])))
    return problems


def check_schema(bundle_dir):
    """What dlrepro.validate finds in the extracted bundle, its SHA256SUMS aside (checked above); files and
    messages name members below <bundle-id>/, never the temporary folder."""
    try:
        found = validate.check(bundle_dir)
    except DlreproError as exc:
        found = [validate.Problem("bundle", "bundle.json", "could not be checked: %s" % exc)]
    return [Problem("schema/%s" % p.check, _in_bundle(bundle_dir, p.file),
                    str(p.message).replace(str(bundle_dir), "bundle")) for p in found if p.check != "checksums"]


def _in_bundle(bundle_dir, file):
    """'bundle/<path>' of a file that validate names relative to the bundle or by its (temporary) full path."""
    path = Path(str(file))
    if path.is_absolute():
        try:
            path = path.relative_to(bundle_dir)
        except ValueError:
            path = Path(path.name)
    rel = path.as_posix()
    return "bundle/" if rel in ("bundle", ".") else "bundle/" + rel


def read_listings(root, actual):
    """The three checksum records of an unpacked archive: ({path: sha256} of MANIFEST.sha256, of the bundle's
    SHA256SUMS (as paths below <bundle-id>/), of the RO-Crate's Files), and problems reading them."""
    problems, records = [], []
    for check, name, prefix in (("manifest", MANIFEST, ""), ("sha256sums", "bundle/" + SUMS, "bundle/")):
        if name in actual:
            listed, bad = parse_sums((root / name).read_text(errors="replace"), name)
            records.append({prefix + k: v for k, v in listed.items()})
            problems += bad
        else:
            records.append({})
            problems.append(Problem(check, name, "missing: nothing lists the files' checksums"))
    crate = {}
    if CRATE in actual:
        try:
            crate = crate_hashes((root / CRATE).read_bytes())
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            problems.append(Problem("ro-crate", CRATE, "not RO-Crate JSON-LD with an @graph (%s)" % exc))
    else:
        problems.append(Problem("ro-crate", CRATE, "missing"))
    return records[0], records[1], crate, problems


def check_checksums(actual, manifest, sums, crate):
    """Every member against each record that should list it, and every member listed where it should be."""
    problems = check_listing("manifest", MANIFEST, manifest, actual, others=[crate, sums])
    problems += [Problem("manifest", n, "in the archive but not listed in %s" % MANIFEST)
                 for n in sorted(actual) if n not in manifest and n != MANIFEST]
    problems += check_listing("sha256sums", "bundle/" + SUMS, sums, actual, others=[manifest, crate])
    problems += [Problem("sha256sums", n, "in the bundle but not listed in its %s" % SUMS)
                 for n in sorted(actual) if n.startswith("bundle/") and n not in sums and n != "bundle/" + SUMS]
    if crate:
        problems += check_listing("ro-crate", CRATE, crate, actual, others=[manifest, sums])
        problems += [Problem("ro-crate", n, "in the archive but not a File of %s" % CRATE)
                     for n in sorted(actual) if n not in crate and n not in (CRATE, MANIFEST)]
    return problems


def check_bundle(root, top, actual, digests, scratch):
    """Problems of bundle.json, the specs and image tars against it, and the bundle's schema."""
    try:
        body = json.loads((root / "bundle" / "bundle.json").read_text())
        if not isinstance(body, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        return [Problem("schema", "bundle/bundle.json", "unreadable (%s)" % exc)]
    problems = []
    if body.get("id") != top:
        problems.append(Problem("schema", "bundle/bundle.json", "id %r, but the archive's folder is %r"
                                % (body.get("id"), top)))
    problems += check_specs(root, body, actual) + check_images(body, digests)
    bundle_dir = scratch / top  # validate sees a folder named as the bundle
    bundle_dir.parent.mkdir(parents=True, exist_ok=True)
    os.rename(root / "bundle", bundle_dir)
    return problems + check_schema(bundle_dir)


def verify(archive):
    """Recheck every checksum of an archive and its bundle's schema; returns Verified (``ok`` when no problem)."""
    archive = Path(archive)
    require_archive_file(archive)
    with tempfile.TemporaryDirectory(prefix=".dlrepro-verify-") as tmp:
        root = Path(tmp) / "archive"
        read = read_archive(archive, root)
        if read.top is None or read.damage:  # one problem says so; what is missing after it is no news
            return Verified(archive, read.top, len(read.hashes), read.problems)
        actual, problems = read.hashes, read.problems
        manifest, sums, crate, more = read_listings(root, actual)
        problems += more + check_checksums(actual, manifest, sums, crate)
        problems += check_bundle(root, read.top, actual, read.digests, Path(tmp) / "bundle")
    return Verified(archive, read.top, len(actual), list(dict.fromkeys(problems)))


def require_archive_file(archive):
    if archive.is_dir():
        hint = " (it is a bundle folder: check it with `invoke validate %s`, archive it with `invoke archive %s`)" \
            % (archive, archive) if (archive / "bundle.json").is_file() else ""
        raise ArchiveError("%s is a folder, not a .tar.gz archive; give the file `invoke archive` wrote%s"
                           % (archive, hint))
    if not archive.is_file():
        raise ArchiveError("%s: no such archive file; give the .tar.gz that `invoke archive` wrote" % archive)
