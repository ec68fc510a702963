"""The runner runs inside the era images, whose numpy is old: TensorFlow 1.4.0's image has numpy 1.13.3 (the oldest
of the matrix), CNTK 2.5.1's 1.14.2. Every ``np.NAME`` (and ``np.MODULE.NAME``) that a runner file uses must exist
there; ``np.put_along_axis`` (numpy 1.15) once failed every CNTK 2.5.1 LSTM job of a study with AttributeError."""

import ast
import json

import pytest

from dlrepro import REPO_ROOT

pytestmark = pytest.mark.docker

# prints the names of argv[1] (a JSON list of dotted names) that this numpy lacks, then its version
MISSING = """
import json, sys, numpy
def has(name):
    found = numpy
    for part in name.split('.'):
        found = getattr(found, part, None)
        if found is None:
            return False
    return True
print(json.dumps([[n for n in json.loads(sys.argv[1]) if not has(n)], numpy.__version__]))
"""


def _numpy_names():
    """Every dotted name ``np.A`` or ``np.A.B`` read in runner/ (its Python files' ASTs)."""
    names = set()
    for path in (REPO_ROOT / "runner").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "np":
                names.add(node.attr)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "np"
                and node.value.attr in ("random", "linalg", "fft", "testing", "lib")
            ):
                names.add(node.value.attr + "." + node.attr)
    return sorted(names)


@pytest.mark.parametrize("token, version", [("tensorflow@1.4.0", "1.13.3"), ("cntk@2.5.1", "1.14.2")])
def test_every_numpy_name_the_runner_uses_exists_in_the_era_images_numpy(token, version, cpu_image, docker_engine):
    names = _numpy_names()
    assert {"zeros", "float32", "random.RandomState"} <= set(names)
    out = docker_engine.containers.run(
        cpu_image(token).tag, ["python", "-c", MISSING, json.dumps(names)], network_mode="none", remove=True
    )
    assert json.loads(out) == [[], version]
