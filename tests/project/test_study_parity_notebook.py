"""benchmarks/study_parity_peer.py's notebook_script (issue 55): which of a DLF notebook's code cells run, what
becomes of its magics, and a ``%%writefile`` cell (Keras_Theano_CNN's ~/.theanorc) written, not run; the Caffe2
notebook's P-init variant (benchmarks/study_parity.py) edited into the notebook's JSON as the peer reads it; the
benchmark's table, each suite way against the study's code and each variant of it."""

import json

from tests.helpers import benchmark


def test_the_cells_up_to_the_training_loop_run_without_magics_and_a_writefile_cell_is_written(tmp_path):
    rc = tmp_path / "theanorc"
    cells = [
        "import os\n%matplotlib inline",
        "%%%%writefile %s\n[global]\ndevice = cpu" % rc,
        "%%time\n# Main training loop: 1m33s\nmodel.fit(x, y)",
        "# Main evaluation loop\nmodel.predict(x)",
    ]
    script, edited = benchmark("study_parity_peer").notebook_script(cells)
    assert script == "import os\n# Main training loop: 1m33s\nmodel.fit(x, y)"
    assert edited == ["%%%%writefile %s: written" % rc, "cells 1-3 of 4, magics dropped"]
    assert rc.read_text() == "[global]\ndevice = cpu\n"


def test_the_caffe2_notebooks_p_init_variant_calls_the_suites_global_init_right_after_its_imports(tmp_path):
    cells = [
        ["import caffe2\n", "from caffe2.python import core, workspace\n", "from caffe2.proto import caffe2_pb2\n"],
        ["# Main training loop: 51s\n", "workspace.RunNet(model.net)"],
    ]
    notebook = {"cells": [{"cell_type": "code", "source": source} for source in cells]}
    (tmp_path / "Caffe2_CNN.ipynb").write_text(json.dumps(notebook, indent=1))
    variant = benchmark("study_parity").STUDY["dlf-caffe2"]["variants"]["P-init"]
    edited = benchmark("study_parity_peer").substituted(str(tmp_path), variant["subs"])
    source = json.loads((tmp_path / "Caffe2_CNN.ipynb").read_text())["cells"]
    script, _ = benchmark("study_parity_peer").notebook_script(["".join(cell["source"]) for cell in source])
    assert script == (
        "import caffe2\nfrom caffe2.python import core, workspace\n"
        "from caffe2.proto import caffe2_pb2; workspace.GlobalInit(['caffe2', '--caffe2_log_level=1'])\n"
        "# Main training loop: 51s\nworkspace.RunNet(model.net)"
    )
    assert edited == [
        "Caffe2_CNN.ipynb: 'from caffe2.proto import caffe2_pb2' -> \"from caffe2.proto import caffe2_pb2; "
        "workspace.GlobalInit(['caffe2', '--caffe2_log_level=1'])\""
    ]
    assert "env" not in variant  # OpenMP's threads are whatever GlobalInit leaves, as in the suite's job


def test_the_table_sets_each_suite_way_against_the_study_and_against_each_variant_of_the_study_code(capsys):
    found = {
        ("dlf-caffe2", 0, "study"): {"wall": [4.0] * 4, "cpu": [5.0] * 4},
        ("dlf-caffe2", 0, "P-init"): {"wall": [2.0] * 4, "cpu": [0.5] * 4},
        ("dlf-caffe2", 0, "suite's step"): {"wall": [2.2] * 4, "cpu": [0.55]},
    }
    benchmark("study_parity").table(found, 1)
    rows = capsys.readouterr().out.splitlines()[4:]
    assert rows == [
        "| dlf-caffe2 (caffe2@1.10.2) | 0 | P-init | wall | 4.000 | 2.000 | 0.500 [0.500, 0.500] | 4 + 4 |",
        "| dlf-caffe2 (caffe2@1.10.2) | 0 | P-init | cpu | 5.000 | 0.500 | 0.100 [0.100, 0.100] | 4 + 4 |",
        "| dlf-caffe2 (caffe2@1.10.2) | 0 | suite's step | wall | 4.000 | 2.200 | 0.550 [0.550, 0.550] | 4 + 4 |",
        "| dlf-caffe2 (caffe2@1.10.2) | 0 | suite's step | cpu | 5.000 | 0.550 | 0.110 [0.110, 0.110] | 4 + 1 |",
        "| dlf-caffe2 (caffe2@1.10.2) | 0 | suite's step vs P-init | wall | 2.000 | 2.200 | 1.100 [1.100, 1.100] "
        "| 4 + 4 |",
        "| dlf-caffe2 (caffe2@1.10.2) | 0 | suite's step vs P-init | cpu | 0.500 | 0.550 | 1.100 [1.100, 1.100] "
        "| 4 + 1 |",
    ]
