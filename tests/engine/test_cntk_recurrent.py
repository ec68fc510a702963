"""CNTK's recurrent networks in its image (runner.adapters.cntk_recurrent): the cells against numpy's cuDNN/PyTorch
cells, the state carried across mini-batches, global-norm clipping, the spec's parameter counts; DLBench's LSTM and
DLF's GRU train (their loss falls over a quick run's steps)."""

import json

import pytest

from dlrepro import REPO_ROOT
from dlrepro.inputs import spec
from dlrepro.run import jobs
from dlrepro.run.options import RunOptions
from dlrepro.store import tables
from tests import helpers

pytestmark = pytest.mark.docker
CHECK = REPO_ROOT / "tests" / "data" / "cntk_rnn_check.py"


def test_cells_state_and_clipping_equal_numpys(cntk_cpu_image, docker_engine, tmp_path):
    helpers.run_python(
        docker_engine,
        cntk_cpu_image.tag,
        tmp_path,
        "/opt/dlrepro/check.py",
        "/out/found.json",
        mounts={CHECK: "/opt/dlrepro/check.py"},
    )
    found = json.loads((tmp_path / "found.json").read_text())
    assert found["cntk"] == "2.7"  # 2.7.post2 reports itself as 2.7
    assert found["gru"] < 1e-6 and found["lstm"] < 1e-6  # float32 against float64 over 5 steps
    assert (
        found["embedding"] == 0.0 and found["carried"] < 1e-6 and found["not_carried"] > 1e-3
    )  # the carried state is what makes them equal
    assert found["norms"][0] < 100.0 and found["norms"][1] > 0.01  # the clip above the gradient's norm, then below
    assert found["clip_off"] < 1e-6 and found["clip_on"] < 1e-6
    # Embedding 10000 x 256 and 2 LSTM layers of 4 x 256 x (256 + 256 + 2); a GRU of 3 x 100 x (125 + 100 + 2)
    assert found["lstm_ptb_embedding_and_lstm"] == 2_560_000 + 2 * 526_336
    assert found["gru_layer"] == 68_100


def test_dlbenchs_lstm_and_dlfs_gru_train_with_the_specs_parameter_counts(cntk_cpu_image, tmp_path, reporter):
    from dlrepro.run import runs

    assert jobs.unsupported(spec.load("lstm"), "lstm-synthetic", "cntk") is None
    rows = {}
    for name, variant in (("lstm", "lstm-synthetic"), ("imdb-gru", "imdb-gru-synthetic")):
        path = runs.run(
            name,
            RunOptions(frameworks=["cntk"], variants=[variant], quick=True),
            results_dir=tmp_path,
            reporter=reporter,
        )
        (row,) = tables.summary(path).to_dict("records")
        result = json.loads((path / "jobs" / row["job_id"] / "result.json").read_text())
        rows[name] = (row, result)
    for name, count in (("lstm", 6_182_672), ("imdb-gru", 3_818_302)):
        row, result = rows[name]
        assert row["status"] == "ok" and row["parameters"] == count, (name, result.get("reason"))
        assert result["parameters"]["conventions"] == [] and result["loss"]["last"] < result["loss"]["first"], name
    assert rows["lstm"][1]["environment"]["recurrent"].startswith("cells in CNTK ops (two bias sets")
