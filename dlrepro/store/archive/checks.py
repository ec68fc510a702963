"""Verifying an archive: its three checksum records (MANIFEST.sha256, the bundle's SHA256SUMS, the RO-Crate)
against the members, the specs and image tars against bundle.json, and the bundle's schema (dlrepro.store.validate)."""

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from dlrepro import files
from dlrepro.errors import ArchiveError, DlreproError, Problem
from dlrepro.files import canonical_json
from dlrepro.store import validate
from dlrepro.store.archive.members import CRATE, MANIFEST, SUMS
from dlrepro.store.archive.read import read_archive


@dataclass
class Verified:
    archive: Path
    bundle_id: str | None
    files: int
    problems: list

    @property
    def ok(self):
        return not self.problems


def parse_sums(text, where):
    """{path: sha256} from `sha256sum` lines; problems for lines that are not."""
    listed, bad = files.parse_sums(text)
    return listed, [
        Problem(
            "manifest" if where == MANIFEST else "sha256sums",
            where,
            "line %d is not '<sha256>  <path>': %r" % (n, line[:80]),
        )
        for n, line in bad
    ]


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
                problems.append(
                    Problem(
                        check,
                        listing,
                        "lists %s with sha256 %s, but the file and the other "
                        "checksum records agree on %s: %s was modified"
                        % (full, digest[:16], actual[full][:16], listing),
                    )
                )
            else:
                problems.append(
                    Problem(
                        check,
                        full,
                        "sha256 %s, but %s lists %s: the file was modified" % (actual[full][:16], listing, digest[:16]),
                    )
                )
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
            problems.append(
                Problem(
                    "spec",
                    resolved,
                    "sha256 %s, but bundle.json's spec.sha256 is %s"
                    % (actual[resolved][:16], str(spec.get("sha256"))[:16]),
                )
            )
        elif (root / resolved).read_bytes() != canonical_json(spec.get("resolved")).encode():
            problems.append(Problem("spec", "bundle/bundle.json", "spec.resolved differs from %s" % resolved))
    if original in actual and actual[original] != spec.get("file_sha256"):
        problems.append(
            Problem(
                "spec",
                original,
                "sha256 %s, but bundle.json's spec.file_sha256 is %s"
                % (actual[original][:16], str(spec.get("file_sha256"))[:16]),
            )
        )
    return problems


def check_images(body, digests):
    recorded = {"docker/%s.tar" % i["name"]: i.get("image_id") for i in body.get("images") or []}
    problems = []
    for name, digest in sorted(digests.items()):
        if name not in recorded:
            problems.append(Problem("docker", name, "an image archive of no image that bundle.json records"))
        elif digest != recorded[name]:
            problems.append(
                Problem(
                    "docker",
                    name,
                    "image config digest %s, but bundle.json records image ID %s" % (digest, recorded[name]),
                )
            )
    return problems


def check_schema(bundle_dir):
    """What dlrepro.validate finds in the extracted bundle, its SHA256SUMS aside (checked above); files and
    messages name members below <bundle-id>/, never the temporary folder."""
    try:
        found = validate.check(bundle_dir)
    except DlreproError as exc:
        found = [Problem("bundle", "bundle.json", "could not be checked: %s" % exc)]
    return [
        Problem(
            "schema/%s" % p.check, _in_bundle(bundle_dir, p.file), str(p.message).replace(str(bundle_dir), "bundle")
        )
        for p in found
        if p.check != "checksums"
    ]


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
    problems += [
        Problem("manifest", n, "in the archive but not listed in %s" % MANIFEST)
        for n in sorted(actual)
        if n not in manifest and n != MANIFEST
    ]
    problems += check_listing("sha256sums", "bundle/" + SUMS, sums, actual, others=[manifest, crate])
    problems += [
        Problem("sha256sums", n, "in the bundle but not listed in its %s" % SUMS)
        for n in sorted(actual)
        if n.startswith("bundle/") and n not in sums and n != "bundle/" + SUMS
    ]
    if crate:
        problems += check_listing("ro-crate", CRATE, crate, actual, others=[manifest, sums])
        problems += [
            Problem("ro-crate", n, "in the archive but not a File of %s" % CRATE)
            for n in sorted(actual)
            if n not in crate and n not in (CRATE, MANIFEST)
        ]
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
        problems.append(
            Problem("schema", "bundle/bundle.json", "id %r, but the archive's folder is %r" % (body.get("id"), top))
        )
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
        hint = (
            " (it is a bundle folder: check it with `dlrepro validate %s`, archive it with `dlrepro archive %s`)"
            % (archive, archive)
            if (archive / "bundle.json").is_file()
            else ""
        )
        raise ArchiveError(
            "%s is a folder, not a .tar.gz archive; give the file `dlrepro archive` wrote%s" % (archive, hint)
        )
    if not archive.is_file():
        raise ArchiveError("%s: no such archive file; give the .tar.gz that `dlrepro archive` wrote" % archive)
