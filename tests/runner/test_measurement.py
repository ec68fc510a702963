"""Numbers that mean what they say: the measured window (CPU time, effective parallelism, energy), telemetry that
stays inside it, thread counts that are real, options that are applied or refused, results kept as each repeat
ends, and the timers that produced the committed GPU numbers."""

import gc
import json
import os
import subprocess
import sys
import threading
import time
import types

import pytest

from dlrepro.inputs import spec
from dlrepro.run import jobs
from dlrepro.run.options import RunOptions
from runner import contract, energy, frameworks, measure, settings, supervise, telemetry, window
from runner import job as runner_job
from runner.adapters import capabilities
from tests import fakenvml
from tests.fakenvml import FakeNvml


def _job(spec_name, variant, **options):
    (found,) = jobs.expand(
        spec.load(spec_name),
        RunOptions(frameworks=[options.pop("framework", "torch")], variants=[variant], quick=True, **options),
    )
    return found


def _run(job, tmp_path):
    path = tmp_path / "job.json"
    contract.write_json(str(path), job)
    return runner_job.run(str(path), str(tmp_path / "out"))


class CountingNvml(FakeNvml):
    """FakeNvml that counts every sample read and keeps a total-energy counter (mJ) rising 650 W."""

    def __init__(self, reasons, energy=True):
        super().__init__(reasons)
        self.reads, self.t0, self.energy = 0, time.perf_counter(), energy

    def nvmlDeviceGetClockInfo(self, h, kind):
        if kind == 0:
            self.reads += 1
        return super().nvmlDeviceGetClockInfo(h, kind)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.energy:
            raise RuntimeError("not supported before Volta")
        return int((time.perf_counter() - self.t0) * 650 * 1000)


def test_telemetry_is_sampled_in_a_process_of_its_own_and_reads_nothing_after_its_window():
    nvml = CountingNvml([0x0])
    sampler = fakenvml.sampler(nvml)
    threads = threading.active_count()
    sampler.start()
    assert threading.active_count() == threads  # no thread of the suite's runs beside the measured loop
    time.sleep(0.12)
    sampler.stop()
    reads, samples = nvml.reads, len(sampler.samples["t_s"])
    sampler.stop()  # measure.py's window and job.py's both stop it: the second call must read nothing
    sampler.close()
    assert nvml.reads == reads == 2  # here, the window's two edges; every reading between them, in the other process
    assert samples >= 5  # 40 Hz: a window of 0.12 s has five readings
    record = sampler.result()
    assert record["sampling"] == (
        "every 0.025 s in a process of its own (runner.sampling.serve); the window's edges in the job's"
    )
    # the last reading, the window's end edge, is taken after its counters: the counters' window ends first
    assert record["window_s"] == pytest.approx(0.12, abs=0.05) and record["samples"]["t_s"][-1] >= record["window_s"]
    assert record["samples"]["t_s"] == sorted(record["samples"]["t_s"])


def _sampled(sampler, seconds):
    """The record of ``sampler`` over a window of ``seconds``, its sampling process ended."""
    sampler.start()
    time.sleep(seconds)
    sampler.close()
    return sampler.result()


def test_telemetry_keeps_the_edge_readings_and_says_why_when_the_sampling_process_cannot_read_nvml():
    record = _sampled(fakenvml.sampler(CountingNvml([0x4]), broken=True), 0.06)
    assert record["sampling"] == (
        "the window's edges only: the sampling process could not read NVML: RuntimeError: NVML Shared Library Not Found"
    )
    assert len(record["samples"]["t_s"]) == 2 and record["throttle_reasons"] == ["sw_power_cap"]
    assert record["energy"]["method"].startswith("NVML total energy counter")


def test_the_sampling_process_passes_over_a_banner_and_a_lost_one_leaves_its_last_words_as_the_reason():
    found = _sampled(fakenvml.sampler(CountingNvml([0x0]), banner="nvidia-ml-py: a banner on standard output"), 0.1)
    assert len(found["samples"]["t_s"]) >= 4 and found["sampling"].startswith("every 0.025 s")
    record = _sampled(fakenvml.sampler(CountingNvml([0x0]), lost=True), 0.1)
    assert record["sampling"] == (
        "the window's edges only: the sampling process ended (exit status 3) (NVMLError_GpuIsLost: GPU is lost)"
    )
    assert len(record["samples"]["t_s"]) == 2 and record["energy"]["status"] == "ok"


def test_the_window_ends_at_its_last_reading_not_after_the_sampling_process_handed_its_samples_over():
    sampler = fakenvml.sampler(CountingNvml([0x0]), interval_s=0.001)
    sampler.start()
    time.sleep(0.5)
    called = time.monotonic()
    sampler.stop()
    handed_over = time.monotonic()
    sampler.close()
    record = sampler.result()
    assert len(record["samples"]["t_s"]) >= 200 and record["samples"]["t_s"][-1] >= record["window_s"]
    assert sampler._t0 + record["samples"]["t_s"][-1] <= called + (handed_over - called) / 2  # before the transfer


@pytest.mark.all_cpus
def test_the_sampling_process_leaves_the_cpus_a_job_is_pinned_to():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nowhere else to go")
    job_cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {job_cpu})  # a job of one thread (tests/conftest.py puts the mask back)
    sampler = fakenvml.sampler(CountingNvml([0x0]))
    sampler.start()
    child = os.sched_getaffinity(sampler._process.process.pid)
    sampler.close()
    assert job_cpu not in child and child


def test_gpu_energy_is_the_boards_counter_over_the_window_or_the_power_integrated():
    found = _sampled(fakenvml.sampler(CountingNvml([0x0])), 0.2)["energy"]
    assert found["status"] == "ok" and found["method"].startswith("NVML total energy counter")
    assert found["mean_w"] == pytest.approx(650, rel=0.05) and found["joules"] == pytest.approx(0.2 * 650, rel=0.25)
    assert "not a certified measurement" in found["note"]
    found = _sampled(fakenvml.sampler(CountingNvml([0x0], energy=False)), 0.2)["energy"]
    assert found["method"].startswith("power samples integrated") and found["mean_w"] == pytest.approx(650, rel=0.2)


def test_cpu_energy_reads_rapl_packages_with_wraparound_or_says_why_not(tmp_path):
    package = tmp_path / "intel-rapl:0"
    package.mkdir()
    (package / "name").write_text("package-0\n")
    (package / "energy_uj").write_text("999000000\n")
    (package / "max_energy_range_uj").write_text("1000000000\n")
    (tmp_path / "intel-rapl:0:0").mkdir()  # a sub-domain (core): not counted twice
    (tmp_path / "intel-rapl:0:0" / "energy_uj").write_text("5\n")
    counter = energy.Counter(str(tmp_path))
    counter.start()
    (package / "energy_uj").write_text("4000000\n")  # wrapped: 1,000 J range, 5 J used
    counter.stop()
    found = counter.result(2.0)
    assert found["status"] == "ok" and found["joules"] == pytest.approx(5.0) and found["mean_w"] == pytest.approx(2.5)
    assert found["domains"] == ["package-0"]
    assert energy.Counter(str(tmp_path / "none")).result(1.0)["reason"].startswith("no readable RAPL package counter")


def test_the_window_measures_cpu_time_and_effective_parallelism():
    win = window.Window(telemetry.Sampler.for_job({"device": "cpu"}), energy.Counter("/nonexistent"))
    win.start()
    end = time.process_time() + 0.2
    while time.process_time() < end:  # one busy thread
        pass
    win.stop()
    time.sleep(0.05)
    win.stop()  # the first stop counts
    usage = win.cpu_usage()
    assert usage["cpu_seconds"] == pytest.approx(0.2, abs=0.05) and usage["wall_seconds"] >= 0.2 - 0.05
    # one thread's CPU time over the window's wall time: at most 1, less where other work shares the CPUs (the tests
    # run beside containers), so the ratio is checked, not its value
    assert usage["effective_parallelism"] == pytest.approx(usage["cpu_seconds"] / usage["wall_seconds"], rel=1e-6)
    assert 0 < usage["effective_parallelism"] <= 1.05 and usage["usable_cpus"] == len(os.sched_getaffinity(0))


def test_a_thread_count_confines_the_job_and_is_recorded_as_asked(tmp_path):
    job = _job("fcn", "fcn-s", batch_sizes=[4], threads=[1])
    found = settings.environment(job)
    assert found == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    code = (
        "from runner import job, settings; import json, os, sys; settings.apply(json.load(open(sys.argv[1]))); "
        "print(sorted(os.sched_getaffinity(0)), os.environ['OMP_NUM_THREADS'])"
    )
    path = tmp_path / "job.json"
    contract.write_json(str(path), job)
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.split("]")[0] + "]" == str(settings.cpus(job)) and out.split()[-1] == "1"
    mxnet = settings.environment(dict(job, framework="mxnet"))
    assert mxnet["MXNET_CPU_WORKER_NTHREADS"] == "1" and mxnet["OMP_NUM_THREADS"] == "1"
    jax = settings.environment(dict(job, framework="jax", threads=2))
    assert jax["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=true"
    # XLA stops parsing at the first token without "--": every flag after the thread flag must still be one
    gpu = settings.environment(dict(job, framework="jax", threads=1, device="cuda", cudnn_autotune=False))
    assert gpu["XLA_FLAGS"].split() == ["--xla_cpu_multi_thread_eigen=false", "--xla_gpu_autotune_level=0"]
    assert settings.key(dict(job, threads=2)) != settings.key(job)  # not one worker for two thread counts
    # Keras: its backend's knobs, the backend named before keras is imported, and on the CPU no GPU to wander onto
    keras = settings.environment(dict(job, framework="keras-jax", threads=2))
    assert keras == {
        "KERAS_BACKEND": "jax",
        "CUDA_VISIBLE_DEVICES": "",
        "JAX_PLATFORMS": "cpu",
        "OMP_NUM_THREADS": "2",
        "MKL_NUM_THREADS": "2",
        "OPENBLAS_NUM_THREADS": "2",
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=true",
    }
    assert settings.environment(dict(job, framework="keras-torch", device="cuda", threads=None)) == {
        "KERAS_BACKEND": "torch"
    }


def test_a_torch_job_at_one_thread_records_what_it_used(tmp_path):
    result = _run(_job("fcn", "fcn-s", batch_sizes=[8], threads=[1]), tmp_path)
    assert result["status"] == "ok", result["reason"]
    cpus, choice = settings.choice(_job("fcn", "fcn-s", batch_sizes=[8], threads=[1]))
    assert result["environment"]["process"] == {
        "variables": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        "cpus": cpus,
        "requested_threads": 1,
        "cpu_choice": choice,
        "thread_pools": "all",
    }
    assert len(cpus) == 1 and choice["cpus"][0]["cpu"] == cpus[0]
    assert result["environment"]["threads"] == 1 and result["cpu_usage"]["usable_cpus"] == 1
    assert result["cpu_usage"]["effective_parallelism"] <= 1.05  # confined to one CPU
    rapl = energy.packages()
    assert result["energy"]["status"] == ("ok" if rapl else "unavailable")
    if rapl:
        assert result["energy"]["domains"] == [name for name, _, _ in rapl] and result["energy"]["joules"] >= 0
    else:
        assert result["energy"]["reason"].startswith("no readable RAPL package counter under /sys/class/powercap")
    assert result["started"].endswith("Z") and len(result["started"]) == len("2026-12-01T10:00:00.000Z")
    assert set(result["phases"]) == {
        "framework_imported",
        "model_built",
        "data_ready",
        "warmup_done",
        "measured_done",
        "finished",
    }
    phases = result["phases"]
    assert phases["measured_done"] >= phases["warmup_done"] >= phases["data_ready"] >= phases["model_built"]


def test_a_job_puts_what_lives_at_its_framework_import_out_of_garbage_collection(tmp_path):
    """The adapter's release runs a full collection after every job; the interpreter's and torch's own objects,
    alive before the job made anything, are frozen first, so that collection scans only what the job made."""
    pytest.importorskip("torch")
    gc.unfreeze()
    try:
        result = _run(_job("lstm", "lstm-synthetic", batch_sizes=[4]), tmp_path)
        frozen, tracked = gc.get_freeze_count(), len(gc.get_objects())
    finally:
        gc.unfreeze()
    assert result["status"] == "ok", result["reason"]
    assert frozen > 50000 and tracked < frozen  # torch's modules, functions and types; the job's own were collected


@pytest.mark.parametrize(
    "framework,name,value",
    [
        (f, n, v)
        for f in (
            "torch",
            "tensorflow",
            "mxnet",
            "jax",
            "cntk",
            "caffe2",
            "caffe",
            "chainer",
            "keras-tensorflow",
            "keras-jax",
            "keras-torch",
        )
        for n, v in (
            ("cudnn_autotune", False),
            ("precision", "tf32"),
            ("precision", "bf16"),
            ("layout", "channels_last"),
        )
    ],
)
def test_every_option_is_applied_by_the_adapter_or_refused(framework, name, value):
    """The capability table, checked against what each adapter does to apply an option: a setting it sets before
    import (runner.settings) or an API call in its module; anything else is refused for a cuda job."""
    job = dict(_job("alexnet", "alexnet-s"), framework=framework, device="cuda", **{name: value})
    refused = capabilities.unsupported_options(framework, job, "cuda")
    applies = value in frameworks.FRAMEWORKS[framework].options.get(name, ())
    assert (refused is None) == applies, refused
    if not applies:
        assert refused.startswith("the %s adapter cannot run %s=%s" % (framework, name, value))
        return
    module = frameworks.FRAMEWORKS[framework].module
    source = open(capabilities.__file__.replace("capabilities.py", "%s.py" % module)).read()
    how = {
        ("cudnn_autotune", "torch"): 'cudnn.benchmark = bool(job.get("cudnn_autotune"',
        ("cudnn_autotune", "keras-torch"): 'cudnn.benchmark = bool(job.get("cudnn_autotune"',
        ("cudnn_autotune", "caffe2"): "cudnn_exhaustive_search",
        ("precision", "torch", "tf32"): "allow_tf32 = tf32",
        ("precision", "torch", "bf16"): "torch.bfloat16",
        ("precision", "jax", "tf32"): '{"tf32": "tensorfloat32", "bf16": "default"}.get(precision',
        ("precision", "jax", "bf16"): 'jnp.bfloat16 if precision == "bf16"',
        ("layout", "torch"): 'torch.channels_last if job.get("layout"',
        ("layout", "jax"): 'job.get("layout", "default") == "channels_last"',
    }
    how = how.get((name, framework, value)) or how.get((name, framework))
    default = dict(job, **{name: contract.OPTION_DEFAULTS[name]})
    # an API call in the adapter, or a setting that this option (not some other: TF32 off for fp32) adds
    assert (how in source) if how else settings.environment(job) != settings.environment(default), (framework, name)


def test_a_cpu_job_records_no_cudnn_autotuning_and_tf32_off_for_the_old_cuda_libraries():
    assert contract.job_options({"device": "cpu"})["cudnn_autotune"] is None
    assert contract.job_options({"device": "cuda"})["cudnn_autotune"] is True
    gpu = dict(_job("alexnet", "alexnet-s"), device="cuda")
    assert settings.environment(dict(gpu, framework="mxnet"))["NVIDIA_TF32_OVERRIDE"] == "0"
    assert settings.environment(dict(gpu, framework="tensorflow", cudnn_autotune=False)) == {
        "TF_CUDNN_USE_AUTOTUNE": "0"
    }
    assert (
        "--xla_gpu_autotune_level=0"
        in settings.environment(dict(gpu, framework="jax", cudnn_autotune=False))["XLA_FLAGS"]
    )


@pytest.mark.parametrize("framework", ["tensorflow", "jax", "mxnet"])
def test_no_warmup_is_refused_where_the_first_iteration_compiles(framework, tmp_path):
    result = _run(_job("alexnet", "alexnet-s", framework=framework, warmup=0), tmp_path)
    assert (
        result["status"] == "skipped"
        and "warm-up 0: its first iteration compiles the training step" in result["reason"]
    )
    assert "a warm-up of at least one iteration" in result["remedy"]
    assert capabilities.unsupported_options("torch", dict(_job("alexnet", "alexnet-s"), warmup=0), "cpu") is None


def test_the_result_is_rewritten_after_every_repeat_and_kept_by_the_supervisor(tmp_path, monkeypatch):
    written = []
    real = contract.write_json

    def spy(path, body):
        if path.endswith("result.json"):
            written.append((body["status"], len((body.get("timing") or {}).get("repeats") or [])))
        real(path, body)

    monkeypatch.setattr(contract, "write_json", spy)
    result = _run(_job("fcn", "fcn-s", batch_sizes=[4], repeats=3), tmp_path)
    # also rewritten as each phase is reached (build, warm-up, ...): those records hold no repeat yet
    after_each = [w for i, w in enumerate(written) if i == 0 or w != written[i - 1]]
    assert result["status"] == "ok" and after_each == [
        ("running", 0),
        ("running", 1),
        ("running", 2),
        ("running", 3),
        ("ok", 3),
    ]
    monkeypatch.undo()
    # a job killed after two repeats: the supervisor records it failed and keeps both
    out = tmp_path / "killed"
    code = (
        "import json, os, signal, sys; os.makedirs(sys.argv[1], exist_ok=True); "
        "json.dump({'schema': 'dlrepro.result/1', 'job_id': 'k', 'status': 'running', "
        "'timing': {'repeats': [[1.0, 1.1], [1.2, 1.3]]}}, open(os.path.join(sys.argv[1], 'result.json'), 'w')); "
        "os.kill(os.getpid(), signal.SIGKILL)"
    )
    status = supervise.run_one([sys.executable, "-c", code, str(out)], {"id": "k", "timeout_s": 60}, str(out))
    kept = json.loads((out / "result.json").read_text())
    assert status == "failed" and kept["reason"].startswith("the job process died of SIGKILL")
    assert kept["timing"]["repeats"] == [[1.0, 1.1], [1.2, 1.3]]


def test_the_cuda_event_timer_gives_each_iteration_its_own_device_time(monkeypatch):
    """The timer behind every committed PyTorch GPU number, with a fake event clock: sample i is the device time
    from the end of iteration i-1 to the end of iteration i, read after one synchronisation."""
    torch = pytest.importorskip("torch")
    from runner.adapters import torch_adapter

    clock, synced, first = [0.0], [], []

    class Event(object):
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.t = None

        def record(self, stream):
            assert stream == "the device's current stream"
            if self.t is None:  # torch makes the CUDA event at its first record
                first.append(clock[0])
            self.t = clock[0]

        def synchronize(self):
            synced.append(self.t)

        def elapsed_time(self, later):  # milliseconds, as CUDA's
            return (later.t - self.t) * 1000.0

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: "the device's current stream")
    adapter = torch_adapter.Adapter.__new__(torch_adapter.Adapter)
    adapter.device = types.SimpleNamespace(type="cuda")
    durations = iter([0.050, 0.010, 0.012, 0.011])  # the lead-in refills the drained launch queue: slow

    def step():
        clock[0] += next(durations)
        return "loss"

    seconds, results = measure._events(adapter.device_clock(), step, 3)
    assert seconds == pytest.approx([0.010, 0.012, 0.011]) and results == ["loss"] * 3  # the lead-in untimed
    assert synced == [pytest.approx(0.083)]  # one synchronisation, at the end of the repeat
    assert first == [0.0] * 4  # every event made before the lead-in, none inside a timed iteration
