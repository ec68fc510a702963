"""The README table's hosts (dlrepro.plan.coverage_table.PROFILES): how many of DLBench's 22 claims each can test,
pinned,
and on the host issue 56 names (4 x P100, 32 cores, every dataset) exactly which claims stay blocked and why. CNTK's
LSTM (runner.adapters.cntk_recurrent), MXNet's one-process data-parallel path and TensorFlow's MirroredStrategy path
(runner.adapters.tensorflow_parallel: multigpu-fcn-r-slow) unblocked the rest; Torch 7 on GPUs would add
alexnet-s-ordering."""

import pytest

from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import studies
from dlrepro.plan import coverage, coverage_table

DLBENCH_TESTABLE = {
    "2 CPU cores (this project's build machine)": 1,
    "16-core CPU": 2,
    "K80": 6,
    "GTX 1080": 16,
    "P100": 16,
    "V100": 16,
    "A100": 12,
    "H100/H200": 10,
    "H100/H200, --allow-ptx-jit": 14,
    "4 x V100": 19,
    "4 x H100": 11,
}


@pytest.fixture(scope="module")
def given():
    return coverage.inputs(studies.load("dlbench"), matrixmod.load())


def test_each_readme_host_tests_its_pinned_count_of_dlbenchs_claims(given):
    assert [name for name, _ in coverage_table.PROFILES] == list(DLBENCH_TESTABLE)
    found = {
        name: coverage.counts(coverage.plan(given, coverage_table.profile(name))["claims"])[0]
        for name in DLBENCH_TESTABLE
    }
    assert found == DLBENCH_TESTABLE


TORCH7_CUDA = (
    "cutorch, cunn and cudnn.torch, Torch 7's GPU packages, have no image yet. cutorch 5e9d86c (2017-09, the "
    "repository's last commit) builds with its rockspec's CMake arguments, Debian's CUDA 11.8 (nvcc 11.8.89, host gcc "
    "11.3) and sm_60 after three source edits (its atomicAdd(half *, half) kept only where the cuda_fp16.hpp of CUDA "
    "11.8 declares none, an #include <thrust/iterator/constant_iterator.h> in THCTensorMode.cu, and "
    "cudaPointerAttributes.type for the isManaged that CUDA 11 removed), in about 70 minutes on 2 shared CPUs; there, "
    "with no GPU, require 'cutorch' stops at device discovery: cuda runtime error (100) : no CUDA-capable device is "
    "detected at THCGeneral.c:70. cunn 1ae6aa0 builds on it, in 12 minutes more, with SparseLinear.cu left out of its "
    'library (compiled, it fails with error: identifier "cusparseScsrmm" is undefined: CUDA 11 removed the csrmm of '
    "cuSPARSE, so nn.SparseLinear would have no GPU code). cudnn.torch (its R7 branch) loads libcudnn.so.7, and no "
    "cuDNN 7 exists for CUDA 11 (the nvidia-cudnn-cu11 of PyPI starts at 8.5) (tried 2026-12-06 and 07)"
)


def test_four_p100s_test_19_claims_and_say_exactly_what_blocks_the_other_3(given):
    host = coverage.Hardware("P100", 4, 32, coverage.every_dataset())
    claims = coverage.plan(given, host)["claims"]
    blocked = {o.what: (o.cause, o.reason) for o in claims if not o.testable}
    assert sum(o.testable for o in claims) == 19 and len(claims) == 22
    assert blocked == {
        "fastest-gpu": (
            "untestable",
            "it compares three GPU models (GTX 980, GTX 1080, K80); one host has one of them at most",
        ),
        "alexnet-s-ordering": (
            "image",
            "too few of its tools can run here (can: MXNet): Torch has no CUDA image (" + TORCH7_CUDA + ")",
        ),
        "multigpu-fcn-r-caffe": (
            "data-parallel",
            (
                "Caffe: no data-parallel training in the caffe adapter: pycaffe's multi-GPU path (caffe.NCCL, one "
                "process "
                "per GPU) needs Caffe compiled with USE_NCCL, and its CUDA image compiles Debian's recipe, which has "
                "no "
                "NCCL (PyPI's nvidia-nccl-cu11 has the header and library for its CUDA 11.8; not built yet); NCCL has "
                "no "
                "CPU transport, so a CPU image has none"
            ),
        ),
    }
