"""Whether a job ran on the published hardware: model keys with their variant words, and the GPU count
(dlrepro.inputs.hardware, Reference.gpus)."""

import pytest

from dlrepro.inputs import hardware
from dlrepro.inputs import spec as specmod
from dlrepro.inputs.references import Reference

K80 = "NVIDIA Tesla K80, one GK210 (half board), Azure NC6 DLVM, CUDA 8, cuDNN 6"
TITAN_X = "NVIDIA GTX Titan X (Maxwell), Intel i7-5960X, CUDA 7.5, cuDNN 5.1, driver 367.44"
V100_4 = "4x NVIDIA Tesla V100-PCIE-16GB (Azure VM, 24 CPUs), CUDA 9, cuDNN 7"
V100_1 = "1x NVIDIA Tesla V100-PCIE-16GB (4-GPU Azure VM, 24 CPUs), CUDA 9, cuDNN 7"


@pytest.mark.parametrize(
    "name, key",
    [
        ("Tesla K80", "gpu:k80"),
        ("NVIDIA H200", "gpu:h200"),
        ("Tesla P100-PCIE-16GB", "gpu:p100 16gb pcie"),
        ("Tesla V100-SXM2-16GB", "gpu:v100 16gb sxm2"),
        ("NVIDIA A100 80GB PCIe", "gpu:a100 80gb pcie"),
        ("NVIDIA GeForce GTX 1080 Ti", "gpu:gtx 1080 ti"),
        ("GeForce GTX 980", "gpu:gtx 980"),
        ("NVIDIA GeForce RTX 2080 SUPER", "gpu:rtx 2080 super"),
        ("GeForce GTX 1060 6GB", "gpu:gtx 1060 6gb"),
        ("GeForce GTX TITAN X", "gpu:titan x maxwell"),
        ("NVIDIA TITAN X (Pascal)", "gpu:titan x pascal"),
        ("TITAN Xp", "gpu:titan xp"),
        ("Titan X", None),
        ("AMD EPYC", None),
        ("Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz", "cpu:xeon e5-2630 v3"),
        ("E5-2630v4", "cpu:xeon e5-2630 v4"),
        ("Intel(R) Xeon(R) CPU E5-2630 @ 2.30GHz", "cpu:xeon e5-2630"),
        ("Intel(R) Core(TM) i7-5960X CPU @ 3.00GHz", "cpu:core i7-5960x"),
        ("Intel Core i7-8700", "cpu:core i7-8700"),
        ("AMD EPYC 7742 64-Core Processor", "cpu:epyc 7742"),
        ("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz", "cpu:xeon gold 6248r"),
    ],
)
def test_a_device_name_keeps_the_words_that_name_another_product(name, key):
    assert hardware.model_key(name) == key


@pytest.mark.parametrize(
    "reference, device, name, same",
    [
        # the same product, under the names the studies and nvidia-smi / /proc/cpuinfo give it
        (K80, "cuda", "Tesla K80", True),
        ("NVIDIA Tesla P100-PCIE-16GB, Azure DLVM, CUDA 8.0.61", "cuda", "Tesla P100-PCIE-16GB", True),
        (TITAN_X, "cuda", "GeForce GTX TITAN X", True),
        (V100_1, "cuda", "Tesla V100-PCIE-16GB", True),
        ("GTX 1080 (clocked to match HKBU)", "cuda", "NVIDIA GeForce GTX 1080", True),
        ("Intel Xeon E5-2630 v3, CPU-only", "cpu", "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz", True),
        # another product: a variant word, a generation, a form factor, a memory size, a device class
        ("GTX 1080", "cuda", "NVIDIA GeForce GTX 1080 Ti", False),
        ("GTX 980", "cuda", "GeForce GTX 980 Ti", False),
        ("GTX 980 Ti", "cuda", "GeForce GTX 980", False),
        ("Intel Xeon E5-2630v4, CPU-only", "cpu", "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz", False),
        (TITAN_X, "cuda", "NVIDIA TITAN X (Pascal)", False),
        ("NVIDIA Tesla V100-SXM2-16GB, CUDA 9.1.85", "cuda", "Tesla V100-PCIE-16GB", False),
        ("NVIDIA Tesla P100-PCIE-16GB", "cuda", "Tesla P100-PCIE-12GB", False),
        ("4x NVIDIA Tesla P100, CUDA 9, cuDNN 7", "cuda", "Tesla P100-PCIE-16GB", False),  # which P100 is not said
        ("NVIDIA Tesla K80, one GK210 (half board)", "cuda", "NVIDIA H200", False),
        ("Azure NC6 CPU (6 vCPU), CPU-only", "cpu", "AMD EPYC", False),
        (TITAN_X, "cpu", "Intel(R) Core(TM) i7-5960X CPU @ 3.00GHz", False),  # its host CPU: the GPU was measured
        (V100_4, "cuda", "Tesla V100-PCIE-16GB", False),  # a 1-GPU job is not the 4-GPU measurement
    ],
)
def test_hardware_is_the_same_only_for_the_same_product(reference, device, name, same):
    assert hardware.same_hardware(reference, device, name) is same


def test_the_gpu_count_is_compared_with_the_jobs_ranks():
    assert hardware.stated_gpus(V100_4) == 4 and hardware.stated_gpus(V100_1) == 1
    assert hardware.stated_gpus(K80) is None
    assert hardware.same_hardware(V100_4, "cuda", "Tesla V100-PCIE-16GB", ranks=4)
    assert not hardware.same_hardware(V100_4, "cuda", "Tesla V100-PCIE-16GB", ranks=2)
    assert not hardware.same_hardware(K80, "cuda", "Tesla K80", ranks=2)
    assert hardware.same_hardware("Tesla K80 GPUs (paper Table 8)", "cuda", "Tesla K80", gpus=2, ranks=2)


def test_a_reference_states_its_gpus_and_keeps_its_digest_when_it_does_not():
    fcn = specmod.load("fcn")
    four = next(r for r in fcn.references if r.hardware.startswith("4x K80"))
    assert four.gpus is None and "gpus" not in four.model_dump()  # unset: the spec's digest is as before
    assert hardware.same_hardware(four.hardware, "cuda", "Tesla K80", four.gpus, 4)
    body = dict(four.model_dump(), gpus=4)
    assert Reference.model_validate(body).model_dump()["gpus"] == 4
    with pytest.raises(ValueError, match=r"gpus is 2 but hardware says 4x \('4x K80 GK210'\): make them agree"):
        Reference.model_validate(dict(body, gpus=2))
