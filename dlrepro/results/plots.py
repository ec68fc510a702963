"""The figures of a report, drawn with matplotlib (Agg, no display) into PNG bytes.

Each function takes tidy tables (``dlrepro.tables.summary`` / ``samples`` columns) and returns one
``Plot`` per group of comparable jobs (same spec, variant, device model and precision):

- ``seconds_vs_batch``: median seconds per mini-batch against batch size, one line per framework,
  whiskers from the first to the third quartile of the iteration times; only for variants measured
  at two or more batch sizes, on log-log axes from LOG_AXES_FROM batch sizes on;
- ``throughput_bars``: throughput in samples/s at the median time, one horizontal bar per framework, sorted
  by value (fastest on top), whiskers at the throughput of the quartile times (the IQR mapped through
  samples / seconds); small multiples: one figure per spec, variant, device and mode, a panel per batch size
  (PANEL_SHARE of HEIGHT_PX each); a label that repeats gets the bundle's hash;
- ``speedup_vs_threads``: a CPU thread sweep's speedup over its fewest threads, one line per framework, the
  ideal (linear in the threads) dashed;
- ``speedup_vs_gpus``: a data-parallel run's speedup over its 1-GPU job against the GPU (rank) count, one
  line per framework, with the ideal line (strong scaling S = t1 / tN, weak scaling W);
- ``accuracy_vs_time``: test accuracy (%) after each epoch against the cumulative wall time (s) of
  the training loops up to it, one line per job, for convergence runs.

Every framework has one colour in every figure (dlrepro.results.palette); a line joins only batch sizes
measured next to each other (a gap where one between them was not measured). A figure is WIDTH_PX wide and
HEIGHT_PX high per row of panels (Plot.size).
"""
import io
import re
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from dlrepro.results import numbers, palette

DPI = 100
WIDTH_PX, HEIGHT_PX = 800, 450
LOG_AXES_FROM = 4  # distinct batch sizes from which both axes of seconds_vs_batch are logarithmic
GROUP = ["spec", "variant", "device", "device_name", "precision"]
PANEL_SHARE = 0.55  # of HEIGHT_PX, the height of each panel of a figure of small multiples


@dataclass(frozen=True)
class Plot:
    name: str  # file name stem, unique within a report
    title: str
    caption: str  # what the figure shows, with units
    png: bytes
    size: tuple = (WIDTH_PX, HEIGHT_PX)  # pixels


def _figure(rows=1):
    fig = Figure(figsize=(WIDTH_PX / DPI, rows * HEIGHT_PX / DPI), dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _segments(line, sizes):
    """The rows of one framework's line split where a batch size of ``sizes`` (the group's, sorted) between
    two of its own was not measured, so that no line crosses an unmeasured batch size."""
    index = line["batch_size"].map({b: i for i, b in enumerate(sizes)})
    return [part for _, part in line.groupby((index.diff() != 1).cumsum())]


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
    names = (rows["framework"].map(palette.name) + " " + rows["framework_version"].fillna("")).str.strip()
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
    return labels.where(~repeated, labels + " [" + rows["bundle_id"].str.rsplit("-", n=1).str[-1] + "]")


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
        ticks = sorted(rows["batch_size"].unique())
        for label, line in rows.sort_values("batch_size").groupby(_names(rows), sort=True):
            colour = palette.colour(line["framework"].iloc[0])
            for i, part in enumerate(_segments(line, ticks)):
                ax.errorbar(part["batch_size"], part["median"], marker="o", capsize=3, color=colour,
                            label=label if i == 0 else None,
                            yerr=[part["median"] - part["q1"], part["q3"] - part["median"]])
        if sizes >= LOG_AXES_FROM:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
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
    """Samples/s at the median time per framework (whiskers: samples/s at the q3 and q1 times), fastest on top;
    one figure per spec, variant, device and mode, a panel per batch size, one under the other."""
    ok = summary[(summary["status"] == "ok") & summary["throughput"].notna()]
    plots = []
    for g, group in _groups(ok, GROUP + ["mode"]):
        sizes = sorted(group["batch_size"].unique())
        height = HEIGHT_PX if len(sizes) == 1 else int(PANEL_SHARE * HEIGHT_PX) * len(sizes)
        fig = Figure(figsize=(WIDTH_PX / DPI, height / DPI), dpi=DPI, layout="constrained")
        axes = fig.subplots(len(sizes), 1, squeeze=False).ravel()
        for ax, batch in zip(axes, sizes):
            rows = group[group["batch_size"] == batch].sort_values("throughput", ascending=False)
            rate = rows["throughput"]
            low, high = rate * rows["median"] / rows["q3"], rate * rows["median"] / rows["q1"]
            bars = ax.barh(_labels(rows), rate, xerr=[(rate - low).fillna(0), (high - rate).fillna(0)], capsize=4,
                           color=[palette.colour(f) for f in rows["framework"]])
            ax.bar_label(bars, labels=[numbers.rate(v) for v in rate], label_type="center", color="white",
                         fontsize="small")
            ax.invert_yaxis()  # fastest on top
            ax.set_title("batch %d" % batch, fontsize="small")
            ax.set_xlabel(rows["throughput_unit"].iloc[0] + " (median)")
        title = "Samples/s (%s mode): %s" % (g["mode"], _where(g))
        fig.suptitle(title, fontsize="medium")
        plots.append(Plot(_slug("throughput", g["spec"], g["variant"], g["mode"], g["device"], len(plots)), title,
                          "Samples per second at the median %s (%s mode), a panel per batch size, fastest on top; "
                          "whiskers: samples per second at the third and first quartile of the times (the "
                          "interquartile range)." % (group["quantity"].iloc[0], g["mode"]), _png(fig),
                          (WIDTH_PX, height)))
    return plots


def speedup_vs_threads(summary):
    """A CPU thread sweep: samples/s at each thread count over samples/s at the fewest, one line per framework,
    the ideal (threads / fewest threads) dashed; one figure per group and batch size with 2+ thread counts."""
    ok = summary[(summary["status"] == "ok") & (summary["device"] == "cpu") & summary["threads"].notna()
                 & summary["throughput"].notna()]
    plots = []
    for g, rows in _groups(ok, GROUP + ["mode", "batch_size"]):
        counts = sorted(int(t) for t in rows["threads"].unique())
        if len(counts) < 2:
            continue
        fig, ax = _figure()
        for framework, line in rows.sort_values("threads").groupby("framework", sort=True):
            base = line[line["threads"] == line["threads"].min()]["throughput"].median()
            ax.plot(line["threads"], line["throughput"] / base, marker="o", color=palette.colour(framework),
                    label=palette.name(framework))
        ax.plot(counts, [c / counts[0] for c in counts], linestyle="--", color="grey", label="ideal (linear)")
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("CPU threads")
        ax.set_ylabel("speedup over %d thread%s" % (counts[0], "s"[counts[0] == 1:]))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        title = "Speedup vs CPU threads, batch %d: %s" % (g["batch_size"], _where(g))
        fig.suptitle(title, fontsize="medium")
        plots.append(Plot(_slug("threads", g["spec"], g["variant"], "b%d" % g["batch_size"], len(plots)), title,
                          "Samples per second at each thread count over that at %d; dashed: the ideal, linear in "
                          "the threads." % counts[0], _png(fig)))
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
            ax.plot(line["cumulative_seconds"], 100 * line["test_accuracy"], marker="o", label=label,
                    color=palette.colour(job["framework"]))
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
                ax.plot(line["ranks"], line["value"], marker="o", label=palette.name(framework),
                        color=palette.colour(framework))
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
    return (seconds_vs_batch(summary) + throughput_bars(summary) + speedup_vs_threads(summary)
            + speedup_vs_gpus(summary) + accuracy_vs_time(samples))
