"""Writing an archive: a deterministic tar.gz of a valid bundle and everything it references."""

import gzip
import io
import json
import os
import tarfile
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from dlrepro import files
from dlrepro.errors import ArchiveError, DlreproError, Problem
from dlrepro.store import validate
from dlrepro.store.archive.crate import crate_json, schema_versions
from dlrepro.store.archive.members import (
    CRATE,
    MANIFEST,
    Member,
    bundle_members,
    lock_members,
    save_image,
    spec_members,
)
from dlrepro.store.bundle import locate

DEFAULT_LICENSE = "CC-BY-4.0"


@dataclass
class Created:
    path: Path
    bundle_id: str
    members: list
    warnings: list = field(default_factory=list)


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
        with (
            open(partial, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for m in sorted(members, key=lambda m: m.name):
                add_member(tar, "%s/%s" % (top, m.name), m, mtime)
        os.replace(partial, out)
    except BaseException as exc:
        partial.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ArchiveError(
                "%s: could not be written (%s); nothing was written: free space or choose another --out" % (out, exc)
            ) from None
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
    """Raise ArchiveError listing what `dlrepro validate` finds in the bundle: an archive holds a valid bundle only."""
    try:
        problems = validate.check(bundle_dir)
    except DlreproError as exc:
        problems = [Problem("validate", bundle_dir.name, "could not finish: %s" % exc)]
    if problems:
        lines = ["  %s: %s: %s" % (p.file, p.check, p.message) for p in problems[:20]]
        if len(problems) > 20:
            lines.append("  ... and %d more" % (len(problems) - 20))
        raise ArchiveError(
            "%s: not a valid bundle (%d problem(s)), so it is not archived; an archive holds a valid "
            "bundle only:\n%s\nrun `dlrepro validate %s` and fix the bundle or re-run it"
            % (bundle_dir, len(problems), "\n".join(lines), bundle_dir)
        )


def out_path(out, bundle_id):
    """The archive to write: ``out``, ``out``/<bundle-id>.tar.gz when it is a folder (or ends with a "/": a folder,
    created when missing), or ./<bundle-id>.tar.gz."""
    name = "%s.tar.gz" % bundle_id
    folder = bool(out) and str(out).endswith(("/", os.sep))
    out = Path(out) if out else Path.cwd() / name
    if folder:
        out.mkdir(parents=True, exist_ok=True)
    if out.is_dir():
        out = out / name
    if not out.parent.is_dir():
        raise ArchiveError(
            "--out %s: folder %s does not exist; create it or give an existing folder" % (out, out.parent)
        )
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
        raise ArchiveError(
            "%s: unreadable or incomplete bundle.json (%s); run `dlrepro validate %s`"
            % (bundle_dir / "bundle.json", exc, bundle_dir)
        ) from None
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
                warnings.append(
                    "--images: bundle.json records no image (executor %s); nothing saved"
                    % (body.get("executor") or {}).get("executor")
                )
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
