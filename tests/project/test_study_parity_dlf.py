"""benchmarks/study_parity.py's entries for DLF's TensorFlow, PyTorch, Gluon and Keras-on-CNTK CNN notebooks (issue
55): each entry's edits applied to the real notebook as the peer applies them (a local copy of
ilkarman/DeepLearningFrameworks named by DLREPRO_DLF_COPY; skipped with the reason where it is absent), and the
peer's window timer (Gluon_CNN's loop waits for no step's result until the epoch's end)."""

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tests.helpers import benchmark

COPY = "DLREPRO_DLF_COPY"


def notebook_or_skip(name, tmp_path):
    """A copy in ``tmp_path`` of the real notebooks/``name`` (from the folder DLREPRO_DLF_COPY names); skips the test
    with the reason where there is none."""
    copy = os.environ.get(COPY)
    if not copy or not (Path(copy) / "notebooks" / name).is_file():
        pytest.skip(
            "no notebooks/%s: set %s to a local copy of ilkarman/DeepLearningFrameworks (e.g. a git clone at "
            "671e2a0, the commit the results read)" % (name, COPY)
        )
    shutil.copy(Path(copy) / "notebooks" / name, tmp_path / name)
    return tmp_path / name


def edited_script(framework, tmp_path):
    """(script, the peer's edits, the code cells) of ``framework``'s real notebook after its entry's edits, as
    study_parity_peer.py runs it (substituted, then notebook_script)."""
    study = benchmark("study_parity").STUDY[framework]
    path = notebook_or_skip(study["script"].split("/")[-1], tmp_path)
    peer = benchmark("study_parity_peer")
    edits = peer.substituted(str(tmp_path), study["subs"])
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    script, notes = peer.notebook_script(cells)
    return script, edits + notes, cells


def test_the_tensorflow_notebook_runs_channels_last_and_its_step_ends_at_session_run(tmp_path):
    script, edits, _ = edited_script("dlf-tensorflow", tmp_path)
    assert script.count("data_format='channels_last'") == 6
    assert "channels_first" not in script
    assert "X = tf.placeholder(tf.float32, shape=[None, 32, 32, 3])" in script
    assert "x_train, x_test, y_train, y_test = cifar_for_library(channel_first=False)" in script
    # the loop's steps end at sess.run; the accuracy's call after the loop, past the timed steps, ends no step timed
    assert script.splitlines()[-5:] == [
        "    for data, label in yield_mb(x_train, y_train, BATCHSIZE, shuffle=True):",
        "        sess.run(model, feed_dict={X: data, y: label, training: True})",
        "    # Log",
        "    acc_train = sess.run(accuracy, feed_dict={X: data, y: label, training: True})",
        '    print(j, "Train accuracy:", acc_train)',
    ]
    assert edits[0] == (
        "Tensorflow_CNN.ipynb: \"data_format='channels_first'\" -> \"data_format='channels_last'\" (6 times)"
    )
    assert edits[-1] == "cells 1-10 of 12, magics dropped"
    study = benchmark("study_parity").STUDY["dlf-tensorflow"]
    assert (study["token"], study["args"](3), study["env"](0)) == (
        "tensorflow@1.4.0",
        ["tensorflow:Session.run", "64"],
        {},
    )


def test_the_pytorch_notebook_runs_with_its_cuda_calls_made_no_ops_and_its_step_ends_at_sgd_step(tmp_path):
    script, edits, cells = edited_script("dlf-torch", tmp_path)
    assert ".cuda()" not in script
    assert "sym # CUDA!" in script
    assert "        data = Variable(torch.FloatTensor(data))" in script
    assert "        target = Variable(torch.LongTensor(target))" in script
    assert "        optimizer.step()" in script
    # the fourth: the evaluation cell's, edited too, not run
    assert "    data = Variable(torch.FloatTensor(data))" in cells[10].splitlines()
    assert "Main evaluation loop" in cells[10] and "Main evaluation loop" not in script
    assert edits == ["PyTorch_CNN.ipynb: '.cuda()' -> '' (4 times)", "cells 1-10 of 12, magics dropped"]
    assert benchmark("study_parity").STUDY["dlf-torch"]["args"](3) == ["torch.optim:SGD.step", "64"]


def test_the_gluon_notebook_runs_on_the_cpu_to_its_epochs_end_and_is_timed_as_one_window(tmp_path):
    script, edits, _ = edited_script("dlf-gluon", tmp_path)
    lines = script.splitlines()
    assert "ctx = mx.cpu()" in lines
    assert "net.hybridize()  # Main training loop" in lines
    assert "        trainer.step(data.shape[0])" in lines
    assert lines[-1] == "    print('Epoch %3d: loss: %5.4f'%(j, train_loss.asscalar()/(i+1)))"
    assert edits[-1] == "cells 1-9 of 11, magics dropped"
    study = benchmark("study_parity").STUDY["dlf-gluon"]
    assert study["window"] is True
    assert study["args"](3) == ["mxnet.gluon:Trainer.step", "64", "mxnet.ndarray:waitall"]


def test_the_keras_cntk_notebook_runs_as_written_with_its_backend_chosen_before_the_peer_imports_keras(tmp_path):
    script, edits, _ = edited_script("dlf-keras-cntk", tmp_path)
    assert "os.environ['KERAS_BACKEND'] = \"cntk\"" in script
    assert "K.backend.set_image_data_format('channels_first')" in script
    assert script.splitlines()[-1] == "          verbose=1)"
    assert edits == ["cells 1-11 of 13, magics dropped"]
    study = benchmark("study_parity").STUDY["dlf-keras-cntk"]
    assert (study["token"], study["env"](0)) == ("keras-cntk@2.1.5", {"KERAS_BACKEND": "cntk"})


def test_the_keras_cntk_notebooks_channels_last_variant_measures_what_the_layout_costs_cntk(tmp_path):
    """P-nhwc: DLF's Keras-on-CNTK notebook made channels-last, to measure what the layout costs CNTK, whose own
    layout is channels-first (as the notebook's and the suite's Keras 2 adapter's on CNTK)."""
    study = benchmark("study_parity").STUDY["dlf-keras-cntk"]
    path = notebook_or_skip("Keras_CNTK_CNN.ipynb", tmp_path)
    peer = benchmark("study_parity_peer")
    edits = peer.substituted(str(tmp_path), study["subs"] + study["variants"]["P-nhwc"]["subs"])
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    script, _ = peer.notebook_script(cells)
    assert "K.backend.set_image_data_format('channels_last')" in script and "channels_first" not in script
    assert "input_shape=(32, 32, 3)))" in script and "cifar_for_library(channel_first=False, one_hot=True)" in script
    assert len(edits) == 3


def test_an_edit_found_other_than_its_count_of_times_stops_the_peer(tmp_path):
    (tmp_path / "a.ipynb").write_text("x.cuda() y.cuda()")
    peer = benchmark("study_parity_peer")
    with pytest.raises(SystemExit) as stopped:
        peer.substituted(str(tmp_path), [["a.ipynb", ".cuda()", "", 3]])
    assert str(stopped.value) == "peer: '.cuda()' is 2 times in a.ipynb, expected 3"
    assert peer.substituted(str(tmp_path), [["a.ipynb", ".cuda()", "", 2]]) == ["a.ipynb: '.cuda()' -> '' (2 times)"]
    assert (tmp_path / "a.ipynb").read_text() == "x y"


def test_a_window_is_one_value_per_step_from_the_warm_up_s_waited_end_to_the_last_step_s(tmp_path, monkeypatch):
    # a stand-in framework on a stand-in clock: a step's call dispatches 1 s of wall, waiting for the queued work
    # takes 0.5 s; CPU runs at twice the wall
    now = [0.0]
    fake = types.ModuleType("fakefw")
    fake.waits = []

    class Trainer(object):
        def step(self, n):
            now[0] += 1.0

    def waitall():
        fake.waits.append(now[0])
        now[0] += 0.5

    fake.Trainer, fake.waitall = Trainer, waitall
    monkeypatch.setitem(sys.modules, "fakefw", fake)
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "__init__.py").write_text("")
    (tmp_path / "common" / "params.py").write_text("EPOCHS = 3\nN_CLASSES = 10\nBATCHSIZE = 64\n")
    (tmp_path / "common" / "utils.py").write_text(
        "def shuffle_data(X, y):\n    return X, y\n\n\n"
        "def yield_mb(X, y, batchsize=64, shuffle=False):\n"
        "    for i in range(len(X) // batchsize):\n"
        "        yield X[i * batchsize:(i + 1) * batchsize], y[i * batchsize:(i + 1) * batchsize]\n"
    )
    cells = [
        "import fakefw\nfrom common.params import *\nfrom common.utils import *",
        "# Main training loop\nx, _, y, _ = cifar_for_library()\nt = fakefw.Trainer()\n"
        "for data, label in yield_mb(x, y, BATCHSIZE):\n    t.step(1)",
    ]
    target = tmp_path / "Fake_CNN.ipynb"
    target.write_text(json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]}))
    peer = benchmark("study_parity_peer")
    monkeypatch.setattr(peer.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(peer.time, "process_time", lambda: 2 * now[0])
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    try:
        clock, edited, _ = peer.notebook(
            str(tmp_path), str(target), ["fakefw:Trainer.step", "64", "fakefw:waitall"], 3, window=1
        )
    finally:
        for name in ("common", "common.params", "common.utils"):
            sys.modules.pop(name, None)
    # 4 steps run (STEPS + 1 mini-batches, one epoch); waited for after steps 1 and 3: (1.5 .. 4.0) / 2 steps
    assert fake.waits == [1.0, 3.5]
    assert (clock.wall, clock.cpu) == ([1.25], [2.5])
    assert edited[-1] == "one window: steps 2-3, waited for by fakefw:waitall at both ends"
    with pytest.raises(SystemExit) as stopped:
        peer.notebook(str(tmp_path), str(target), ["fakefw:Trainer.step", "64", "fakefw:waitall"], 3, window=0)
    assert str(stopped.value) == "peer: --window 0: give 1 to 2 warm-up steps (a window needs one before it)"


def test_the_gluon_unit_asks_the_peer_for_a_window_after_the_warm_up_and_keeps_its_one_value(monkeypatch):
    module = benchmark("study_parity")
    commands = []

    def run(command, **kwargs):
        commands.append(command)
        out = "PEER " + json.dumps({"wall": [1.25], "cpu": [2.5], "edited": ["e"]})
        return subprocess.CompletedProcess(command, 0, out + "\n", "")

    monkeypatch.setattr(module.subprocess, "run", run)
    assert module.peer_unit("dlf-gluon", 0, "/s", "img", 2, 4) == ([1.25], [2.5], ["e"], [])
    (command,) = commands
    assert command[command.index("/bench/peer.py") + 1 : command.index("/bench/peer.py") + 4] == [
        "notebook",
        "/study/notebooks/Gluon_CNN.ipynb",
        "6",
    ]
    assert command[command.index("--subs") + 2 :] == [
        "--window",
        "2",
        "--",
        "mxnet.gluon:Trainer.step",
        "64",
        "mxnet.ndarray:waitall",
    ]


def test_dlfs_mxnet_notebooks_take_the_suites_thread_variables_and_the_others_refuse_a_thread_count(
    tmp_path, monkeypatch, capsys
):
    """--threads N for DLF's MXNet notebooks (Module and Gluon) and Keras on Theano: the notebook runs with the
    variables the suite's job sets for N threads (runner.settings: the BLAS and OpenMP pools, one MXNet engine worker;
    Keras's backend and no GPU for the Keras job), pinned to N CPUs
    as the job is; at 0 (DLF's way) with none. A notebook whose framework takes its thread count through an API
    that DLF's code never calls (CNTK) is refused before any unit runs."""
    study_parity = benchmark("study_parity")
    one = {
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MXNET_CPU_WORKER_NTHREADS": "1",
    }
    for framework in ("dlf-mxnet", "dlf-gluon"):
        assert study_parity.STUDY[framework]["env"](1) == one and study_parity.STUDY[framework]["env"](0) == {}
    assert study_parity.STUDY["dlf-keras-cntk"]["env"](0) == {"KERAS_BACKEND": "cntk"}
    theano = {"KERAS_BACKEND": "theano", "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
    assert study_parity.STUDY["dlf-keras-theano"]["env"](2) == dict(theano, **{k: "2" for k in one if "MXNET" not in k})
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "CNTK_CNN.ipynb").write_text("{}")
    monkeypatch.setattr(
        sys, "argv", ["study_parity.py", "--dlf", str(tmp_path), "--frameworks", "dlf-cntk", "--threads", "1"]
    )
    with pytest.raises(SystemExit) as stopped:
        study_parity.main()
    assert str(stopped.value).startswith(
        "--threads 1: dlf-cntk's thread count is set through its framework's API, which DLF's notebook does not call; "
        "give --threads 0 (the default, as DLF ran it), or a notebook of dlf-mxnet, dlf-keras-theano, dlf-gluon"
    )
    assert capsys.readouterr().out == ""
