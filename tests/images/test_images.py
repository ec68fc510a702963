"""The image matrix, lock files and rendered Dockerfiles, including the CUDA flavour that cannot run here."""

import pytest

from dlrepro.errors import ImageError, SpecError
from dlrepro.images import context, locks, pythons, transport
from dlrepro.images.bases import BaseRef
from dlrepro.images.matrix import MATRIX_FILE
from dlrepro.images.matrix import load as load_matrix
from tests.helpers import REGISTRY_BASE


def pins_by_name(image):
    return {p.name: p for p in locks.parse(image.lock)}


def cache_mounts_per_step(dockerfile):
    """[[(cache id, sharing), ...] per RUN instruction] of a Dockerfile's text, in the order the mounts are written."""
    steps = dockerfile.replace("\\\n", " ").split("\n")
    return [
        [
            (
                dict(kv.split("=", 1) for kv in option.split(",")).get("id"),
                dict(kv.split("=", 1) for kv in option.split(",")).get("sharing", "shared"),
            )
            for option in step.split()
            if option.startswith("--mount=type=cache,")
        ]
        for step in steps
        if step.startswith("RUN ")
    ]


def locked_mounts_are_podman_safe(mounts):
    """At most one ``sharing=locked`` cache mount in a step, and it the step's last cache mount: Buildah 1.28
    (Podman 4.3) releases after a RUN only the locks of its last cache mount (dlrepro/images/context.py apt_caches)."""
    locked = [i for i, (_, sharing) in enumerate(mounts) if sharing == "locked"]
    return locked == [] or locked == [len(mounts) - 1]


def test_the_podman_lock_rule_tells_the_orders_that_hang_from_the_one_that_does_not():
    """Seen with Podman 4.3.1 / Buildah 1.28.2 on this machine: two RUN steps mounting the same caches, the second
    waited forever after a first step whose locked mount came before another cache mount (both locked, or locked
    then shared), and ran when the locked mount came last (shared then locked)."""
    text = (
        "FROM base\nRUN --mount=type=cache,id=a,target=/a,sharing=locked \\\n"
        "    --mount=type=cache,id=b,target=/b,sharing=%s true\nRUN --mount=type=cache,id=c,target=/c true\n"
    )
    assert cache_mounts_per_step(text % "locked") == [[("a", "locked"), ("b", "locked")], [("c", "shared")]]
    assert [locked_mounts_are_podman_safe(s) for s in cache_mounts_per_step(text % "locked")] == [False, True]
    assert [locked_mounts_are_podman_safe(s) for s in cache_mounts_per_step(text % "shared")] == [False, True]
    swapped = text.replace("id=a,target=/a,sharing=locked", "id=a,target=/a,sharing=shared") % "locked"
    assert [locked_mounts_are_podman_safe(s) for s in cache_mounts_per_step(swapped)] == [True, True]


def test_every_lock_pins_every_package_with_hashes(matrix):
    for image in matrix.images:
        pins = locks.parse(image.lock)
        if image.framework == "caffe":  # Debian's packages, pinned by version in the matrix; nothing from pip
            assert pins == [] and all("=" in p for p in image.system_packages) and image.system_site_packages
            continue
        if image.lua:  # Lua Torch 7: source archives pinned by SHA-256, the runner's numpy from Debian by version
            assert pins == [] and "python3-numpy=1:1.24.2-1+deb12u1" in image.system_packages, image.name
            continue
        assert pins and all(p.hashes and all(len(h) == 64 for h in p.hashes) for p in pins), image.name


@pytest.mark.parametrize("name", [image.name for image in load_matrix().images])
def test_every_entry_renders_and_its_lock_pins_its_framework_version(matrix, name):
    """Every image of the matrix, built by CI or not (the era versions no test runs, every CUDA image): its Dockerfile
    renders on a base of its Python, pip installs exactly its lock, and the lock pins the framework at the version
    the entry names (Caffe: Debian's packages, pinned by version in the matrix). CI builds only the images its tests
    run (tests/image_build.py TEST_IMAGES), so its time does not grow with the versions here."""
    image = matrix.entry(name)
    major, minor = image.python.split(".")
    text = context.render_dockerfile(image, REGISTRY_BASE)
    assert all(locked_mounts_are_podman_safe(step) for step in cache_mounts_per_step(text)), text
    assert (
        "{{" not in text and "assert v == (%s, %s)" % (major, minor) in text and 'org.dlrepro.image="%s"' % name in text
    )
    pins = locks.parse(image.lock)
    if image.framework == "caffe":
        debian = image.system_packages + ([image.compile.source] if image.compile else [])  # the CPU's, or compiled
        assert (
            pins == []
            and "pip install" not in text
            and [p for p in debian if "caffe" in p and p.split("=")[1].startswith("1.0.0+git20180821.99bd997-8")]
        )
        return
    if image.lua:  # built from its source archives, each checked against the catalogue's SHA-256 before it is built
        sums = [s["sha256"] for s in context.lua_sources(image)]
        assert pins == [] and "pip install" not in text and len(sums) == {"cpu": 6, "cuda": 8}[image.device]
        assert (
            "RUN cd /src && printf '%%s  %%s\\n' %s | sha256sum --strict -c -"
            % " ".join("%s %s" % (s["sha256"], s["file"]) for s in context.lua_sources(image))
            in text
        )
        return
    assert "--require-hashes --only-binary=:all:" in text and "-r /opt/dlrepro/requirements.lock" in text
    assert [p.name for p in pins if p.version == image.version or p.version.startswith(image.version + "+")], name


def test_old_framework_locks_pin_their_era(matrix):
    cntk = pins_by_name(matrix.find("cntk", "cpu"))
    assert (
        cntk["cntk"].version == "2.7.post2" and cntk["numpy"].version == "1.19.5" and cntk["scipy"].version == "1.5.4"
    )
    caffe2 = pins_by_name(matrix.find("caffe2", "cpu"))
    assert caffe2["torch"].version == "1.10.2" and caffe2["protobuf"].version == "3.20.3"
    assert caffe2["numpy"].version == "1.23.5"
    era = matrix.find("mxnet", "cpu", "0.12.0")
    assert pins_by_name(era)["numpy"].version == "1.13.3" and era.python == "3.6" and era.base == "python-3.6"
    assert matrix.find("mxnet", "cpu").version == "1.9.1"  # without a version: the newest entry


def test_a_debian_framework_gets_a_venv_that_sees_debians_packages(matrix):
    caffe = matrix.find("caffe", "cpu")
    text = context.render_dockerfile(caffe, REGISTRY_BASE)
    assert "RUN python3 -m venv --system-site-packages /opt/venv\n" in text and "pip install" not in text
    assert "python3-caffe=1.0.0+git20180821.99bd997-8+b2" in text


def test_chainer_served_as_source_only_is_locked_by_its_sdist_and_built_in_the_image(matrix):
    """PyPI has no Chainer wheel: the lock pins its sdist's hash (with the requirements the matrix states, which
    uv cannot read without running setup.py), pip may build only that one package from source, and every other
    package stays a hashed wheel."""
    for version, numpy in (("3.4.0", "1.14.6"), ("7.8.1", "1.19.5")):
        image = matrix.find("chainer", "cpu", version)
        pins = pins_by_name(image)
        assert (
            pins["chainer"].version == version and pins["numpy"].version == numpy and len(pins["chainer"].hashes) == 1
        )
        assert set(image.source_builds) == {"chainer"} and "filelock" in pins and "six" in pins
        text = context.render_dockerfile(image, REGISTRY_BASE)
        assert "--require-hashes --only-binary=:all: --no-binary=chainer -r /opt/dlrepro/requirements.lock" in text
    assert "--no-binary" not in context.render_dockerfile(matrix.find("torch", "cpu"), REGISTRY_BASE)
    assert matrix.find("chainer", "cpu").version == "7.8.1" and matrix.find("chainer", "cpu", "3.4.0").python == "3.6"


def test_keras_runs_in_its_backends_image_at_the_version_the_lock_pins(matrix):
    for framework, image in (
        ("keras-jax", "jax-0.10.2-cpu"),
        ("keras-torch", "torch-2.13.0-cpu"),
        ("keras-tensorflow", "tensorflow-2.21.0-cpu"),
    ):
        assert matrix.find(framework, "cpu").name == image and matrix.versions(framework, "cuda")[-1] == "3.15.1"
        assert pins_by_name(matrix.entry(image))["keras"].version == "3.15.1"
    assert matrix.versions("keras-tensorflow", "cpu") == ["2.1.5", "3.15.1"]  # DLF's Keras 2.1 in TensorFlow 1.4.0's
    assert matrix.find("keras-tensorflow", "cpu", "2.1.5").name == "tensorflow-1.4.0-cpu"
    assert matrix.find("keras-cntk", "cpu").name == "cntk-2.5.1-cpu"
    assert pins_by_name(matrix.entry("keras-theano-2.1.5-cpu"))["theano"].version == "1.0.1"
    assert [i.name for i in matrix.select(["jax", "keras-jax", "keras-torch"])] == [
        "jax-0.10.2-cpu",
        "torch-2.13.0-cpu",
    ]
    with pytest.raises(
        ImageError,
        match=r"no image of keras-jax 2\.1\.4 on device cpu; its versions here: 3\.15\.1 "
        r"\(cpu\), 3\.15\.1 \(cuda\)$",
    ):
        matrix.find("keras-jax", "cpu", "2.1.4")


def test_caffe_for_gpus_is_compiled_in_the_image_from_debians_source_with_its_cuda(matrix):
    """No registry here serves a CUDA Caffe: its Dockerfile fetches Debian's source of the CPU image's Caffe (the
    same version), configures it with CUDA 11.8 for sm_37 to sm_90 in a stage of its own, and the final image
    copies only the install prefix, on the loader's and the venv's paths."""
    caffe = matrix.find("caffe", "cuda")
    assert caffe.name == "caffe-1.0.0-cuda" and caffe.cuda_archs[0] == "sm_37" and caffe.cuda_archs[-1] == "compute_90"
    cpu_package = next(p for p in matrix.find("caffe", "cpu").system_packages if p.startswith("libcaffe1="))
    assert caffe.compile.source.split("=")[1] == cpu_package.split("=")[1].rsplit("+b", 1)[0]  # the same source
    text = context.render_dockerfile(caffe, REGISTRY_BASE)
    assert "sed -i -e 's/^\\(deb .* main\\)$/\\1 contrib non-free non-free-firmware/'" in text
    assert text.index("AS system") < text.index("FROM system AS compile") < text.index("FROM system\nCOPY requirements")
    assert 'echo "deb-src $mirror bullseye main"' in text
    assert "apt-get source --only-source caffe=1.0.0+git20180821.99bd997-8\n" in text
    assert "'-DCUDA_ARCH_BIN=37 50 60 70 80 90' -DCUDA_ARCH_PTX=90 -DCUDA_HOST_COMPILER=/usr/bin/g++-11" in text
    assert "-B /build -DCMAKE_INSTALL_PREFIX=/opt/caffe" in text
    assert "COPY --from=compile /opt/caffe /opt/caffe\n" in text
    assert "echo /opt/caffe/lib > /etc/ld.so.conf.d/dlrepro-compiled.conf && ldconfig" in text
    assert 'org.dlrepro.compiled-from="caffe=1.0.0+git20180821.99bd997-8 (bullseye)"' in text and "{{" not in text
    assert "pip install" not in text and "--system-site-packages" in text
    plain = context.render_dockerfile(matrix.find("caffe", "cpu"), REGISTRY_BASE)
    assert "compile" not in plain and "contrib" not in plain


def test_cpu_lock_takes_the_cpu_build_of_torch(matrix):
    pins = pins_by_name(matrix.find("torch", "cpu"))
    assert pins["torch"].version == "2.13.0+cpu" and "nvidia-cudnn-cu13" not in pins and "numpy" in pins


def test_cuda_lock_takes_pypis_cuda_13_build(matrix):
    image = matrix.find("torch", "cuda")
    pins = pins_by_name(image)
    assert pins["torch"].version == "2.13.0"
    assert pins["nvidia-cudnn-cu13"].version.startswith("9.20.")
    assert pins["nvidia-cuda-runtime"].version.startswith("13.0.") and pins["nvidia-nvjitlink"].version.startswith(
        "13.0."
    )
    assert image.cuda == "13.0" and image.min_driver == "580"


def test_cuda_dockerfile_renders_with_the_pinned_base(matrix):
    image = matrix.find("torch", "cuda")
    text = context.render_dockerfile(image, REGISTRY_BASE)
    assert text.startswith("# torch-2.13.0-cuda: rendered by dlrepro")
    assert "FROM debian@sha256:%s AS system" % ("3" * 64) in text
    assert "--require-hashes" in text and "--no-deps" in text and "USER 1000:1000" in text
    assert 'org.dlrepro.device="cuda"' in text and "assert v == (3, 11)" in text
    assert "{{" not in text


def test_one_stage_writes_the_venv_with_the_transport_mounted_and_the_bases_python_layer_shared(matrix):
    """No venv copied between stages: the pip step bind-mounts the transport (so no layer holds it) and pip's cache
    (shared by every build here); apt's lists and archives are cache mounts per base; the layer that installs the
    base's Python is the same text in every image on that base (so the engine builds and stores it once), and each
    image's own system packages come in a layer after it."""
    torch, jax = matrix.find("torch", "cpu"), matrix.find("jax", "cpu")
    text = context.render_dockerfile(torch, REGISTRY_BASE)
    assert "COPY --from=install" not in text and "COPY transport" not in text and "AS install" not in text
    assert text.count("FROM ") == 2 and text.count("COPY requirements.lock /opt/dlrepro/requirements.lock\n") == 1
    pip_step = text[text.index("RUN --mount=type=bind") : text.index("-r /opt/dlrepro/requirements.lock")]
    assert pip_step.startswith(
        "RUN --mount=type=bind,source=transport,target=/tmp/transport \\\n"
        "    --mount=type=cache,id=dlrepro-pip,target=/tmp/pip-cache \\\n"
    )
    assert "pip install --cache-dir=/tmp/pip-cache --no-deps" in pip_step and "--no-cache-dir" not in text
    caches = (
        "--mount=type=cache,id=dlrepro-apt-archives-debian-sha256-%s,target=/var/cache/apt,sharing=shared "
        "--mount=type=cache,id=dlrepro-apt-lists-debian-sha256-%s,target=/var/lib/apt/lists,sharing=locked"
        % ("3" * 64, "3" * 64)
    )
    assert (
        "rm -rf /var/lib/apt/lists" not in text and "apt-get update" not in text
    )  # List-Cleanup=0 on each (context.py)

    def python_layer(dockerfile):
        start = dockerfile.index("RUN " + caches)
        return dockerfile[start : dockerfile.index("\n", dockerfile.index("useradd", start))]

    assert python_layer(text) == python_layer(context.render_dockerfile(jax, REGISTRY_BASE))
    assert "libgomp1" not in python_layer(text) and "install -y --no-install-recommends python3 python3-venv" in text
    assert text.index("useradd") < text.index(
        "RUN %s \\\n    apt-get -o APT::Get::List-Cleanup=0 update && apt-get install -y "
        "--no-install-recommends libgomp1\n" % caches
    )


def test_recipe_digest_follows_the_lock_not_the_transport(matrix, tmp_path, monkeypatch):
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path))
    image = matrix.find("torch", "cuda")
    with context.render(image, REGISTRY_BASE) as ctx, context.render(image, REGISTRY_BASE) as again:
        first = ctx.digest
        assert again.digest == first
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
    settings = transport.PipSettings(
        index_url="https://user:secret@mirror.invalid/simple", find_links=[str(wheel.parent)], cert=None
    )
    record = transport.write(tmp_path / "t", [pin], settings)
    assert [p.name for p in (tmp_path / "t" / "wheels").iterdir()] == [wheel.name]
    assert record["remote_indexes"] == ["https://mirror.invalid/simple"]
    conf = (tmp_path / "t" / "pip.conf").read_text()
    assert (
        "index-url = https://user:secret@mirror.invalid/simple" in conf and "find-links = /tmp/transport/wheels" in conf
    )


def test_a_malformed_lock_is_refused(tmp_path):
    bad = tmp_path / "x.txt"
    bad.write_text("torch>=2\n")
    with pytest.raises(ImageError, match="not an exact pin"):
        locks.parse(bad)


def test_matrix_errors_name_file_and_field(tmp_path):
    path = tmp_path / "matrix.yaml"
    text = MATRIX_FILE.read_text().replace("base: debian-bookworm\n", "base: debian-sid\n", 1)
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        load_matrix(path)
    first = [i.base for i in load_matrix().images].index("debian-bookworm")  # the entry the replace changed
    assert (
        "images.%d.base: unknown base 'debian-sid'; the file defines: debian-bookworm, debian-bullseye, "
        "python-3.6, python-3.9" % first in str(err.value)
    )


@pytest.mark.parametrize(
    "old, new, said",
    [
        (
            '"-DCUDA_ARCH_BIN=37 50 60 70 80 90"',
            '"-DCUDA_ARCH_BIN=80 90"',
            "cuda_archs: sm_37 sm_50 sm_60 sm_70 sm_80 sm_90 compute_90, but "
            "compile.cmake builds sm_80 sm_90 compute_90 "
            "(CUDA_ARCH_BIN and CUDA_ARCH_PTX); make them the same",
        ),
        (
            'env: {TORCH_CUDA_ARCH_LIST: "6.0"}',
            'env: {TORCH_CUDA_ARCH_LIST: "6.0 7.0+PTX"}',
            "cuda_archs: sm_60, but lua.env builds sm_60 sm_70 compute_70 (TORCH_CUDA_ARCH_LIST); make them the same",
        ),
        (
            'env: {TORCH_CUDA_ARCH_LIST: "6.0"}',
            'env: {TORCH_CUDA_ARCH_LIST: "Pascal"}',
            "lua.env.TORCH_CUDA_ARCH_LIST: 'Pascal' is not NUM.NUM or NUM.NUM+PTX; give each architecture so (e.g. "
            "6.0 7.0+PTX), so that cuda_archs can be checked against it",
        ),
        (
            "apt_components: [contrib, non-free, non-free-firmware]\n    system_packages: [libcudart11.0",
            "apt_components: [contrib, nonfree]\n    system_packages: [libcudart11.0",
            "apt_components.1",
        ),
        (
            "    system_site_packages: true\n    notes: >-\n      BVLC Caffe from Debian bullseye",
            "    system_site_packages: true\n    newer_builds: none\n    "
            "notes: >-\n      BVLC Caffe from Debian bullseye",
            "newer_builds: only a CUDA image has GPU code to compare; remove it from this cpu image",
        ),
    ],
)
def test_a_compiled_cuda_image_lists_the_archs_it_compiles_and_known_components(tmp_path, old, new, said):
    """The plan trusts cuda_archs: for an image compiled here they must be what CMake is told to build (Caffe's
    CUDA_ARCH_BIN and CUDA_ARCH_PTX, Torch 7's TORCH_CUDA_ARCH_LIST)."""
    path = tmp_path / "matrix.yaml"
    text = MATRIX_FILE.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    with pytest.raises(SpecError) as err:
        load_matrix(path)
    assert said in str(err.value)


def test_an_image_python_must_be_its_bases(tmp_path):
    path = tmp_path / "matrix.yaml"
    text = MATRIX_FILE.read_text().replace('python: "3.11"\n', 'python: "3.6"\n', 1)
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        load_matrix(path)
    line = MATRIX_FILE.read_text()[: MATRIX_FILE.read_text().index('python: "3.11"\n')].count("\n") + 1
    first = [i.python for i in load_matrix().images].index("3.11")
    assert err.value.problems == [
        "%s:%d: images.%d.python: base debian-bookworm provides Python 3.11, not 3.6: pick "
        "a base with that Python (e.g. python-3.6)" % (path, line, first)
    ]


def fake_pyenv(root, version, prints_prefix=None):
    """A stand-in for pyenv's build of ``version`` under ``root``: bin/python3 prints its prefix."""
    prefix = root / "versions" / version
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "libpython3.6m.so.1.0").parent.mkdir()
    (prefix / "lib" / "libpython3.6m.so.1.0").write_bytes(b"ELF")
    python = prefix / "bin" / "python3"
    python.write_text("#!/bin/sh\necho %s\n" % (prints_prefix or prefix))
    python.chmod(0o755)
    return prefix


def test_offline_python_is_pyenvs_build_copied_to_its_own_prefix(matrix, tmp_path, monkeypatch):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    prefix = fake_pyenv(tmp_path / "pyenv", "3.6.15")
    provider = pythons.relocatable("python-3.6", matrix.bases["python-3.6"].relocatable)
    assert provider.prefix == str(prefix) and len(provider.tree_sha256) == 64
    base = BaseRef(
        "python-3.6",
        REGISTRY_BASE.ref,
        "relocatable",
        REGISTRY_BASE.digest,
        REGISTRY_BASE.image_id,
        {"onto": {"name": "debian-bookworm"}},
        provider,
    )
    image = matrix.find("torch", "cpu").model_copy(update={"python": "3.6", "base": "python-3.6"})
    text = context.render_dockerfile(image, base)
    assert "COPY python/ %s/\n" % prefix in text and "tree sha256:%s" % provider.tree_sha256 in text
    assert "apt-get install -y --no-install-recommends libssl3 libffi8 " in text and " python3-venv" not in text
    assert " && chmod o+x %s \\\n" % " ".join(str(p) for p in reversed(prefix.parents) if str(p) != "/") in text
    assert "    %s/bin/python3 -m venv /opt/venv" % prefix in text and "assert v == (3, 6)" in text
    assert base.record["python"] == {
        "provider": "relocatable",
        "command": "%s/bin/python3" % prefix,
        "source": str(prefix),
        "prefix": str(prefix),
        "tree_sha256": provider.tree_sha256,
    }
    with context.render(image, base) as ctx:
        ctx.add_python(provider)
        assert (ctx.directory / "python" / "bin" / "python3").is_file()
        assert context.recipe_digest(ctx.directory) == ctx.digest  # the copy is not in the recipe, its digest is
    (prefix / "lib" / "libpython3.6m.so.1.0").write_bytes(b"ELF, another build")
    other = pythons.relocatable("python-3.6", matrix.bases["python-3.6"].relocatable)
    assert other.tree_sha256 != provider.tree_sha256
    base.python = other
    with context.render(image, base) as again:
        assert again.digest != ctx.digest


def test_a_missing_or_moved_python_build_is_a_clear_error(matrix, tmp_path, monkeypatch):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    with pytest.raises(
        ImageError,
        match=r"from pyenv's build at .*3\.9\.18, which is missing: install it "
        r"\(`pyenv install 3\.9\.18`\) or make the registry reachable",
    ):
        pythons.relocatable("python-3.9", matrix.bases["python-3.9"].relocatable)
    fake_pyenv(tmp_path / "pyenv", "3.9.18", prints_prefix="/opt/elsewhere")
    with pytest.raises(ImageError, match="does not run from its own prefix \\(/opt/elsewhere\\)"):
        pythons.relocatable("python-3.9", matrix.bases["python-3.9"].relocatable)


def test_unknown_image_is_a_clear_error(matrix):
    cpu_only = matrix.model_copy(update={"images": [i for i in matrix.images if i.name != "caffe-1.0.0-cuda"]})
    with pytest.raises(ImageError, match=r"no image of caffe on device cuda; its versions here: 1\.0\.0 \(cpu\)$"):
        cpu_only.find("caffe", "cuda")
    with pytest.raises(
        ImageError,
        match="no image for framework 'theano'; the matrix has: caffe, "
        "caffe2, chainer, cntk, jax, keras-cntk, keras-jax, ",
    ):
        matrix.find("theano", "cpu")


@pytest.mark.parametrize(
    "framework, cuda, cudnn_pin",
    [
        ("tensorflow", "12.9", "nvidia-cudnn-cu12"),
        ("mxnet", "11.7", "nvidia-cudnn-cu11"),
        ("jax", "13.5", "nvidia-cudnn-cu13"),
    ],
)
def test_every_framework_has_a_rendered_and_locked_cuda_flavour(matrix, framework, cuda, cudnn_pin):
    image = matrix.find(framework, "cuda")
    pins = pins_by_name(image)
    assert image.cuda == cuda and cudnn_pin in pins and image.cudnn and image.min_driver
    text = context.render_dockerfile(image, REGISTRY_BASE)
    assert "FROM debian@sha256:" in text and "--require-hashes" in text and "{{" not in text
    if framework == "mxnet":  # the wheel links against CUDA 11.7 libraries that the nvidia-*-cu11 wheels hold
        assert pins["mxnet-cu117"].version == "1.9.1" and pins["numpy"].version == "1.23.5"
        assert "ENV LD_LIBRARY_PATH=/opt/venv/lib/python3.11/site-packages/nvidia/cudnn/lib" in text.replace(
            "cuda_runtime/lib:/opt/venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib:/opt/venv/lib/python3.11/"
            "site-packages/nvidia/",
            "",
        )


def test_cpu_locks_pin_the_framework_versions(matrix):
    assert pins_by_name(matrix.find("tensorflow", "cpu"))["tensorflow-cpu"].version == "2.21.0"
    assert pins_by_name(matrix.find("mxnet", "cpu"))["numpy"].version == "1.23.5"
    jax = pins_by_name(matrix.find("jax", "cpu"))
    assert jax["jax"].version == jax["jaxlib"].version == "0.10.2" and "optax" in jax


def test_a_version_is_chosen_by_framework_at_version(matrix):
    assert matrix.find("tensorflow", "cpu", "2.21.0").name == "tensorflow-2.21.0-cpu"
    with pytest.raises(ImageError) as caught:
        matrix.find("mxnet", "cpu", "0.9.3")
    assert str(caught.value).endswith(
        "no image of mxnet 0.9.3 on device cpu; its versions here: 0.12.0 (cpu), "
        "0.12.0 (cuda), 1.9.1 (cpu), 1.9.1 (cuda)"
    )
    assert caught.value.remedy == "give one of those as mxnet@VERSION, or add an entry for it to the matrix"
    assert matrix.versions("mxnet", "cpu") == ["0.12.0", "1.9.1"] and matrix.versions("caffe", "cuda") == ["1.0.0"]


HOST = {
    "cpu_flags": ["avx", "avx2", "fma"],
    "cpu_model": "Old Xeon",
    "gpus": [
        {"index": 0, "name": "NVIDIA H200", "driver": "570.124.06", "capability": "9.0", "memory_bytes": 150 * 2**30}
    ],
}


def test_preflight_refuses_an_image_whose_build_this_cpu_cannot_run(matrix):
    from dlrepro.images import feasibility

    tensorflow = matrix.find("tensorflow", "cpu")
    assert tensorflow.cpu_flags == ["avx"] and feasibility.check(tensorflow, "cpu", host=HOST) is None
    reason, remedy = feasibility.check(tensorflow, "cpu", host=dict(HOST, cpu_flags=[]))
    assert reason == "tensorflow-2.21.0-cpu is built for CPUs with AVX, which this CPU (Old Xeon) lacks"
    assert remedy.startswith("run on a CPU with AVX, or choose another version of the framework (--framework")
    assert feasibility.check(matrix.find("mxnet", "cpu"), "cpu", host=dict(HOST, cpu_flags=[])) is None


def test_preflight_refuses_an_old_driver_and_a_gpu_the_build_has_no_kernels_for(matrix):
    from dlrepro.images import feasibility

    torch = matrix.find("torch", "cuda")
    reason, _ = feasibility.check(torch, "cuda", 0, HOST)
    assert reason == "torch-2.13.0-cuda (CUDA 13.0) needs NVIDIA driver 580 or newer; this host has 570.124.06"
    newer = dict(HOST, gpus=[dict(HOST["gpus"][0], driver="580.95.05")])
    assert feasibility.check(torch, "cuda", 0, newer) is None
    ampere_only = torch.model_copy(update={"cuda_archs": ["sm_80", "sm_86"]})
    reason, remedy = feasibility.check(ampere_only, "cuda", 0, newer)
    assert reason == (
        "torch-2.13.0-cuda has no kernels for NVIDIA H200 (sm_90, compute capability 9.0); its build ships sm_80, sm_86"
    )
    assert remedy.startswith("run on a GPU the build supports")


def test_the_studies_gpu_builds_copy_cuda_8_from_a_vendor_image_and_say_what_is_missing(matrix, monkeypatch):
    """tensorflow-gpu 1.4.0 and mxnet-cu80 0.12.0 link CUDA 8 (and TensorFlow cuDNN 6) without bundling it: their
    Dockerfiles copy it from NVIDIA's runtime image, pinned by the image ID found here; without it the build stops
    first, naming the image, what it holds and how to supply it."""
    import docker

    from dlrepro.images import vendor

    tf = matrix.find("tensorflow", "cuda", "1.4.0")
    assert matrix.find("tensorflow", "cuda").version == "2.21.0"  # today's stays the plain name
    assert (pins_by_name(tf)["tensorflow-gpu"].version, pins_by_name(tf)["numpy"].version) == ("1.4.0", "1.13.3")
    mx = matrix.find("mxnet", "cuda", "0.12.0")
    assert pins_by_name(mx)["mxnet-cu80"].version == "0.12.0" and mx.vendor == tf.vendor
    found = vendor.VendorRef("nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04", "sha256:" + "5" * 64)
    text = context.render_dockerfile(tf, REGISTRY_BASE, found)
    assert text.index("FROM nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04 AS vendor\n") < text.index("AS system")
    assert "copied from nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04 (image sha256:%s)" % ("5" * 64) in text
    assert "COPY --from=vendor /usr/local/cuda-8.0/ /usr/local/cuda-8.0/\n" in text
    assert "RUN ln -s libcudnn.so.6.0.21 /usr/lib/x86_64-linux-gnu/libcudnn.so.6 && " in text
    assert "ENV LD_LIBRARY_PATH=/usr/local/cuda-8.0/lib64:" in text and "{{" not in text
    other = context.render_dockerfile(tf, REGISTRY_BASE, vendor.VendorRef(found.ref, "sha256:" + "6" * 64))
    assert other != text  # another vendor image under the same tag is another recipe, hence another image tag

    class Images:
        def __init__(self, here, pullable):
            self.here, self.pullable = here, pullable

        def get(self, ref):
            if not self.here:
                raise docker.errors.ImageNotFound("no such image")
            return type("Found", (), {"id": "sha256:" + "7" * 64})()

        def pull(self, ref):
            if not self.pullable:
                raise docker.errors.APIError("no registry")
            return self.get(ref) if self.here else type("Pulled", (), {"id": "sha256:" + "8" * 64})()

    for here, pullable, pull, expected in ((True, False, True, "7"), (False, True, True, "8")):
        monkeypatch.setattr(vendor, "client", lambda: type("Client", (), {"images": Images(here, pullable)})())
        assert vendor.ensure(tf, pull, log=lambda *a: None).record == {
            "ref": "nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04",
            "image_id": "sha256:" + expected * 64,
        }
    for pull in (True, False):
        monkeypatch.setattr(vendor, "client", lambda: type("Client", (), {"images": Images(False, False)})())
        with pytest.raises(ImageError) as caught:
            vendor.ensure(mx, pull)
        assert str(caught.value) == (
            "mxnet-0.12.0-cuda needs NVIDIA's CUDA 8.0.61 runtime libraries (cudart, cuBLAS, cuFFT, cuRAND, cuSOLVER, "
            "NVRTC) and cuDNN 6.0.21 from the vendor image nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04, which is not "
            "here and no registry answered (no Debian suite or Python registry reachable here serves them)"
        )
        assert caught.value.remedy == (
            "pull nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04 where a registry is reachable, "
            "then `docker save nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04 | docker load` here"
        )
    assert vendor.ensure(matrix.find("torch", "cuda")) is None
