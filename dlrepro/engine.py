"""The Docker engine connection, with an error that says what to do when there is none."""
import functools
import os

import docker

from dlrepro.errors import ExecutorError


@functools.lru_cache(maxsize=1)
def client():
    """A docker SDK client for the engine at DOCKER_HOST (default: the local socket).

    Raises ExecutorError naming the fix (start an engine, or ``--executor local``).
    """
    try:
        c = docker.from_env(timeout=600)
        c.ping()
        return c
    except docker.errors.DockerException as exc:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise ExecutorError(
            "no Docker engine answers at %s (%s). Start one (e.g. `sudo systemctl start docker`, or "
            "`sudo dockerd &`), or run without containers: `invoke run --spec=NAME --executor local`"
            % (where, exc.__class__.__name__)) from None


def engine_version():
    """The engine's version string, e.g. '20.10.24+dfsg1'."""
    return client().version().get("Version")
