"""The image matrix (images/matrix.yaml): which image runs which framework version on which device."""

import re
from pathlib import Path
from typing import Literal, Optional

from pydantic import Field, field_validator, model_validator

from dlrepro import REPO_ROOT
from dlrepro.errors import ImageError
from dlrepro.inputs import datasets, yamlfile
from dlrepro.inputs import frameworks as frameworksmod
from dlrepro.inputs.yamlfile import Strict
from runner.frameworks import Token

IMAGES_DIR = REPO_ROOT / "images"
MATRIX_FILE = IMAGES_DIR / "matrix.yaml"
LOCKS_DIR = IMAGES_DIR / "locks"


class Bootstrap(Strict):
    suite: str = Field(description="Debian suite given to mmdebstrap, e.g. bookworm")
    variant: Literal["minbase", "buildd"] = "minbase"


class Python(Strict):
    """The CPython a base provides: its version and the Debian packages that install it (none when
    the base already has it, as official Python images do)."""

    version: str = Field(pattern=r"^3\.\d+$")
    packages: list[str] = []


class Relocatable(Strict):
    """Offline provider of a Python that no Debian suite here has: a relocatable CPython build
    (pyenv's, built with --enable-shared and an RPATH to its own lib/) copied onto base ``onto`` at
    the same prefix it was built for, plus the shared libraries it links against."""

    onto: str
    pyenv: str = Field(pattern=r"^\d+\.\d+\.\d+$", description="the build in $PYENV_ROOT/versions/<this>")
    packages: list[str] = Field(min_length=1, description="Debian packages of the libraries the build links against")


class Base(Strict):
    """A base image: pulled by ``registry`` digest, or made offline by ``bootstrap`` (mmdebstrap)
    or ``relocatable`` (a CPython build copied onto another base)."""

    description: str
    registry: str = Field(
        pattern=r"^[^@\s]+@sha256:[0-9a-f]{64}$", description="image reference pinned by digest: NAME[:TAG]@sha256:HEX"
    )
    python: Python
    bootstrap: Optional[Bootstrap] = None
    relocatable: Optional[Relocatable] = None

    @model_validator(mode="after")
    def _one_offline_way(self):
        if (self.bootstrap is None) == (self.relocatable is None):
            raise ValueError(
                "give exactly one offline way to make this base: bootstrap (mmdebstrap a Debian "
                "suite) or relocatable (copy a CPython build onto another base)"
            )
        return self


class Vendor(Strict):
    """Libraries a framework's wheel links without bundling them that neither a package registry reachable here
    nor a Debian suite serves (NVIDIA's CUDA 8 runtime and cuDNN 6 for the studies' GPU builds): copied into the
    image, at the same paths, from a vendor image the user supplies (pulled where a registry answers, or
    ``docker load``-ed). The vendor image is named by tag: no digest could be read from here, so the build pins
    what it found by its image ID (in the Dockerfile, hence in the content-hashed tag) and records it."""

    image: str = Field(
        pattern=r"^[^@\s]+:[^@\s]+$", description="vendor image by tag, e.g. nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04"
    )
    provides: str = Field(description="what it holds, by version: 'CUDA 8.0.61 runtime libraries, cuDNN 6.0.21'")
    paths: list[str] = Field(min_length=1, description="absolute paths in the vendor image copied to the same paths")


def _compiled_archs(cmake):
    """The architectures CMake arguments compile for (Caffe's -DCUDA_ARCH_BIN=37 50 -> sm_37 sm_50,
    -DCUDA_ARCH_PTX=90 -> compute_90); None when they name neither."""
    found, named = [], False
    for argument in cmake:
        for flag, prefix in (("-DCUDA_ARCH_BIN=", "sm_"), ("-DCUDA_ARCH_PTX=", "compute_")):
            if argument.startswith(flag):
                named = True
                found += [prefix + arch for arch in argument[len(flag) :].split()]
    return found if named else None


def _lua_archs(env):
    """The architectures TORCH_CUDA_ARCH_LIST (cutorch's and cunn's CMake read it) compiles for: "6.0 7.0+PTX" ->
    sm_60 sm_70 compute_70; None when ``env`` does not set it. Raises ValueError for an entry of another form (a
    name such as Pascal, or 5.2(5.0)), which cuda_archs could not be checked against."""
    if "TORCH_CUDA_ARCH_LIST" not in env:
        return None
    found = []
    for entry in env["TORCH_CUDA_ARCH_LIST"].replace(";", " ").split():
        match = re.fullmatch(r"(\d+)\.(\d+)(\+PTX)?", entry)
        if not match:
            raise ValueError(
                "lua.env.TORCH_CUDA_ARCH_LIST: %r is not NUM.NUM or NUM.NUM+PTX; give each architecture so "
                "(e.g. 6.0 7.0+PTX), so that cuda_archs can be checked against it" % entry
            )
        arch = match.group(1) + match.group(2)
        found += ["sm_" + arch] + (["compute_" + arch] if match.group(3) else [])
    return found


def _arch_order(arch):
    return (arch.startswith("compute"), int(arch.split("_")[1]))


class SourceEdit(Strict):
    """One exact replacement in the fetched source before it is configured; the build fails unless ``old`` occurs
    exactly once in ``path``, so an edit that no longer applies is never silently skipped."""

    path: str = Field(description="file, relative to the source folder")
    old: str = Field(pattern=r"[^\n]$", description="the text replaced; it may span lines, not end with a newline")
    new: str = Field(
        pattern=r"^$|[^\n]$", description="the replacement (e.g. a line and one more #include); not ending in a newline"
    )
    why: str = Field(description="one line: why the source needs it")


class Compile(Strict):
    """A framework compiled in the image from a Debian source package, where no registry or Debian suite reachable
    here ships a build for the GPUs wanted (BVLC Caffe for sm_80/sm_90: Debian dropped caffe-cuda). A stage of
    its own fetches the source with ``apt-get source`` (checksums from the suite's signed index), configures it
    with CMake and installs it under ``prefix``; the final image copies ``prefix``, adds ``prefix``/lib to the
    loader's path and ``prefix``/``python`` to the venv's."""

    why: str = Field(description="one line: why this framework is compiled rather than installed")
    source: str = Field(
        pattern=r"^[a-z0-9.+-]+=[A-Za-z0-9.+~:-]+$",
        description="source package=version, e.g. caffe=1.0.0+git20180821.99bd997-8",
    )
    suite: str = Field(description="the Debian suite whose source index has that version (e.g. bullseye)")
    packages: list[str] = Field(min_length=1, description="build dependencies (Debian packages)")
    edits: list[SourceEdit] = Field([], description="exact replacements in the source (e.g. for a newer library API)")
    cmake: list[str] = Field(description="CMake arguments besides the install prefix, e.g. -DCUDA_ARCH_BIN=80 90")
    prefix: str = Field("/opt/compiled", pattern=r"^/[^\s]+$", description="install prefix")
    python: str = Field("python", description="the folder under prefix that holds the Python package")


class LuaSource(Strict):
    """One source archive of a Lua framework: a dataset of dlrepro/inputs/datasets.yaml (its one file, pinned by
    SHA-256)
    unpacked into /src, then either configured with CMake and installed (``cmake``) or its ``modules`` copied."""

    archive: str = Field(description="the dataset naming the archive, e.g. lua-torch7")
    cmake: bool = Field(True, description="configure with LuaBuild.cmake and `make install`, as its rockspec does")
    edits: list[SourceEdit] = Field([], description="exact replacements in the source (e.g. for a newer CUDA API)")
    modules: dict[str, str] = Field(
        {},
        description="pure-Lua files copied instead: module path under share/lua/5.1 "
        "-> file in the source folder (e.g. moses.lua: moses.lua)",
    )

    @field_validator("archive")
    @classmethod
    def _known_archive(cls, value):
        if value not in datasets.catalogue().datasets:
            raise ValueError(
                "no dataset %r in %s: add the archive there (name, bytes, sha256, mirror)"
                % (value, datasets.CATALOGUE.name)
            )
        return value

    @model_validator(mode="after")
    def _one_way(self):
        if self.cmake == bool(self.modules):
            raise ValueError("give cmake: true or modules (not both): how the archive %s is installed" % self.archive)
        return self


class LuaBuild(Strict):
    """A Lua framework built in the image from its source archives (Lua Torch 7: no registry or Debian suite here
    serves it). A stage of its own installs ``packages`` (LuaJIT and a compiler from Debian), unpacks the archives
    after checking each SHA-256 that dlrepro/inputs/datasets.yaml pins (the Dockerfile names them, so the recipe digest
    covers the sources), lays out the tree LuaRocks would make under ``prefix`` (bin/luajit, include, lib) and builds
    each source in order; the final image copies ``prefix`` and finds its modules through LUA_PATH and LUA_CPATH.
    Where the build takes the archives from: `dlrepro build` fetches them like a dataset (``--sources-from FOLDER``:
    a local folder) and says which."""

    why: str = Field(description="one line: why this framework is compiled here")
    packages: list[str] = Field(min_length=1, description="Debian build dependencies")
    prefix: str = Field("/opt/torch7", pattern=r"^/[^\s]+$", description="install tree")
    cmake: list[str] = Field(
        description="CMake arguments besides the tree's (CMAKE_INSTALL_PREFIX, LUA, LUALIB, "
        "LUA_BINDIR, LUA_INCDIR, LUA_LIBDIR, LUADIR, LIBDIR, CMAKE_PREFIX_PATH)"
    )
    env: dict[str, str] = Field(
        {},
        description="environment of the build stage's CMake and make (TORCH_CUDA_ARCH_LIST: the GPU code cutorch "
        "and cunn compile, e.g. 6.0)",
    )
    sources: list[LuaSource] = Field(min_length=1, description="in build order")
    check: str = Field(
        min_length=1,
        description="a Lua chunk LuaJIT runs in the final image: it loads what the adapter's harness needs",
    )


class Variant(Strict):
    """Another framework this image runs through an adapter of its own: Keras 3 on the image's framework as its
    backend (keras-jax in the JAX image), whose package the image's lock holds at ``version``."""

    framework: str
    version: str


class Image(Strict):
    framework: str
    version: str
    device: Literal["cpu", "cuda"]
    python: str = Field(pattern=r"^3\.\d+$", description="must be the Python of the base")
    base: str
    system_packages: list[str] = Field([], description="Debian packages besides Python (shared libraries)")
    cuda: Optional[str] = None
    cudnn: Optional[str] = None
    min_driver: Optional[str] = None
    cuda_archs: list[str] = Field([], description="GPU architectures the build ships kernels for (sm_XY); [] = unknown")
    cpu_flags: list[Literal["avx", "avx2", "fma", "avx512f"]] = Field(
        [], description="CPU instruction sets the framework build needs (checked before running)"
    )
    system_site_packages: bool = Field(
        False,
        description="the venv sees the Python packages Debian installs "
        "(frameworks that come as Debian packages, e.g. BVLC Caffe)",
    )
    env: dict[str, str] = Field({}, description="environment variables of the image (e.g. LD_LIBRARY_PATH)")
    links: dict[str, str] = Field(
        {},
        description="symbolic links made in the final image, path -> target (e.g. an "
        "old soname no Debian package has, onto a copy a wheel bundles)",
    )
    lock_excludes: list[str] = Field(
        [],
        description="dependencies left out of the lock: never imported by the "
        "runner, and without a wheel (the lock takes wheels only)",
    )
    source_builds: dict[str, list[str]] = Field(
        {},
        description="pure-Python packages that PyPI serves as source "
        "only (Chainer), locked by their sdist's hash and built in the image: "
        "name -> its requirements as its setup.py declares them (uv would "
        "have to run setup.py under the image's Python to read them)",
    )
    vendor: Optional[Vendor] = Field(None, description="libraries copied from a vendor image the user supplies")
    newer_builds: Optional[str] = Field(
        None,
        description="for a CUDA image: what was checked, and found, of the "
        "framework's builds with newer GPU code than this one (the plan says it where "
        "the image has no kernels for a GPU)",
    )
    caveat: Optional[str] = Field(
        None,
        description="what this image's numbers are not, for the layers in "
        "caveat_layers (e.g. convolutions without cuDNN); the plan says it beside a claim "
        "that rests on such a job",
    )
    caveat_layers: list[str] = Field([], description="layer types the caveat concerns ([]: every model)")
    apt_components: list[Literal["contrib", "non-free", "non-free-firmware"]] = Field(
        [],
        description="components of the base's suite besides main that system_packages come from (contrib, "
        "non-free: NVIDIA's CUDA libraries)",
    )
    compile: Optional[Compile] = Field(None, description="the framework compiled from its Debian source package")
    lua: Optional[LuaBuild] = Field(None, description="a Lua framework built from its source archives")
    no_cuda: Optional[str] = Field(
        None,
        description="for a CPU image whose framework has no CUDA image: why (what "
        "was tried and failed, or not tried); the plan says it beside a GPU claim",
    )
    variants: list[Variant] = Field(
        [], description="other frameworks the image runs, each at its version (Keras on this framework as its backend)"
    )
    notes: Optional[str] = None

    _known_base = field_validator("base")(yamlfile.reference("bases", "base"))

    @model_validator(mode="after")
    def _cuda_fields(self):
        if self.no_cuda and self.device != "cpu":
            raise ValueError(
                "no_cuda: says why a CPU image's framework has no CUDA image; remove it from this %s "
                "image" % self.device
            )
        if self.newer_builds and self.device != "cuda":
            raise ValueError(
                "newer_builds: only a CUDA image has GPU code to compare; remove it from this %s image" % self.device
            )
        for compiled, where, by in (
            (
                _compiled_archs(self.compile.cmake) if self.compile else None,
                "compile.cmake",
                "CUDA_ARCH_BIN and CUDA_ARCH_PTX",
            ),
            (_lua_archs(self.lua.env) if self.lua else None, "lua.env", "TORCH_CUDA_ARCH_LIST"),
        ):
            if compiled is not None and sorted(compiled, key=_arch_order) != sorted(self.cuda_archs, key=_arch_order):
                raise ValueError(
                    "cuda_archs: %s, but %s builds %s (%s); make them the same"
                    % (" ".join(self.cuda_archs) or "none", where, " ".join(compiled), by)
                )
        return self

    def version_of(self, framework):
        """The version of ``framework`` this image runs (its own, or a variant's); None when it runs no such
        framework."""
        if framework == self.framework:
            return self.version
        return next((v.version for v in self.variants if v.framework == framework), None)

    @property
    def name(self):
        return "%s-%s-%s" % (self.framework, self.version, self.device)

    @property
    def lock_input(self) -> Path:
        return LOCKS_DIR / ("%s.in" % self.name)

    @property
    def lock(self) -> Path:
        return LOCKS_DIR / ("%s.txt" % self.name)


class Matrix(Strict):
    bases: dict[str, Base]
    default_frameworks: list[str] = Field(min_length=1)
    images: list[Image] = Field(min_length=1)

    @model_validator(mode="after")
    def _pythons_match(self):
        for name, base in self.bases.items():
            if base.relocatable and base.relocatable.onto not in self.bases:
                raise ValueError(
                    yamlfile.at(
                        "bases.%s.relocatable.onto" % name,
                        "unknown base %r; the matrix has: %s" % (base.relocatable.onto, ", ".join(self.bases)),
                    )
                )
        for i, image in enumerate(self.images):
            have = self.bases[image.base].python.version
            if image.python != have:
                raise ValueError(
                    yamlfile.at(
                        "images.%d.python" % i,
                        "base %s provides Python %s, not %s: pick a base "
                        "with that Python (e.g. python-%s)" % (image.base, have, image.python, image.python),
                    )
                )
        return self

    def find(self, framework, device, version=None):
        """The image for (framework, device[, version]), the last one listed when no version is given.

        Raises ImageError naming the matrix file and the entries that exist.
        """
        found = [
            i
            for i in self.images
            if i.device == device and i.version_of(framework) is not None and version in (None, i.version_of(framework))
        ]
        if found:
            return found[-1]
        served = [
            "%s (%s)" % (i.version_of(framework), i.device) for i in self.images if i.version_of(framework) is not None
        ]
        if served:
            raise ImageError(
                "%s: no image of %s%s on device %s; its versions here: %s"
                % (MATRIX_FILE, framework, " " + version if version else "", device, ", ".join(served)),
                "give one of those as %s@VERSION, or add an entry for it to the matrix" % framework,
            )
        raise ImageError(
            "%s: no image for framework %r; the matrix has: %s" % (MATRIX_FILE, framework, ", ".join(self.frameworks()))
        )

    def no_cuda(self, framework):
        """Why ``framework`` has no CUDA image, as its CPU image's ``no_cuda`` says; None when it does not say."""
        return next((i.no_cuda for i in self.images if i.framework == framework and i.no_cuda), None)

    def versions(self, framework, device):
        """The versions of ``framework`` the matrix has an image of on ``device``, in its order (the last one is
        what the plain name selects: today's)."""
        return [
            i.version_of(framework) for i in self.images if i.version_of(framework) is not None and i.device == device
        ]

    def check_versions(self, tokens, devices):
        """Raise ImageError naming --framework, the versions served and the nearest one, for a token of ``tokens``
        (NAME or NAME@VERSION; None: none) that names no version after its @ ("tensorflow@") or a version that no
        image of the matrix on ``devices`` runs ("tensorflow@1.4", where 1.4.0 is served): `dlrepro run` and
        `dlrepro build` refuse it before anything is built or written. Plain names are left to ``find``."""
        where = "/".join(devices)
        for text in tokens or []:
            try:
                name, version = Token.parse(text)
                problem = "no image of %s %s on %s" % (name, version, where)
            except ValueError as exc:
                name, version, problem = text.partition("@")[0], "", str(exc)  # "@1.4.0": no token to read
            served = list(dict.fromkeys(v for d in devices for v in self.versions(name, d)))
            if version is None or version in served or name not in self.frameworks():
                continue  # a plain name, a version served, or no framework of the matrix (find names those)
            if not served:
                raise ImageError(
                    "--framework %s: %s; %s has no %s image on %s" % (text, problem, MATRIX_FILE.name, name, where),
                    "choose another --device, or add an entry for it to the matrix",
                )
            near = frameworksmod.nearest(version, served) if version else None
            raise ImageError(
                "--framework %s: %s; its versions on %s here: %s%s"
                % (
                    text,
                    problem,
                    where,
                    ", ".join(served),
                    "; did you mean %s?" % Token(name, near).text if near else "",
                ),
                "give --framework %s@VERSION with one of those, or %s alone for the newest (%s)"
                % (name, name, served[-1]),
            )

    def frameworks(self):
        """Every framework an image of the matrix runs (its own and its variants'), sorted."""
        return sorted({i.framework for i in self.images} | {v.framework for i in self.images for v in i.variants})

    def select(self, frameworks=None, devices=("cpu",)):
        """The entries to build for framework tokens (NAME or NAME@VERSION; ["all"]: every framework; None: the
        default_frameworks) on ``devices``. Raises ImageError for a device other than cpu or cuda, or an
        entry the matrix lacks (a version: ``check_versions``)."""
        wrong = [d for d in devices if d not in ("cpu", "cuda")]
        if wrong:
            raise ImageError("--device: expected cpu or cuda (got %s)" % ", ".join(map(repr, wrong)))
        if frameworks == ["all"]:
            frameworks = sorted({i.framework for i in self.images})
        self.check_versions(frameworks, devices)
        chosen = []
        for token in frameworks or self.default_frameworks:
            name, version = Token.parse(token)
            chosen += [
                image for image in (self.find(name, device, version) for device in devices) if image not in chosen
            ]  # a variant's image is its backend's
        return chosen

    def entry(self, name):
        """The entry called ``name`` (e.g. torch-2.13.0-cpu); raises ImageError naming the ones that exist."""
        for image in self.images:
            if image.name == name:
                return image
        raise ImageError(
            "--image: no image %r in %s; it has: %s" % (name, MATRIX_FILE, ", ".join(e.name for e in self.images))
        )


def load(path=MATRIX_FILE):
    """Load and validate the image matrix; raises SpecError naming file, line and field."""
    return yamlfile.load(path, Matrix, names_of=("bases",))
