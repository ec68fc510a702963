"""The container engine connection: Docker, or Podman through its Docker-compatible API socket, with an error
that says what to do when there is none.

The engine is ``use(NAME)`` (``dlrepro build|run --engine``), else ``$DLREPRO_ENGINE``, else docker. Docker is
reached at DOCKER_HOST (default: the local socket). Podman is reached at ``$DLREPRO_PODMAN_SOCKET`` (a path or
``unix://`` URL), else ``$CONTAINER_HOST``, else its default socket (/run/podman/podman.sock for root,
``$XDG_RUNTIME_DIR/podman/podman.sock`` rootless), which ``podman system service --time=0 unix://PATH`` serves.
The same docker SDK calls drive both (builds: BuildKit on Docker, Buildah on Podman; container create/attach/wait,
device requests, memory limits); ``record()`` is what a bundle says about the engine.
"""

import contextlib
import functools
import os

import docker
import requests
import urllib3

from dlrepro.errors import EngineLost, ExecutorError

# what a call to the engine raises when it fails; ``gone`` tells an engine that went away from one that refused
ENGINE_ERRORS = (
    docker.errors.DockerException,
    requests.RequestException,
    urllib3.exceptions.HTTPError,
    ConnectionError,
)

ENGINES = ("docker", "podman")
_chosen = []


def use(name):
    """Make ``name`` ("docker" or "podman"; "" for the default) the engine of this process; raises ExecutorError
    for another name."""
    if name and name not in ENGINES:
        raise ExecutorError("--engine %s: unknown engine" % name, "use --engine docker or --engine podman")
    _chosen[:] = [name] if name else []
    client.cache_clear()


def name():
    """The engine in use: "docker" or "podman"."""
    chosen = (_chosen or [os.environ.get("DLREPRO_ENGINE") or "docker"])[0]
    if chosen not in ENGINES:
        raise ExecutorError("DLREPRO_ENGINE=%s: unknown engine" % chosen, "set DLREPRO_ENGINE to docker or podman")
    return chosen


def podman_socket():
    """The ``unix://`` URL of Podman's Docker-compatible API socket (see the module's text)."""
    given = os.environ.get("DLREPRO_PODMAN_SOCKET") or os.environ.get("CONTAINER_HOST")
    if not given:
        runtime = "/run" if os.geteuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/run/user/%d" % os.geteuid())
        given = runtime + "/podman/podman.sock"
    return given if "://" in given else "unix://" + given


def address():
    """Where the engine in use (``name()``) is reached: Podman's socket URL, else DOCKER_HOST or the local socket."""
    return podman_socket() if name() == "podman" else os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


@functools.lru_cache(maxsize=1)
def client():
    """A docker SDK client for the engine in use (``name()``).

    Raises ExecutorError naming the fix (start the engine or Podman's socket, or ``--executor local``).
    """
    engine, where = name(), address()
    try:
        c = docker.DockerClient(base_url=where, timeout=600) if engine == "podman" else docker.from_env(timeout=600)
        c.ping()
        return c
    except docker.errors.DockerException as exc:
        if engine == "podman":
            raise ExecutorError(
                "--engine podman: no Podman API answers at %s (%s)" % (where, exc.__class__.__name__),
                "start it (`podman system service --time=0 %s &`), or point DLREPRO_PODMAN_SOCKET at its socket"
                % where,
            ) from None
        raise ExecutorError(
            "no Docker engine answers at %s (%s). Start one (e.g. `sudo systemctl start docker`, or "
            "`sudo dockerd &`), run through Podman (`--engine podman`), or run without containers: "
            "`dlrepro run --spec=NAME --executor local`" % (where, exc.__class__.__name__)
        ) from None


def local_name(tag):
    """``tag`` as Docker names a local image: without the ``localhost/`` (loaded, imported) or ``docker.io/``
    (built) that Podman puts before unqualified names, so that a recipe that names its base is the same, and its
    image tag too, whichever engine builds it."""
    for prefix in ("localhost/", "docker.io/"):
        if tag.startswith(prefix):
            return tag[len(prefix) :]
    return tag


def _podman_info():
    """Podman's own /libpod/info (host: security.rootless, cgroupVersion, ...), or None from Docker."""
    found = client().version()
    if not any("podman" in (c.get("Name") or "").lower() for c in found.get("Components") or []):
        return None
    return client().api._result(client().api._get(client().api.base_url + "/v4.0.0/libpod/info"), json=True)


def record():
    """What a bundle records of the engine: {name (as the engine reports itself), version, api_version}, and
    for Podman whether it runs rootless and its cgroup version."""
    found, podman = client().version(), _podman_info()
    body = {
        "name": "podman" if podman else "docker",
        "version": found.get("Version"),
        "api_version": found.get("ApiVersion"),
    }
    if podman:
        body.update(rootless=podman["host"]["security"]["rootless"], cgroup_version=podman["host"]["cgroupVersion"])
    return body


def limits_problem(podman_info):
    """Why containers of this engine would not get the memory and process limits the bundle records, or None:
    rootless Podman on a cgroups v1 host ignores them ("Resource limits are not supported and ignored on
    cgroups V1 rootless systems"). ``podman_info``: Podman's /libpod/info, None for Docker."""
    host = (podman_info or {}).get("host") or {}
    if (host.get("security") or {}).get("rootless") and host.get("cgroupVersion") == "v1":
        return ExecutorError(
            "--engine podman: this Podman runs rootless on a cgroups v1 host, where it ignores "
            "container memory and process limits, so jobs would not be isolated as recorded",
            "run Podman as root, or on a host with cgroups v2 (systemd.unified_cgroup_hierarchy=1)",
        )
    return None


def check_limits():
    """Raise ExecutorError (``limits_problem``) when the engine in use cannot enforce the containers' limits."""
    problem = limits_problem(_podman_info())
    if problem is not None:
        raise problem


def answers():
    """Whether the engine in use answers a ping now."""
    try:
        client().ping()
    except (ExecutorError,) + ENGINE_ERRORS:
        return False
    return True


def gone(exc):
    """Whether ``exc`` (one of ENGINE_ERRORS) means that the engine went away: its connection was refused or
    broken (urllib3's ProtocolError mid-stream, requests' ChunkedEncodingError), or it no longer answers."""
    if isinstance(
        exc,
        (
            requests.ConnectionError,
            requests.exceptions.ChunkedEncodingError,
            urllib3.exceptions.ProtocolError,
            ConnectionError,
        ),
    ):
        return True
    return not answers()


def lost(exc=None):
    """The EngineLost of an engine that went away (``exc``: the error that showed it, None: it no longer answers):
    one line naming the engine and its address."""
    return EngineLost(
        "the %s engine at %s went away (%s)"
        % (name().capitalize(), address(), type(exc).__name__ if exc is not None else "no answer")
    )


@contextlib.contextmanager
def calls():
    """Engine errors (ENGINE_ERRORS) as EngineLost when the engine went away (``gone``), else ExecutorError."""
    try:
        yield
    except ENGINE_ERRORS as exc:
        if gone(exc):
            raise lost(exc) from None
        raise ExecutorError("the %s engine failed: %s" % (name().capitalize(), exc)) from None
