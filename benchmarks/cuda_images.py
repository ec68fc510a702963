"""Build every CUDA image of images/matrix.yaml, look inside each without a GPU, and record the facts.

    python benchmarks/cuda_images.py [--images NAME,...] [--out DIR] [--cuobjdump PATH] [--remove-below GB]

For each CUDA image (in the order given, default the matrix's): build it or find its content-hashed tag
(dlrepro.images.build), run runner.buildinfo inside it with a job's isolation and no GPU
(dlrepro.run.probe), and write DIR/cuda-images.json (one record per image: tag, image ID, size in bytes,
framework version, CUDA, cuDNN and NCCL versions, SASS and PTX lists, the pre-flight verdict per GPU of
dlrepro.images.gpu_support.GPUS) and DIR/table.md, after every image, so that an interrupted run keeps what it
found (--rederive remakes the derived fields from the recorded facts alone). An image that fails to build or
to start is recorded as not built with the reason. Records of images not named in --images are kept from an
earlier run (or from another run at the same time). --remove-below removes an image this run built once its
facts are recorded, when the disk has fewer free GB than that.

cuobjdump comes from the nvidia-cuda-cuobjdump wheel, installed once into a virtual environment under the
suite's cache (DLREPRO_CACHE) unless --cuobjdump names one.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import docker

from dlrepro import REPO_ROOT, cache
from dlrepro.engine import client
from dlrepro.errors import DlreproError
from dlrepro.images import build, gpu_support
from dlrepro.images import matrix as matrixmod
from dlrepro.run import probe

CUOBJDUMP_WHEEL = "nvidia-cuda-cuobjdump==13.5.37"
OUT = REPO_ROOT / "results" / "cuda-images-20261202"
RECORD, TABLE = "cuda-images.json", "table.md"


def cuobjdump():
    """The cuobjdump program of CUOBJDUMP_WHEEL, installed into the cache's tools/ venv on first use."""
    env = cache.directory("tools") / CUOBJDUMP_WHEEL.replace("==", "-")
    found = sorted(env.glob("lib/python*/site-packages/nvidia/*/bin/cuobjdump"))
    if not found:
        venv.create(env, with_pip=True)
        subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", CUOBJDUMP_WHEEL], check=True)
        found = sorted(env.glob("lib/python*/site-packages/nvidia/*/bin/cuobjdump"))
    return str(found[0])


def load(out):
    """{image name: record} of an earlier run's DIR/cuda-images.json; {} when there is none."""
    path = out / RECORD
    return {r["name"]: r for r in json.loads(path.read_text())} if path.is_file() else {}


def write(out, record, order):
    """Put ``record`` into DIR/cuda-images.json (read again first, so that runs for other images at the same time
    keep theirs; a look inside an image found by its tag keeps the build time recorded when it was built) and
    write DIR/table.md, both in the matrix's ``order`` of names."""
    out.mkdir(parents=True, exist_ok=True)
    records = load(out)
    earlier = records.get(record["name"], {})
    if record.get("built") and not record["built_now"] and earlier.get("image_id") == record["image_id"]:
        record.update(built_now=earlier["built_now"], build_seconds=earlier["build_seconds"])  # the build's time
    records[record["name"]] = record
    listed = [records[name] for name in order if name in records]
    for name, text in (
        (RECORD, json.dumps(listed, indent=1, sort_keys=True) + "\n"),
        (TABLE, gpu_support.markdown(listed)),
    ):
        (out / (name + ".part")).write_text(text)
        os.replace(out / (name + ".part"), out / name)  # whole, for a run that reads it at the same time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", default="", help="image names, comma-separated (default: every CUDA image)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cuobjdump", default="", help="a cuobjdump program (default: %s)" % CUOBJDUMP_WHEEL)
    parser.add_argument(
        "--rederive",
        action="store_true",
        help="build and run nothing: remake each recorded image's derived fields from its facts",
    )
    parser.add_argument(
        "--remove-below",
        type=float,
        default=0.0,
        help="remove an image this run built after recording it when free disk (GB) is below this",
    )
    args = parser.parse_args()
    matrix = matrixmod.load()
    cuda = [i for i in matrix.images if i.device == "cuda"]
    chosen = [matrix.entry(n) for n in args.images.split(",")] if args.images else cuda
    if args.rederive:
        for name, record in load(args.out).items():
            if record["built"]:
                write(
                    args.out, dict(record, **probe.derive(matrix.entry(name), record["facts"])), [i.name for i in cuda]
                )
        return 0
    tool = args.cuobjdump or cuobjdump()
    for image in chosen:
        try:
            record = probe.inspect(matrix, image, build.BuildOptions(), tool)
        except (DlreproError, docker.errors.DockerException) as exc:
            said = " ".join(str(exc).split())  # its head names the build log, its tail the failing command's error
            record = probe.not_built(
                image,
                said if len(said) <= 800 else said[:300] + " [...] " + said[-500:],
                getattr(exc, "remedy", None) or "see the build log named in the reason",
            )
        built_here = record["built"] and record["built_now"]
        write(args.out, record, [i.name for i in cuda])
        if record["built"]:
            said = "%.2f GB, %s" % (record["size_bytes"] / 1e9, record["matrix_problems"] or "agrees with the matrix")
        else:
            said = "not built: %s" % record["reason"]
        print("%s: %s" % (image.name, said), flush=True)
        free = shutil.disk_usage(REPO_ROOT).free / 1e9
        if built_here and free < args.remove_below:
            client().images.remove(record["image_id"], force=True)
            record["removed_after_recording"] = True
            write(args.out, record, [i.name for i in cuda])
            print("%s: removed (%.1f GB free)" % (image.name, free), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
