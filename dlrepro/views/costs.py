"""Cost and energy per sample as a report shows them (dlrepro.answers.cost computes them): J per sample
("not measured" where no energy was measured, never zero), USD per 1M samples with its price's date beside it
("no price" where no price row names the job's devices), and the table of the prices they rest on, with their
dates and sources.
"""

import pandas as pd

from dlrepro.inputs import prices as pricesmod
from dlrepro.views import numbers

TITLE = "Prices: USD per 1M samples"
HEADER = "USD per 1M samples"  # the cost column's header


WINDOW = "energy window %.2fx the measured one"  # J/sample whose counters' window is not the measured one


def joules(rows):
    """Each summary row's J per sample as text: 'not measured' for an ok job without energy (never zero), '' for one
    not ok; WINDOW beside it where its energy window differs from its measured one (tables' energy_window_differs)."""
    windows = [
        counted / measured if differs else None
        for counted, measured, differs in zip(
            rows["energy_window_s"], rows["measured_window_s"], rows["energy_window_differs"].fillna(False)
        )
    ]
    return [
        (numbers.significant(v) + ("" if w is None else " (%s)" % WINDOW % w))
        if pd.notna(v)
        else "not measured"
        if status == "ok"
        else ""
        for v, status, w in zip(rows["energy_j_per_sample"], rows["status"], windows)
    ]


def per_sample(joules, window=None):
    """' (0.0194 J/sample)' of a headline, with WINDOW where ``window`` (a ratio) is given; '' without joules."""
    return (
        ""
        if joules is None
        else " (%s J/sample%s)" % (numbers.significant(joules), "" if window is None else "; " + WINDOW % window)
    )


def usd(value, dated, older):
    """One cost as text with its price's date: '20.9 (2016-09 price, older than the run)', '20.9 (2026-11 price)',
    '20.9 (price given)' where the reader gave it (``dated`` None)."""
    if dated is None:
        return "%s (price given)" % numbers.significant(value)
    return "%s (%s price%s)" % (numbers.significant(value), dated, ", older than the run" if older else "")


def cost(rows):
    """Each summary row's USD per 1M samples as text (answers.cost.priced's columns, the price's date beside it; a
    row without them, not priced, reads ''): 'no price' where no price row names the job's devices, '' for a job
    that did not finish ok with a throughput."""
    if "usd_per_million_samples" not in rows:
        return [""] * len(rows)
    return [
        usd(value, dated if isinstance(dated, str) else None, older is True)
        if pd.notna(value)
        else "no price"
        if status == "ok" and pd.notna(rate) and not isinstance(price_id, str)
        else ""
        for value, dated, older, price_id, status, rate in zip(
            rows["usd_per_million_samples"],
            rows["price_dated"],
            rows["price_older"],
            rows["price_id"],
            rows["status"],
            rows["throughput"],
        )
    ]


def prices(answer):
    """(title, columns, rows, note) of the prices the report's cost per 1M samples rests on: each price row used
    (its devices, USD per device-hour, instance, dates, whether a launch price, source), or the reader's own price;
    None when no job was priced."""
    if answer.price_per_hour is not None:
        return (
            TITLE,
            ["price", "source"],
            [
                [
                    "%s USD per device-hour (a GPU, or one logical CPU)" % numbers.significant(answer.price_per_hour),
                    "given with --price-per-hour",
                ]
            ],
            "",
        )
    if not answer.prices:
        return None
    table = pricesmod.load()
    rows = [
        [
            ", ".join(r.names) or "one logical CPU (vCPU)",
            "%g" % r.usd_per_device_hour,
            r.instance,
            r.dated,
            "launch price" if r.launch else "list price",
            r.source,
        ]
        for r in answer.prices
    ]
    return (
        TITLE,
        ["device", "USD per device-hour", "instance", "price of", "kind", "source"],
        rows,
        "USD per 1M samples = the job's devices x USD per device-hour / 3600 / throughput (samples/s) x 1,000,000; "
        "%s list prices from dlrepro/inputs/prices.yaml (revised %s), not quotes; a launch price may have been cut "
        "since, and a cost marked 'older than the run' rests on a price the source gave before the run was made: "
        "give your own with --price-per-hour." % (table.offer, table.date),
    )
