"""The GPU path without a GPU: telemetry, architecture checks, measurement options and several GPUs.

NVML, CUDA and the host's GPUs are faked; what these tests show is the record each job leaves
(result.json) and the decisions taken before and inside the runner.
"""

import glob
import json
import threading
import time

import pytest

from dlrepro.images import feasibility
from dlrepro.inputs import datasets, spec
from dlrepro.plan import hostinfo
from dlrepro.run import executors, jobs
from dlrepro.run.options import RunOptions
from runner import archs, contract, nvml, telemetry
from runner import job as runner_job
from runner.adapters import capabilities
from tests import fakenvml
from tests.fakenvml import FakeNvml
from tests.run.gpus import H200


def _job(spec_name, variant, **options):
    (found,) = jobs.expand(
        spec.load(spec_name),
        RunOptions(frameworks=[options.pop("framework", "torch")], variants=[variant], quick=True, **options),
    )
    return found


def _run(job, tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "job.json"
    contract.write_json(str(path), job)
    runner_job.run(str(path), str(tmp_path / "out"))
    return json.loads((tmp_path / "out" / "result.json").read_text())


# ---------------------------------------------------------------- architectures


def test_cuda_rules_decide_native_ptx_or_none():
    assert archs.judge("9.0", ["sm_80", "sm_86"]) == ("none", None)
    assert archs.judge("9.0", ["sm_80", "sm_86", "compute_86"]) == ("ptx", "compute_86")
    assert archs.judge("8.9", ["sm_80", "sm_86"]) == ("native", "sm_86")  # same major, older minor runs
    assert archs.judge("9.0", ["sm_75", "sm_90", "compute_120"]) == ("native", "sm_90")
    assert archs.judge("12.0", ["sm_90", "compute_90"]) == ("ptx", "compute_90")
    assert archs.judge("9.0", []) == ("unknown", None)


def test_the_matrix_declares_the_architectures_of_every_cuda_build(matrix):
    for image in matrix.images:
        if image.device == "cuda":
            assert image.cuda_archs, image.name
    torch = matrix.find("torch", "cuda")
    assert archs.judge("9.0", torch.cuda_archs)[0] == "native"


def _fake_torch_gpu(monkeypatch, arch_list):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: list(arch_list))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")


def test_the_runner_refuses_a_build_without_the_gpus_architecture(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    _fake_torch_gpu(monkeypatch, ["sm_80", "sm_86"])
    result = _run(_job("resnet56", "resnet56-synthetic", device="cuda"), tmp_path)
    assert result["status"] == "skipped"
    assert result["reason"].startswith("torch ") and result["reason"].endswith(
        "has no kernels for NVIDIA H200 (sm_90, compute capability 9.0); its build ships sm_80, sm_86"
    )
    assert result["remedy"].startswith("run on a GPU the build supports")
    assert result["environment"]["cuda_archs"] == {
        "archs": ["sm_80", "sm_86"],
        "source": "framework",
        "gpu": "NVIDIA H200",
        "capability": "9.0",
    }
    assert result["options"]["ptx_jit"] is False and result["timing"] is None


def test_ptx_jit_runs_only_when_asked_and_is_marked(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    _fake_torch_gpu(monkeypatch, ["sm_80", "sm_86", "compute_86"])
    refused = _run(_job("resnet56", "resnet56-synthetic", device="cuda"), tmp_path / "a")
    assert refused["status"] == "skipped" and "only PTX for an older architecture (compute_86)" in refused["reason"]
    assert "--allow-ptx-jit" in refused["remedy"]
    allowed = _run(_job("resnet56", "resnet56-synthetic", device="cuda", allow_ptx_jit=True), tmp_path / "b")
    # past the check: this machine has no CUDA, so the build fails, but the result says PTX JIT was used
    assert allowed["status"] == "failed" and allowed["options"]["ptx_jit"] is True
    assert allowed["options"]["allow_ptx_jit"] is True


def test_a_gpu_the_adapter_cannot_identify_is_recorded_as_unknown(tmp_path, monkeypatch):
    from runner import adapters
    from runner.adapters.base import Adapter as Base

    class CannotTell(Base):  # no gpu_capability(): the base's default, "not reported"
        name = "torch"

        def build(self):
            return self.job["model"]["parameters"]

        def environment(self):
            return {"framework": "torch"}

    monkeypatch.setattr(adapters, "load", CannotTell)
    job = dict(_job("resnet56", "resnet56-synthetic", device="cuda", mode="parameters"), cuda_archs=["sm_80", "sm_86"])
    result = _run(job, tmp_path)
    assert result["status"] == "ok" and result["options"]["ptx_jit"] is False
    record = result["environment"]["cuda_archs"]
    assert record == {
        "archs": ["sm_80", "sm_86"],
        "source": "image matrix",
        "gpu": "unknown",
        "capability": "unknown",
        "note": "the torch adapter cannot tell the GPU's compute capability, so the build's "
        "architectures were not checked against it",
    }


def test_the_cuda_driver_names_the_gpu_for_frameworks_that_do_not(monkeypatch):
    import ctypes

    from runner import environment

    class FakeLibcuda(object):  # the driver API's out-parameters arrive as ctypes.byref(c_int)
        def cuInit(self, flags):
            return 0

        def cuDeviceGet(self, device, ordinal):
            device._obj.value = ordinal
            return 0

        def cuDeviceGetName(self, buffer, size, device):
            buffer.value = b"NVIDIA H200"
            return 0

        def cuDeviceGetAttribute(self, out, attribute, device):
            out._obj.value = {75: 9, 76: 0}[attribute]  # compute capability major, minor
            return 0

    monkeypatch.setattr(ctypes, "CDLL", lambda name: FakeLibcuda())
    assert environment.cuda_device() == ("NVIDIA H200", "9.0")
    monkeypatch.setattr(FakeLibcuda, "cuInit", lambda self, flags: 100)  # CUDA_ERROR_NO_DEVICE
    assert environment.cuda_device() is None


def test_preflight_lets_ptx_through_only_when_asked(matrix):
    cntk = matrix.find("cntk", "cuda")  # cubins up to sm_70, PTX for compute_70 (results/cuda-images-20261202)
    host = {"cpu_flags": ["avx"], "cpu_model": "x", "gpus": [H200]}
    reason, remedy = feasibility.check(cntk, "cuda", 0, host)
    assert "only PTX for an older architecture (compute_70)" in reason and "--allow-ptx-jit" in remedy
    assert feasibility.check(cntk, "cuda", [0], host, allow_ptx_jit=True) is None
    # MXNet 1.9.1's build has no PTX at all: no Hopper GPU runs it, --allow-ptx-jit or not
    reason, _ = feasibility.check(matrix.find("mxnet", "cuda"), "cuda", [0], host, allow_ptx_jit=True)
    assert reason == (
        "mxnet-1.9.1-cuda has no kernels for NVIDIA H200 (sm_90, compute capability 9.0); its build "
        "ships sm_50, sm_60, sm_70, sm_80, sm_86"
    )


# ---------------------------------------------------------------- telemetry


def _sampled(reasons, seconds=0.05):
    sampler = fakenvml.sampler(FakeNvml(reasons), interval_s=0.01)
    sampler.start()
    time.sleep(seconds)
    sampler.close()  # its sampling process ended: a stopped one waits on its input to the session's end
    return sampler.result()


def test_telemetry_summarises_samples_and_flags_a_power_capped_gpu():
    record = _sampled([0x0, 0x4, 0x4 | 0x20, 0x0])
    assert record["status"] == "ok" and record["device"]["name"] == "NVIDIA H200"
    assert record["device"]["power_limit_w"] == 700.0
    assert len(record["samples"]["t_s"]) >= 3 and record["summary"]["sm_clock_mhz"]["median"] == 1980
    assert record["summary"]["power_w"] == {"min": 650.0, "median": 650.0, "max": 650.0}
    assert record["throttled"] is True and record["throttle_reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]
    assert record["reasons_seen"]["sw_power_cap"] >= 2


def test_idle_and_application_clock_reasons_are_not_throttling():
    record = _sampled([0x1, 0x2, 0x1 | 0x2])
    assert record["throttled"] is False and record["throttle_reasons"] == []
    assert set(record["reasons_seen"]) == {"gpu_idle", "applications_clocks_setting"}
    assert nvml.decode(0x8 | 0x40) == ["hw_slowdown", "hw_thermal_slowdown"]


def test_telemetry_is_unavailable_with_a_reason_not_an_error(monkeypatch):
    assert telemetry.Sampler.for_job({"device": "cpu"}).result()["reason"].startswith("a cpu job")
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)  # import fails as if not installed
    record = telemetry.Sampler.for_job({"device": "cuda"}).result()
    assert record["status"] == "unavailable" and "pynvml (nvidia-ml-py) is not installed" in record["reason"]
    assert record["throttled"] is None


def test_summary_columns_from_a_result():
    result = {"telemetry": _sampled([0x4]), "options": dict(contract.job_options({}), precision="bf16")}
    cols = telemetry.summary_columns(result)
    assert cols["throttled"] is True and cols["gpu_name"] == "NVIDIA H200" and cols["driver"] == "580.95.05"
    assert cols["sm_clock_median_mhz"] == 1980 and cols["power_median_w"] == 650.0 and cols["precision"] == "bf16"
    assert telemetry.summary_columns(contract.new_result("x", "skipped"))["throttled"] is None


# ---------------------------------------------------------------- options


def test_every_result_records_the_options_and_torch_runs_bf16_channels_last_on_the_cpu(tmp_path):
    """bf16 autocast and channels_last as torch applies them on the CPU; the GPU path was measured on an H200
    (results/h200-overhead-20261130: ResNet-50 bf16 channels_last, suite against a bare loop). One timed step, no
    warm-up: what is asserted is what the job applied and recorded, not its time (with --quick's warm-up step and 3
    steps it took 32.8 s in fresh CI run 10, results/fresh-ci-20261206)."""
    pytest.importorskip("torch")
    job = _job(
        "resnet56",
        "resnet56-synthetic",
        precision="bf16",
        layout="channels_last",
        batch_sizes=[4],
        warmup=0,
        iterations=1,
    )
    assert (job["precision"], job["layout"], job["cudnn_autotune"], job["compile"]) == (
        "bf16",
        "channels_last",
        True,
        False,
    )
    result = _run(job, tmp_path)
    assert result["status"] == "ok", result["reason"]
    assert result["options"] == {
        "precision": "bf16",
        "cudnn_autotune": None,
        "layout": "channels_last",
        "compile": False,
        "cuda_graphs": False,
        "allow_ptx_jit": False,
        "ptx_jit": False,
        "gradients": "pruned",
        "thread_pools": "all",
    }
    env = result["environment"]
    assert env["autocast"] == "bfloat16" and env["layout"] == "NHWC (channels_last)"
    assert env["tf32"] == {"matmul": False, "cudnn": False}
    assert result["telemetry"]["status"] == "unavailable" and result["timing"]["timer"] == "host_sync"


@pytest.mark.parametrize(
    "framework,option,value",
    [
        ("tensorflow", "precision", "bf16"),
        ("mxnet", "layout", "channels_last"),
        ("jax", "precision", "fp16"),
        ("torch", "cuda_graphs", True),
    ],
)
def test_an_option_an_adapter_lacks_is_refused_before_the_framework_loads(tmp_path, framework, option, value):
    job = _job("alexnet", "alexnet-s", framework=framework, **{option: value})
    result = _run(job, tmp_path)  # TensorFlow and MXNet need not be installed: nothing is imported
    assert result["status"] == "skipped" and result["reason"].startswith(
        "the %s adapter cannot run %s=%s" % (framework, option, value)
    )
    assert result["options"][option] == value


def test_fp32_means_tf32_off_and_tf32_is_refused_on_a_cpu():
    assert capabilities.unsupported_options("torch", {"precision": "tf32"}, "cpu").endswith(
        "(TF32 is a mode of NVIDIA GPUs' matrix units)"
    )
    assert capabilities.unsupported_options("torch", {"precision": "tf32"}, "cuda") is None
    assert contract.OPTION_DEFAULTS["precision"] == "fp32"


def test_default_options_keep_the_configuration_digest_of_earlier_runs():
    import hashlib

    # the options as dumped before the measurement options, seeds, study steps and the test batch size existed
    legacy = RunOptions().model_dump_json(
        exclude={"executor", "gpu", "gpus", "isolation", "seeds", "steps", "test_batch_size"}
        | set(contract.OPTION_DEFAULTS)
    )
    assert RunOptions().digest() == hashlib.sha256(legacy.encode()).hexdigest()
    assert RunOptions(precision="bf16").digest() != RunOptions().digest()
    assert RunOptions(test_batch_size=4160).digest() != RunOptions().digest()
    assert RunOptions(gpus=[0, 1]).digest() == RunOptions().digest()


# ---------------------------------------------------------------- several GPUs


def test_jobs_run_concurrently_one_per_gpu():
    log, lock = [], threading.Lock()

    def run_one(job, gpu, event):
        event("start", job, None)
        start = time.monotonic()
        time.sleep(0.3)
        with lock:
            log.append((job, gpu, start, time.monotonic()))
        event("end", job, {"status": "ok"})

    events = []
    t0 = time.monotonic()
    executors.run_on_gpus(run_one, ["a", "b", "c", "d"], [0, 1], lambda *e: events.append(e[:2]))
    wall = time.monotonic() - t0
    assert sorted(j for j, _, _, _ in log) == ["a", "b", "c", "d"] and len(events) == 8
    assert wall < 0.9  # 4 jobs of 0.3 s on 2 GPUs: about 0.6 s, not 1.2
    for gpu in (0, 1):  # never two jobs at once on one GPU
        spans = sorted((s, e) for _, g, s, e in log if g == gpu)
        assert len(spans) == 2 and spans[0][1] <= spans[1][0]
    overlapping = [(a, b) for a in log for b in log if a[1] < b[1] and a[2] < b[3] and b[2] < a[3]]
    assert overlapping  # the two GPUs worked at the same time


def test_a_worker_error_stops_the_other_gpus_taking_jobs():
    ran = []

    def run_one(job, gpu, event):
        ran.append(job)
        if job == "a":
            raise RuntimeError("engine gone")
        time.sleep(0.2)

    with pytest.raises(RuntimeError, match="engine gone"):
        executors.run_on_gpus(run_one, ["a", "b", "c", "d", "e"], [0, 1], lambda *e: None)
    assert len(ran) < 5


def test_the_local_executor_pins_each_job_to_its_gpu(tmp_path, monkeypatch):
    """Fake GPUs 0 and 1: each job's process sees only its own (CUDA_VISIBLE_DEVICES), results as in a sequential
    run."""
    monkeypatch.setattr(hostinfo, "gpus", lambda: [H200, dict(H200, index=1)])
    executor = executors.get("local", "cuda", [0, 1])
    assert executor.preflight() is None and executor.describe()["gpus"] == [0, 1]
    assert executor.environment("/data", 1)["CUDA_VISIBLE_DEVICES"] == "1"
    assert executor.environment("/data", 1)["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    found = jobs.expand(
        spec.load("resnet56"),
        RunOptions(
            frameworks=["torch"], device="cuda", quick=True, variants=["resnet56-synthetic"], batch_sizes=[2, 4, 8, 16]
        ),
    )
    events = []
    executor.run(None, found, tmp_path, datasets.root(), lambda kind, job_id, result: events.append((kind, job_id)))
    seen = []
    for job in found:
        result = json.loads((tmp_path / job["id"] / "result.json").read_text())
        assert set(result) == set(contract.new_result("x", "ok")) | {"isolation"}  # the same form as any result
        seen.append(result["environment"]["cuda_visible_devices"])
        if glob.glob("/dev/nvidia[0-9]*"):  # a GPU host: the fake GPUs' jobs fail inside torch, with the reason
            assert result["status"] == "failed" and "CUDA" in result["reason"], result["reason"]
        else:  # no device node behind the fake GPUs: each job is refused before the framework, naming its GPU
            assert result["status"] == "skipped" and result["reason"].startswith(
                "no NVIDIA GPU device is visible to the job (no /dev/nvidia<N>): host GPU %s," % seen[-1]
            ), result["reason"]
        assert result["environment"]["host_gpu"] == seen[-1]
    assert sorted(set(seen)) == ["0", "1"] and len(events) == 8
    assert executors.get("local", "cuda", [3]).preflight()[0] == "GPU 3 is not visible on this host (NVML sees [0, 1])"
