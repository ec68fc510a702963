"""Cost and energy per sample as a report shows them (dlrepro.results.answers.cost computes them): J per sample
("not measured" where no energy was measured, never zero), USD per 1,000 samples ("no price" where no price row
names the job's devices), and the table of the prices they rest on, with their sources.
"""
import pandas as pd

from dlrepro import prices as pricesmod
from dlrepro.results.views import numbers


TITLE = "Prices: USD per 1,000 samples"


WINDOW = "energy window %.2fx the measured one"  # J/sample whose counters' window is not the measured one


def joules(rows):
    """Each summary row's J per sample as text: 'not measured' for an ok job without energy (never zero), '' for one
    not ok; WINDOW beside it where its energy window differs from its measured one (tables' energy_window_differs)."""
    windows = [counted / measured if differs else None for counted, measured, differs in zip(
        rows["energy_window_s"], rows["measured_window_s"], rows["energy_window_differs"].fillna(False))]
    return [(numbers.significant(v) + ("" if w is None else " (%s)" % WINDOW % w)) if pd.notna(v) else
            "not measured" if status == "ok" else ""
            for v, status, w in zip(rows["energy_j_per_sample"], rows["status"], windows)]


def per_sample(joules, window=None):
    """' (0.0194 J/sample)' of a headline, with WINDOW where ``window`` (a ratio) is given; '' without joules."""
    return "" if joules is None else " (%s J/sample%s)" % (numbers.significant(joules),
                                                          "" if window is None else "; " + WINDOW % window)


def cost(rows):
    """Each summary row's USD per 1,000 samples as text (answers.cost.priced's column; a row without it, not priced,
    reads ''): 'no price' where no price row names the job's devices, '' for a job that did not finish ok with a
    throughput."""
    if "usd_per_1000_samples" not in rows:
        return [""] * len(rows)
    return [numbers.significant(usd) if pd.notna(usd) else
            "no price" if status == "ok" and pd.notna(rate) and not isinstance(price_id, str) else ""
            for usd, price_id, status, rate in zip(rows["usd_per_1000_samples"], rows["price_id"], rows["status"],
                                                   rows["throughput"])]


def prices(answer):
    """(title, columns, rows, note) of the prices the report's cost per 1,000 samples rests on: each price row used
    (its devices, USD per device-hour, offer, instance, date, source), or the reader's own price; None when no job
    was priced."""
    if answer.price_per_hour is not None:
        return TITLE, ["price", "source"], [["%s USD per hour of a job's devices" % numbers.significant(
            answer.price_per_hour), "given with --price-per-hour"]], ""
    if not answer.prices:
        return None
    rows = [[", ".join(r.names) or "one logical CPU (vCPU)", "%g" % r.usd_per_device_hour, r.offer, r.instance,
             r.as_of, r.source] for r in answer.prices]
    return (TITLE, ["device", "USD per device-hour", "offer", "instance", "as of", "source"], rows,
            "USD per 1,000 samples = the job's devices x USD per device-hour / 3600 / throughput (samples/s) x 1000; "
            "list prices from dlrepro/prices.yaml (revised %s), not quotes: give your own with --price-per-hour."
            % pricesmod.load().date)
