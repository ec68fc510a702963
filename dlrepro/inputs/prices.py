"""Hourly prices of devices (prices.yaml beside it): the price of the devices a job used, for its cost per 1M samples.

One offer type a table (``offer``: on-demand list prices), so that costs compare across devices; each row gives the
dates the source gave its price for (``as_of``, ``until``) and whether it is a launch price. A GPU row is matched by
the name CUDA gives the device (a leading "NVIDIA " and case aside, as inputs.peaks matches), one CUDA device each;
the ``cpu`` row prices one logical CPU. A device no row names has no price: the views say so, never zero.
"""

import functools
from pathlib import Path
from typing import Literal, NamedTuple, Optional

from pydantic import Field, PositiveFloat, model_validator

from dlrepro.inputs import yamlfile
from dlrepro.inputs.peaks import normal
from dlrepro.inputs.yamlfile import Strict

FILE = Path(__file__).with_name("prices.yaml")


DATE = r"^\d{4}(-\d\d)?$"


class Row(Strict):
    id: str = Field(pattern=r"^[a-z0-9-]+$")
    names: list[str] = []
    cpu: bool = False
    usd_per_device_hour: PositiveFloat
    instance: str = Field(min_length=10, description="the instance the price is derived from, and how")
    as_of: str = Field(pattern=DATE, description="the first date the source gave the price for (YYYY or YYYY-MM)")
    until: Optional[str] = Field(pattern=DATE, description="the last date the source gave it for; None: no end known")
    launch: bool = Field(description="the instance's launch price, as announced (it may have been cut since)")
    source: str = Field(pattern=r"^https://\S+$")

    @property
    def dated(self):
        """'2016-09', or '2018-2024' for a price the source gave over a span."""
        return self.as_of if self.until is None else "%s-%s" % (self.as_of, self.until)

    def older_than(self, created):
        """Whether the price's last known date (``until``, else ``as_of``) is before the run made at ``created``
        (an ISO date or time, '2026-12-04T03:18:00Z'): '2016-09' is older than '2026-12-04', '2026-12' is not."""
        last = self.until or self.as_of
        return isinstance(created, str) and created[: len(last)] > last

    @model_validator(mode="after")
    def _prices_something(self):
        if self.cpu == bool(self.names):
            raise ValueError("a row prices GPUs (names) or one logical CPU (cpu: true), one of the two")
        return self


class Prices(Strict):
    date: str = Field(pattern=r"^\d{4}-\d\d-\d\d$")
    currency: str = Field(pattern=r"^USD$")
    offer: Literal["on-demand"]  # one offer type a table: costs of different offers do not compare
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
