"""The runner must run inside old framework images: Python 3.6 syntax, stdlib + numpy + framework."""
import ast
import subprocess
import sys
from pathlib import Path

from dlrepro import REPO_ROOT

RUNNER = REPO_ROOT / "runner"
ALLOWED_THIRD_PARTY = {"numpy", "torch"}  # the framework modules the adapters import


def test_runner_is_python36_compatible():
    vermin = Path(sys.executable).with_name("vermin")
    proc = subprocess.run([str(vermin), "-t=3.6-", "--violations", "--no-tips", str(RUNNER)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Minimum required versions: 3." in proc.stdout


def test_runner_imports_only_stdlib_numpy_and_frameworks():
    for path in RUNNER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top in ALLOWED_THIRD_PARTY or top == "runner", \
                    "%s imports %s" % (path.relative_to(REPO_ROOT), name)
