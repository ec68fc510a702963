"""The runner's imports run one way (issue 51): no circle, and of the runner's own modules only runner.job (which
runs a job's adapter) imports runner.adapters; a framework's facts come from runner.frameworks, the NVLink multicast
switch from runner.topology, the loaded CUDA runtime from runner.buildinfo. Read with ast, nothing imported."""
import ast

from dlrepro import REPO_ROOT

RUNNER = REPO_ROOT / "runner"


def _graph():
    """{module: {runner module it imports}} over runner/, dotted names (a package by its own name)."""
    paths = {".".join(p.relative_to(REPO_ROOT).with_suffix("").parts).replace(".__init__", ""): p
             for p in RUNNER.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.update("%s.%s" % (node.module, a.name) if "%s.%s" % (node.module, a.name) in paths
                             else node.module for a in node.names)
        graph[name] = {m for m in found if m in paths and m != name}
    return graph


def _circles(graph):
    """The modules that reach themselves through their imports, sorted."""
    def reach(start):
        seen, todo = set(), list(graph[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
        return seen

    return sorted(name for name in graph if name in reach(name))


def test_the_runners_imports_have_no_circle():
    assert _circles(_graph()) == []
    assert _circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == ["a", "b"]  # the check finds one


def test_of_the_runners_own_modules_only_the_job_imports_the_adapters():
    graph = _graph()
    climbing = sorted((name, m) for name, found in graph.items() if not name.startswith("runner.adapters")
                      for m in found if m.startswith("runner.adapters"))
    assert climbing == [("runner.job", "runner.adapters"), ("runner.job", "runner.adapters.capabilities")]
