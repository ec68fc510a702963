"""What a sample costs: US dollars per 1M samples beside each job's throughput, from the hourly price of the
devices it used (dlrepro.inputs.prices: a dated table of on-demand prices with their sources, or the --price-per-hour a
reader gives, USD per device-hour as the table's).

  devices        a GPU job's GPUs (its ranks, 1 without), a CPU job's logical CPUs (the CPUs it was confined to,
                 else its threads, else the host's);
  USD / hour     the devices' price an hour (USD per device-hour, the table's row or the reader's, times the devices);
  USD per 1M     USD / hour / 3600 / throughput (samples/s) x 1,000,000, for an ok job with a throughput;
  price date     the price row's dates (prices.Row.dated), and whether they end before the job's bundle was made.

Energy per sample (J) is measured, not derived (dlrepro.store.tables: ``energy_j_per_sample``); a view shows
"not measured" where a job has none, never zero. Pure: summary rows in, the same rows with COLUMNS out.
"""

import pandas as pd

from dlrepro.inputs import prices as pricesmod

COLUMNS = ["usd_per_hour", "price_devices", "price_id", "price_dated", "price_older", "usd_per_million_samples"]
GIVEN = "given"  # price_id of a price from --price-per-hour


def _devices(row, host_cpus):
    """How many devices the job ``row`` used (module docstring), None when unknown."""
    if row["device"] == "cpu":
        for column in ("usable_cpus", "threads"):
            if pd.notna(row.get(column)):
                return int(row[column])
        return host_cpus
    return int(row["ranks"]) if pd.notna(row.get("ranks")) else 1


def priced(summary, bodies, price_per_hour=None, prices=None):
    """``summary`` with COLUMNS: each job's devices, their price an hour, its source row's id (GIVEN for
    ``price_per_hour``: USD per device-hour, so a 2-CPU job costs twice a 1-CPU job's an hour), the row's dates and
    whether they end before the job's bundle was made (None for a given price), and the USD per 1M samples (NaN
    where the job is not ok, has no throughput, or no row prices its devices)."""
    cpus = {b["id"]: ((b.get("host") or {}).get("cpu") or {}).get("usable_cpus") for b in bodies}
    found = []
    for row in summary.to_dict("records"):
        devices = _devices(row, cpus.get(row["bundle_id"]))
        if price_per_hour is not None:
            price = pricesmod.Price(float(price_per_hour) * (devices or 1), devices or 1, None)
        else:
            price = pricesmod.of(row["device"], row.get("device_name"), devices, prices)
        rate = row.get("throughput")
        usable = price is not None and row["status"] == "ok" and pd.notna(rate) and rate > 0
        dated = price.row if price and price.row else None
        found.append(
            {
                "usd_per_hour": price.usd_per_hour if price else float("nan"),
                "price_devices": price.devices if price else devices,
                "price_id": (price.row.id if price.row else GIVEN) if price else None,
                "price_dated": dated.dated if dated else None,
                "price_older": dated.older_than(row.get("bundle_created")) if dated else None,
                "usd_per_million_samples": price.usd_per_hour / 3600 / rate * 1e6 if usable else float("nan"),
            }
        )
    columns = pd.DataFrame(found, index=summary.index, columns=COLUMNS)
    return summary.assign(**{c: columns[c] for c in COLUMNS}).astype({"price_devices": "Int64"})


def sources(summary, prices=None):
    """The price rows (prices.Row) the priced ``summary`` used, in the table's order."""
    used = set(summary["price_id"].dropna()) if "price_id" in summary else set()
    return [r for r in (prices or pricesmod.load()).rows if r.id in used]
