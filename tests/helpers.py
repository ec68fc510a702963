"""Helpers shared by test modules."""

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import time

from dlrepro import REPO_ROOT
from dlrepro.images import pythons
from dlrepro.images.bases import BaseRef
from dlrepro.inputs import datasets, spec
from dlrepro.run import jobs
from dlrepro.run.options import RunOptions
from runner.frameworks import Token

# a Debian bookworm base as if pulled from a registry, with made-up digests: what a Dockerfile renders FROM in tests
DEBIAN_PYTHON = pythons.Provider("debian", "python3", ["python3", "python3-venv"])
REGISTRY_BASE = BaseRef(
    "debian-bookworm",
    "debian@sha256:" + "3" * 64,
    "registry",
    "sha256:" + "3" * 64,
    "sha256:" + "4" * 64,
    {},
    DEBIAN_PYTHON,
)


def check_sums(bundle):
    for line in (bundle / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((bundle / name).read_bytes()).hexdigest() == digest, name


def bad_and_good_jobs():
    """Two --quick jobs of DLF's GRU on synthetic reviews (3.8 M parameters: FCN-S's 118 M took each job a second
    more to initialise), mini-batches of 8 and 16; the first states one parameter more than its model has."""
    found = jobs.expand(
        spec.load("imdb-gru"),
        RunOptions(frameworks=["torch"], variants=["imdb-gru-synthetic"], batch_sizes=[8, 16], quick=True),
    )
    bad, good = found
    bad["model"] = dict(bad["model"], parameters=bad["model"]["parameters"] + 1)
    return bad, good


def run_executor(executor, image, tmp_path):
    """Run a job that fails inside the runner (wrong expected parameter count), then a good one."""
    bad, good = bad_and_good_jobs()
    events = []
    executor.run(
        image,
        [bad, good],
        tmp_path,
        datasets.root(),
        lambda kind, job_id, result: events.append((kind, job_id, result and result["status"])),
    )
    results = {j["id"]: json.loads((tmp_path / j["id"] / "result.json").read_text()) for j in (bad, good)}
    return bad, good, results, events


def unreachable(monkeypatch, *names):
    """Make the mirrors of datasets ``names`` unreachable (a closed local port), whatever the network allows."""
    from dlrepro.inputs.datasets import UrlMirror

    catalogue = datasets.catalogue()
    mirror = UrlMirror(kind="url", url="http://127.0.0.1:9/{name}")
    patched = catalogue.model_copy(
        update={
            "datasets": {
                n: d.model_copy(update={"mirrors": [mirror]}) if n in names else d
                for n, d in catalogue.datasets.items()
            }
        }
    )
    monkeypatch.setattr(datasets, "catalogue", lambda: patched)


def fresh_cache(monkeypatch, path, **copies):
    """Point DLREPRO_CACHE at ``path``; ``copies`` {dataset: DatasetRecord of the real cache} are imported into it."""
    import shutil

    folders = {}
    for name, record in copies.items():
        folder = path / ("source-" + name)
        folder.mkdir(parents=True)
        for role, f in record.dataset.files.items():
            shutil.copyfile(str(datasets._blob(record.files[role])), str(folder / f.name))
        folders[name] = folder
    monkeypatch.setenv("DLREPRO_CACHE", str(path / "cache"))
    for name, folder in folders.items():
        datasets.import_local(name, folder)
    return path / "cache"


def files_under(image_id, path):
    """The names of the files and folders under ``path`` in the image (read from a created, never started
    container), None when ``path`` is not there. An empty list: an empty folder, e.g. the mount point that BuildKit and
    Buildah leave for a ``RUN --mount`` target."""
    import docker

    from dlrepro.engine import client

    container = client().containers.create(image_id, command=["true"])
    try:
        stream, _ = container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            return [name for name in archive.getnames() if "/" in name]  # the folder itself is its bare name
    except docker.errors.NotFound:
        return None
    finally:
        container.remove(force=True)


def invoke(*args):
    return subprocess.run(
        [sys.executable, "-m", "invoke"] + list(args), capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )


def dlrepro_here(*args, cwd=REPO_ROOT, env=None):
    """`dlrepro ARGS` (the console entry point's ``program.run``) run in this process, in folder ``cwd`` with the
    variables ``env`` added: a subprocess.CompletedProcess with its exit status and its standard output and error
    as text, as ``subprocess.run(..., capture_output=True, text=True)`` gives them for the console command. A new
    interpreter spends about 3 s importing pandas, scipy and matplotlib before a command refuses its input; here
    they are loaded once. The folder and the variables are put back after. For what only a process shows (its
    imports, a closed pipe, signals), run the command itself."""
    from dlrepro.cli.main import program

    out, err, before, variables = io.StringIO(), io.StringIO(), os.getcwd(), dict(os.environ)
    os.environ.update(dict({"COLUMNS": "200"}, **(env or {})))
    os.chdir(str(cwd))
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                program.run(["dlrepro"] + list(args))
            except SystemExit as stopped:  # sys.exit(MESSAGE) prints it and exits 1
                code = stopped.code or 0
                if not isinstance(code, int):
                    print(code, file=sys.stderr)
                    code = 1
    finally:
        os.chdir(before)
        os.environ.clear()
        os.environ.update(variables)
    return subprocess.CompletedProcess(["dlrepro"] + list(args), code, out.getvalue(), err.getvalue())


def seeded(seeds):
    """Spec imdb-gru with its convergence variant's ``convergence.seeds`` set to ``seeds``."""
    s = spec.load("imdb-gru")
    gru = s.variants["imdb-gru"]
    return s.model_copy(
        update={
            "variants": dict(
                s.variants,
                **{
                    "imdb-gru": gru.model_copy(
                        update={"convergence": gru.convergence.model_copy(update={"seeds": seeds})}
                    )
                },
            )
        }
    )


def cpu_entry(matrix, token):
    """The CPU entry of framework token NAME or NAME@VERSION (a Keras variant: its backend's image)."""
    name, version = Token.parse(token)
    return matrix.find(name, "cpu", version)


class Quiet:
    """A runs.Reporter that keeps what it is told."""

    def __init__(self):
        self.lines, self.finished = [], {}

    def log(self, message):
        self.lines.append(message)

    def started(self, total):
        self.total = total

    def job_queued(self, job_id):
        pass

    def job_started(self, job_id):
        pass

    def job_finished(self, job_id, result):
        self.finished[job_id] = result["status"]


def containers(client, **filters):
    """The engine's list of its containers (ended ones too) matching ``filters``: dicts with "Names" and "State".
    The engine's list alone: the SDK's ``containers.list`` inspects each container it lists and fails (404) on one
    removed in between, as an auto_remove container that just ended is."""
    return client.api.containers(all=True, filters=filters or None)


def containers_left(client, within=60, **filters):
    """The names of the containers matching ``filters`` still there after up to ``within`` seconds: the engine
    removes an ended auto_remove container (and those its restart finds) in the background. One listed without a name
    (being removed: fresh-CI run 30, an engine restarted by tests/engine/test_engine_loss.py) goes by its short id."""
    deadline = time.time() + within
    while True:
        names = [(c.get("Names") or [c["Id"][:12]])[0].lstrip("/") for c in containers(client, **filters)]
        if not names or time.time() > deadline:
            return names
        time.sleep(0.5)


def run_python(client, tag, out, script, *args, mounts=None, environment=None):
    """Run ``python SCRIPT ARGS...`` in image ``tag`` as this user with no network: the repository's runner/ at
    /opt/dlrepro/runner and each of ``mounts`` ({host path: path in the container}) read-only, the folder ``out``
    (made writable to all) at /out, PYTHONPATH=/opt/dlrepro and ``environment`` (a dict) set. Raises
    docker.errors.ContainerError when it fails."""
    out.chmod(0o777)
    volumes = {str(REPO_ROOT / "runner"): {"bind": "/opt/dlrepro/runner", "mode": "ro"}}
    volumes.update({str(host): {"bind": inside, "mode": "ro"} for host, inside in (mounts or {}).items()})
    volumes[str(out)] = {"bind": "/out"}
    client.containers.run(
        tag,
        ["python", script, *args],
        network_mode="none",
        remove=True,
        user="%d:%d" % (os.getuid(), os.getgid()),
        environment=dict(environment or {}, PYTHONPATH="/opt/dlrepro"),
        volumes=volumes,
    )


def benchmark(name):
    """The module benchmarks/NAME.py (benchmarks/ is no package), loaded afresh."""
    found = importlib.util.spec_from_file_location(name, REPO_ROOT / "benchmarks" / (name + ".py"))
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module
