"""Look inside a built CUDA image without a GPU: runner.buildinfo in a container with a job's isolation.

``inspect`` builds the matrix entry (or finds its content-hashed tag), runs ``python -m runner.buildinfo`` in a
container made by the docker executor's own ``create_args`` (no network, no GPU, read-only root, non-root,
every capability dropped), with cuobjdump mounted read-only, and returns the image's record
(dlrepro.images.gpu_support reads it).
"""

import json
import os
import tempfile
import time

from dlrepro.engine import client
from dlrepro.errors import ImageError
from dlrepro.images import build, gpu_support
from dlrepro.run.executors import docker as dockerexec

CUOBJDUMP_DIR = "/opt/cuobjdump"  # where the host's cuobjdump folder is mounted in the container


def run_buildinfo(tag, framework, cuobjdump):
    """runner.buildinfo's facts of image ``tag`` (a dict); ``cuobjdump``: the host's cuobjdump program or None.
    Raises ImageError with the container's last output when it fails or prints no JSON."""
    command = ["python", "-m", "runner.buildinfo", framework]
    with tempfile.TemporaryDirectory() as empty:
        stage, scratch, data = (os.path.join(empty, d) for d in ("jobs", "out", "data"))
        for folder in (stage, scratch, data):
            os.mkdir(folder)
        args = dockerexec.create_args(
            tag, "%d:%d" % (dockerexec.CONTAINER_UID, dockerexec.CONTAINER_UID), stage, scratch, data, command=command
        )
        args.update(stdin_open=False, auto_remove=False)  # nothing on stdin; keep it to read its output
        if cuobjdump:
            args["volumes"][os.path.dirname(os.path.abspath(cuobjdump))] = {"bind": CUOBJDUMP_DIR, "mode": "ro"}
            args["command"] = command + ["--cuobjdump", CUOBJDUMP_DIR + "/" + os.path.basename(cuobjdump)]
        container = client().containers.create(**args)
        try:
            container.start()
            status = container.wait()["StatusCode"]
            out = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            err = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
        finally:
            container.remove(force=True)
    lines = out.strip().splitlines()
    try:
        return dict(json.loads(lines[-1]), isolation=dockerexec.isolation(args))
    except (ValueError, IndexError):
        raise ImageError(
            "runner.buildinfo in %s exited with status %d and printed no facts: %s"
            % (tag, status, (err.strip() or out.strip())[-600:])
        ) from None


def _same_version(matrix_says, image_says):
    """Whether the image's version ("8.5.0") starts with the matrix's dotted parts ("8.5")."""
    parts = (matrix_says or "").split(".")
    return (image_says or "").split(" ")[0].split(".")[: len(parts)] == parts


def matrix_problems(image, record):
    """How the matrix entry ``image`` disagrees with the recorded facts: ["field: matrix X, image Y"]. CUDA and
    cuDNN are the versions of the image's libraries (what runs), else the framework's report."""
    problems = []
    for field, kind in (("cuda", "cuda_runtime"), ("cudnn", "cudnn")):
        said = record["versions"][kind]
        found = said["library"] or said["reported"]  # what runs: the image's library, else the framework's word
        if getattr(image, field) and not _same_version(getattr(image, field), found):
            problems.append("%s: matrix %s, image %s" % (field, getattr(image, field), found or "not reported"))
    if record["sass"] and list(image.cuda_archs) != record["sass"] + record["ptx"]:
        problems.append(
            "cuda_archs: matrix %s, image %s" % (" ".join(image.cuda_archs), " ".join(record["sass"] + record["ptx"]))
        )
    return problems


def derive(image, facts):
    """The fields of an image's record that follow from runner.buildinfo's ``facts`` and the matrix entry
    ``image``: framework version; CUDA, cuDNN and NCCL versions (each {reported, library} and as one text); the
    framework's own SASS and PTX lists and every cubin and PTX of its main library, each with its source; the
    pre-flight's list, its source and its verdict per GPU (gpu_support); how the matrix disagrees."""
    sass, ptx, archs_source = gpu_support.device_archs(facts)
    every_sass, every_ptx, every_source = gpu_support.all_archs(facts)
    shipped, source = gpu_support.preflight_archs(facts)
    versions = {kind: gpu_support.library_versions(facts, kind) for kind in ("cuda_runtime", "cudnn", "nccl")}
    derived = {
        "framework": image.framework,
        "framework_version": (facts.get("reported") or {}).get("framework_version") or image.version,
        "versions": versions,
        "cuda": gpu_support.version_text(versions["cuda_runtime"]),
        "cudnn": gpu_support.version_text(versions["cudnn"]),
        "nccl": gpu_support.version_text(versions["nccl"]),
        "sass": sass,
        "ptx": ptx,
        "archs_source": archs_source,
        "all_sass": every_sass,
        "all_ptx": every_ptx,
        "all_source": every_source,
        "preflight_archs": shipped,
        "preflight_source": source,
        "verdicts": gpu_support.verdicts(image.name, shipped),
        "matrix": {"cuda": image.cuda, "cudnn": image.cudnn, "cuda_archs": list(image.cuda_archs)},
    }
    derived["matrix_problems"] = matrix_problems(image, derived)
    return derived


def inspect(matrix, image, options, cuobjdump, log=print):
    """The record of matrix entry ``image``: tag, image ID, repo digests, size (bytes), base digest, build seconds
    (when built now), the raw facts and what ``derive`` makes of them. Raises ImageError when the build or the
    probe fails."""
    start = time.monotonic()
    built = build.ensure(matrix, image, options, log)
    seconds = time.monotonic() - start
    found = client().images.get(built.tag)
    log("%s: looking inside %s" % (image.name, built.tag))
    facts = run_buildinfo(built.tag, image.framework, cuobjdump)
    record = {
        "name": image.name,
        "built": True,
        "tag": built.tag,
        "image_id": found.id,
        "repo_digests": found.attrs.get("RepoDigests") or [],
        "size_bytes": found.attrs["Size"],
        "base_digest": built.base.digest,
        "built_now": built.built,
        "build_seconds": round(seconds, 1),
        "facts": facts,
    }
    record.update(derive(image, facts))
    return record


def not_built(image, reason, instead):
    """The record of an image that could not be built or looked inside here: the reason and what a user needs; where
    the matrix lists the architectures of its build (read from the wheel, or for an image compiled from its sources
    what it is compiled for: no image needed), the pre-flight's verdict per GPU on those (``archs_of`` says which)."""
    record = {"name": image.name, "built": False, "reason": reason, "instead": instead}
    if image.cuda_archs:
        compiled = bool(image.lua or image.compile)
        record.update(
            preflight_archs=list(image.cuda_archs),
            preflight_source="the matrix's cuda_archs (%s)"
            % ("its compile flags" if compiled else "read from the wheel"),
            verdicts=gpu_support.verdicts(image.name, list(image.cuda_archs)),
            archs_of="its compile flags" if compiled else "its wheel",
        )
    return record
