"""Render an image's build context and name it by the hash of its recipe.

The context is a folder: ``Dockerfile`` (rendered from images/Dockerfile.j2),
``requirements.lock`` (the image's lock), ``transport/`` (CA bundle, pip
settings, local copies of locked files; see dlrepro.transport) and, when the base's
Python is a copied build, ``python/`` (see dlrepro.pythons; the Dockerfile names its
tree digest, so the recipe digest covers it), and for a Lua framework ``lua-sources/`` (its source archives, from
the dataset cache; the Dockerfile names each SHA-256, so the recipe digest covers them too). The recipe
digest covers the Dockerfile, which names the base by digest, and the lock: it
changes when the recipe changes, so an unchanged recipe keeps its tag and is
never rebuilt, whichever way its bytes travelled. The Python packages are pinned
by hash; the few Debian packages (python3, ...) come from the base's suite at
build time and are recorded in the image (/opt/dlrepro/dpkg.txt, copied into
every bundle) rather than pinned: a rebuild of the same recipe on a later day can
get a newer Debian point release, and the bundle shows it.
"""

import contextlib
import hashlib
import re
import shlex
import shutil
import tempfile
from pathlib import Path

import jinja2

from dlrepro import cache
from dlrepro.images import locks, pythons, transport
from dlrepro.images.matrix import IMAGES_DIR
from dlrepro.inputs import datasets

RECIPE_FILES = ("Dockerfile", "requirements.lock")
LUA_DIR = "lua-sources"  # the context's folder of a Lua framework's source archives
PIP_CACHE = "/tmp/pip-cache"  # the pip step's cache mount (pip's downloads and the wheels it builds from sdists)


class Context:
    def __init__(self, image, directory, digest):
        self.image, self.directory, self.digest = image, directory, digest

    def add_transport(self, settings, ca_bundle=None):
        """Fill transport/ (only needed when building); returns its record. See dlrepro.transport."""
        return transport.write(self.directory / "transport", locks.parse(self.image.lock), settings, ca_bundle)

    def add_python(self, provider):
        """Copy a relocatable CPython build into python/ (only needed when building)."""
        if provider.source:
            shutil.copytree(provider.source, self.directory / pythons.CONTEXT_DIR, symlinks=True)

    def add_lua_sources(self, sources_from=None, log=print):
        """Copy a Lua framework's source archives (images.matrix.LuaBuild) into lua-sources/ (only needed when
        building): each from the dataset cache, where it is fetched from its canonical mirror first, or verified
        from ``sources_from`` (a folder holding the archives by name) into the cache; ``log`` says which it used.
        Raises DatasetError naming the archive, what was tried and the remedy."""
        if not self.image.lua:
            return
        target = self.directory / LUA_DIR
        target.mkdir(exist_ok=True)
        for source in self.image.lua.sources:
            record = (
                datasets.import_local(source.archive, sources_from)
                if sources_from
                else datasets.ensure(source.archive, log)
            )
            blob = datasets.root() / "sha256" / record.files["archive"]
            shutil.copyfile(blob, target / record.dataset.files["archive"].name)
            log(
                "%s: %s from %s"
                % (
                    self.image.name,
                    record.dataset.files["archive"].name,
                    (record.sources.get("archive") or {}).get("mirror", "the cache"),
                )
            )

    @property
    def tag(self):
        """``dlrepro/<framework>:<version>-<device>-<first 12 hex of the recipe digest>``."""
        return "dlrepro/%s:%s-%s-%s" % (self.image.framework, self.image.version, self.image.device, self.digest[:12])


# apt-get update on the cache-mounted lists: without List-Cleanup=0 it deletes every file it does not know there,
# Buildah's lock file of the mount too (Buildah 1.28, Podman 4.3), and the next step that mounts it waits forever
APT_UPDATE = "-o APT::Get::List-Cleanup=0 update"


def apt_caches(base):
    """The ``RUN --mount`` options that keep apt's package lists and downloaded archives in the engine's build cache,
    one pair per base (``base.ref``), so that no layer holds them and every build on that base reuses them.

    One apt at a time: the lists mount is ``sharing=locked`` and every step that runs apt mounts both, so holding it
    covers the archives (``sharing=shared``) too. The locked mount is the step's one locked mount and its last:
    Buildah 1.28 (Podman 4.3, Debian bookworm) releases after a RUN only the locks of its last cache mount
    (run_common.go ``runSetupRunMounts`` assigns, not appends, each cache mount's locked paths; fixed by Buildah
    pull request 4349), so a step with a locked mount before another cache mount leaves that lock held and the next
    step that mounts it waits forever (tests/images/test_images.py builds both orders' rule into a check of every
    image)."""
    key = re.sub(r"[^A-Za-z0-9_.-]+", "-", base.ref)
    return " ".join(
        "--mount=type=cache,id=dlrepro-apt-%s-%s,target=%s,sharing=%s" % (what, key, target, sharing)
        for what, target, sharing in (
            ("archives", "/var/cache/apt", "shared"),
            ("lists", "/var/lib/apt/lists", "locked"),
        )
    )


def lua_sources(image):
    """What the Dockerfile says of each source archive of ``image.lua`` (none without): its file, the folder it
    unpacks to (git archive's prefix NAME-COMMIT, the file's name less .tar), name, commit, SHA-256, how it
    installs and the edits made to it first."""
    found = []
    for source in image.lua.sources if image.lua else []:
        pinned = datasets.lookup(source.archive).files["archive"]
        folder = pinned.name[: -len(".tar")]
        found.append(
            {
                "file": pinned.name,
                "folder": folder,
                "name": folder.rsplit("-", 1)[0],
                "commit": folder.rsplit("-", 1)[1],
                "sha256": pinned.sha256,
                "cmake": source.cmake,
                "modules": source.modules,
                "edits": source.edits,
            }
        )
    return found


def shell_text(text):
    """``text`` as one word of a Dockerfile's shell command: quoted (shlex), or where it spans lines, the output of
    printf, one argument a line (a Dockerfile instruction cannot hold a newline; command substitution keeps the
    inner ones, so images.matrix.SourceEdit refuses a text ending in one)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return shlex.quote(text)
    return "\"$(printf '%s' %s)\"" % ("\\n".join(["%s"] * len(lines)), " ".join(shlex.quote(line) for line in lines))


def render_dockerfile(image, base, vendor=None):
    """The Dockerfile text for ``image`` on ``base`` (a bases.BaseRef), copying from ``vendor`` (a vendor.VendorRef)
    when the image has vendor libraries. It needs BuildKit (Docker) or Buildah (Podman): ``RUN --mount``."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(IMAGES_DIR)), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    env.filters["shell"] = shlex.quote
    env.filters["shell_text"] = shell_text
    major, minor = image.python.split(".")
    return env.get_template("Dockerfile.j2").render(
        image=image,
        base=base,
        vendor=vendor,
        python=base.python,
        python_major=major,
        python_minor=minor,
        transport_dir=transport.CONTAINER_DIR,
        python_dir=pythons.CONTEXT_DIR,
        pinned=bool(locks.parse(image.lock)),
        apt_caches=apt_caches(base),
        apt_update=APT_UPDATE,
        pip_cache=PIP_CACHE,
        lua_dir=LUA_DIR,
        lua_sources=lua_sources(image),
    )


def recipe_digest(directory):
    """SHA-256 over the recipe files' names and contents (transport/ excluded)."""
    h = hashlib.sha256()
    for name in RECIPE_FILES:
        data = (directory / name).read_bytes()
        h.update(b"%s\0%d\0" % (name.encode(), len(data)))
        h.update(data)
    return h.hexdigest()


@contextlib.contextmanager
def render(image, base, vendor=None):
    """Write the recipe of ``image`` (Dockerfile and lock) in a folder of its own under the cache's
    builds/<image>/, removed on exit; yields a Context. A folder per call: two processes (xdist workers, a study
    and a test) rendering one image at once once removed each other's context mid-write (FileExistsError).

    Raises ImageError when the lock file is missing or malformed.
    """
    locks.parse(image.lock)
    with tempfile.TemporaryDirectory(prefix="context-", dir=str(cache.directory("builds", image.name))) as folder:
        directory = Path(folder)
        (directory / "Dockerfile").write_text(render_dockerfile(image, base, vendor))
        shutil.copyfile(image.lock, directory / "requirements.lock")
        (directory / "transport").mkdir()
        yield Context(image, directory, recipe_digest(directory))
