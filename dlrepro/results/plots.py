"""The figures of a report, drawn with matplotlib (Agg, no display) into PNG bytes.

Each function takes tidy tables (``dlrepro.tables.summary`` / ``samples`` columns) and returns one
``Plot`` per group of comparable jobs (same spec, variant, device model and precision):

- ``seconds_vs_batch``: median seconds per mini-batch against batch size, one line per framework,
  whiskers from the first to the third quartile of the iteration times; only for variants measured
  at two or more batch sizes, on log-log axes from LOG_AXES_FROM batch sizes on;
- ``throughput_bars``: throughput in samples/s at the median time, one horizontal bar per framework,
  whiskers at the throughput of the quartile times (the IQR mapped through samples / seconds);
- ``speedup_vs_gpus``: a data-parallel run's speedup over its 1-GPU job against the GPU (rank) count, one
  line per framework, with the ideal line (strong scaling S = t1 / tN, weak scaling W);
- ``accuracy_vs_time``: test accuracy (%) after each epoch against the cumulative wall time (s) of
  the training loops up to it, one line per job, for convergence runs.

Every figure is WIDTH_PX x HEIGHT_PX pixels.
"""
import io
import re
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

DPI = 100
WIDTH_PX, HEIGHT_PX = 800, 450
LOG_AXES_FROM = 4  # distinct batch sizes from which both axes of seconds_vs_batch are logarithmic
GROUP = ["spec", "variant", "device", "device_name", "precision"]


@dataclass(frozen=True)
class Plot:
    name: str  # file name stem, unique within a report
    title: str
    caption: str  # what the figure shows, with units
    png: bytes


def _figure():
    fig = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _groups(df, keys):
    """(values dict, rows) per group; missing key values (e.g. threads left to the framework) group too."""
    for values, rows in df.groupby(keys, dropna=False, sort=True):
        yield dict(zip(keys, values)), rows


def _where(g):
    """'alexnet-s, AMD EPYC (cpu, fp32)' for a group's key values."""
    return "%s, %s (%s, %s)" % (g["variant"], g["device_name"], g["device"], g["precision"])


def _names(rows):
    """'framework version' per row, with ', N threads' where the rows' thread counts differ (CPU jobs: a GPU
    job's host threads say nothing of it)."""
    names = (rows["framework"] + " " + rows["framework_version"].fillna("")).str.strip()
    if (rows["device"] == "cpu").all() and rows["threads"].nunique(dropna=False) > 1:
        names = names + ", " + rows["threads"].map(lambda t: "default threads" if pd.isna(t) else "%d thread%s" % (t, "s"[t == 1:]))
    if rows["ranks"].notna().any():
        unit = "GPU" if (rows["device"] == "cuda").all() else "rank"
        names = names + rows["ranks"].map(lambda n: "" if pd.isna(n) else ", %d %s%s" % (n, unit, "s"[n == 1:]))
    return names


def _labels(rows):
    """One label per row: its _names, with the bundle id appended where that name repeats."""
    labels = _names(rows)
    repeated = labels.duplicated(keep=False)
    return labels.where(~repeated, labels + " [" + rows["bundle_id"] + "]")


def _slug(*parts):
    return re.sub(r"[^a-z0-9]+", "-", "-".join(str(p) for p in parts).lower()).strip("-")


def seconds_vs_batch(summary):
    """Median seconds per mini-batch (whiskers: q1..q3) against batch size, one line per framework."""
    ok = summary[(summary["status"] == "ok") & (summary["mode"] == "throughput")]
    plots = []
    for g, rows in _groups(ok, GROUP):
        sizes = rows["batch_size"].nunique()
        if sizes < 2:
            continue
        fig, ax = _figure()
        for label, line in rows.sort_values("batch_size").groupby(_names(rows), sort=True):
            ax.errorbar(line["batch_size"], line["median"], marker="o", capsize=3, label=label,
                        yerr=[line["median"] - line["q1"], line["q3"] - line["median"]])
        if sizes >= LOG_AXES_FROM:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
        ticks = sorted(rows["batch_size"].unique())
        ax.set_xticks(ticks, [str(b) for b in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("batch size (samples per mini-batch)")
        ax.set_ylabel("seconds per mini-batch (median)")
        ax.legend(fontsize="small")
        title = "Seconds per mini-batch vs batch size: " + _where(g)
        fig.suptitle(title, fontsize="medium")
        plots.append(Plot(_slug("seconds-vs-batch", g["spec"], g["variant"], g["device"], len(plots)), title,
                          "Median seconds per training iteration (forward, backward, update) at each batch "
                          "size; whiskers span the interquartile range of the measured iterations.", _png(fig)))
    return plots


def throughput_bars(summary):
    """Samples/s at the median time per framework (whiskers: samples/s at the q3 and q1 times)."""
    ok = summary[(summary["status"] == "ok") & summary["throughput"].notna()]
    plots = []
    for g, rows in _groups(ok, GROUP + ["mode", "batch_size"]):
        fig, ax = _figure()
        rate = rows["throughput"]
        low, high = rate * rows["median"] / rows["q3"], rate * rows["median"] / rows["q1"]
        labels = _labels(rows)
        bars = ax.barh(labels, rate, xerr=[(rate - low).fillna(0), (high - rate).fillna(0)], capsize=4, color="#4c72b0")
        ax.bar_label(bars, fmt="%.3g", label_type="center", color="white", fontsize="small")
        ax.invert_yaxis()  # first row on top, as in the results table
        ax.set_xlabel(rows["throughput_unit"].iloc[0] + " (median)")
        title = "Samples/s at batch %d (%s mode): %s" % (g["batch_size"], g["mode"], _where(g))
        fig.suptitle(title, fontsize="medium")
        plots.append(Plot(_slug("throughput", g["spec"], g["variant"], g["mode"], g["device"], "b%d" % g["batch_size"],
                                len(plots)), title,
                          "Samples per second at the median %s (%s mode, batch %d); whiskers: samples per second at "
                          "the third and first quartile of the times (the interquartile range)."
                          % (rows["quantity"].iloc[0], g["mode"], g["batch_size"]), _png(fig)))
    return plots


def accuracy_vs_time(samples):
    """Test accuracy (%) after each epoch against cumulative training seconds, one line per job."""
    epochs = samples[(samples["sample"] == "epoch") & samples["test_accuracy"].notna()]
    plots = []
    for g, rows in _groups(epochs, GROUP + ["batch_size"]):
        fig, ax = _figure()
        jobs = rows.drop_duplicates(["bundle_id", "job_id"])
        for label, (_, job) in zip(_labels(jobs), jobs.iterrows()):
            line = rows[(rows["bundle_id"] == job["bundle_id"]) & (rows["job_id"] == job["job_id"])]
            line = line.sort_values(["repeat", "index"])
            ax.plot(line["cumulative_seconds"], 100 * line["test_accuracy"], marker="o", label=label)
        ax.set_xlabel("cumulative training time (s)")
        ax.set_ylabel("test accuracy (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        title = "Test accuracy vs wall time, batch %d: %s" % (g["batch_size"], _where(g))
        fig.suptitle(title, fontsize="medium")
        plots.append(Plot(_slug("accuracy-vs-time", g["spec"], g["variant"], g["device"], "b%d" % g["batch_size"],
                                len(plots)), title,
                          "Test accuracy after each epoch against the wall time of the training loops up to that "
                          "epoch (evaluation not counted), one line per job.", _png(fig)))
    return plots


def speedup_vs_gpus(summary):
    """Speedup over the run's 1-GPU job against the GPU count (ranks), one line per framework, the ideal
    (speedup = N) dashed: S = t1 / tN under strong scaling, W = throughput_N / throughput_1 under weak."""
    ok = summary[(summary["status"] == "ok") & summary["ranks"].notna() & summary["scaling_efficiency"].notna()]
    plots = []
    for g, rows in _groups(ok, GROUP + ["scaling", "bundle_id"]):
        per = rows["batch_size"] if g["scaling"] == "strong" else rows["rank_batch_size"]
        for batch in sorted(per.unique()):
            chosen = rows[per == batch]
            counts = sorted(int(n) for n in chosen["ranks"].unique())
            if len(counts) < 2:
                continue
            fig, ax = _figure()
            value = chosen["speedup"] if g["scaling"] == "strong" else chosen["scaled_speedup"]
            for framework, line in chosen.assign(value=value).sort_values("ranks").groupby("framework", sort=True):
                ax.plot(line["ranks"], line["value"], marker="o", label=framework)
            ax.plot(counts, counts, linestyle="--", color="grey", label="ideal (speedup = N)")
            ax.set_xticks(counts, [str(n) for n in counts])
            ax.xaxis.set_minor_locator(NullLocator())
            unit = "GPUs" if g["device"] == "cuda" else "ranks"
            ax.set_xlabel("%s (data-parallel %s)" % (unit, "ranks" if unit == "GPUs" else "processes or devices"))
            ax.set_ylabel("speedup S = t1 / tN" if g["scaling"] == "strong" else "W = throughput N / throughput 1")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
            what = "total mini-batch %d" % batch if g["scaling"] == "strong" else "%d per rank" % batch
            title = "Speedup vs %s (%s scaling, %s): %s" % (unit, g["scaling"], what, _where(g))
            fig.suptitle(title, fontsize="medium")
            plots.append(Plot(_slug("speedup", g["spec"], g["variant"], g["device"], g["scaling"], "b%d" % batch,
                                    len(plots)), title,
                              ("Strong scaling: the total mini-batch of %d split across N ranks; speedup over the "
                               "1-rank job = its median seconds per mini-batch / the N-rank one's."
                               % batch if g["scaling"] == "strong" else
                               "Weak scaling: %d samples per rank, the learning rate times N; W = samples/s at N "
                               "ranks / at 1." % batch) + " Dashed: the ideal, N.", _png(fig)))
    return plots


def all_plots(summary, samples):
    """Every figure of a report, in reading order."""
    return seconds_vs_batch(summary) + throughput_bars(summary) + speedup_vs_gpus(summary) + accuracy_vs_time(samples)
