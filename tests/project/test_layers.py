"""The shape of the tree, checked on its imports (DESIGN.md, "From measurements to answers"; issues 34 and 51): the
folders of dlrepro/ are its layers, the answer layer is pure, the views decide nothing, no import runs back up a
layer and no two modules import each other, however far round.

Read from the source with ast, nothing imported. A module of dlrepro/ is in the folder of its layer (LAYERS, lowest
first: a module imports its own layer, those below it and the helpers) or is one of the HELPERS at the package's
root, which import only helpers; any other module fails. answers/ (but gather, the one reader of the store) imports
no plotting, colour, view, spec-loading, store or planning module and reads no file; a view (views/, cli/render.py)
imports from answers/ only the model and the verdict words.
"""

import ast
import functools
import io
import tokenize

import pytest

from dlrepro import REPO_ROOT

PACKAGE = REPO_ROOT / "dlrepro"
RUNNER = REPO_ROOT / "runner"
LAYERS = ["inputs", "images", "plan", "store", "answers", "views", "run", "cli"]  # lowest first
HELPERS = ["__init__", "cache", "checkout", "engine", "errors", "files", "folders", "heartbeat", "names"]
ANSWERS = sorted(p for p in (PACKAGE / "answers").glob("*.py") if p.name != "gather.py")  # gather: the reader
VIEWS = sorted((PACKAGE / "views").glob("*.py")) + [PACKAGE / "cli" / "render.py"]


def _modules(root):
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(path):
    """'dlrepro.answers.model' for dlrepro/answers/model.py, 'dlrepro.answers' for its __init__.py."""
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _name(path):
    return str(path.relative_to(REPO_ROOT))


def imports(path):
    """Every module a file imports, as dotted names ('dlrepro.answers.verdicts' for `from dlrepro.answers import
    verdicts`), wherever in the file the import stands (a name that is no module included: a superset)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update("%s.%s" % (node.module, alias.name) for alias in node.names)
    return found


@functools.cache
def graph():
    """{module: the dlrepro and runner modules it imports} over dlrepro/ and runner/, dotted. `from P import x`
    is an arrow to module P.x where x is one, else to P (whose __init__ runs); a module's arrow to itself is
    left out."""
    modules = {_dotted(p): p for p in _modules(PACKAGE) + _modules(RUNNER)}
    arrows = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom) and node.module in modules:
                targets.update(
                    "%s.%s" % (node.module, a.name) if "%s.%s" % (node.module, a.name) in modules else node.module
                    for a in node.names
                )
        arrows[name] = targets - {name}
    return arrows


def circles(arrows):
    """The import circles of ``arrows`` ({module: modules it imports}): each strongly connected set of two or more
    modules, sorted (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(arrows.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            members = []
            while not members or members[-1] != module:
                members.append(stack.pop())
                on_stack.discard(members[-1])
            if len(members) > 1:
                found.append(sorted(members))

    for module in sorted(arrows):
        if module not in index:
            visit(module)
    return sorted(found)


def layer_of(module):
    """The index in LAYERS of a dlrepro module (dotted), "helper" for one of HELPERS, None for one in neither
    (and for dlrepro's own __init__'s name, 'dlrepro': a helper)."""
    parts = module.split(".")[1:]
    if not parts:
        return "helper"
    if parts[0] in LAYERS:
        return LAYERS.index(parts[0])
    return "helper" if len(parts) == 1 and parts[0] in HELPERS else None


def climbs(arrows):
    """The arrows of ``arrows`` that run back up: (module, what it imports) where a layer's module imports a higher
    layer or a helper imports a layer."""
    up = []
    for module, targets in sorted(arrows.items()):
        if not module.startswith("dlrepro"):
            continue
        mine = layer_of(module)
        for target in sorted(targets):
            theirs = layer_of(target) if target.startswith("dlrepro") else None
            if theirs is None or theirs == "helper":
                continue
            if mine == "helper" or (mine is not None and theirs > mine):
                up.append((module, target))
    return up


def test_every_module_of_dlrepro_is_in_a_layer_folder_or_a_helper():
    stray = [_name(p) for p in _modules(PACKAGE) if layer_of(_dotted(p)) is None]
    assert not stray, "in no layer folder (%s) and no helper: %s" % (", ".join(LAYERS), stray)
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and _modules(p))  # not one of __pycache__ alone
    assert folders == sorted(LAYERS), "a folder of dlrepro/ that is no layer, or a layer without its folder"


def test_the_layer_test_finds_a_module_in_no_layer_a_climb_and_a_circle():
    assert layer_of("dlrepro.estimate") is None and layer_of("dlrepro.reports.site") is None
    assert layer_of("dlrepro.inputs.spec") == 0 and layer_of("dlrepro.cli") == 7 and layer_of("dlrepro") == "helper"
    arrows = {
        "dlrepro.plan.coverage": {"dlrepro.run.jobs", "dlrepro.inputs.spec", "dlrepro.errors"},
        "dlrepro.errors": {"dlrepro.inputs.spec"},
        "dlrepro.run.jobs": {"dlrepro.plan.coverage"},
        "runner.a": {"runner.b"},
        "runner.b": {"runner.c"},
        "runner.c": {"runner.a"},
        "runner.d": {"runner.a"},
    }
    assert climbs(arrows) == [("dlrepro.errors", "dlrepro.inputs.spec"), ("dlrepro.plan.coverage", "dlrepro.run.jobs")]
    assert circles(arrows) == [["dlrepro.plan.coverage", "dlrepro.run.jobs"], ["runner.a", "runner.b", "runner.c"]]


def test_no_import_runs_back_up_a_layer_and_helpers_import_only_helpers():
    up = climbs(graph())
    assert not up, "\n".join("%s imports %s, a layer above it" % pair for pair in up)


def _circles_in(package):
    return [c for c in circles(graph()) if c[0].split(".")[0] == package]


def test_no_import_circle_in_dlrepro():
    assert not _circles_in("dlrepro")


def test_no_import_circle_in_runner():
    assert not _circles_in("runner")


def test_of_the_runners_own_modules_only_the_job_imports_the_adapters():
    """A framework's facts come from runner.frameworks, the NVLink multicast switch from runner.topology, the loaded
    CUDA runtime from runner.buildinfo: only runner.job, which runs a job's adapter, imports runner.adapters."""
    into = sorted(
        (name, m)
        for name, found in graph().items()
        if name.startswith("runner.") and not name.startswith("runner.adapters")
        for m in found
        if m.startswith("runner.adapters")
    )
    assert into == [("runner.job", "runner.adapters"), ("runner.job", "runner.adapters.capabilities")]


@pytest.mark.parametrize("path", ANSWERS, ids=_name)
def test_the_answer_layer_imports_no_plot_colour_view_spec_loader_store_or_plan_and_reads_no_file(path):
    banned = (
        "matplotlib",
        "dlrepro.views",
        "dlrepro.inputs.spec",
        "dlrepro.inputs.studies",
        "dlrepro.store",
        "dlrepro.plan",
        "dlrepro.images",
        "dlrepro.answers.gather",
        "jinja2",
        "subprocess",
    )
    assert not {m for m in imports(path) if m.startswith(banned)}, _name(path)
    text = path.read_text()
    assert not [w for w in ("open(", ".read_text(", ".read_bytes(", ".write_text(", "glob(") if w in text], _name(path)


@pytest.mark.parametrize("path", VIEWS, ids=_name)
def test_a_view_imports_no_verdict_rule_only_the_model_and_the_words(path):
    allowed = {"dlrepro.answers", "dlrepro.answers.model", "dlrepro.answers.study", "dlrepro.answers.verdicts"}
    rules = {m for m in imports(path) if m.startswith("dlrepro.answers") and m not in allowed}
    assert not rules, "%s imports verdict rules: %s" % (_name(path), sorted(rules))


def statements(text):
    """The logical lines (statements, tokenize's NEWLINE tokens) of Python source ``text``: a module's size whatever
    its formatting (the formatter spreads one statement over several physical lines)."""
    return sum(1 for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.NEWLINE)


def test_every_module_is_under_400_statements():
    """Small modules: at most 400 statements (the 500 physical lines of the project's style before ruff format held
    at most 379: runner/adapters/caffe_adapter.py at 499 lines)."""
    assert statements("import os\nx = [\n    1,\n    2,\n]\n\n\ndef f():\n    return x\n") == 4
    long = {_name(p): n for p in _modules(PACKAGE) + _modules(RUNNER) if (n := statements(p.read_text())) > 400}
    assert not long, long
