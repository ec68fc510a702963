"""What a host can test of a study before anything runs (dlrepro.plan.coverage): exact outcomes per cause on the hosts
a user has (this 2-core host, a 16-core CPU, K80, P100, GTX 1080, A100, H100, 4 x H100), read from the study, the
specs and the image matrix; no GPU is needed."""

import subprocess
import sys

import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import DlreproError
from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import studies
from dlrepro.plan import coverage

ALL = coverage.every_dataset()
HOSTS = {
    "this": coverage.Hardware(None, 0, 2, frozenset({"mnist"})),
    "cpu16": coverage.Hardware(None, 0, 16, ALL),
    "K80": coverage.Hardware("K80", 1, 16, ALL),
    "P100": coverage.Hardware("P100", 1, 16, ALL),
    "GTX 1080": coverage.Hardware("GTX 1080", 1, 16, ALL),
    "A100": coverage.Hardware("A100", 1, 16, ALL),
    "H100": coverage.Hardware("H100", 1, 16, ALL),
    "4xH100": coverage.Hardware("H100", 4, 64, ALL),
}


@pytest.fixture(scope="module")
def matrix():
    return matrixmod.load()


def outcome(study, claim, host, matrix):
    return coverage.claim_outcome(studies.load(study), claim, HOSTS[host] if isinstance(host, str) else host, matrix)


@pytest.mark.parametrize(
    "host, dlbench, dlf",
    [  # a claim is counted under the cause that decides
        (
            "this",
            (1, {"untestable": 1, "no gpu suffices": 1, "gpu": 15, "gpus": 3, "threads": 1}),
            (0, {"untestable": 1, "no gpu suffices": 1, "gpu": 3, "gpus": 1, "dataset": 2}),
        ),
        (
            "cpu16",
            (2, {"untestable": 1, "no gpu suffices": 1, "gpu": 15, "gpus": 3}),
            (2, {"untestable": 1, "no gpu suffices": 1, "gpu": 3, "gpus": 1}),
        ),
        (
            "K80",
            (6, {"untestable": 1, "no gpu suffices": 1, "gpus": 3, "model": 1, "arch": 10}),
            (3, {"untestable": 1, "gpus": 1, "image": 1, "arch": 2}),
        ),
        (
            "P100",
            (17, {"untestable": 1, "no gpu suffices": 1, "gpus": 3}),
            (4, {"untestable": 1, "gpus": 1, "image": 1, "arch": 1}),
        ),
        (
            "GTX 1080",
            (17, {"untestable": 1, "no gpu suffices": 1, "gpus": 3}),
            (4, {"untestable": 1, "gpus": 1, "image": 1, "arch": 1}),
        ),
        (
            "A100",
            (12, {"untestable": 1, "no gpu suffices": 1, "gpus": 3, "arch": 5}),
            (4, {"untestable": 1, "gpus": 1, "image": 1, "arch": 1}),
        ),
        (
            "H100",
            (10, {"untestable": 1, "no gpu suffices": 1, "gpus": 3, "arch": 7}),
            (4, {"untestable": 1, "gpus": 1, "image": 1, "arch": 1}),
        ),
        (
            "4xH100",
            (11, {"untestable": 1, "data-parallel": 3, "arch": 7}),
            (5, {"untestable": 1, "image": 1, "arch": 1}),
        ),
    ],
)
def test_each_host_tests_what_the_images_and_adapters_allow_and_counts_the_rest_by_cause(host, dlbench, dlf, matrix):
    for name, expected in (("dlbench", dlbench), ("dlf", dlf)):
        assert coverage.counts(coverage.plan(studies.load(name), HOSTS[host], matrix)["claims"]) == expected, name


def test_the_exact_reason_of_each_cause(matrix):
    def said(study, claim, host):
        o = outcome(study, claim, host, matrix)
        return o.cause, o.reason

    assert said("dlbench", "fastest-gpu", "H100") == (
        "untestable",
        "it compares three GPU models (GTX 980, GTX 1080, K80); one host has one of them at most",
    )
    assert said("dlbench", "cpu-threads-scaling", "this") == ("threads", "needs 16 CPU threads (this host has 2 cores)")
    assert outcome("dlbench", "cpu-threads-scaling", "cpu16", matrix).testable
    assert said("dlbench", "fcn-s-ordering", "this") == (
        "gpu",
        ("needs an NVIDIA GPU (one of: K80, GTX 980, P100, GTX 1080, V100, A100, L4, H100)"),
    )
    # CNTK's LSTM (runner.adapters.cntk_recurrent) with MXNet's and TensorFlow's: the GPUs CNTK runs on natively
    assert said("dlbench", "lstm-ordering", "cpu16") == (
        "gpu",
        "needs an NVIDIA GPU (one of: GTX 980, P100, GTX 1080, V100)",
    )
    assert said("dlbench", "multigpu-fcn-r-fast", "H100") == (
        "gpus",
        (  # MXNet's contexts, where MXNet has kernels
            "needs 2 GPUs (this host has 1) (one of: GTX 980, P100, GTX 1080, V100, A100, L4)"
        ),
    )
    cause, reason = said("dlbench", "multigpu-fcn-r-fast", "4xH100")
    assert (
        cause == "data-parallel"
        and reason.startswith(
            "too few of its tools can run here (can: none): CNTK: no data-parallel training in the cntk adapter: its "
            "data parallelism (data_parallel_distributed_learner) runs over MPI, and CNTK 2.7's wheels link Open MPI "
            "1.10 "
            "(libmpi.so.12, libmpi_cxx.so.1), which no registry here serves"
        )
        and "MXNet: mxnet-1.9.1-cuda has no kernels for H100" in reason
    )
    # TensorFlow's MirroredStrategy path (runner.adapters.tensorflow_parallel) runs it on several GPUs, one on none
    assert said("dlbench", "multigpu-fcn-r-slow", "4xH100") == (None, None)
    assert said("dlbench", "multigpu-fcn-r-slow", "P100") == (
        "gpus",
        "needs 2 GPUs (this host has 1) (one of: P100, GTX 1080, V100, A100, L4, H100)",
    )
    assert said("dlf", "densenet-weak-scaling", "A100") == (
        "gpus",
        "needs 4 GPUs (this host has 1) (one of: A100, L4, H100)",
    )
    # Torch 7's CUDA image (sm_60) with MXNet on Pascal; on a newer GPU its architectures decide
    assert outcome("dlbench", "alexnet-s-ordering", "P100", matrix).testable
    assert said("dlbench", "alexnet-s-ordering", "A100") == (
        "arch",
        "too few of its tools can run here (can: MXNet): Torch: torch7-7.0-cuda has no kernels for A100 (sm_80): it "
        "ships sm_60; %s" % matrix.entry("torch7-7.0-cuda").newer_builds,
    )
    assert said("dlbench", "multigpu-fcn-r-caffe", "4xH100") == (
        "data-parallel",
        (
            "Caffe: no data-parallel training in the caffe adapter: pycaffe's multi-GPU path (caffe.NCCL, one process "
            "per "
            "GPU) needs Caffe compiled with USE_NCCL, and its CUDA image compiles Debian's recipe, which has no NCCL "
            "(PyPI's nvidia-nccl-cu11 has the header and library for its CUDA 11.8; not built yet); NCCL has no CPU "
            "transport, so a CPU image has none"
        ),
    )
    # CNTK's LSTM on an H100: only by JIT of its PTX (arch), and it decides, not Lua Torch (which the suite never
    # runs): CNTK with TensorFlow makes the ordering testable, as --allow-ptx-jit does
    cause, reason = said("dlbench", "early-rnn-gpu", "H100")
    assert cause == "arch" and reason.startswith(
        "too few of its tools can run here (can: TensorFlow): CNTK: "
        "cntk-2.7.post2-cuda runs on H100 (sm_90) only by JIT of its compute_70 "
        "PTX (--allow-ptx-jit)"
    )
    ptx = coverage.Hardware("H100", 1, 16, ALL, allow_ptx_jit=True)  # CNTK by JIT: its FCN and its LSTM run
    dlbench = studies.load("dlbench")
    assert coverage.tool_blocker(dlbench, "gpu-synthetic", "fcn-s", "CNTK", ptx, matrix) is None
    assert coverage.tool_blocker(dlbench, "gpu-synthetic", "fcn-s", "CNTK", HOSTS["H100"], matrix)[0] == "arch"
    assert outcome("dlbench", "early-rnn-gpu", ptx, matrix).testable
    assert said("dlbench", "fcn-r-ordering", "K80")[0] == "arch" and said("dlbench", "fcn-r-ordering", "K80")[
        1
    ].startswith(
        "too few of its tools can run here (can: CNTK, Caffe): MXNet: mxnet-1.9.1-cuda has no kernels for K80 (sm_37): "
        "it ships sm_50 sm_60 sm_70 sm_80 sm_86; mxnet-0.12.0-cuda runs there natively (--framework mxnet@0.12.0"
    )
    mxnet = coverage.tool_blocker(dlbench, "gpu-synthetic", "fcn-s", "MXNet", HOSTS["H100"], matrix)
    assert mxnet == (
        "arch",
        "MXNet: mxnet-1.9.1-cuda has no kernels for H100 (sm_90): it ships sm_50 sm_60 sm_70 "
        "sm_80 sm_86; no MXNet build a registry here serves has more: mxnet-cu112 1.9.1 and 2.0.0b1 (the "
        "newest) carry the same sm_50-sm_86 cubins and no PTX (libmxnet.so read with "
        "runner.buildinfo.fatbin_groups, 2026-12-04), so only a source build with CUDA 11.8 or newer "
        "would run on sm_90",
    )
    # the Caffe compiled with CUDA 11.8 (sm_37 to sm_90): against TensorFlow on an H100, against CNTK on a K80
    assert outcome("dlbench", "fcn-s-ordering", "H100", matrix).testable
    assert outcome("dlbench", "fcn-s-ordering", "K80", matrix).testable
    # a CNN ordering decided with that Caffe says its convolutions are not the studies' (no cuDNN); an FCN's is clean
    assert outcome("dlbench", "alexnet-r-ordering", "K80", matrix).caveat == (
        "Caffe: its GPU convolutions are Caffe's own (im2col + cuBLAS: no cuDNN), where the studies' Caffe ran cuDNN"
    )
    assert outcome("dlbench", "fcn-s-ordering", "K80", matrix).caveat is None
    assert said("dlf", "cnn-accuracy", "this") == (
        "dataset",
        "needs dataset cifar10 (`dlrepro datasets.fetch cifar10`)",
    )
    assert said("dlbench", "alexnet-r-ordering", "this") == (
        "gpu",
        (  # what a GPU would do, then what to fetch
            "needs an NVIDIA GPU (one of: K80, GTX 980, P100, GTX 1080, "
            "V100, A100, L4, H100); and needs dataset cifar10 "
            "(`dlrepro datasets.fetch cifar10`)"
        ),
    )
    assert coverage.tool_blocker(dlbench, "cpu-synthetic-rnn", "lstm-synthetic", "CNTK", HOSTS["cpu16"], matrix) is None
    cpu_only = matrix.model_copy(update={"images": [i for i in matrix.images if i.name != "caffe-1.0.0-cuda"]})
    assert coverage.tool_blocker(dlbench, "gpu-synthetic", "fcn-s", "Caffe", HOSTS["P100"], cpu_only) == (
        "image",
        "Caffe has no CUDA image",
    )


def test_a_k80_is_pointed_at_the_era_images_that_run_on_it(matrix):
    """Today's PyTorch, TensorFlow and MXNet have no sm_37 kernels; their studies'-era images do, and the reason
    names them (TensorFlow's and MXNet's with the vendor image they need)."""
    reason = outcome("dlf", "rnn-cudnn", "K80", matrix).tools
    assert reason["PyTorch"] == (
        "PyTorch: torch-2.13.0-cuda has no kernels for K80 (sm_37): it ships sm_75 sm_80 sm_86 "
        "sm_90 sm_100 sm_120; torch-1.0.0-cuda runs there natively (--framework torch@1.0.0)"
    )
    four = outcome("dlf", "densenet-weak-scaling", coverage.Hardware("V100", 4, 32, ALL), matrix)
    assert four.tools["PyTorch"] == (
        "PyTorch: torch-2.13.0-cuda has no kernels for V100 (sm_70): it ships sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"
    )  # torch 1.0.0 runs there, but has no data-parallel path
    assert reason["Tensorflow"].endswith(
        "tensorflow-1.4.0-cuda runs there natively (--framework tensorflow@1.4.0; with "
        "the vendor image nvidia/cuda:8.0-cudnn6-runtime-ubuntu16.04 loaded)"
    )


def test_a_published_cell_is_judged_only_on_its_own_hardware(matrix):
    dlf = studies.load("dlf")
    p100 = {o.what: o for o in coverage.plan(dlf, HOSTS["P100"], matrix)["cells"]}
    a100 = {o.what: o for o in coverage.plan(dlf, HOSTS["A100"], matrix)["cells"]}
    cell = "table4-rnn / P100 / Tensorflow"
    assert p100[cell].testable and not p100[cell].other_hardware
    assert a100[cell].testable and a100[cell].other_hardware  # measured on an A100: shown, never judged
    # today's PyTorch has no sm_60 kernels: the column's CPU run measures it, shown beside the P100 value, not judged
    assert p100["table4-rnn / P100 / PyTorch"].testable and p100["table4-rnn / P100 / PyTorch"].other_hardware
    # Keras(TF) judged in the CNN, RNN and features tables, CNTK's GRU in the RNN table; MXNet(Gluon)'s RNN cell has
    # no published value: not judged
    assert coverage.counts(list(p100.values()))[0] == 13 and p100["table4-rnn / P100 / MXNet(Gluon)"].other_hardware


def test_an_unknown_gpu_names_the_known_ones_and_nvidia_smis_names_are_known():
    with pytest.raises(ValueError, match=r"^unknown GPU 'RTX 9090'; known: K80, GTX 980, Titan X \(Maxwell\), P100"):
        coverage.Hardware("RTX 9090", 1, 8).capability
    with pytest.raises(ValueError, match=r"^unknown GPU 'Titan X'"):  # Maxwell or Pascal: no one card
        coverage.Hardware("Titan X", 1, 8).capability
    assert [
        coverage.Hardware(name, 1, 8).capability
        for name in ("NVIDIA H200", "Tesla K80", "NVIDIA H100 80GB HBM3", "Tesla P100-PCIE-16GB", "GTX Titan X")
    ] == ["9.0", "3.7", "9.0", "6.0", "5.2"]


def test_the_readme_table_is_what_the_command_prints():
    printed = subprocess.run(
        [sys.executable, "-m", "invoke", "plan", "all"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300
    )
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("| hardware | DLBench claims testable |")
    assert printed.stdout in (REPO_ROOT / "README.md").read_text()


def test_the_command_says_what_a_host_would_get_and_refuses_an_unknown_gpu():
    run = subprocess.run(
        [sys.executable, "-m", "invoke", "plan", "dlbench", "--gpu-model", "H100", "--cpus", "16", "--datasets", "all"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(
        "On 1 x H100, 16 CPU cores [datasets: 7 of 7, as given; today's versions]: 10 of "
        "DLBench's 22 claims testable; 0 of 30 published cells judged, 24 more shown (measured "
        "on other hardware than the published)."
    )
    for args, said in (
        (["--gpu-model", "RTX 9090"], "error: --gpu-model: unknown GPU 'RTX 9090'"),
        (
            ["--gpu-model", "H100", "--gpu-count", "0"],
            "error: --gpu-count: expected a whole number of at least 1 (got '0')",
        ),
        (["--cpus", "abc"], "error: --cpus: expected a whole number of at least 1 (got 'abc')"),
        (["--datasets", "bogus"], "error: --datasets: no dataset 'bogus' in dlrepro/inputs/datasets.yaml"),
    ):
        bad = subprocess.run(
            [sys.executable, "-m", "invoke", "plan", "dlbench"] + args,
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            timeout=300,
        )
        assert bad.returncode == 2 and (bad.stderr + bad.stdout).startswith(said), bad.stderr + bad.stdout


def test_the_published_versions_are_judged_by_the_images_they_run(matrix):
    """On a K80, today's PyTorch, TensorFlow and MXNet have no kernels; the published versions' images (torch 1.0.0,
    tensorflow 1.4.0, mxnet 0.12.0) run there natively: 16 of DLBench's 22 claims instead of 6, and the reason of
    a claim names the cause that decides on those images."""
    dlbench, dlf, k80 = studies.load("dlbench"), studies.load("dlf"), HOSTS["K80"]
    published = coverage.plan(dlbench, k80, matrix, "published")
    assert coverage.counts(published["claims"]) == (16, {"untestable": 1, "no gpu suffices": 2, "gpus": 2, "arch": 1})
    assert coverage.counts(coverage.plan(dlbench, k80, matrix, "today")["claims"])[0] == 6
    assert coverage.counts(coverage.plan(dlf, k80, matrix, "published")["claims"])[0] == 5
    assert coverage.counts(coverage.plan(dlf, HOSTS["A100"], matrix, "published")["claims"])[0] == 2
    # torch 1.0.0 runs natively on the P100: the two P100 claims DLF's committed report said need an A100, L4 or H100
    p100 = {o.what: o for o in coverage.plan(dlf, HOSTS["P100"], matrix, "published")["claims"]}
    assert p100["cnn-times-close"].testable and p100["rnn-cudnn"].testable
    assert coverage.tool_blocker(dlbench, "gpu-synthetic", "fcn-s", "MXNet", HOSTS["H100"], matrix, "published") == (
        "arch",
        "MXNet: mxnet-0.12.0-cuda runs on H100 (sm_90) only by JIT of its compute_60 PTX (--allow-ptx-jit)",
    )
    with pytest.raises(DlreproError, match="one version set"):
        coverage.plan(dlbench, k80, matrix, "both")


def test_a_gpu_named_as_the_card_reports_it_gets_the_plan_of_its_short_name(matrix):
    """check matches a job's device name with the reference's hardware text (inputs.hardware.same_hardware); the plan
    does too, a model named without memory and form factor taken as the published one."""
    dlf = studies.load("dlf")
    short = coverage.plan(dlf, HOSTS["P100"], matrix)
    full = coverage.plan(dlf, coverage.Hardware("Tesla P100-PCIE-16GB", 1, 16, ALL), matrix)

    def verdicts(found):  # the reasons name the card as given ("no kernels for Tesla P100-PCIE-16GB (sm_60)")
        return [(o.what, o.testable, o.cause, o.other_hardware) for o in found["claims"]]

    assert short["cells"] == full["cells"] and verdicts(short) == verdicts(full)
    assert coverage.counts(full["cells"])[0] == 13
    sxm = coverage.plan(dlf, coverage.Hardware("Tesla P100-SXM2-16GB", 1, 16, ALL), matrix)  # another P100: shown
    assert coverage.counts(sxm["cells"])[0] == 0


def _plan_lines(*args):
    run = subprocess.run(
        [sys.executable, "-m", "invoke", "plan"] + list(args),
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


@pytest.mark.all_cpus  # the plan counts the cores this process may use
def test_the_first_line_says_what_it_assumes():
    def first(*args):
        return _plan_lines(*args)[0]

    # the era images' count on a K80 with 16 cores (the README's hosts); a described host without --cpus or --datasets:
    # every dataset fetched, this host's cores said, not silently counted
    assert first("dlbench", "--gpu-model", "K80", "--versions", "published", "--datasets", "all", "--cpus", "16") == (
        "On 1 x K80, 16 CPU cores [datasets: 7 of 7, as given; the published versions]: 16 of DLBench's 22 claims "
        "testable; 0 of 30 published cells judged, 24 more shown (measured on other hardware than the published)."
    )
    assert first("dlf", "--gpu-model", "K80").startswith(
        "On 1 x K80, %d CPU cores [this host's cores, --cpus to give "
        "yours; every dataset assumed fetched, --datasets to say which; "
        "today's versions]: " % coverage.this_host().cpus
    )
    cached = len(coverage.this_host().datasets)
    assert first("dlf").startswith(
        "On %s [datasets cached here: %d of 7, --datasets all assumes them fetched; today's "
        "versions]: " % (coverage.this_host().describe(), cached)
    )


def test_a_plan_of_dlbench_says_next_to_its_counts_that_its_own_tables_are_not_in_the_suite():
    """Review U4: no DLBench cell can be judged on a K80, the paper's own GPU, and the plan said only '0 of 30'."""
    lines = _plan_lines("dlbench", "--gpu-model", "K80", "--cpus", "16")
    assert lines[1] == (
        "DLBench's own tables are not in the suite (their published values were not retrieved): Table 7 (GPU, Tesla "
        "K80), Table 7 (server CPU E5-2630v4), Table 8; so none of their cells can be judged, on their hardware or any "
        "other; the published cells here are a third-party rerun's (GTX Titan X: guolinke/deep-learning-benchmarks "
        "README)."
    )
    assert not _plan_lines("dlf", "--gpu-model", "K80", "--cpus", "16")[1].startswith("DeepLearningFrameworks' own")
