"""The JAX adapter's precision (runner.adapters.jax_adapter), in the JAX CPU image: bf16 is mixed precision
(float32 master parameters, optimizer state and batch-norm statistics; bfloat16 forward and backward; the loss
in float32), fp32 stays float32 throughout; a bf16 job's result says so and is set against the bf16 peak."""

import json
import math

import pytest

from dlrepro import REPO_ROOT
from dlrepro.inputs import datasets, spec
from dlrepro.run import executors, jobs
from dlrepro.run.options import RunOptions
from dlrepro.store import peak_columns
from runner import telemetry
from tests import helpers

pytestmark = pytest.mark.docker
SCRIPT = REPO_ROOT / "tests" / "data" / "jax_precision.py"
# every layer type of the networks the JAX adapter runs on GPUs (AlexNet-S, ResNet-50, FCN-S/FCN-8, CIFAR VGG,
# the LSTM), in their small variants: conv, pooling, dense, dropout (VGG), batch norm and residual blocks
# (ResNet-56), sigmoid (FCN-R), embedding and LSTM, GRU and last_step
MODELS = [
    ("alexnet", "alexnet-r", 4),
    ("cifar10-vgg", "cifar10-vgg-synthetic", 4),
    ("resnet56", "resnet56-synthetic", 4),
    ("fcn", "fcn-r", 8),
    ("lstm", "lstm-synthetic", 4),
    ("imdb-gru", "imdb-gru-synthetic", 4),
]
DROPOUT = {"cifar10-vgg-synthetic"}  # a fresh mask each step: its losses on one mini-batch need not fall every step


def _job(name, variant, batch, precision):
    (job,) = jobs.expand(
        spec.load(name),
        RunOptions(frameworks=["jax"], variants=[variant], batch_sizes=[batch], quick=True, precision=precision),
    )
    return dict(job, id="%s.%s" % (job["id"], precision))


def _plain(job):
    """``job`` without momentum and at a learning rate of at most 0.01: its steps on one mini-batch then lower the
    loss every time (FCN-R's lr 0.05 overshoots on one synthetic mini-batch within four steps, in fp32 as in bf16)."""
    return dict(job, optimizer=dict(job["optimizer"], momentum=0.0, lr=min(job["optimizer"]["lr"], 0.01)))


@pytest.fixture(scope="module")
def measured(jax_cpu_image, docker_engine, tmp_path_factory):
    """tests/data/jax_precision.py's findings for every model in bf16, and FCN-R and the LSTM in fp32. XLA compiles
    them without its LLVM optimisations (--xla_backend_optimization_level=0): the dtypes asserted are those of the
    lowered step, before XLA's backend sees it, and the losses still fall as asserted. On 2 CPUs this fixture took
    72.6 CPU-s in 50 s with the optimisations and 41.1 and 45.1 CPU-s in 30 and 33 s without (two runs; `python -m
    pytest -n 0 -p benchmarks.cpu_per_test`, 2026-12-07)."""
    folder = tmp_path_factory.mktemp("jax-precision")
    folder.chmod(0o777)
    batch = [_plain(_job(n, v, b, "bf16")) for n, v, b in MODELS] + [
        _plain(_job(n, v, b, "fp32")) for n, v, b in MODELS[3:5]
    ]
    (folder / "jobs.json").write_text(json.dumps(batch))
    helpers.run_python(
        docker_engine,
        jax_cpu_image.tag,
        folder,
        "/opt/dlrepro/jax_precision.py",
        "/out/jobs.json",
        "/out/found.json",
        mounts={SCRIPT: "/opt/dlrepro/jax_precision.py"},
        environment={"XLA_FLAGS": "--xla_backend_optimization_level=0"},
    )
    return json.loads((folder / "found.json").read_text())


@pytest.mark.parametrize("name, variant, batch", MODELS)
def test_bf16_computes_in_bfloat16_and_keeps_float32_parameters(measured, name, variant, batch):
    found = measured[_job(name, variant, batch, "bf16")["id"]]
    assert (found["compute_dtype"], found["matmul_precision"]) == ("bfloat16", "default")
    assert found["forward_dtype"] == "bfloat16"
    assert found["parameter_dtypes"] == found["params_after"] == found["grad_dtypes"] == ["float32"]
    assert found["opt_state_after"] in ([], ["float32"]) and found["state_after"] in ([], ["float32"])
    assert found["products"] > 0 and found["bf16_products"] == found["products"]  # forward and backward
    losses = found["losses"]
    assert len(losses) == 4 and all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]
    if variant not in DROPOUT:
        assert all(b < a for a, b in zip(losses, losses[1:])), losses


@pytest.mark.parametrize("name, variant, batch", MODELS[3:5])
def test_fp32_stays_float32_throughout(measured, name, variant, batch):
    found = measured[_job(name, variant, batch, "fp32")["id"]]
    assert (found["compute_dtype"], found["matmul_precision"], found["forward_dtype"]) == (
        "float32",
        "highest",
        "float32",
    )
    assert found["products"] > 0 and found["bf16_products"] == 0
    assert found["grad_dtypes"] == found["params_after"] == ["float32"]
    # the same model, initialisation and mini-batch in bf16 follows the same losses, to bfloat16's precision
    mixed = measured[_job(name, variant, batch, "bf16")["id"]]["losses"]
    assert mixed == pytest.approx(found["losses"], rel=0.01) and mixed != found["losses"]


def test_a_bf16_job_records_its_compute_dtype_and_is_set_against_the_bf16_peak(jax_cpu_image, tmp_path):
    job = _job("fcn", "fcn-s", 8, "bf16")  # dense layers only: XLA's bf16 convolutions on a CPU are slow
    executors.DockerExecutor().run(jax_cpu_image, [job], tmp_path, datasets.root(), lambda *e: None)
    result = json.loads((tmp_path / job["id"] / "result.json").read_text())
    assert result["status"] == "ok", result["reason"]
    assert result["options"]["precision"] == "bf16" and result["environment"]["compute_dtype"] == "bfloat16"
    assert result["environment"]["parameter_dtypes"] == ["float32"]
    assert result["environment"]["matmul_precision"] == "default"
    assert result["timing"]["timer"] == "host_sync" and result["timing"]["sample"] == "iteration"  # on the CPU
    # the peak the tables use (dlrepro.store.tables.provenance: the precision the result's options record), as if
    # the job had run on an H200: its dense bf16 rate, as for a torch bf16 job
    precision = telemetry.summary_columns(result)["precision"]
    timing = result["timing"]
    out = peak_columns.job_columns(
        dict(job, device="cuda"), result, precision, "NVIDIA H200", timing["summary"]["median"], timing["quantity"]
    )
    assert precision == "bf16" and out["peak_device"] == "h200-sxm" and out["peak_flops"] == pytest.approx(989.4e12)
