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

from dlrepro.errors import ArchiveError
from dlrepro.store.archive.checks import Verified, verify
from dlrepro.store.archive.members import CRATE, MANIFEST, image_config_digest
from dlrepro.store.archive.write import DEFAULT_LICENSE, Created, create

__all__ = [
    "ArchiveError",
    "CRATE",
    "Created",
    "DEFAULT_LICENSE",
    "MANIFEST",
    "Verified",
    "create",
    "image_config_digest",
    "verify",
]
