"""benchmarks/study_parity_peer.py's notebook_script (issue 55): which of a DLF notebook's code cells run, what
becomes of its magics, and a ``%%writefile`` cell (Keras_Theano_CNN's ~/.theanorc) written, not run."""

import importlib.util

from dlrepro import REPO_ROOT


def _peer():
    spec = importlib.util.spec_from_file_location(
        "study_parity_peer", REPO_ROOT / "benchmarks" / "study_parity_peer.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cells_up_to_the_training_loop_run_without_magics_and_a_writefile_cell_is_written(tmp_path):
    rc = tmp_path / "theanorc"
    cells = [
        "import os\n%matplotlib inline",
        "%%%%writefile %s\n[global]\ndevice = cpu" % rc,
        "%%time\n# Main training loop: 1m33s\nmodel.fit(x, y)",
        "# Main evaluation loop\nmodel.predict(x)",
    ]
    script, edited = _peer().notebook_script(cells)
    assert script == "import os\n# Main training loop: 1m33s\nmodel.fit(x, y)"
    assert edited == ["%%%%writefile %s: written" % rc, "cells 1-3 of 4, magics dropped"]
    assert rc.read_text() == "[global]\ndevice = cpu\n"
