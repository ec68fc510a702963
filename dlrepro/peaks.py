"""Peak FLOP/s and memory bandwidth of devices (dlrepro/peaks.yaml), and the peak a job ran against.

Every value in peaks.yaml carries its unit and its source (a vendor datasheet or whitepaper); the file
is checked on load. A GPU is matched exactly: its name as CUDA reports it (a leading "NVIDIA " and
case aside) and the number of devices (a 1-GPU job on a K80 has one GK210; a GTX 1080 Ti is not a GTX
1080); anything else has no peak known. N devices of an entry of one device have N times its peak.
A CPU's peak is an estimate, labelled so: cores x clock x fp32 FLOPs per cycle per core from its
instruction-set flags.
"""
import functools
import re
from pathlib import Path
from typing import Literal, NamedTuple, Optional

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from dlrepro import yamlfile
from dlrepro.yamlfile import Strict

FILE = Path(__file__).with_name("peaks.yaml")
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
# fp32 FLOPs per cycle per core: 2 (a fused multiply-add) x fp32 lanes x vector units issuing per cycle
# (2 FMA units assumed from AVX2+FMA on: Haswell and later, Zen 2 and later; 2 AVX-512 FMA units: Skylake-SP
# Gold/Platinum and later, 1 on some parts, so an upper estimate); without FMA, one add and one multiply
FLOPS_PER_CYCLE = (({"avx512f"}, 64, "2 AVX-512 FMA units x 16 fp32 lanes x 2"),
                   ({"avx2", "fma"}, 32, "2 AVX2 FMA units x 8 fp32 lanes x 2"),
                   ({"avx"}, 16, "one 8-lane AVX add and one multiply a cycle"),
                   (set(), 8, "one 4-lane SSE add and one multiply a cycle"))


class Rate(Strict):
    value: PositiveFloat
    unit: Literal["TFLOP/s"]
    source: str = Field(min_length=20, description="the vendor datasheet or whitepaper the value is from")


class Bandwidth(Strict):
    value: PositiveFloat
    unit: Literal["GB/s"]
    source: str = Field(min_length=20)


class Device(Strict):
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    names: list[str] = Field(min_length=1, description="as CUDA / nvidia-smi name it, without a leading 'NVIDIA '")
    count: PositiveInt = Field(description="CUDA devices the entry covers")
    flops: dict[Literal["fp32", "tf32", "bf16", "fp16"], Rate] = Field(min_length=1)
    memory_bandwidth: Bandwidth
    notes: Optional[str] = None


class Published(Strict):
    device: str
    count: PositiveInt = 1


class Peaks(Strict):
    devices: list[Device] = Field(min_length=1)
    published_hardware: dict[str, Published] = {}

    @model_validator(mode="after")
    def _consistent(self):
        ids = [d.id for d in self.devices]
        if len(set(ids)) != len(ids):
            raise ValueError("device ids must be unique: %s" % sorted({i for i in ids if ids.count(i) > 1}))
        keys = [(_normal(n), d.count) for d in self.devices for n in d.names]
        if len(set(keys)) != len(keys):
            raise ValueError("a device name and count appear twice: %s" % sorted({k for k in keys if keys.count(k) > 1}))
        unknown = sorted({p.device for p in self.published_hardware.values()} - set(ids))
        if unknown:
            raise ValueError("published_hardware names devices that have no entry: %s" % ", ".join(unknown))
        return self


class Peak(NamedTuple):
    """A peak rate: ``flops`` in FLOP/s (None where the precision has none), ``bandwidth`` in bytes/s,
    ``device`` (an entry id, "N x id", or "CPU estimate"), ``source`` and ``estimate`` (True for CPUs)."""
    flops: Optional[float]
    bandwidth: Optional[float]
    device: str
    source: str
    estimate: bool


def _normal(name):
    text = re.sub(r"\s+", " ", name.strip()).lower()
    return text[len("nvidia "):] if text.startswith("nvidia ") else text


@functools.lru_cache(maxsize=None)
def load(path=FILE):
    """peaks.yaml as a Peaks model; raises SpecError naming file, line and field of a bad value."""
    return yamlfile.load(Path(path), Peaks)


def _of(device, count, precision):
    scale = count // device.count
    rate = device.flops.get(precision)
    label = device.id if scale == 1 else "%d x %s" % (scale, device.id)
    return Peak(rate.value * 1e12 * scale if rate else None, device.memory_bandwidth.value * 1e9 * scale, label,
                rate.source if rate else "%s has no %s rate in peaks.yaml" % (device.id, precision), False)


def gpu(name, count=1, precision="fp32", peaks=None):
    """The Peak of ``count`` CUDA devices named ``name`` at ``precision`` (fp32, tf32, bf16, fp16), or None
    when no entry has that name (with that count, or with one device)."""
    peaks = peaks or load()
    if not isinstance(name, str) or precision not in PRECISIONS:
        return None
    wanted = _normal(name)
    found = [d for d in peaks.devices if wanted in (_normal(n) for n in d.names)]
    exact = [d for d in found if d.count == count]
    single = [d for d in found if d.count == 1]
    if exact:
        return _of(exact[0], count, precision)
    return _of(single[0], count, precision) if single else None


def published(hardware, precision="fp32", peaks=None):
    """The Peak of a published timing's ``hardware`` text (a spec reference's, matched exactly), or None."""
    peaks = peaks or load()
    entry = peaks.published_hardware.get(hardware)
    if entry is None:
        return None
    device = next(d for d in peaks.devices if d.id == entry.device)
    return _of(device, entry.count, precision)


def cpu(cores, mhz, flags):
    """The estimated fp32 Peak of ``cores`` CPU cores at ``mhz`` (MHz) with instruction-set ``flags``; None
    without a core count or clock. Labelled an estimate: FMA units per core are assumed (FLOPS_PER_CYCLE)."""
    if not cores or not mhz:
        return None
    flags = set(flags or ())
    per_cycle, how = next((n, text) for needed, n, text in FLOPS_PER_CYCLE if needed <= flags)
    return Peak(cores * mhz * 1e6 * per_cycle, None, "CPU estimate",
                "estimate: %d cores x %.0f MHz x %d fp32 FLOPs a cycle (%s)" % (cores, mhz, per_cycle, how), True)
