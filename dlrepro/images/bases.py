"""Base images: pulled from a registry by digest, or made offline when none is reachable.

Offline, a Debian base is bootstrapped with mmdebstrap (apt's parallel downloads; a minbase
bookworm in about 13 s, where debootstrap took 26-38 s on the same 2-CPU machine), and a Python
base (a CPython no Debian suite has) becomes another base plus a relocatable CPython build that
the Dockerfile copies in (dlrepro.pythons). Either way the base is recorded by a digest: the
registry's manifest digest, or the SHA-256 of the bootstrapped root filesystem tar,
which is also the diff_id of the single layer that ``docker import`` makes (checked
after the import), and for a copied CPython the SHA-256 of its file tree. Builds that run
at once (dlrepro.images.build.ensure_all) wait for a base another one is making.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

import docker

from dlrepro import cache, engine, heartbeat
from dlrepro.engine import client
from dlrepro.errors import ImageError
from dlrepro.images import pythons
from runner.contract import utc_now

LABEL = "org.dlrepro.base"
SOURCES = ("auto", "registry", "bootstrap")
BOOTSTRAP_REPO = "dlrepro/base"
_making = {}  # base name -> the lock held while it is made
_making_lock = threading.Lock()


class BaseRef:
    """A base image ready for ``FROM``: ``ref`` goes into the Dockerfile, ``record`` into bundles;
    ``python`` (a pythons.Provider) says how the Dockerfile gets its Python."""

    def __init__(self, name, ref, source, digest, image_id, detail, python=None):
        self.name, self.ref, self.source, self.digest, self.image_id = name, ref, source, digest, image_id
        self.detail, self.python = detail, python

    @property
    def record(self):
        return dict(
            self.detail,
            name=self.name,
            ref=self.ref,
            source=self.source,
            digest=self.digest,
            image_id=self.image_id,
            python=self.python.record if self.python else None,
        )


def _digest_ref(pinned):
    """``NAME@sha256:HEX`` from ``NAME[:TAG]@sha256:HEX`` (the tag is informative only)."""
    name, digest = pinned.split("@", 1)
    repo = name.rsplit(":", 1)[0] if ":" in name.split("/")[-1] else name
    return "%s@%s" % (repo, digest)


def _registry_base(name, base, log, pull):
    """The registry base if it is here (or, with ``pull``, once pulled by digest); else None."""
    ref = _digest_ref(base.registry)
    try:
        image = client().images.get(ref)
    except docker.errors.ImageNotFound:
        if not pull:
            return None
        try:
            image = client().images.pull(ref)
        except docker.errors.APIError as exc:
            log("base %s: cannot pull %s: %s" % (name, base.registry, str(exc.explanation or exc)[:160]))
            return None
        log("base %s: pulled %s" % (name, base.registry))
    return BaseRef(name, ref, "registry", ref.split("@", 1)[1], image.id, {"pinned": base.registry})


def _bootstrapped(name):
    images = client().images.list(name=BOOTSTRAP_REPO, filters={"label": "%s=%s" % (LABEL, name)})
    if not images:
        return None
    image = max(images, key=lambda i: i.attrs["Created"])
    labels = image.labels
    tags = [engine.local_name(t) for t in image.tags]  # Podman's import also leaves a ":latest"
    ref = ([t for t in tags if t.startswith("%s:%s-" % (BOOTSTRAP_REPO, name))] or tags)[0]
    return BaseRef(
        name,
        ref,
        "bootstrap",
        labels["org.dlrepro.rootfs"],
        image.id,
        {
            "suite": labels.get("org.dlrepro.suite"),
            "variant": labels.get("org.dlrepro.variant"),
            "bootstrapped": labels.get("org.dlrepro.bootstrapped"),
        },
    )


def _reused(name, log):
    """The bootstrapped base ``name`` if it is here (one line says so), else None."""
    found = _bootstrapped(name)
    if found is not None:
        log("base %s: cache hit, %s is here (no bootstrap)" % (name, found.ref))
    return found


def bootstrap(name, base, log, mirror=None):
    """Make base ``name`` with ``mmdebstrap --variant=VARIANT SUITE`` (as root, or unprivileged in a user namespace
    where the kernel allows one) and ``docker import``.

    Raises ImageError when mmdebstrap is missing or fails (its log named).
    """
    if shutil.which("mmdebstrap") is None:
        raise ImageError(
            "no registry answered for base %s and mmdebstrap is not installed: install it "
            "(`apt-get install mmdebstrap`) or make the registry reachable" % name
        )
    spec = base.bootstrap
    with tempfile.TemporaryDirectory(dir=cache.directory("bootstrap")) as tmp:
        tar_path, log_path = (
            os.path.join(tmp, "rootfs.tar"),
            cache.directory("builds") / ("base-%s.bootstrap.log" % name),
        )
        log("bootstrapping base %s: mmdebstrap --variant=%s %s" % (name, spec.variant, spec.suite))
        command = ["mmdebstrap", "--variant=%s" % spec.variant, spec.suite, tar_path] + ([mirror] if mirror else [])
        stage, start = ["mmdebstrap"], time.monotonic()

        def describe():  # the heartbeat: the stage, for how long, and mmdebstrap's last line
            return "base %s: %s, %s%s" % (
                name,
                stage[0],
                heartbeat.clock(time.monotonic() - start),
                ": " + _last_line(log_path) if stage[0] == "mmdebstrap" else "",
            )

        with open(log_path, "wb") as out, heartbeat.Heartbeat(log, describe):
            if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                raise ImageError("mmdebstrap failed for base %s; see %s" % (name, log_path))
            stage[0] = "importing the root filesystem"
            tag, rootfs_digest = _import(name, spec, tar_path)
    image = client().images.get("%s:%s" % (BOOTSTRAP_REPO, tag))
    layers = image.attrs["RootFS"]["Layers"]
    if layers != [rootfs_digest]:
        raise ImageError("imported base %s has layers %s, expected the rootfs digest %s" % (tag, layers, rootfs_digest))
    log("base %s: bootstrapped in %s, rootfs %s" % (tag, heartbeat.clock(time.monotonic() - start), rootfs_digest))
    return _bootstrapped(name)


def _last_line(path, shown=160):
    """The last non-empty line of the file at ``path`` (its final 4 KiB), cut to ``shown`` characters; "" if none."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return next((line.strip() for line in reversed(tail.splitlines()) if line.strip()), "")[:shown]


def _import(name, spec, tar_path):
    """``docker import`` the root filesystem tar at ``tar_path`` as base ``name``; returns (the image's tag, the SHA-256
    digest of the tar)."""
    digest = hashlib.sha256()
    with open(tar_path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    rootfs_digest = "sha256:" + digest.hexdigest()
    changes = [
        "LABEL %s=%s" % (LABEL, name),
        "LABEL org.dlrepro.rootfs=%s" % rootfs_digest,
        "LABEL org.dlrepro.suite=%s" % spec.suite,
        "LABEL org.dlrepro.variant=%s" % spec.variant,
        "LABEL org.dlrepro.bootstrapped=%s" % utc_now(),
        "ENV LANG=C.UTF-8",
        'CMD ["bash"]',
    ]
    tag = "%s-%s" % (name, digest.hexdigest()[:12])
    answer = client().api.import_image_from_file(tar_path, repository=BOOTSTRAP_REPO, tag=tag, changes=changes)
    # Podman 4.3 imports as docker.io/dlrepro/base:latest whatever the tag asked: tag it by the ID it answers
    client().images.get(json.loads(answer.splitlines()[-1])["status"]).tag(BOOTSTRAP_REPO, tag)
    return tag, rootfs_digest


def _offline(matrix, name, source, log):
    """Base ``name`` made without a registry: reused or bootstrapped, or for a relocatable
    CPython, its ``onto`` base with the build to copy in; None if the build is not here."""
    base = matrix.bases[name]
    if base.bootstrap:
        found = _reused(name, log) or bootstrap(name, base, log)
        found.python = pythons.system(base)
        return found
    try:
        provider = pythons.relocatable(name, base.relocatable)
    except ImageError:
        if source == "bootstrap":
            raise
        return None
    onto = ensure(matrix, base.relocatable.onto, source, log)
    return BaseRef(name, onto.ref, "relocatable", onto.digest, onto.image_id, {"onto": onto.record}, provider)


def ensure(matrix, name, source="auto", log=print):
    """Matrix base ``name``, made available locally; its ``python`` says how images get Python.

    ``source``: "registry" (pull by digest, fail if unreachable), "bootstrap" (offline:
    reuse or make a bootstrapped base; a Python base copies pyenv's build onto its
    ``onto`` base), "auto" (a registry base already here; else the offline way when it
    needs no download, i.e. a bootstrapped base or pyenv's build is here; else pull by
    digest; else bootstrap). Preferring what is here keeps a machine's images stable:
    once bootstrapped, auto does not switch to the registry base (and new tags) on its
    own; ``--base-source=registry`` does. ``source`` is checked by build.BuildOptions.
    Raises ImageError when no way works. Waits while another thread makes the same base.
    """
    with _making_lock:
        lock = _making.setdefault(name, threading.Lock())
    with lock:
        return _ensure(matrix, name, source, log)


def _ensure(matrix, name, source, log):
    base = matrix.bases[name]
    found = None
    if source in ("auto", "registry"):
        found = _registry_base(name, base, log, pull=False)
    if found is None and source == "auto":
        found = _reused(name, log) if base.bootstrap else _offline(matrix, name, source, log)
    if found is None and source in ("auto", "registry"):
        found = _registry_base(name, base, log, pull=True)
        if found is None and source == "registry":
            raise ImageError(
                "base %s: cannot pull %s; use --base-source=bootstrap on a machine without registry "
                "access" % (name, base.registry)
            )
    if found is None:
        return _offline(matrix, name, "bootstrap", log)
    found.python = found.python or pythons.system(base)
    return found
