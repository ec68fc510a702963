"""Hourly prices of devices (dlrepro/prices.yaml): the price of the devices a job used, for its cost per 1,000
samples.

A GPU row is matched by the name CUDA gives the device (a leading "NVIDIA " and case aside, as dlrepro.peaks
matches), one CUDA device each; the ``cpu`` row prices one logical CPU. A device no row names has no price: the
views say so, never zero.
"""
import functools
from pathlib import Path
from typing import NamedTuple, Optional

from pydantic import Field, PositiveFloat, model_validator

from dlrepro import yamlfile
from dlrepro.peaks import normal
from dlrepro.yamlfile import Strict

FILE = Path(__file__).with_name("prices.yaml")


class Row(Strict):
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    names: list[str] = []
    cpu: bool = False
    usd_per_device_hour: PositiveFloat
    offer: str = Field(min_length=5)
    instance: str = Field(min_length=10, description="the instance the price is derived from, and how")
    as_of: str = Field(min_length=4, description="when the source gave the price")
    source: str = Field(pattern=r"^https://\S+$")

    @model_validator(mode="after")
    def _prices_something(self):
        if self.cpu == bool(self.names):
            raise ValueError("a row prices GPUs (names) or one logical CPU (cpu: true), one of the two")
        return self


class Prices(Strict):
    date: str = Field(pattern=r"^\d{4}-\d\d-\d\d$")
    currency: str = Field(pattern=r"^USD$")
    rows: list[Row] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_row_a_device(self):
        keys = [normal(n) for r in self.rows for n in r.names] + ["cpu" for r in self.rows if r.cpu]
        if len(set(keys)) != len(keys):
            raise ValueError("a device has two rows: %s" % sorted({k for k in keys if keys.count(k) > 1}))
        return self


class Price(NamedTuple):
    """What one job's devices cost an hour: ``usd_per_hour`` for ``devices`` of them, from ``row`` (None: the
    price given with --price-per-hour)."""
    usd_per_hour: float
    devices: int
    row: Optional[Row]


@functools.lru_cache(maxsize=None)
def load(path=FILE):
    """prices.yaml as a Prices model; raises SpecError naming file, line and field of a bad value."""
    return yamlfile.load(Path(path), Prices)


def of(device, device_name, devices, prices=None):
    """The Price of ``devices`` (> 0) of a job's ``device`` ("cuda": GPUs named ``device_name``; "cpu": logical
    CPUs), or None when no row prices them."""
    prices = prices or load()
    if device == "cpu":
        found = [r for r in prices.rows if r.cpu]
    else:
        wanted = normal(device_name) if isinstance(device_name, str) else None
        found = [r for r in prices.rows if wanted in (normal(n) for n in r.names)]
    return Price(found[0].usd_per_device_hour * devices, devices, found[0]) if found and devices else None
