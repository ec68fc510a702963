"""The shape of the tree, checked on its imports (DESIGN.md, "From measurements to answers"; issue 34): the answer
layer is pure, the views decide nothing, and no import runs back up a layer.

Read from the source with ast, nothing imported: answers/ imports no plotting, colour, view, spec-loading or store
module and reads no file; a view (results/views/, cli/render.py) imports from answers/ only the model and the
verdict words; the input modules (references, specs, studies), images/ and the store import nothing above them.
"""
import ast

import pytest

from dlrepro import REPO_ROOT

PACKAGE = REPO_ROOT / "dlrepro"
ANSWERS = sorted((PACKAGE / "results" / "answers").glob("*.py"))
VIEWS = sorted((PACKAGE / "results" / "views").glob("*.py")) + [PACKAGE / "cli" / "render.py"]


def imports(path):
    """Every module a file imports, as dotted names ('dlrepro.results.answers.verdicts' for `from
    dlrepro.results.answers import verdicts`), wherever in the file the import stands."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update("%s.%s" % (node.module, alias.name) for alias in node.names)
    return found


def _name(path):
    return str(path.relative_to(REPO_ROOT))


@pytest.mark.parametrize("path", ANSWERS, ids=_name)
def test_the_answer_layer_imports_no_plot_colour_view_spec_loader_or_store_and_reads_no_file(path):
    banned = ("matplotlib", "dlrepro.results.views", "dlrepro.spec", "dlrepro.studies", "dlrepro.results.bundle",
              "dlrepro.results.tables", "dlrepro.results.records", "dlrepro.results.gather", "jinja2", "subprocess")
    assert not {m for m in imports(path) if m.startswith(banned)}, _name(path)
    text = path.read_text()
    assert not [w for w in ("open(", ".read_text(", ".read_bytes(", ".write_text(", "glob(") if w in text], _name(path)


@pytest.mark.parametrize("path", VIEWS, ids=_name)
def test_a_view_imports_no_verdict_rule_only_the_model_and_the_words(path):
    allowed = {"dlrepro.results.answers", "dlrepro.results.answers.model", "dlrepro.results.answers.study",
               "dlrepro.results.answers.verdicts"}
    rules = {m for m in imports(path) if m.startswith("dlrepro.results.answers") and m not in allowed}
    assert not rules, "%s imports verdict rules: %s" % (_name(path), sorted(rules))


LAYERS = [  # lowest first: a module may import its own layer and those before it, never one after
    ("inputs", ["frameworks.py", "references.py", "spec.py", "studies.py", "layers.py", "yamlfile.py", "peaks.py",
                "prices.py", "datasets.py"]),
    ("images", ["images"]),
    ("store", ["results/bundle.py", "results/tables.py", "results/records.py", "results/peak_columns.py",
               "results/validate.py", "results/archive"]),
    ("answers", ["results/answers", "results/gather.py"]),
    ("views", ["results/views", "results/site.py"]),
    ("run", ["run"]),
    ("cli", ["cli"]),
]


def _layer_of(module):
    """The index in LAYERS of a dlrepro module (dotted), or None for one outside them (shared helpers)."""
    relative = module.replace("dlrepro.", "", 1).replace(".", "/")
    for i, (_, places) in enumerate(LAYERS):
        for place in places:
            stem = place[:-3] if place.endswith(".py") else place
            if relative == stem or relative.startswith(stem + "/"):
                return i
    return None


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=_name)
def test_no_import_runs_back_up_a_layer(path):
    mine = _layer_of(".".join(path.relative_to(REPO_ROOT).with_suffix("").parts))
    if mine is None:
        return
    upward = sorted(m for m in imports(path) if m.startswith("dlrepro.") and (_layer_of(m) or 0) > mine)
    assert not upward, "%s (%s) imports from a layer above it: %s" % (_name(path), LAYERS[mine][0], upward)


def test_every_module_is_under_500_lines():
    long = {_name(p): n for p in sorted(PACKAGE.rglob("*.py")) + sorted((REPO_ROOT / "runner").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > 500}
    assert not long, long
