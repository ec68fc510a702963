"""Device peaks (dlrepro/inputs/peaks.yaml): every value sourced and in its unit, devices matched exactly, CPU
FLOPs a cycle from vendor, family and model."""

import re

import pytest

from dlrepro.errors import SpecError
from dlrepro.inputs import peaks


def test_every_value_has_a_unit_and_a_datasheet_source():
    loaded = peaks.load()
    ids = {d.id for d in loaded.devices}
    for wanted in (
        "gtx-980",
        "gtx-1080",
        "tesla-k80-gk210",
        "tesla-k80-board",
        "gtx-titan-x-maxwell",
        "tesla-p100-pcie-16gb",
        "tesla-p100-sxm2-16gb",
        "tesla-v100-sxm2",
        "tesla-t4",
        "a100-sxm4-80gb",
        "l4",
        "rtx-3090",
        "rtx-4090",
        "h100-sxm",
        "h200-sxm",
    ):
        assert wanted in ids
    for device in loaded.devices:
        values = list(device.flops.values()) + [device.memory_bandwidth]
        assert all(v.source.startswith("NVIDIA") for v in values), device.id
        assert {v.unit for v in device.flops.values()} == {"TFLOP/s"} and device.memory_bandwidth.unit == "GB/s"


@pytest.mark.parametrize(
    "name, count, precision, device, tflops",
    [
        ("NVIDIA H200", 1, "fp32", "h200-sxm", 67),
        ("NVIDIA H200", 1, "tf32", "h200-sxm", 494.7),
        ("NVIDIA H200", 1, "bf16", "h200-sxm", 989.4),
        ("nvidia h200", 2, "bf16", "2 x h200-sxm", 1978.8),
        ("Tesla K80", 1, "fp32", "tesla-k80-gk210", 4.37),
        ("Tesla K80", 2, "fp32", "tesla-k80-board", 8.74),
        ("GeForce GTX 1080", 1, "fp32", "gtx-1080", 8.873),
        ("NVIDIA GeForce GTX 1080", 1, "fp32", "gtx-1080", 8.873),
        ("Tesla P100-PCIE-16GB", 1, "fp16", "tesla-p100-pcie-16gb", 18.7),
    ],
)
def test_a_device_is_matched_by_name_and_count(name, count, precision, device, tflops):
    found = peaks.gpu(name, count, precision)
    assert found.device == device and found.flops == pytest.approx(tflops * 1e12) and not found.estimate


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GeForce GTX 1080 Ti",
        "GeForce GTX 980 Ti",
        "NVIDIA H200 NVL",
        "Tesla K40m",
        "TITAN X (Pascal)",
        "H20",
        None,
    ],
)
def test_a_near_name_has_no_peak(name):
    assert peaks.gpu(name) is None


def test_a_precision_the_device_lacks_has_no_rate():
    """A K80 has no tensor cores: a tf32 or bf16 job there has no peak (the entry is matched, the rate is not)."""
    found = peaks.gpu("Tesla K80", 1, "bf16")
    assert found.flops is None and found.device == "tesla-k80-gk210" and "no bf16" in found.source


def test_published_hardware_is_matched_by_its_exact_text():
    k80 = peaks.published("NVIDIA Tesla K80, one GK210 (half board), Azure NC6 DLVM, CUDA 8, cuDNN 6")
    assert k80.device == "tesla-k80-gk210" and k80.flops == pytest.approx(4.37e12)
    assert peaks.published(
        "4x NVIDIA Tesla V100-PCIE-16GB (Azure VM, 24 CPUs), CUDA 9, cuDNN 7"
    ).flops == pytest.approx(4 * 14e12)
    assert peaks.published("1x NVIDIA Tesla P100, CUDA 9, cuDNN 7") is None  # PCIe or SXM2: not said
    assert peaks.published("1x K80 GK210 clocked 562 MHz (AWS), boost off") is None


AVX2 = ["avx", "avx2", "fma"]
AVX512 = AVX2 + ["avx512f"]


def _cpu(vendor, family, model_number, name, flags):
    """A cpu record as runner.environment writes it (the /proc/cpuinfo fields it keeps)."""
    return {"vendor": vendor, "family": family, "model_number": model_number, "model": name, "flags": flags}


@pytest.mark.parametrize(
    "info, per_cycle, row",
    [
        # the AMD EPYC (Zen 4, avx512f) this project's CPU studies ran on at the audit: 512-bit ops on two 256-bit pipes
        (_cpu("AuthenticAMD", 25, 0x11, "AMD EPYC 9B14 96-Core Processor", AVX512 + ["avx512_bf16"]), 32, "amd-zen4"),
        (_cpu("AuthenticAMD", 25, 0xA0, "AMD EPYC 9754 128-Core Processor", AVX512), 32, "amd-zen4"),
        (_cpu("AuthenticAMD", 23, 0x01, "AMD EPYC 7601 32-Core Processor", AVX2), 16, "amd-zen1"),
        (_cpu("AuthenticAMD", 23, 0x31, "AMD EPYC 7742 64-Core Processor", AVX2), 32, "amd-zen2"),
        (_cpu("AuthenticAMD", 25, 0x01, "AMD EPYC 7763 64-Core Processor", AVX2), 32, "amd-zen3"),
        (
            _cpu("GenuineIntel", 6, 0x55, "Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz", AVX512),
            64,
            "intel-xeon-scalable-two-fma",
        ),
        (
            _cpu("GenuineIntel", 6, 0x55, "Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz", AVX512),
            64,
            "intel-xeon-scalable-two-fma",
        ),
        (
            _cpu("GenuineIntel", 6, 0x55, "Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz", AVX512),
            32,
            "intel-xeon-scalable-one-fma",
        ),
        (
            _cpu("GenuineIntel", 6, 0x55, "Intel(R) Xeon(R) Gold 5218 CPU @ 2.30GHz", AVX512),
            32,
            "intel-xeon-scalable-one-fma",
        ),
        (_cpu("GenuineIntel", 6, 0x6A, "Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz", AVX512), 64, "intel-ice-lake-sp"),
        (
            _cpu("GenuineIntel", 6, 0x8C, "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", AVX512),
            32,
            "intel-client-avx512",
        ),
        (
            _cpu("GenuineIntel", 6, 0x3F, "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz", AVX2),
            32,
            "intel-haswell-to-comet-lake",
        ),
    ],
)
def test_cpu_flops_a_cycle_come_from_vendor_family_and_model(info, per_cycle, row):
    found = peaks.cpu(2500.0, info, cores=4, logical=8)
    assert found.flops == 4 * 2500e6 * per_cycle and found.estimate and found.device == "CPU estimate"
    assert found.source.startswith(
        "estimate: 4 cores (8 logical CPUs) x 2500 MHz x %d fp32 FLOPs a cycle (" % per_cycle
    )
    assert found.source.endswith("; peaks.yaml cpus %s)" % row)


@pytest.mark.parametrize(
    "info, per_cycle, row",
    [
        # a KVM guest that reports Rocket Lake's model number (0xa7) but has AMX: not the client part, the port count
        # unknown
        (_cpu("GenuineIntel", 6, 0xA7, "Intel(R) Xeon(R) Processor", AVX512 + ["amx_tile"]), 64, "avx512-upper-bound"),
        # the committed CPU studies' records: no family or model recorded, avx2 and fma
        ({"model": "AMD EPYC", "flags": AVX2}, 32, "avx2-fma-upper-bound"),
        (_cpu("AuthenticAMD", 26, 0x44, "AMD Ryzen 9 9950X", AVX512), 64, "avx512-upper-bound"),
        ({"flags": ["avx"]}, 16, "avx-upper-bound"),
        ({"flags": []}, 8, "sse-upper-bound"),
        (None, 8, "sse-upper-bound"),
    ],
)
def test_a_cpu_no_row_names_gets_an_upper_bound_from_its_flags(info, per_cycle, row):
    found = peaks.cpu(2500.0, info, cores=2, logical=2)
    assert found.flops == 2 * 2500e6 * per_cycle
    assert found.source.startswith(
        "estimate (an upper bound): 2 cores (2 logical CPUs) x 2500 MHz x %d fp32" % per_cycle
    )
    assert found.source.endswith("; peaks.yaml cpus %s)" % row)


def test_logical_cpus_without_their_cores_are_counted_as_cores_and_said_to_be_an_upper_bound():
    zen4 = _cpu("AuthenticAMD", 25, 0x11, "AMD EPYC 9B14", AVX512)
    found = peaks.cpu(2000.0, zen4, cores=None, logical=4)
    assert found.flops == 4 * 2000e6 * 32
    assert found.source.startswith(
        "estimate (an upper bound): 4 logical CPUs (their physical cores were not recorded: "
        "each counted as a core) x 2000 MHz x 32 fp32 FLOPs a cycle (AMD Zen 4"
    )
    assert peaks.cpu(1000.0, zen4, cores=1, logical=2).source.startswith("estimate: 1 core (2 logical CPUs) x 1000 MHz")
    assert peaks.cpu(None, zen4, 2, 2) is None and peaks.cpu(2000.0, zen4, None, None) is None


def test_every_gpu_rate_is_its_units_at_the_boost_clock_its_source_names():
    """One clock convention: the vendor's boost clock. Each source names it and the units counted, and the value is
    their product within 1.5% (the vendor's rounding): CUDA cores x 2 x MHz for fp32, tensor cores x FLOPs a clock x
    MHz for fp16/bf16 (tf32: half of it), twice the fp32 product for the P100's packed half precision."""
    for device in peaks.load().devices:
        for precision, rate in device.flops.items():
            assert re.search(r"\d{3,4} MHz (maximum )?boost", rate.source), (device.id, precision)
            cuda = re.search(r"(\d+) CUDA cores x 2 x (\d+) MHz", rate.source)
            tensor = re.search(r"(\d+) tensor cores x (\d+)(?: \(fp16\))? x (\d+) MHz", rate.source)
            if precision == "fp32" or tensor is None:
                product = int(cuda.group(1)) * 2 * int(cuda.group(2)) * 1e6 * (1 if precision == "fp32" else 2)
            else:
                product = (
                    int(tensor.group(1))
                    * int(tensor.group(2))
                    * int(tensor.group(3))
                    * 1e6
                    / (2 if precision == "tf32" else 1)
                )
            assert rate.value * 1e12 == pytest.approx(product, rel=0.015), (device.id, precision)
    assert peaks.gpu("GeForce GTX 980").flops == pytest.approx(4.981e12)  # 1216 MHz boost, not the 1126 MHz base
    assert peaks.gpu("GeForce GTX TITAN X").flops == pytest.approx(6.605e12)  # 1075 MHz boost, not the 1000 MHz base


def test_a_value_without_a_source_is_refused(tmp_path):
    bad = tmp_path / "peaks.yaml"
    bad.write_text(
        "devices:\n  - id: x\n    names: [X]\n    count: 1\n    flops:\n      fp32: {value: 1, unit: TFLOP/s}\n"
        "    memory_bandwidth: {value: 1, unit: GB/s, source: NVIDIA X datasheet, page one}\n"
    )
    with pytest.raises(SpecError, match="source"):
        peaks.load(bad)
    bad.write_text(bad.read_text().replace("unit: TFLOP/s}", "unit: GFLOPS, source: NVIDIA X datasheet page one}"))
    with pytest.raises(SpecError, match="unit"):
        peaks.load(bad)
