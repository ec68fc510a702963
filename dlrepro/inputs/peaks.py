"""Peak FLOP/s and memory bandwidth of devices (dlrepro/inputs/peaks.yaml), and the peak a job ran against.

Every value in peaks.yaml carries its unit and its source (a vendor datasheet or whitepaper, at the vendor's boost
clock); the file is checked on load. A GPU is matched exactly: its name as CUDA reports it (a leading "NVIDIA " and
case aside) and the number of devices (a 1-GPU job on a K80 has one GK210; a GTX 1080 Ti is not a GTX 1080);
anything else has no peak known. N devices of an entry of one device have N times its peak.
A CPU's peak is an estimate, labelled so: physical cores x clock x fp32 FLOPs a cycle of a core, looked up in
peaks.yaml's ``cpus`` table by vendor, family, model number (and, where the SKU decides, the model name); where no
row names the microarchitecture (or the cores are not known, only logical CPUs), an upper bound, said so.
"""

import functools
import re
from pathlib import Path
from typing import Literal, NamedTuple, Optional

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from dlrepro.inputs import yamlfile
from dlrepro.inputs.yamlfile import Strict

FILE = Path(__file__).with_name("peaks.yaml")
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
CPU_DEVICE = "CPU estimate"  # the peak_device of every CPU peak


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


class CpuRate(Strict):
    """fp32 FLOPs a cycle of one core of the CPUs a row names: every field given must match (``models``: model
    numbers or ranges such as "0x10-0x1f"; ``name``: a regular expression searched in the model name; ``flags``:
    instruction-set flags the CPU must have)."""

    id: str = Field(pattern=r"^[a-z0-9-]+$")
    vendor: Optional[Literal["AuthenticAMD", "GenuineIntel"]] = None
    family: Optional[int] = None
    models: list[str] = []
    name: Optional[str] = None
    flags: list[str] = []
    fp32_flops_per_cycle: PositiveInt
    upper_bound: bool = False
    how: str = Field(min_length=10, description="the units and lanes the figure counts")
    source: str = Field(min_length=20, description="the vendor manual and section the figure is from")

    @field_validator("models")
    @classmethod
    def _ranges(cls, models):
        for text in models:
            if not re.fullmatch(r"0x[0-9a-f]{2}(-0x[0-9a-f]{2})?", text):
                raise ValueError("a model is a hexadecimal number or range such as 0x10-0x1f, not %r" % text)
        return models

    @model_validator(mode="after")
    def _exact_or_bound(self):
        if not self.upper_bound and not (self.vendor and self.family is not None and self.models):
            raise ValueError("row %s: a row that is no upper bound names a vendor, a family and models" % self.id)
        return self

    def matches(self, info):
        """Whether this row covers the CPU of ``info`` (runner.environment's cpu record: vendor, family,
        model_number, model name as ``model``, flags)."""
        if self.vendor and (self.vendor, self.family) != (info.get("vendor"), info.get("family")):
            return False
        number = info.get("model_number")
        if self.models and not (number is not None and any(_within(number, text) for text in self.models)):
            return False
        if self.name and not re.search(self.name, info.get("model") or ""):
            return False
        return set(self.flags) <= set(info.get("flags") or ())


def _within(number, text):
    low, _, high = text.partition("-")
    return int(low, 16) <= number <= int(high or low, 16)


class Published(Strict):
    device: str
    count: PositiveInt = 1


class Peaks(Strict):
    devices: list[Device] = Field(min_length=1)
    cpus: list[CpuRate] = Field(min_length=1)
    published_hardware: dict[str, Published] = {}

    @model_validator(mode="after")
    def _consistent(self):
        ids = [d.id for d in self.devices]
        if len(set(ids)) != len(ids):
            raise ValueError("device ids must be unique: %s" % sorted({i for i in ids if ids.count(i) > 1}))
        keys = [(normal(n), d.count) for d in self.devices for n in d.names]
        if len(set(keys)) != len(keys):
            raise ValueError(
                "a device name and count appear twice: %s" % sorted({k for k in keys if keys.count(k) > 1})
            )
        unknown = sorted({p.device for p in self.published_hardware.values()} - set(ids))
        if unknown:
            raise ValueError("published_hardware names devices that have no entry: %s" % ", ".join(unknown))
        if self.cpus[-1].flags or not self.cpus[-1].upper_bound:
            raise ValueError("the last cpus row must match every CPU (no flags) and be an upper bound")
        return self


class Peak(NamedTuple):
    """A peak rate: ``flops`` in FLOP/s (None where the precision has none), ``bandwidth`` in bytes/s,
    ``device`` (an entry id, "N x id", or "CPU estimate"), ``source`` and ``estimate`` (True for CPUs)."""

    flops: Optional[float]
    bandwidth: Optional[float]
    device: str
    source: str
    estimate: bool


def normal(name):
    """A device name as peaks.yaml and prices.yaml match it: spaces folded, lower case, no leading "nvidia "."""
    text = re.sub(r"\s+", " ", name.strip()).lower()
    return text[len("nvidia ") :] if text.startswith("nvidia ") else text


@functools.lru_cache(maxsize=None)
def load(path=FILE):
    """peaks.yaml as a Peaks model; raises SpecError naming file, line and field of a bad value."""
    return yamlfile.load(Path(path), Peaks)


def _of(device, count, precision):
    scale = count // device.count
    rate = device.flops.get(precision)
    label = device.id if scale == 1 else "%d x %s" % (scale, device.id)
    return Peak(
        rate.value * 1e12 * scale if rate else None,
        device.memory_bandwidth.value * 1e9 * scale,
        label,
        rate.source if rate else "%s has no %s rate in peaks.yaml" % (device.id, precision),
        False,
    )


def gpu(name, count=1, precision="fp32", peaks=None):
    """The Peak of ``count`` CUDA devices named ``name`` at ``precision`` (fp32, tf32, bf16, fp16), or None
    when no entry has that name (with that count, or with one device)."""
    peaks = peaks or load()
    if not isinstance(name, str) or precision not in PRECISIONS:
        return None
    wanted = normal(name)
    found = [d for d in peaks.devices if wanted in (normal(n) for n in d.names)]
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


def _count(number, noun):
    return "%d %s%s" % (number, noun, "" if number == 1 else "s")


def cpu_rate(info, peaks=None):
    """The first row of peaks.yaml's ``cpus`` that covers the CPU of ``info`` (runner.environment's cpu record);
    the last row covers every CPU."""
    return next(row for row in (peaks or load()).cpus if row.matches(info or {}))


def cpu(mhz, info, cores=None, logical=None, peaks=None):
    """The estimated fp32 Peak of ``cores`` physical cores (``logical`` CPUs) at ``mhz`` (MHz) of the CPU of ``info``
    (runner.environment's cpu record: vendor, family, model_number, model, flags): cores x clock x the FLOPs a cycle
    of cpu_rate's row. Without ``cores`` the ``logical`` CPUs are counted as cores, and the estimate, like one from
    a row marked upper_bound, says it is an upper bound. None without a clock or either count."""
    counted = cores or logical
    if not mhz or not counted:
        return None
    row = cpu_rate(info, peaks)
    if cores:
        what = "%s (%s)" % (_count(cores, "core"), _count(logical or cores, "logical CPU"))
    else:
        what = "%s (their physical cores were not recorded: each counted as a core)" % _count(logical, "logical CPU")
    bound = " (an upper bound)" if row.upper_bound or not cores else ""
    return Peak(
        counted * mhz * 1e6 * row.fp32_flops_per_cycle,
        None,
        CPU_DEVICE,
        "estimate%s: %s x %.0f MHz x %d fp32 FLOPs a cycle (%s; peaks.yaml cpus %s)"
        % (bound, what, mhz, row.fp32_flops_per_cycle, row.how, row.id),
        True,
    )
