"""The runner must run inside old framework images: Python 3.6 syntax, stdlib + numpy + framework."""

import ast
import subprocess
import sys
from pathlib import Path

from dlrepro import REPO_ROOT

RUNNER = REPO_ROOT / "runner"
# the third-party modules each runner file may import: numpy everywhere, a framework only in its adapter
FRAMEWORK_MODULES = {
    "torch_adapter.py": {"torch"},
    "torch_layers.py": {"torch"},
    "tensorflow_adapter.py": {"tensorflow", "keras"},
    "tensorflow_parallel.py": {"tensorflow"},
    "keras_adapter.py": {"keras"},
    "keras2_adapter.py": {"keras", "tensorflow"},
    "chainer_adapter.py": {"chainer", "cupy"},
    "keras_init.py": {"keras"},
    "keras_pool.py": {"keras"},
    "tensorflow_graph.py": {"tensorflow"},
    "cntk_recurrent.py": {"cntk"},
    "mxnet_adapter.py": {"mxnet"},
    "jax_adapter.py": {"jax", "jaxlib", "optax"},
    "jax_layers.py": {"jax"},
    "cntk_adapter.py": {"cntk"},
    "caffe_adapter.py": {"caffe"},
    "caffe2_adapter.py": {"caffe2"},
    "telemetry.py": {"pynvml"},  # optional: nvidia-ml-py, pure ctypes; "unavailable: reason" without it
    "buildinfo.py": {
        "torch",
        "caffe2",
        "tensorflow",
        "mxnet",
        "jax",
        "jaxlib",
        "cntk",
        "caffe",
        "chainer",
    },  # its image's
}


def test_runner_is_python36_compatible():
    vermin = Path(sys.executable).with_name("vermin")
    proc = subprocess.run(
        [str(vermin), "-t=3.6-", "--violations", "--no-tips", str(RUNNER)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Minimum required versions: 3." in proc.stdout


def test_runner_imports_only_stdlib_numpy_and_frameworks():
    for path in RUNNER.rglob("*.py"):
        allowed = {"numpy", "runner"} | FRAMEWORK_MODULES.get(path.name, set())
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top in allowed, "%s imports %s" % (
                    path.relative_to(REPO_ROOT),
                    name,
                )
