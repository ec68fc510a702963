"""Device peaks (dlrepro/peaks.yaml): every value sourced and in its unit, devices matched exactly."""
import pytest

from dlrepro import peaks
from dlrepro.errors import SpecError


def test_every_value_has_a_unit_and_a_datasheet_source():
    loaded = peaks.load()
    ids = {d.id for d in loaded.devices}
    for wanted in ("gtx-980", "gtx-1080", "tesla-k80-gk210", "tesla-k80-board", "gtx-titan-x-maxwell",
                   "tesla-p100-pcie-16gb", "tesla-p100-sxm2-16gb", "tesla-v100-sxm2", "tesla-t4", "a100-sxm4-80gb",
                   "l4", "rtx-3090", "rtx-4090", "h100-sxm", "h200-sxm"):
        assert wanted in ids
    for device in loaded.devices:
        values = list(device.flops.values()) + [device.memory_bandwidth]
        assert all(v.source.startswith("NVIDIA") for v in values), device.id
        assert {v.unit for v in device.flops.values()} == {"TFLOP/s"} and device.memory_bandwidth.unit == "GB/s"


@pytest.mark.parametrize("name, count, precision, device, tflops", [
    ("NVIDIA H200", 1, "fp32", "h200-sxm", 67), ("NVIDIA H200", 1, "tf32", "h200-sxm", 494.7),
    ("NVIDIA H200", 1, "bf16", "h200-sxm", 989.4), ("nvidia h200", 2, "bf16", "2 x h200-sxm", 1978.8),
    ("Tesla K80", 1, "fp32", "tesla-k80-gk210", 4.37), ("Tesla K80", 2, "fp32", "tesla-k80-board", 8.74),
    ("GeForce GTX 1080", 1, "fp32", "gtx-1080", 8.873), ("NVIDIA GeForce GTX 1080", 1, "fp32", "gtx-1080", 8.873),
    ("Tesla P100-PCIE-16GB", 1, "fp16", "tesla-p100-pcie-16gb", 18.7),
])
def test_a_device_is_matched_by_name_and_count(name, count, precision, device, tflops):
    found = peaks.gpu(name, count, precision)
    assert found.device == device and found.flops == pytest.approx(tflops * 1e12) and not found.estimate


@pytest.mark.parametrize("name", ["NVIDIA GeForce GTX 1080 Ti", "GeForce GTX 980 Ti", "NVIDIA H200 NVL", "Tesla K40m",
                                  "TITAN X (Pascal)", "H20", None])
def test_a_near_name_has_no_peak(name):
    assert peaks.gpu(name) is None


def test_a_precision_the_device_lacks_has_no_rate():
    """A K80 has no tensor cores: a tf32 or bf16 job there has no peak (the entry is matched, the rate is not)."""
    found = peaks.gpu("Tesla K80", 1, "bf16")
    assert found.flops is None and found.device == "tesla-k80-gk210" and "no bf16" in found.source


def test_published_hardware_is_matched_by_its_exact_text():
    k80 = peaks.published("NVIDIA Tesla K80, one GK210 (half board), Azure NC6 DLVM, CUDA 8, cuDNN 6")
    assert k80.device == "tesla-k80-gk210" and k80.flops == pytest.approx(4.37e12)
    assert peaks.published("4x NVIDIA Tesla V100-PCIE-16GB (Azure VM, 24 CPUs), CUDA 9, cuDNN 7").flops == \
        pytest.approx(4 * 14e12)
    assert peaks.published("1x NVIDIA Tesla P100, CUDA 9, cuDNN 7") is None  # PCIe or SXM2: not said
    assert peaks.published("1x K80 GK210 clocked 562 MHz (AWS), boost off") is None


@pytest.mark.parametrize("flags, per_cycle", [(["avx", "avx2", "fma", "avx512f"], 64), (["avx", "avx2", "fma"], 32),
                                              (["avx", "fma"], 16), (["avx"], 16), ([], 8)])
def test_cpu_peak_is_an_estimate_from_cores_clock_and_flags(flags, per_cycle):
    found = peaks.cpu(4, 2500.0, flags)
    assert found.flops == 4 * 2500e6 * per_cycle and found.estimate and found.source.startswith("estimate")
    assert peaks.cpu(4, None, flags) is None


def test_a_value_without_a_source_is_refused(tmp_path):
    bad = tmp_path / "peaks.yaml"
    bad.write_text("devices:\n  - id: x\n    names: [X]\n    count: 1\n    flops:\n      fp32: {value: 1, unit: TFLOP/s}\n"
                   "    memory_bandwidth: {value: 1, unit: GB/s, source: NVIDIA X datasheet, page one}\n")
    with pytest.raises(SpecError, match="source"):
        peaks.load(bad)
    bad.write_text(bad.read_text().replace("unit: TFLOP/s}", "unit: GFLOPS, source: NVIDIA X datasheet page one}"))
    with pytest.raises(SpecError, match="unit"):
        peaks.load(bad)
