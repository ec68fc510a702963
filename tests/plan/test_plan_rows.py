"""The README table's hosts (dlrepro.plan.coverage_table.PROFILES): how many of DLBench's 22 claims each can test,
pinned,
and on the host issue 56 names (4 x P100, 32 cores, every dataset) exactly which claims stay blocked and why. CNTK's
LSTM (runner.adapters.cntk_recurrent), MXNet's one-process data-parallel path and TensorFlow's MirroredStrategy path
(runner.adapters.tensorflow_parallel: multigpu-fcn-r-slow) unblocked the rest; Torch 7's CUDA image (sm_60) added
alexnet-s-ordering on Pascal (P100, GTX 1080)."""

import pytest

from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import studies
from dlrepro.plan import coverage, coverage_table

DLBENCH_TESTABLE = {
    "2 CPU cores (this project's build machine)": 1,
    "16-core CPU": 2,
    "K80": 6,
    "GTX 1080": 17,
    "P100": 17,
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


# what keeps Torch 7 from DLBench's GPU claims on a GPU newer than Pascal (its image's cuda_archs and newer_builds)
TORCH7_CUDA = (
    "Torch: torch7-7.0-cuda has no kernels for V100 (sm_70): it ships sm_60; no other build tried (cutorch and cunn "
    "ended in 2017): K80 (sm_37) or Maxwell (sm_5x) code needs only more TORCH_CUDA_ARCH_LIST entries (and the "
    "compile time they add); V100, A100 and H100 (sm_70 and up) first a change to cunn's LookupTable.cu, which calls "
    "__shfl and __any without _sync (not available from compute capability 7.0, the CUDA C++ Programming Guide says)"
)
TORCH7_CAVEAT = (
    "Torch: its GPU convolutions are cunn's own (im2col + cuBLAS: no cuDNN), where DLBench's Torch ran cuDNN "
    "(cudnn.torch)"
)


def test_four_p100s_test_20_claims_and_say_exactly_what_blocks_the_other_2(given):
    host = coverage.Hardware("P100", 4, 32, coverage.every_dataset())
    claims = coverage.plan(given, host)["claims"]
    blocked = {o.what: (o.cause, o.reason) for o in claims if not o.testable}
    assert sum(o.testable for o in claims) == 20 and len(claims) == 22
    by_claim = {o.what: o for o in claims}
    assert by_claim["alexnet-s-ordering"].caveat == TORCH7_CAVEAT  # Torch 7's CUDA image runs it, without cuDNN
    assert not [o.reason for o in claims if o.reason and "does not run" in o.reason]
    assert blocked == {
        "fastest-gpu": (
            "untestable",
            "it compares three GPU models (GTX 980, GTX 1080, K80); one host has one of them at most",
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


@pytest.mark.parametrize("gpu, gpus", [("V100", 1), ("V100", 4)])
def test_a_gpu_newer_than_pascal_keeps_torch7_out_of_alexnet_s_ordering_by_its_image_s_archs(given, gpu, gpus):
    host = coverage.Hardware(gpu, gpus, 32, coverage.every_dataset())
    (found,) = [o for o in coverage.plan(given, host)["claims"] if o.what == "alexnet-s-ordering"]
    assert (found.testable, found.cause, found.reason) == (
        False,
        "arch",
        "too few of its tools can run here (can: MXNet): " + TORCH7_CUDA,
    )
