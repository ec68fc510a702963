"""Lua Torch 7 (issue 56): DLBench's fifth tool, built from its source archives and driven from the Python runner.

On the host: the Lua source each DLBench model becomes, what the adapter refuses, the image's recipe (each archive
checked by the SHA-256 of dlrepro/inputs/datasets.yaml), where a build takes the archives from, and what the plan says
of
DLBench's Torch claims. In the image (docker; skipped with the reason where the source archives are not in the
dataset cache, as a run skips a job whose dataset is missing): every DLBench model Torch 7 expresses has the spec's
parameter count, counted by Torch 7, and FCN-R trains on MNIST.
"""

import sys

import numpy as np
import pytest

from dlrepro.errors import CannotRunHere, DatasetError, ImageError, SourcesMissing
from dlrepro.images import context
from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import datasets, spec, studies
from dlrepro.plan import coverage
from dlrepro.run import jobs
from runner import shapes
from runner.adapters import capabilities, torch7_adapter, torch7_lua
from tests.runner.torch7_sources import ARCHIVES, DLBENCH


def _layers(spec_name, model):
    m = spec.load(spec_name).models[model].model_dump(exclude_none=True)
    return shapes.expand(m["layers"], m["input_shape"]), m["input_shape"]


def test_fcn_r_is_four_linear_layers_with_sigmoids_in_lua():
    assert torch7_lua.model_source(*_layers("fcn", "fcn-r")) == (
        "return nn.Sequential():add(nn.Linear(784, 2048)):add(nn.Sigmoid()):add(nn.Linear(2048, 4096))"
        ":add(nn.Sigmoid()):add(nn.Linear(4096, 1024)):add(nn.Sigmoid()):add(nn.Linear(1024, 10))\n"
    )


def test_a_resnet56_block_with_an_option_a_shortcut_sums_two_branches_then_relus_in_place():
    layers, _ = _layers("resnet56", "resnet56")
    first_of_stage3 = [layer for layer in layers if layer["type"] == "residual"][9]  # 16 -> 32 channels, stride 2
    assert torch7_lua.module(first_of_stage3, (16, 32, 32), False) == (
        "nn.Sequential():add(nn.ConcatTable()"
        ":add(nn.Sequential():add(nn.SpatialConvolution(16, 32, 3, 3, 2, 2, 1, 1):noBias())"
        ":add(nn.SpatialBatchNormalization(32, 1e-05, 0.1)):add(nn.ReLU(true))"
        ":add(nn.SpatialConvolution(32, 32, 3, 3, 1, 1, 1, 1):noBias())"
        ":add(nn.SpatialBatchNormalization(32, 1e-05, 0.1)))"
        ":add(nn.Sequential():add(nn.SpatialAveragePooling(1, 1, 2, 2, 0, 0)):add(nn.Padding(1, 16, 3))))"
        ":add(nn.CAddTable(true)):add(nn.ReLU(true))"
    )


def test_a_relu_first_in_its_list_keeps_its_input_whose_other_readers_need_it():
    assert torch7_lua.sequential([{"type": "relu"}, {"type": "relu"}], (4,)) == (
        "nn.Sequential():add(nn.ReLU()):add(nn.ReLU(true))"
    )


def test_pooling_rounds_up_only_where_the_spec_says_ceil_and_flatten_keeps_the_sample_rank():
    assert torch7_lua.module({"type": "maxpool", "kernel": 3, "stride": 2, "ceil": True}, (96, 55, 55), False) == (
        "nn.SpatialMaxPooling(3, 3, 2, 2, 0, 0):ceil()"
    )
    assert torch7_lua.module({"type": "avgpool", "kernel": 7}, (2048, 7, 7), False) == (
        "nn.SpatialAveragePooling(7, 7, 7, 7, 0, 0)"
    )
    assert torch7_lua.module({"type": "flatten"}, (256, 6, 6), False) == "nn.View(9216):setNumInputDims(3)"
    assert torch7_lua.module({"type": "dense", "units": 10, "bias": False}, (64,), False) == "nn.Linear(64, 10, false)"


def test_dlbench_s_lstm_is_refused_with_the_reason_before_anything_runs():
    layers, _ = _layers("lstm", "lstm-ptb")
    assert capabilities.unsupported("torch7", layers, "softmax_cross_entropy", "sgd", None) == (
        "the torch7 adapter has no layer embedding, lstm (Torch 7's nn has no LSTM of DLBench's kind (its Torch "
        "script used the rnn package, not built here))"
    )
    with pytest.raises(torch7_lua.NoModule, match="Torch 7's nn has no embedding module"):
        torch7_lua.model_source(layers, [35])
    assert capabilities.unsupported_parallel("torch7", "throughput") == (
        "no data-parallel training in the torch7 adapter: its image is CPU only: DLBench's Torch trained "
        "data-parallel with cutorch's nn.DataParallelTable, and cutorch/cunn are not built"
    )


def test_every_other_dlbench_model_is_one_torch7_expresses():
    expressed = {
        (name, v)
        for name in DLBENCH
        for v in spec.load(name).variants
        if jobs.unsupported(spec.load(name), v, "torch7") is None
    }
    assert expressed == {
        ("fcn", "fcn-s"),
        ("fcn", "fcn-8"),
        ("fcn", "fcn-r"),
        ("alexnet", "alexnet-s"),
        ("alexnet", "alexnet-r"),
        ("resnet50", "resnet50"),
        ("resnet56", "resnet56"),
        ("resnet56", "resnet56-synthetic"),
    }


def test_the_recipe_checks_each_archive_against_the_catalogues_sha256_before_building_it():
    image = matrixmod.load().entry("torch7-7.0-cpu")
    found = context.lua_sources(image)
    assert [s["name"] for s in found] == ["paths", "cwrap", "torch7", "Moses", "nn", "optim"]
    torch7 = found[2]
    assert torch7 == {
        "file": "torch7-814ea4afd6beb110705d2456de03876841fcf1fd.tar",
        "folder": "torch7-814ea4afd6beb110705d2456de03876841fcf1fd",
        "name": "torch7",
        "commit": "814ea4afd6beb110705d2456de03876841fcf1fd",
        "sha256": "5a92379ca9052f0b9f80bf0cafcd091083e2af87d4093635595bc26922c2a723",
        "cmake": True,
        "modules": {},
    }
    assert [datasets.lookup(a).files["archive"].sha256 for a in ARCHIVES] == [s["sha256"] for s in found]


def test_a_source_folder_without_the_archive_names_the_file_it_looked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("DLREPRO_CACHE", str(tmp_path / "cache"))
    image = matrixmod.load().entry("torch7-7.0-cpu")
    ctx = context.Context(image, tmp_path / "context", "0" * 64)
    (tmp_path / "context").mkdir()
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError) as raised:
        ctx.add_lua_sources(str(tmp_path / "empty"), log=lambda line: None)
    assert (
        str(raised.value) == "lua-paths: no paths-4ebe222ba12589fb9d86c1d3895d7f509df77b6a.tar or "
        "paths-4ebe222ba12589fb9d86c1d3895d7f509df77b6a.tar.gz in %s" % (tmp_path / "empty")
    )


def test_a_missing_source_archive_skips_a_runs_jobs_and_fails_a_build():
    assert issubclass(SourcesMissing, CannotRunHere) and issubclass(SourcesMissing, ImageError)


def test_the_source_archives_are_no_dataset_a_run_reads():
    assert not set(ARCHIVES) & datasets.names() and "mnist" in datasets.names()


def test_the_plan_runs_dlbench_s_torch_where_torch7_has_the_model():
    dlbench = studies.load("dlbench")
    assert dlbench.framework("Torch") == "torch7"
    hardware = coverage.Hardware("P100", 4, 32, coverage.every_dataset())
    found = coverage.plan(dlbench, hardware, matrixmod.load())
    reasons = [o.reason or "" for o in found["claims"]]
    assert not [r for r in reasons if "does not run Torch" in r or "a tool the suite does not run" in r]
    by_claim = dict(zip(dlbench.claims, found["claims"]))
    assert by_claim["cpu-threads-scaling"].testable  # Torch 7's CPU image joins the CPU claim
    assert (by_claim["alexnet-s-ordering"].cause, by_claim["alexnet-s-ordering"].reason) == (
        "image",
        "too few of its tools can run here (can: MXNet): Torch has no CUDA image (cutorch, cunn and cudnn.torch, "
        "Torch 7's GPU packages, have no image yet. cutorch 5e9d86c (2017-09, the repository's last commit) builds "
        "with its rockspec's CMake arguments, Debian's CUDA 11.8 (nvcc 11.8.89, host gcc 11.3) and sm_60 after three "
        "source edits (its atomicAdd(half *, half) kept only where the cuda_fp16.hpp of CUDA 11.8 declares none, an "
        "#include <thrust/iterator/constant_iterator.h> in THCTensorMode.cu, and cudaPointerAttributes.type for the "
        "isManaged that CUDA 11 removed), in about 70 minutes on 2 shared CPUs; there, with no GPU, require 'cutorch' "
        "stops at device discovery: cuda runtime error (100) : no CUDA-capable device is detected at THCGeneral.c:70. "
        "cunn 1ae6aa0 builds on it, in 12 minutes more, with SparseLinear.cu left out of its library (compiled, it "
        'fails with error: identifier "cusparseScsrmm" is undefined: CUDA 11 removed the csrmm of cuSPARSE, so '
        "nn.SparseLinear would have no GPU code). cudnn.torch (its R7 branch) loads libcudnn.so.7, and no cuDNN 7 "
        "exists for CUDA 11 (the nvidia-cudnn-cu11 of PyPI starts at 8.5) (tried 2026-12-06 and 07))",
    )


# ------------------------------------------------------------------ in the image


FAKE_HARNESS = r"""
import struct, sys
for line in iter(sys.stdin.buffer.readline, b""):
    words = line.split()
    if words[0] == b"params":
        data = struct.pack("<3f", 1.5, -2.0, 0.25)
        sys.stdout.buffer.write(b"= 2 12 1 2\n" + data)
    elif words[0] == b"batch":
        sys.stdin.buffer.read(int(words[3]) + int(words[4]))
        sys.stdout.buffer.write(b"= ok\n")
    else:
        sys.stdout.buffer.write(b"! unknown request " + words[0] + b"\n")
    sys.stdout.buffer.flush()
"""


def test_the_harness_protocol_reads_payloads_by_their_stated_length_and_names_lua_errors(tmp_path):
    """The Python side of runner.adapters.torch7_harness.lua's protocol, against a stand-in process."""
    fake = tmp_path / "fake.py"
    fake.write_text(FAKE_HARNESS)
    adapter = torch7_adapter.Adapter.__new__(torch7_adapter.Adapter)
    adapter.harness, adapter.slots = torch7_adapter.Harness([sys.executable, str(fake)]), 0
    try:
        assert [p.tolist() for p in adapter.parameters()] == [[1.5], [-2.0, 0.25]]
        assert adapter.to_device(np.zeros((2, 3), np.float32), np.array([0, 1]))[0] == 1
        assert adapter.to_device(np.zeros((2, 3), np.float32), np.array([0, 1]))[0] == 2
        assert adapter.to_device(np.zeros((2, 3), np.float32), np.array([0, 1]))[0] == 1  # two slots in turn
        with pytest.raises(torch7_adapter.HarnessError) as raised:
            adapter.train_step(1, None)
        assert str(raised.value) == "the Torch 7 harness failed: unknown request train"
    finally:
        adapter.harness.close()


MODEL_HARNESS = r"""
import sys
for line in iter(sys.stdin.buffer.readline, b""):
    words = line.split()
    if words[0] == b"model":
        sys.stdin.buffer.read(int(words[1]))
        sys.stderr.write(line.decode())
        sys.stdout.buffer.write(b"= 8 nn.Linear\n" if words[2] == b"pruned" else b"= 8 none\n")
    else:
        sys.stdout.buffer.write(b"= ok\n")
    sys.stdout.buffer.flush()
"""


@pytest.mark.parametrize(
    "gradients, said",
    [
        (
            None,
            "nn's backward less the first module's (nn.Linear) gradient with respect to the mini-batch (gradInput nil)",
        ),
        (
            "gate_op",
            "nn's backward: every module's gradient with respect to its input, the first's (the mini-batch's) too",
        ),
    ],
)
def test_the_adapter_asks_the_harness_for_the_job_s_gradients_and_records_what_it_pruned(
    tmp_path, capfd, gradients, said
):
    """The job's ``gradients`` (runner.contract; absent: "pruned") goes with the model to the harness, whose reply
    names the module it pruned, and result.json's environment says what the backward computes."""
    fake = tmp_path / "fake.py"
    fake.write_text(MODEL_HARNESS)
    job = {"model": {"input_shape": [3], "layers": [{"type": "dense", "units": 2}]}, "device": "cpu"}
    if gradients:
        job["gradients"] = gradients
    adapter = torch7_adapter.Adapter.__new__(torch7_adapter.Adapter)
    adapter.job, adapter.pruned = job, "none"
    adapter.lua = {"luajit": "LuaJIT 2.1.0-beta3", "threads": 1, "openmp": "true"}
    adapter.harness = torch7_adapter.Harness([sys.executable, str(fake)])
    try:
        assert adapter.build() == 8
    finally:
        adapter.harness.close()
    assert capfd.readouterr().err == "model %d %s\n" % (
        len("return nn.Sequential():add(nn.Linear(3, 2))\n"),
        gradients or "pruned",
    )
    assert adapter.environment()["gradients"] == said


def test_the_measured_window_counts_a_child_process_cpu_time_and_says_so():
    """Torch 7 computes in the harness's LuaJIT process, so the window adds its live children's CPU time: a child
    that burns 0.3 CPU seconds inside the window while this process waits on it."""
    import subprocess

    from runner import window as windowmod

    burn = (
        "import sys, time\nsys.stdin.readline()\nwhile time.process_time() < start + 0.3: pass\n"
        "print('done', flush=True)\nsys.stdin.readline()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", "import time\nstart = time.process_time()\n" + burn],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        window = windowmod.Window(None)
        window._counters = lambda: []  # no GPU sampler or energy counter: the clocks alone
        window.start()
        child.stdin.write(b"go\n")
        child.stdin.flush()
        assert child.stdout.readline() == b"done\n"
        window.stop()
        usage = window.cpu_usage()
    finally:
        child.stdin.close()
        child.wait()
    assert 0.3 <= usage["cpu_seconds"] <= 0.45 and usage["method"] == (
        "process CPU time (every thread; with its child processes') over the measured window"
    )


def test_torch7s_version_is_the_commit_of_its_sources_as_luarocks_names_a_repository_build():
    built_from = {"torch7": "814ea4afd6beb110705d2456de03876841fcf1fd 5a92379c", "nn": "872682558c48 89a08a02"}
    assert torch7_adapter.version(built_from) == "scm-814ea4a"
    assert torch7_adapter.version({}) is None  # an image without its SOURCES file
