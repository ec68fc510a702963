"""The test tree: a folder per package of dlrepro/ (and runner/), the repository-wide checks in project/, and the
tests that need a container engine, Slurm or Podman in folders of their own. A test needs one exactly when a fixture
of ENGINE_FIXTURES is in its closure (``cpu_images`` and the image fixtures through ``docker_engine``);
tests/project/test_tree.py checks that each such test lies in ENGINE or CONTAINERS and no other does.

Under pytest-xdist (tests/conftest.py) the tests of ENGINE are one group, run in their order by one worker, since
they assert engine-wide things (every container listed, the engine stopped or restarted, timings); those of CONTAINERS
start only containers of their own, so each is a group of its own, run last by whichever worker is free, except that
the tests of a CONTAINERS module that share a module-scoped fixture run as one group (the fixture computed once, not
once per worker that takes one of them: test_jax_adapter.py's ``measured``, 80 s)."""

import json
import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MIRRORS = ("inputs", "images", "plan", "store", "answers", "views", "run", "cli", "runner")
PROJECT = "project"  # checks of the repository as a whole: layering, consistency, this tree, the runner's Python
ENGINE = "engine"
CONTAINERS = "containers"
FOLDERS = MIRRORS + (PROJECT, ENGINE, CONTAINERS)
ENGINE_FIXTURES = ("docker_engine", "slurm", "podman")
OUT = "DLREPRO_TREE_OUT"  # where the plugin below writes the collection's rows


def folder_of(path):
    """The folder of tests/ that the test file ``path`` lies in ("" for one at tests/ itself)."""
    parts = Path(str(path)).resolve().relative_to(TESTS).parts
    return parts[0] if len(parts) > 1 else ""


def needs_engine(fixturenames):
    """Whether a test whose fixture closure is ``fixturenames`` needs a container engine, Slurm or Podman."""
    return any(name in fixturenames for name in ENGINE_FIXTURES)


def place(path):
    """Where a test of the file ``path`` runs: 0 in the engine group (first), 1 with the packages' tests, 2 beside
    the engine group (last)."""
    folder = folder_of(path)
    return 0 if folder == ENGINE else 2 if folder == CONTAINERS else 1


def module_scoped(item):
    """Whether the closure of the test ``item`` holds a fixture of module scope (the definition that applies to it:
    the last of its name): one value for the module's tests, set up again wherever they do not run one after another
    in one process."""
    return any(defs[-1].scope == "module" for defs in item._fixtureinfo.name2fixturedefs.values())


def group(path, module, shares_a_module_fixture=False):
    """The xdist group of a test of the file ``path`` in ``module``: "engine" for ENGINE, its module's name for the
    packages' tests and for the CONTAINERS tests that share a module-scoped fixture (``module_scoped``), None (no
    group: each test a unit of its own) for the other CONTAINERS tests."""
    return {0: ENGINE, 1: module, 2: module if shares_a_module_fixture else None}[place(path)]


def group_of(item):
    """The xdist group of the collected test ``item`` (``group``)."""
    return group(item.path, item.module.__name__, module_scoped(item))


def rows(items):
    """(node id, folder, whether it needs an engine, xdist group) of each collected test item."""
    return [(item.nodeid, folder_of(item.path), needs_engine(item.fixturenames), group_of(item)) for item in items]


def pytest_collection_finish(session):
    """As a plugin (``-p tests.tree``, DLREPRO_TREE_OUT set): the collection's rows() written there as JSON."""
    if os.environ.get(OUT):
        with open(os.environ[OUT], "w") as out:
            json.dump(rows(session.items), out)
