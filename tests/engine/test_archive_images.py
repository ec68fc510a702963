"""An archive of a bundle with its images (dlrepro.store.archive): the images saved by id and checked; needs a Docker
engine."""

import hashlib
import io
import json
import tarfile

import pytest

from dlrepro.store import archive
from tests.store.archives import copied_bundle, flip, named, rewrite


@pytest.fixture
def bundle(tmp_path):
    return copied_bundle(tmp_path)


@pytest.fixture
def tiny_image(docker_engine, tmp_path):
    """A one-file image imported from a small tar (no registry, no build), removed afterwards."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("hello.txt")
        info.size = 6
        tar.addfile(info, io.BytesIO(b"hello\n"))
    tag = "dlrepro-test/archive-tiny:%s" % tmp_path.name[-12:].lower().replace("_", "-")
    repository, version = tag.split(":")
    docker_engine.api.import_image_from_data(buf.getvalue(), repository=repository, tag=version)
    image = docker_engine.images.get(tag)
    yield image, tag
    docker_engine.images.remove(tag, force=True)


@pytest.mark.docker
def test_images_are_saved_by_id_and_checked(bundle, tmp_path, tiny_image):
    """--images saves each image bundle.json records, by ID; here the bundle is made to record only a tiny one
    (its real images are gigabytes), so schema checks of the edited bundle are not asserted."""
    image, tag = tiny_image
    body = json.loads((bundle / "bundle.json").read_text())
    body["images"] = [dict(body["images"][0], name="tiny", tag=tag, image_id=image.id)]
    (bundle / "bundle.json").write_text(json.dumps(body, indent=1, sort_keys=True))
    digest = hashlib.sha256((bundle / "bundle.json").read_bytes()).hexdigest()
    sums = [
        line if not line.endswith("  bundle.json") else "%s  bundle.json" % digest
        for line in (bundle / "SHA256SUMS").read_text().splitlines()
    ]
    (bundle / "SHA256SUMS").write_text("\n".join(sums) + "\n")

    made = archive.create(bundle, tmp_path / "i.tar.gz", images=True, log=lambda m: None)
    assert [m.name for m in made.members if m.name.startswith("docker/")] == ["docker/tiny.tar"]
    result = archive.verify(made.path)
    assert not [p for p in result.problems if not p.check.startswith("schema")], "\n".join(map(str, result.problems))
    with tarfile.open(made.path) as tar:
        saved = tar.extractfile("%s/docker/tiny.tar" % made.bundle_id).read()
        crate = json.loads(tar.extractfile("%s/%s" % (made.bundle_id, archive.CRATE)).read())
    with tarfile.open(fileobj=io.BytesIO(saved)) as inner:
        assert archive.image_config_digest(inner) == image.id
        assert tag in json.loads(inner.extractfile("manifest.json").read())[0]["RepoTags"]
    tiny = next(e for e in crate["@graph"] if e["@id"] == "#image-tiny")
    assert tiny["identifier"] == image.id and tiny["distribution"] == {"@id": "docker/tiny.tar"}

    rewrite(made.path, lambda files: files.__setitem__("docker/tiny.tar", flip(files["docker/tiny.tar"], 700)))
    assert named(archive.verify(made.path).problems, "docker/tiny.tar")
