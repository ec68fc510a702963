"""Build images from the matrix, skipping any whose content-hashed tag already exists.

``ensure`` returns a built image's record for bundles: tag, image ID (the digest of
its config, which is what identifies a locally built image), repo digests if it was
pushed, base record, recipe digest, and the package manifests read from the image
(/opt/dlrepro/{requirements.lock,pip-freeze.txt,dpkg.txt}). ``ensure_all`` builds
several at once. Docker builds with BuildKit, Podman with Buildah (the Dockerfile's
``RUN --mount``: dlrepro.images.context).
"""

import io
import json
import os
import re
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor

import docker

from dlrepro import engine, heartbeat
from dlrepro.engine import client
from dlrepro.errors import DatasetError, EngineLost, ImageError, SourcesMissing
from dlrepro.images import bases, buildkit, context, leftovers, transport, vendor

MANIFESTS = ("requirements.lock", "pip-freeze.txt", "dpkg.txt")
# the image of each build step: "--> <11 hex>" from Podman (BuildKit makes no image of a step)
STEP_IMAGE = re.compile(r"^ ?-{2,3}> ([0-9a-f]{11,12})$", re.MULTILINE)
# a step's number: Podman's "STEP 3/9", BuildKit's "[system 3/9]" ("[3/9]" in a Dockerfile of one unnamed stage)
STEP_NUMBER = re.compile(r"step [0-9/]+|\[(?:[^]]* )?[0-9]+/[0-9]+\]", re.IGNORECASE)
STEP_SHOWN, LINE_SHOWN = 140, 160  # characters of a step's header and of its last line in progress lines
# a download that broke off mid-way (pip's read timed out or the connection was reset; fresh CI runs 8, 10 and 13 lost
# a large wheel this way): the build runs again, once. BuildKit keeps the steps that finished and pip's cache mount
# the files that downloaded whole, so the second build fetches the broken file and what came after it.
BROKEN_DOWNLOAD = re.compile(
    r"ReadTimeoutError|IncompleteRead|Read timed out|Connection reset by peer|Connection broken|RemoteDisconnected"
)


class BuildOptions:
    """How to build: base source (auto | registry | bootstrap), pip settings, extra CA bundle, and the folder that
    holds a Lua framework's source archives (None: the dataset cache, filled from their canonical mirrors).

    Raises ImageError for an unknown base source, or a CA bundle or sources folder that does not exist.
    """

    def __init__(self, base_source="auto", use_host_pip=True, ca_bundle=None, sources_from=None):
        if base_source not in bases.SOURCES:
            raise ImageError("--base-source: expected one of %s (got %r)" % (", ".join(bases.SOURCES), base_source))
        if ca_bundle and not os.path.isfile(ca_bundle):
            raise ImageError("--ca-bundle: no such file: %s" % ca_bundle)
        if sources_from and not os.path.isdir(sources_from):
            raise ImageError(
                "--sources-from: no such folder: %s" % sources_from,
                "give the folder that holds the source archives by name (dlrepro/inputs/datasets.yaml)",
            )
        self.base_source, self.use_host_pip, self.ca_bundle = base_source, use_host_pip, ca_bundle
        self.sources_from = sources_from

    def pip_settings(self):
        return transport.host_settings() if self.use_host_pip else transport.PipSettings()


class BuiltImage:
    def __init__(
        self,
        image,
        tag,
        image_id,
        repo_digests,
        base,
        recipe_digest,
        transport_record,
        built,
        seconds,
        manifests,
        dockerfile,
    ):
        self.image, self.tag, self.image_id = image, tag, image_id
        self.repo_digests, self.base, self.recipe_digest = repo_digests, base, recipe_digest
        self.transport, self.built, self.seconds = transport_record, built, seconds
        self.manifests, self.dockerfile = manifests, dockerfile

    @property
    def record(self):
        return {
            "name": self.image.name,
            "framework": self.image.framework,
            "framework_version": self.image.version,
            "device": self.image.device,
            "python": self.image.python,
            "cuda": self.image.cuda,
            "cudnn": self.image.cudnn,
            "min_driver": self.image.min_driver,
            "tag": self.tag,
            "image_id": self.image_id,
            "repo_digests": self.repo_digests,
            "recipe_digest": self.recipe_digest,
            "base": self.base.record,
            "transport": self.transport,
            "built_now": self.built,
            "build_seconds": round(self.seconds, 1),
        }


def _tar(directory):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:  # BuildKit takes a PAX tar for a file
        tar.add(str(directory), arcname=".")
    buf.seek(0)
    return buf


def _hint(lines):
    text = "\n".join(lines)
    if "No matching distribution" in text and "+cpu" in text:
        return (
            "\nPyTorch's CPU wheels (+cpu) are not on PyPI: put the wheel the lock pins (e.g. "
            "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl) in a folder and `pip config set "
            "global.find-links FOLDER`, or `pip config set global.extra-index-url INDEX` with the CPU wheel index "
            'that PyTorch\'s install selector prints for "Pip, CPU" (its --index-url); then build again.'
        )
    if "THESE PACKAGES DO NOT MATCH THE HASHES" in text:
        return "\nA downloaded file does not match the lock: the index serves other bytes than the lock pins."
    return ""


class DownloadBroken(ImageError):
    """A build failed because a download broke off (BROKEN_DOWNLOAD in its output); ``line``: the line that says so."""

    def __init__(self, message, line):
        super().__init__(message)
        self.line = line


def broken_download(lines):
    """The last line of a failed build's output that says a download broke off (BROKEN_DOWNLOAD), None when none
    does: a hash mismatch, a missing distribution or a failing compiler is not retried."""
    return next((line.strip() for line in reversed(lines) if BROKEN_DOWNLOAD.search(line)), None)


def _remove_build_stages(step_ids, final_id):
    """Delete the untagged images of build steps that the final image does not contain (``final_id`` None: a
    failed build, whose every untagged step goes): Podman keeps an image of every step, a compile stage's too.
    """
    # the final image and its history (Podman's history ids lack "sha256:" and leave out the image itself)
    kept = (
        {entry["Id"].split(":")[-1] for entry in client().api.history(final_id)} | {final_id.split(":")[-1]}
        if final_id
        else set()
    )
    for short in reversed(step_ids):
        try:
            image = client().images.get(short)
            if image.id.split(":")[-1] not in kept and not image.tags:  # a base or another image's tag stays
                client().images.remove(image.id)
        except docker.errors.APIError:
            pass  # already removed with a child, or still the parent of another image


class _Steps:
    """Where a build stands: its current step, since when, and the last line the step printed (for heartbeats)."""

    def __init__(self, name):
        self.name, self.start = name, time.monotonic()
        self.step, self.step_start, self.last = "preparing the context", self.start, ""

    def begin(self, header):
        """A new step whose header is ``header``; returns its progress line."""
        number = STEP_NUMBER.search(header)
        self.step, self.step_start, self.last = number.group(0).lower() if number else header, time.monotonic(), ""
        return "%s [%s] %s" % (self.name, heartbeat.clock(self.step_start - self.start), header[:STEP_SHOWN])

    def describe(self):
        now = time.monotonic()
        return "%s: %s, %s in the step, %s building%s" % (
            self.name,
            self.step,
            heartbeat.clock(now - self.step_start),
            heartbeat.clock(now - self.start),
            ": " + self.last[:LINE_SHOWN] if self.last else "",
        )


def _answer(ctx):
    """The decoded chunks of the engine's answer to a build of ``ctx``: BuildKit on Docker (docker-py's build() has no
    parameter for it, hence the API call by hand), the classic stream on Podman."""
    api = client().api
    params = {"t": ctx.tag, "rm": True, "forcerm": True, "pull": False}
    if engine.name() == "docker":
        params["version"] = "2"
    response = api._post(
        api._url("/build"),
        data=_tar(ctx.directory),
        params=params,
        headers={"Content-Type": "application/x-tar"},
        stream=True,
        timeout=None,
    )
    api._raise_for_status(response)
    return api._stream_helper(response, decode=True)


def _docker_build(ctx, log):
    """Build the context; returns the ids of the images of its steps (Podman's). Each step's header goes to ``log`` as
    it starts, with the time since the build began; while a step is silent, a heartbeat line (heartbeat.Heartbeat)."""
    log_path = ctx.directory.parent / ("%s.log" % ctx.digest[:12])
    lines, step_ids, steps, events = [], [], _Steps(ctx.image.name), buildkit.Events()
    with open(log_path, "w") as out, heartbeat.Heartbeat(log, steps.describe) as beat:
        try:
            for chunk in _answer(ctx):
                for kind, text in events.events(chunk):
                    if kind == "error":
                        text = "ERROR: %s\n" % text
                    out.write(text if text.endswith("\n") else text + "\n")
                    lines.extend(text.rstrip("\n").splitlines())
                    if kind == "step":
                        log(steps.begin(text.strip()))
                        beat.touch()
                    elif kind == "line":
                        steps.last = next(
                            (t.strip() for t in reversed(text.splitlines()) if t.strip() and not STEP_IMAGE.match(t)),
                            steps.last,
                        )
                        step_ids.extend(m.group(1) for m in STEP_IMAGE.finditer(text))
                    else:
                        _remove_build_stages(step_ids, None)
                        message = "building %s failed; log: %s\n%s%s" % (
                            ctx.image.name,
                            log_path,
                            "\n".join(lines[-15:]),
                            _hint(lines),
                        )
                        broken = broken_download(lines)
                        raise DownloadBroken(message, broken) if broken else ImageError(message)
        except docker.errors.APIError as exc:
            _remove_build_stages(step_ids, None)
            raise ImageError("building %s failed: %s; log: %s" % (ctx.image.name, exc, log_path)) from None
    return step_ids


def _build(ctx, log):
    """_docker_build, run a second time where the first broke off in a download (DownloadBroken), saying so; the
    second's DownloadBroken is raised."""
    try:
        return _docker_build(ctx, log)
    except DownloadBroken as exc:
        log("%s: a download broke off (%s); building again" % (ctx.image.name, exc.line[:LINE_SHOWN]))
        return _docker_build(ctx, log)


def read_manifests(image_id):
    """The package manifests stored in the image under /opt/dlrepro, read without starting it."""
    container = client().containers.create(image_id, command=["true"])
    try:
        stream, _ = container.get_archive("/opt/dlrepro")
        archive = tarfile.open(fileobj=io.BytesIO(b"".join(stream)))
        return {name: archive.extractfile("dlrepro/" + name).read().decode() for name in MANIFESTS}
    finally:
        container.remove(force=True)


def ensure(matrix, image, options, log=print):
    """The built image for matrix entry ``image``, building it only when its tag is missing.

    Raises ImageError (build or base failure), ExecutorError (no Docker engine), or EngineLost (one line naming the
    engine) when the engine goes away meanwhile: a build that failed as it went, too.
    """
    return _engine_call(_ensure, matrix, image, options, log)


def _engine_call(function, *args):
    """``function(*args)`` with the engine's errors as one line: EngineLost when the engine went away (an ImageError
    raised while it no longer answers too: the build failed because it went), else ExecutorError."""
    with engine.calls():
        try:
            return function(*args)
        except ImageError:
            if not engine.answers():
                raise engine.lost() from None
            raise


def _ensure(matrix, image, options, log):
    found_vendor = vendor.ensure(image, pull=options.base_source != "bootstrap", log=log)
    base = bases.ensure(matrix, image.base, options.base_source, log)
    with context.render(image, base, found_vendor) as ctx:
        transport_path = ctx.directory.parent / ("%s.transport.json" % ctx.digest[:12])
        start = time.monotonic()
        try:
            found = client().images.get(ctx.tag)
            built = False
            log("%s: cache hit, %s exists (no build)" % (image.name, ctx.tag))
        except docker.errors.ImageNotFound:
            log("%s: building %s" % (image.name, ctx.tag))
            transport_path.write_text(json.dumps(ctx.add_transport(options.pip_settings(), options.ca_bundle)))
            ctx.add_python(base.python)
            try:
                ctx.add_lua_sources(options.sources_from, log)
            except DatasetError as exc:
                raise SourcesMissing("%s: its sources: %s" % (image.name, exc), exc.remedy) from None
            if engine.name() == "docker":  # a step a lost engine left running holds the apt cache's lock
                leftovers.wait_for_steps(log, engine.address())
            step_ids = _build(ctx, log)
            found = client().images.get(ctx.tag)
            _remove_build_stages(step_ids, found.id)
            built = True
            log("%s: built in %s" % (image.name, heartbeat.clock(time.monotonic() - start)))
        transport_record = json.loads(transport_path.read_text()) if transport_path.is_file() else None
        return BuiltImage(
            image,
            ctx.tag,
            found.id,
            found.attrs.get("RepoDigests") or [],
            base,
            ctx.digest,
            transport_record,
            built,
            time.monotonic() - start,
            read_manifests(found.id),
            (ctx.directory / "Dockerfile").read_text(),
        )


def workers():
    """How many images build at once by default: this machine's CPUs plus one, since a build waits on the network and
    the disk much of its time (every CPU image from an empty engine on 2 CPUs: 370 s two at a time, 251 s three)."""
    return (os.cpu_count() or 1) + 1


def _root(matrix, image):
    """The base ``image`` stands on that is made rather than copied: a relocatable Python's ``onto`` base."""
    base = matrix.bases[image.base]
    return base.relocatable.onto if base.relocatable else image.base


def ensure_all(matrix, images, options, log=print, at_once=None):
    """Each of ``images`` built or found as ``ensure`` does, ``at_once`` at a time (default: ``workers()``). The
    bases they stand on (``_root``) are made first, at once, each once; an image whose base could not be made gets
    that base's ImageError without another try.

    Returns {image name: BuiltImage, or the ImageError that stopped its build}, in the order given: one image
    that cannot be built does not stop the others. Any other error (ExecutorError: no engine; EngineLost: the
    engine went away, with the remedy) or an interrupt cancels the builds not yet started and is raised once the
    running ones end.
    """
    pool = ThreadPoolExecutor(max_workers=at_once or workers())
    try:
        made = {
            name: pool.submit(_engine_call, bases.ensure, matrix, name, options.base_source, log)
            for name in dict.fromkeys(_root(matrix, image) for image in images)
        }

        def one(image):
            made[_root(matrix, image)].result()  # raises the base's ImageError
            return ensure(matrix, image, options, log)

        futures = [(image.name, pool.submit(one, image)) for image in images]
        done = {}
        for name, future in futures:
            try:
                done[name] = future.result()
            except ImageError as exc:
                done[name] = exc
            except EngineLost as exc:
                built = [n for n, b in done.items() if not isinstance(b, ImageError)]
                raise EngineLost(
                    "%s during the build of %s; the builds stopped (%s)"
                    % (exc, name, "%d built or found: %s" % (len(built), ", ".join(built)) if built else "none built"),
                    "start the engine again (e.g. `sudo systemctl start docker`), then `dlrepro build` again as "
                    "soon as it answers: it builds only the images still missing, each after waiting for the build "
                    "steps the lost engine left running on this host (they hold the apt cache's lock)",
                ) from None
        return done
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown()
