"""Published references carried by the specs, and how `invoke specs` and `invoke datasets` show them."""

import subprocess
import sys

import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import SpecError
from dlrepro.inputs import spec
from dlrepro.inputs.references import KINDS


def invoke(*args):
    return subprocess.run(
        [sys.executable, "-m", "invoke"] + list(args),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def test_every_dlf_spec_carries_the_published_readme_values():
    for name, variant in [("cifar10-vgg", "cifar10-vgg"), ("imdb-gru", "imdb-gru"), ("resnet50-features", "features")]:
        refs = spec.load(name).references
        published = [r for r in refs if r.kind == "published" and r.variant == variant]
        assert published and all("ilkarman/DeepLearningFrameworks" in r.source for r in published), name
    pytorch_p100 = [
        r
        for r in spec.load("cifar10-vgg").references
        if r.kind == "published" and r.framework == "PyTorch" and "P100" in r.hardware
    ]
    assert sorted(r.value for r in pytorch_p100) == [51, 63] and {r.unit for r in pytorch_p100} == {
        "s"
    }  # HEAD, 2018-02


def test_dlbench_specs_say_their_tables_are_missing_and_keep_kinds_apart():
    for name in ("alexnet", "fcn", "resnet50", "resnet56", "lstm"):
        s = spec.load(name)
        assert "dlbench.arxiv_v7.table7" in [m.id for m in s.missing_references]
        assert not [r for r in s.references if r.kind == "published"], name  # no DLBench table was retrieved
    third_party = [r for r in spec.load("alexnet").references if r.kind == "third_party_rerun"]
    assert third_party and all(r.variant == "alexnet-s" and "guolinke" in r.source for r in third_party)
    assert {r.kind for name in spec.available() for r in spec.load(name).references} <= set(KINDS)


def test_a_reference_to_an_unknown_variant_is_refused(tmp_path):
    text = (
        (REPO_ROOT / "specs" / "resnet56.yaml").read_text().replace("  variant: resnet56\n", "  variant: resnet-56\n")
    )
    path = tmp_path / "resnet56.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        spec.load(str(path))
    assert "references.0.variant: unknown variant 'resnet-56'; the file defines: resnet56" in str(err.value)


def test_specs_lists_every_spec_and_shows_references():
    listing = invoke("specs").stdout
    cells = [
        [c.strip() for c in line.split("\u2502")[1:-1]] for line in listing.splitlines() if line.startswith("\u2502")
    ]
    assert {c[0]: c[-1] for c in cells if c[0]} == {  # each spec once, with the study whose runs use it
        "alexnet": "dlbench",
        "fcn": "dlbench",
        "resnet50": "dlbench",
        "resnet56": "dlbench",
        "lstm": "dlbench",
        "cifar10-vgg": "dlf",
        "imdb-gru": "dlf",
        "resnet50-features": "dlf",
        "densenet121-chestxray": "dlf",
    }
    assert [c[1:3] for c in cells if c[1] in ("cifar10-vgg-synthetic", "features-torchvision")] == [
        ["cifar10-vgg-synthetic", "throughput"],
        ["features-torchvision", "inference"],
    ]  # long names stay aligned
    shown = invoke("specs", "--show", "imdb-gru").stdout
    assert "references: published (40)" in shown and "references: notebook_measured (14)" in shown
    assert "training_wall_time_3_epochs" in shown and "missing dlf.readme.unreported_cells" in shown
    assert "model gru: 3,818,302 parameters" in shown


def test_datasets_lists_what_the_cache_holds(mnist):
    out = invoke("datasets").stdout
    assert "mnist" in out and "4 of 4" in out and "imdb-reviews" in out and "ptb" in out
