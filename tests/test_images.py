"""The image matrix, lock files and rendered Dockerfiles, including the CUDA flavour that cannot run here."""
import pytest

from dlrepro import context, locks, transport
from dlrepro.bases import BaseRef
from dlrepro.errors import ImageError, SpecError
from dlrepro.matrix import load as load_matrix

REGISTRY_BASE = BaseRef("debian-bookworm", "debian@sha256:" + "3" * 64, "registry", "sha256:" + "3" * 64,
                        "sha256:" + "4" * 64, {})


def pins_by_name(image):
    return {p.name: p for p in locks.parse(image.lock)}


def test_every_lock_pins_every_package_with_hashes(matrix):
    for image in matrix.images:
        pins = locks.parse(image.lock)
        assert pins and all(p.hashes and all(len(h) == 64 for h in p.hashes) for p in pins), image.name


def test_cpu_lock_takes_the_cpu_build_of_torch(matrix):
    pins = pins_by_name(matrix.find("torch", "cpu"))
    assert pins["torch"].version == "2.13.0+cpu" and "nvidia-cudnn-cu13" not in pins and "numpy" in pins


def test_cuda_lock_takes_pypis_cuda_13_build(matrix):
    image = matrix.find("torch", "cuda")
    pins = pins_by_name(image)
    assert pins["torch"].version == "2.13.0"
    assert pins["nvidia-cudnn-cu13"].version.startswith("9.20.")
    assert pins["nvidia-cuda-runtime"].version.startswith("13.0.") and pins["nvidia-nvjitlink"].version.startswith("13.0.")
    assert image.cuda == "13.0" and image.min_driver == "580"


def test_cuda_dockerfile_renders_with_the_pinned_base(matrix):
    image = matrix.find("torch", "cuda")
    text = context.render_dockerfile(image, REGISTRY_BASE)
    assert text.startswith("# torch-2.13.0-cuda: rendered by dlrepro")
    assert "FROM debian@sha256:%s AS system" % ("3" * 64) in text
    assert "--require-hashes" in text and "--no-deps" in text and "USER 1000:1000" in text
    assert 'org.dlrepro.device="cuda"' in text and "assert v == (3, 11)" in text
    assert "{{" not in text


def test_recipe_digest_follows_the_lock_not_the_transport(matrix, tmp_path, monkeypatch):
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path))
    image = matrix.find("torch", "cuda")
    ctx = context.render(image, REGISTRY_BASE)
    first = ctx.digest
    assert context.render(image, REGISTRY_BASE).digest == first
    ctx.add_transport(transport.PipSettings())  # what travels does not change the recipe
    assert context.recipe_digest(ctx.directory) == first
    (ctx.directory / "requirements.lock").write_text("numpy==2.4.6 --hash=sha256:%s\n" % ("0" * 64))
    assert context.recipe_digest(ctx.directory) != first
    assert ctx.tag == "dlrepro/torch:2.13.0-cuda-%s" % first[:12]


def test_transport_copies_only_locally_held_files_that_match_the_lock(tmp_path):
    wheel = tmp_path / "links" / "demo_pkg-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"demo wheel")
    other = tmp_path / "links" / "demo_pkg-1.0-py2-none-any.whl"
    other.write_bytes(b"different bytes")
    import hashlib

    pin = locks.Pin("demo-pkg", "1.0", [hashlib.sha256(b"demo wheel").hexdigest()])
    settings = transport.PipSettings(index_url="https://user:secret@mirror.invalid/simple",
                                     find_links=[str(wheel.parent)], cert=None)
    record = transport.write(tmp_path / "t", [pin], settings)
    assert [p.name for p in (tmp_path / "t" / "wheels").iterdir()] == [wheel.name]
    assert record["remote_indexes"] == ["https://mirror.invalid/simple"]
    conf = (tmp_path / "t" / "pip.conf").read_text()
    assert "index-url = https://user:secret@mirror.invalid/simple" in conf and "find-links = /tmp/transport/wheels" in conf


def test_a_malformed_lock_is_refused(tmp_path):
    bad = tmp_path / "x.txt"
    bad.write_text("torch>=2\n")
    with pytest.raises(ImageError, match="not an exact pin"):
        locks.parse(bad)


def test_matrix_errors_name_file_and_field(tmp_path):
    path = tmp_path / "matrix.yaml"
    text = (load_matrix.__globals__["MATRIX_FILE"]).read_text().replace("base: debian-bookworm\n", "base: debian-sid\n", 1)
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        load_matrix(path)
    assert "images.0.base: unknown base 'debian-sid'; the file defines: debian-bookworm" in str(err.value)


def test_unknown_image_is_a_clear_error(matrix):
    with pytest.raises(ImageError, match="no image for framework 'caffe' on device 'cpu'"):
        matrix.find("caffe", "cpu")
