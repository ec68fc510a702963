"""The test tree (tests/tree.py): every test module in a folder of its own kind, none importing another, and a test
that needs a container engine, Slurm or Podman (a fixture of tree.ENGINE_FIXTURES in its closure) exactly where it
lies in tests/engine/ or tests/containers/, so that the serial engine group holds only tests that need the engine."""

import ast
import json
import os
import subprocess
import sys

from dlrepro import REPO_ROOT
from tests import tree

MODULES = sorted(tree.TESTS.rglob("test_*.py"))


def test_every_test_module_lies_in_a_folder_of_the_tree():
    assert [str(p.relative_to(tree.TESTS)) for p in MODULES if tree.folder_of(p) not in tree.FOLDERS] == []
    assert {tree.folder_of(p) for p in MODULES} == set(tree.FOLDERS)
    assert [f for f in tree.FOLDERS if not (tree.TESTS / f / "__init__.py").is_file()] == []


def _imported(path):
    """The modules a file imports (``from a import b``: a and a.b)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update("%s.%s" % (node.module, alias.name) for alias in node.names)
    return names


def test_no_module_of_the_tests_imports_a_test_module_or_a_conftest():
    found = {
        str(p.relative_to(tree.TESTS)): sorted(
            n
            for n in _imported(p)
            if n.startswith("tests.") and (n.split(".")[-1].startswith("test_") or n.split(".")[-1] == "conftest")
        )
        for p in tree.TESTS.rglob("*.py")
    }
    assert {path: names for path, names in found.items() if names} == {}


def test_the_tree_places_a_test_by_its_folder():
    assert tree.folder_of(tree.TESTS / "engine" / "test_x.py") == "engine"
    assert tree.folder_of(tree.TESTS / "conftest.py") == ""
    assert tree.needs_engine(["tmp_path", "cpu_images", "docker_engine"]) and tree.needs_engine(["slurm"])
    assert not tree.needs_engine(["tmp_path", "matrix", "monkeypatch"])
    assert [
        tree.group(tree.TESTS / f / "test_x.py", "tests.%s.test_x" % f) for f in ("engine", "run", "containers")
    ] == ["engine", "tests.run.test_x", None]
    shared = tree.group(tree.TESTS / "containers" / "test_x.py", "tests.containers.test_x", True)
    assert shared == "tests.containers.test_x"
    assert [tree.place(tree.TESTS / f / "test_x.py") for f in ("engine", "project", "containers")] == [0, 1, 2]


def _collection(request, tmp_path):
    """tree.rows() of every test: this session's where it collected every folder (a whole run), else a collection
    of the whole tree in a pytest of its own."""
    rows = tree.rows(request.session.items)
    if {folder for _, folder, _, _ in rows} >= set(tree.FOLDERS):
        return rows
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.tree",
            str(tree.TESTS),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, **{tree.OUT: str(out)}),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [tuple(row) for row in json.loads(out.read_text())]


def test_a_test_needs_an_engine_exactly_where_it_lies_in_engine_or_containers_and_runs_in_its_group(request, tmp_path):
    rows = _collection(request, tmp_path)
    misplaced = [
        (nodeid, folder, engine)
        for nodeid, folder, engine, _ in rows
        if engine != (folder in (tree.ENGINE, tree.CONTAINERS))
    ]
    assert misplaced == []
    assert [nodeid for nodeid, _, engine, group in rows if group == tree.ENGINE and not engine] == []
    engine = {folder for _, folder, needs, _ in rows if needs}
    assert engine == {tree.ENGINE, tree.CONTAINERS} and len(rows) > 1000
    # the container tests of test_jax_adapter.py's ``measured`` (module scope, 80 s of precision jobs) are one group,
    # so it is set up once, not once per worker that takes one of them; every other container test is a unit alone
    module = "tests/containers/test_jax_adapter.py::"
    jax = {nodeid[len(module) :]: group for nodeid, _, _, group in rows if nodeid.startswith(module)}
    shared = {name for name in jax if name.startswith(("test_bf16_computes", "test_fp32_stays"))}
    assert len(shared) == 8 and {jax[name] for name in shared} == {"tests.containers.test_jax_adapter"}
    assert {name: jax[name] for name in set(jax) - shared} == {
        "test_a_bf16_job_records_its_compute_dtype_and_is_set_against_the_bf16_peak": None
    }
    others = {group for nodeid, folder, _, group in rows if folder == tree.CONTAINERS and not nodeid.startswith(module)}
    assert others == {None}  # test_frameworks.py: its fixtures are session-scoped lookups
    # the container tests marked slow(SECONDS) come first among them, the longest first (tests/conftest.py)
    containers = [nodeid.split("::")[1] for nodeid, folder, _, _ in rows if folder == tree.CONTAINERS]
    assert containers[:3] == [
        "test_dlfs_other_rows_learn_imdb_in_a_short_run",
        "test_dlfs_other_rows_train_its_cnn_and_gru_keras_in_its_backends_image",
        "test_alexnet_in_seven_containers_one_bundle",
    ]
