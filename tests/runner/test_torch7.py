"""Lua Torch 7 (issue 56): DLBench's fifth tool, built from its source archives and driven from the Python runner.

On the host: the Lua source each DLBench model becomes, what the adapter refuses, the image's recipe (each archive
checked by the SHA-256 of dlrepro/inputs/datasets.yaml), where a build takes the archives from, what the plan says of
DLBench's Torch claims, the CUDA image's recipe (sm_60, its four source edits, which apply exactly once to the real
cutorch and cunn archives) and the adapter's GPU path against a stand-in harness (no GPU here). In the image
(tests/engine/test_torch7_containers.py; skipped with the reason where the source archives are not in the dataset
cache, as a run skips a job whose dataset is missing): every DLBench model Torch 7 expresses has the spec's parameter
count, counted by Torch 7, FCN-R trains on MNIST, and a cuda job in the CPU image is recorded failed with the reason.
"""

import json
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from dlrepro.errors import CannotRunHere, DatasetError, ImageError, SourcesMissing
from dlrepro.images import context
from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import datasets, spec, studies
from dlrepro.plan import coverage
from dlrepro.run import jobs
from dlrepro.run.options import RunOptions
from runner import buildinfo, contract, shapes
from runner import job as runner_job
from runner.adapters import capabilities, torch7_adapter, torch7_lua
from tests.helpers import REGISTRY_BASE
from tests.runner.torch7_sources import ARCHIVES, DLBENCH, sources_or_skip


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
        "no data-parallel training in the torch7 adapter: its adapter drives one GPU per job: DLBench's Torch trained "
        "data-parallel with cunn's nn.DataParallelTable, which the adapter has no path for yet"
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
        "edits": [],
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
    # Torch 7's CUDA image (sm_60) runs AlexNet-S on the P100s: the claim is testable, with what its numbers are not
    assert by_claim["alexnet-s-ordering"].testable and by_claim["alexnet-s-ordering"].caveat == (
        "Torch: its GPU convolutions are cunn's own (im2col + cuBLAS: no cuDNN), where DLBench's Torch ran cuDNN "
        "(cudnn.torch)"
    )


# ------------------------------------------------------------------ the CUDA image's recipe

EDIT = (  # the Dockerfile's edit step (images/Dockerfile.j2 apply_edits), less its folder and arguments
    "python3 -c 'import sys; path, old, new = sys.argv[1:]; text = open(path).read(); assert text.count(old) == 1, "
    '(path, old); open(path, "w").write(text.replace(old, new))\' \\\n'
)


def _cuda_dockerfile():
    return context.render_dockerfile(matrixmod.load().entry("torch7-7.0-cuda"), REGISTRY_BASE)


def test_the_cuda_recipe_compiles_cutorch_and_cunn_for_sm_60_with_g_11_after_the_four_edits():
    image = matrixmod.load().entry("torch7-7.0-cuda")
    text = _cuda_dockerfile()
    assert image.cuda_archs == ["sm_60"] and image.cuda == "11.8" and image.cudnn is None
    assert "\nENV TORCH_CUDA_ARCH_LIST=6.0\n" in text  # what cutorch's and cunn's CMakeLists compile for
    assert "nvidia-cuda-toolkit=11.8.89~11.8.0-5~deb12u1 g++-11\n" in text
    # every CMake source is configured with g++ 11 as nvcc's host compiler (CUDA 11.8 refuses GCC 12)
    assert text.count(" -DCMAKE_BUILD_TYPE=Release -DCUDA_HOST_COMPILER=/usr/bin/g++-11 \\\n") == 7
    cutorch = "/src/cutorch-5e9d86cb982a6048d3077aeb0e0cee19847b4c08"
    cunn = "/src/cunn-1ae6aa08bd062bb609d126ca7a2d8f5411797b8c"
    edits = [
        (
            cutorch,
            "lib/THC/THCAtomics.cuh '#ifdef CUDA_HALF_TENSOR' '#if defined(CUDA_HALF_TENSOR) && (CUDA_VERSION < 10000 "
            "|| (defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700))'",
        ),
        (
            cutorch,
            "lib/THC/THCTensorMode.cu '#include <thrust/sequence.h>' \"$(printf '%s\\n%s' '#include "
            "<thrust/sequence.h>' '#include <thrust/iterator/constant_iterator.h>')\"",
        ),
        (
            cutorch,
            "init.c 'lua_pushboolean(L, attributes.isManaged);' "
            "'lua_pushboolean(L, attributes.type == cudaMemoryTypeManaged);'",
        ),
        (
            cunn,
            "lib/THCUNN/CMakeLists.txt 'FILE(GLOB src-cuda *.cu)' \"$(printf '%s\\n%s' 'FILE(GLOB src-cuda *.cu)' "
            "'LIST(REMOVE_ITEM src-cuda ${CMAKE_CURRENT_SOURCE_DIR}/SparseLinear.cu)')\"",
        ),
    ]
    at = [text.index("RUN cd %s && %s      %s\n" % (folder, EDIT, arguments)) for folder, arguments in edits]
    # each source's edits after its archive is unpacked and before it is configured
    assert text.index("for archive in *.tar") < at[0] < at[1] < at[2] < text.index("RUN cmake -S %s " % cutorch)
    assert text.index("RUN cmake -S %s " % cutorch) < at[3] < text.index("RUN cmake -S %s " % cunn)
    assert text.count(EDIT) == 4
    assert "luajit -e " in text and "package.searchpath(lib, package.cpath)" in text  # the libraries load, unrun


def _archive_files(names):
    """The cached tar of each source archive ``names`` (the test is skipped where one is absent)."""
    return [datasets.root() / "sha256" / record.files["archive"] for record in sources_or_skip(names).values()]


def test_the_four_edits_apply_exactly_once_to_the_real_cutorch_and_cunn_archives(tmp_path):
    """The Dockerfile's own edit steps, run on the pinned archives unpacked here (their /src/ is tmp_path): each finds
    its text once and leaves the new text in its place."""
    for archive in _archive_files(["lua-cutorch", "lua-cunn"]):
        with tarfile.open(str(archive)) as tar:
            tar.extractall(str(tmp_path))
    image = matrixmod.load().entry("torch7-7.0-cuda")
    steps = [block for block in _cuda_dockerfile().split("\nRUN ") if block.startswith("cd /src/")]
    assert len(steps) == 4
    commands = [step.replace("cd /src/", "cd %s/" % tmp_path, 1).split("\n#")[0] for step in steps]
    for command in commands:
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    edited = [(s.archive, e) for s in image.lua.sources for e in s.edits]
    assert [(a, e.path) for a, e in edited] == [
        ("lua-cutorch", "lib/THC/THCAtomics.cuh"),
        ("lua-cutorch", "lib/THC/THCTensorMode.cu"),
        ("lua-cutorch", "init.c"),
        ("lua-cunn", "lib/THCUNN/CMakeLists.txt"),
    ]
    for archive, edit in edited:
        folder = datasets.lookup(archive).files["archive"].name[: -len(".tar")]
        text = (tmp_path / folder / edit.path).read_text()
        assert text.count(edit.new) == 1, edit.path
    # an edit whose text is gone (here: made already) stops the build instead of passing silently
    refused = subprocess.run(["sh", "-c", commands[2]], capture_output=True, text=True)
    assert refused.returncode == 1 and "AssertionError: ('init.c', 'lua_pushboolean(L, attributes.isManaged);')" in (
        refused.stderr
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
    adapter.gpu = None
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


GPU_HARNESS = r"""
import sys
for line in iter(sys.stdin.buffer.readline, b""):
    sys.stderr.write(line.decode())
    if line.startswith(b"setup"):
        sys.stdout.buffer.write(b"= LuaJIT 2.1.0-beta3|1|true|Tesla P100-PCIE-16GB|6.0|17071734784|11080|12020\n")
    elif line.startswith(b"quit"):
        break
    else:
        sys.stdout.buffer.write(b"= ok\n")
    sys.stdout.buffer.flush()
"""
NO_CUTORCH = r"""
import sys
sys.stdin.readline()
sys.stdout.write("! device cuda: require 'cutorch' failed: module 'cutorch' not found\n")
sys.stdout.flush()
sys.stdin.readline()
"""


def _fake_harness(monkeypatch, tmp_path, text):
    fake = tmp_path / "fake_harness.py"
    fake.write_text(text)
    monkeypatch.setattr(torch7_adapter, "LUAJIT", sys.executable)
    monkeypatch.setattr(torch7_adapter, "HARNESS", str(fake))


def test_a_cuda_job_asks_the_harness_for_the_gpu_and_records_it_and_what_ran(tmp_path, monkeypatch, capfd):
    """The job's device goes with the harness's first request; the reply's GPU fields (cutorch.getDeviceProperties,
    the CUDA runtime and driver) are result.json's, the capability the architecture check's, and synchronize is the
    harness's cutorch.synchronize()."""
    assert torch7_adapter.setup_request({"device": "cuda", "threads": None, "seed": 7}) == "setup 0 7 cuda"
    assert torch7_adapter.setup_request({"device": "cpu", "threads": 2}) == "setup 2 0 cpu"
    _fake_harness(monkeypatch, tmp_path, GPU_HARNESS)
    adapter = torch7_adapter.Adapter({"device": "cuda", "threads": None, "seed": 7})
    try:
        adapter.synchronize()
        env = adapter.environment()
        assert adapter.gpu_capability() == ("Tesla P100-PCIE-16GB", "6.0")
    finally:
        adapter.harness.close()
    assert capfd.readouterr().err == "setup 0 7 cuda\nsync\nquit\n"
    assert (env["cuda"], env["cudnn"]) == ("11.8", None)
    assert env["gpu"] == {
        "name": "Tesla P100-PCIE-16GB",
        "capability": "6.0",
        "memory_bytes": 17071734784,
        "cuda_runtime": "11.8",
        "cuda_driver": "12.2",
    }
    assert env["gpu_code"] == (
        "cunn's own kernels: convolutions by im2col + cuBLAS GEMM (no cuDNN: cudnn.torch is not built), float32"
    )


def test_a_cpu_job_sends_no_cuda_request_and_records_no_gpu(tmp_path, monkeypatch, capfd):
    _fake_harness(monkeypatch, tmp_path, GPU_HARNESS.replace("|Tesla P100-PCIE-16GB|6.0|17071734784|11080|12020", ""))
    adapter = torch7_adapter.Adapter({"device": "cpu", "threads": 1})
    try:
        adapter.synchronize()  # nothing to wait for on the CPU
        env = adapter.environment()
        assert adapter.gpu_capability() is None
    finally:
        adapter.harness.close()
    assert capfd.readouterr().err == "setup 1 0 cpu\nquit\n"
    assert (env["cuda"], env["gpu"], env["gpu_code"]) == (None, None, None)


def test_a_cuda_job_where_cutorch_does_not_load_is_recorded_failed_with_the_harness_s_line(tmp_path, monkeypatch):
    """runner.job records the harness's reason (here the CPU image's: no cutorch), and the LuaJIT process ends."""
    _fake_harness(monkeypatch, tmp_path, NO_CUTORCH)
    (job,) = jobs.expand(
        spec.load("fcn"), RunOptions(frameworks=["torch7"], variants=["fcn-r"], device="cuda", quick=True)
    )
    contract.write_json(str(tmp_path / "job.json"), job)
    started = []
    real = torch7_adapter.Harness.__init__

    def keep(self, command=None):
        real(self, command)
        started.append(self.process)

    monkeypatch.setattr(torch7_adapter.Harness, "__init__", keep)
    runner_job.run(str(tmp_path / "job.json"), str(tmp_path / "out"))
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert (result["status"], result["reason"]) == (
        "failed",
        "HarnessError: the Torch 7 harness failed: device cuda: require 'cutorch' failed: module 'cutorch' not found",
    )
    assert [p.poll() for p in started] == [0]  # closed, not left waiting on its standard input


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
    assert buildinfo.torch7_version(built_from) == "scm-814ea4a"
    assert buildinfo.torch7_version({}) is None  # an image without its SOURCES file
