"""What an archive holds, found from a bundle: the bundle's files, its spec as run, its images' lock inputs,
and `docker save` tars of its images (checked against the image IDs the bundle records)."""

import hashlib
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

from dlrepro.checkout import repository_file, versioned_file
from dlrepro.errors import ArchiveError
from dlrepro.files import canonical_json, sha256_file

MANIFEST = "MANIFEST.sha256"
CRATE = "ro-crate-metadata.json"
SUMS = "SHA256SUMS"


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


def spec_members(body):
    """The spec file as run and the resolved spec; warnings for what cannot be found."""
    spec = body["spec"]
    members = [Member("specs/%s.resolved.json" % spec["name"], data=canonical_json(spec["resolved"]).encode())]
    commit = ((body.get("suite") or {}).get("git") or {}).get("commit")
    recorded = Path(spec["file"])
    if recorded.is_absolute():
        found = (
            (recorded.read_bytes(), str(recorded))
            if recorded.is_file() and sha256_file(recorded) == spec["file_sha256"]
            else None
        )
    else:
        found = versioned_file(recorded.as_posix(), spec["file_sha256"], commit)
    if found:
        members.append(Member("specs/%s.yaml" % spec["name"], data=found[0]))
        return members, []
    return members, [
        "spec file %s with sha256 %s is neither in the work tree nor in git history: the archive "
        "holds the resolved spec only (specs/%s.resolved.json)" % (spec["file"], spec["file_sha256"], spec["name"])
    ]


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
            warnings.append(
                "image %s: no version of images/locks/%s.in belongs to the bundle's lock; archived "
                "without it" % (name, name)
            )
    return members, warnings


def bundle_members(bundle_dir):
    members = []
    for path in sorted(bundle_dir.rglob("*")):
        if path.is_symlink():
            raise ArchiveError(
                "%s: a symbolic link in a bundle; bundles hold regular files only (replace it with the file)" % path
            )
        if path.is_file():
            members.append(Member("bundle/" + path.relative_to(bundle_dir).as_posix(), path=path))
    return members


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
        raise ArchiveError(
            "image %s (%s, ID %s) recorded in bundle.json is not in this Docker engine: load it "
            "(`docker load`) or archive without --images" % (image["name"], image.get("tag"), image["image_id"])
        ) from None
    log("docker save %s (%s)" % (image["name"], image["image_id"][:19]))
    named = image.get("tag") if image.get("tag") in found.tags else False
    with open(dest, "wb") as out:
        for chunk in found.save(named=named):
            out.write(chunk)
    with tarfile.open(dest) as tar:
        digest = image_config_digest(tar)
    if digest != image["image_id"]:
        raise ArchiveError(
            "docker save of %s gave an image with config digest %s, not the recorded %s; the engine's "
            "copy differs from the one the bundle ran" % (image["name"], digest, image["image_id"])
        )
