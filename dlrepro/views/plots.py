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

- ``efficiency_bars``: the fraction of the device's peak, the published cells then (on their hardware) beside this
  host's jobs of the same network and framework now, one bar per precision and CPU thread count measured.

Every framework has one colour in every figure (views.palette); a line joins only batch sizes measured next to each
other (a gap where one between them was not measured). A figure is WIDTH_PX wide and HEIGHT_PX high per row of
panels (Plot.size). Each Plot carries ``points``: every (series, x, y) it drew, so that a test can check that every
measured job is in its figure.
"""

import io
import re
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from dlrepro.inputs.frameworks import display
from dlrepro.views import numbers, palette

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
    points: tuple = ()  # every (series label, x, y) drawn, in the axes' units


def _figure(rows=1):
    fig = Figure(figsize=(WIDTH_PX / DPI, rows * HEIGHT_PX / DPI), dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _segments(line, sizes):
    """The rows of one framework's line split where a batch size of ``sizes`` (the group's, sorted) between
    two of its own was not measured, so that no line crosses an unmeasured batch size. Plain integers: on the
    tables' nullable Int64 the first difference is NA, and a group key of NA drops that row."""
    index = [sizes.index(int(b)) for b in line["batch_size"]]
    starts, part = [], 0
    for i, at in enumerate(index):
        part += i == 0 or at != index[i - 1] + 1
        starts.append(part)
    return [part for _, part in line.groupby(starts, sort=True)]


def png(fig):
    """PNG bytes of a matplotlib Figure at DPI."""
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
    names = (rows["framework"].map(display) + " " + rows["framework_version"].fillna("")).str.strip()
    if (rows["device"] == "cpu").all() and rows["threads"].nunique(dropna=False) > 1:
        names = (
            names
            + ", "
            + rows["threads"].map(lambda t: "default threads" if pd.isna(t) else "%d thread%s" % (t, "s"[t == 1 :]))
        )
    if rows["ranks"].notna().any():
        unit = "GPU" if (rows["device"] == "cuda").all() else "rank"
        names = names + rows["ranks"].map(lambda n: "" if pd.isna(n) else ", %d %s%s" % (n, unit, "s"[n == 1 :]))
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
        ticks = sorted(int(b) for b in rows["batch_size"].unique())
        unit = numbers.time_unit(rows["median"])
        scale = 1000.0 if unit == "ms" else 1.0
        points = []
        for label, line in rows.sort_values("batch_size").groupby(_names(rows), sort=True):
            colour = palette.colour(line["framework"].iloc[0])
            for i, part in enumerate(_segments(line, ticks)):
                x, y = [int(b) for b in part["batch_size"]], [scale * float(m) for m in part["median"]]
                ax.errorbar(
                    x,
                    y,
                    marker="o",
                    capsize=3,
                    color=colour,
                    label=label if i == 0 else None,
                    yerr=[
                        scale * (part["median"] - part["q1"]).astype(float),
                        scale * (part["q3"] - part["median"]).astype(float),
                    ],
                )
                points += [(label, a, b) for a, b in zip(x, y)]
        if sizes >= LOG_AXES_FROM:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
        ax.set_xticks(ticks, [str(b) for b in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("batch size (samples per mini-batch)")
        ax.set_ylabel("%s per mini-batch (median)" % ("milliseconds" if unit == "ms" else "seconds"))
        ax.legend(fontsize="small")
        title = "Seconds per mini-batch vs batch size: " + _where(g)
        fig.suptitle(title, fontsize="medium")
        plots.append(
            Plot(
                _slug("seconds-vs-batch", g["spec"], g["variant"], g["device"], len(plots)),
                title,
                "Median time per training iteration (forward, backward, update) in %s at each batch "
                "size; whiskers span the interquartile range of the measured iterations." % unit,
                png(fig),
                points=tuple(points),
            )
        )
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
        points = []
        for ax, batch in zip(axes, sizes):
            rows = group[group["batch_size"] == batch].sort_values("throughput", ascending=False)
            rate = rows["throughput"]
            low, high = rate * rows["median"] / rows["q3"], rate * rows["median"] / rows["q1"]
            labels = _labels(rows)
            bars = ax.barh(
                labels,
                rate,
                xerr=[(rate - low).fillna(0), (high - rate).fillna(0)],
                capsize=4,
                color=[palette.colour(f) for f in rows["framework"]],
            )
            points += [(label, int(batch), float(r)) for label, r in zip(labels, rate)]
            ax.bar_label(
                bars, labels=[numbers.rate(v) for v in rate], label_type="center", color="white", fontsize="small"
            )
            ax.invert_yaxis()  # fastest on top
            ax.set_title("batch %d" % batch, fontsize="small")
            ax.set_xlabel(rows["throughput_unit"].iloc[0] + " (median)")
        title = "Samples/s (%s mode): %s" % (g["mode"], _where(g))
        fig.suptitle(title, fontsize="medium")
        plots.append(
            Plot(
                _slug("throughput", g["spec"], g["variant"], g["mode"], g["device"], len(plots)),
                title,
                "Samples per second at the median %s (%s mode), a panel per batch size, fastest on top; "
                "whiskers: samples per second at the third and first quartile of the times (the "
                "interquartile range)." % (group["quantity"].iloc[0], g["mode"]),
                png(fig),
                (WIDTH_PX, height),
                tuple(points),
            )
        )
    return plots


def speedup_vs_threads(summary):
    """A CPU thread sweep: samples/s at each thread count over samples/s at the fewest, one line per framework,
    the ideal (threads / fewest threads) dashed; one figure per group and batch size with 2+ thread counts."""
    ok = summary[
        (summary["status"] == "ok")
        & (summary["device"] == "cpu")
        & summary["threads"].notna()
        & summary["throughput"].notna()
    ]
    plots = []
    for g, rows in _groups(ok, GROUP + ["mode", "batch_size"]):
        counts = sorted(int(t) for t in rows["threads"].unique())
        if len(counts) < 2:
            continue
        fig, ax = _figure()
        points = []
        for framework, line in rows.sort_values("threads").groupby("framework", sort=True):
            base = line[line["threads"] == line["threads"].min()]["throughput"].median()
            x, y = [int(t) for t in line["threads"]], [float(v) / base for v in line["throughput"]]
            ax.plot(x, y, marker="o", color=palette.colour(framework), label=display(framework))
            points += [(display(framework), a, b) for a, b in zip(x, y)]
        ax.plot(counts, [c / counts[0] for c in counts], linestyle="--", color="grey", label="ideal (linear)")
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("CPU threads")
        ax.set_ylabel("speedup over %d thread%s" % (counts[0], "s"[counts[0] == 1 :]))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        title = "Speedup vs CPU threads, batch %d: %s" % (g["batch_size"], _where(g))
        fig.suptitle(title, fontsize="medium")
        plots.append(
            Plot(
                _slug("threads", g["spec"], g["variant"], "b%d" % g["batch_size"], len(plots)),
                title,
                "Samples per second at each thread count over that at %d; dashed: the ideal, linear in "
                "the threads." % counts[0],
                png(fig),
                points=tuple(points),
            )
        )
    return plots


def accuracy_vs_time(samples):
    """Test accuracy (%) after each epoch against cumulative training seconds, one line per job."""
    epochs = samples[(samples["sample"] == "epoch") & samples["test_accuracy"].notna()]
    plots = []
    for g, rows in _groups(epochs, GROUP + ["batch_size"]):
        fig, ax = _figure()
        jobs = rows.drop_duplicates(["bundle_id", "job_id"])
        points = []
        for label, (_, job) in zip(_labels(jobs), jobs.iterrows()):
            line = rows[(rows["bundle_id"] == job["bundle_id"]) & (rows["job_id"] == job["job_id"])]
            line = line.sort_values(["repeat", "index"])
            x, y = [float(t) for t in line["cumulative_seconds"]], [100 * float(a) for a in line["test_accuracy"]]
            ax.plot(x, y, marker="o", label=label, color=palette.colour(job["framework"]))
            points += [(label, a, b) for a, b in zip(x, y)]
        ax.set_xlabel("cumulative training time (s)")
        ax.set_ylabel("test accuracy (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        title = "Test accuracy vs wall time, batch %d: %s" % (g["batch_size"], _where(g))
        fig.suptitle(title, fontsize="medium")
        plots.append(
            Plot(
                _slug("accuracy-vs-time", g["spec"], g["variant"], g["device"], "b%d" % g["batch_size"], len(plots)),
                title,
                "Test accuracy after each epoch against the wall time of the training loops up to that "
                "epoch (evaluation not counted), one line per job.",
                png(fig),
                points=tuple(points),
            )
        )
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
            points = []
            for framework, line in chosen.assign(value=value).sort_values("ranks").groupby("framework", sort=True):
                x, y = [int(n) for n in line["ranks"]], [float(v) for v in line["value"]]
                ax.plot(x, y, marker="o", label=display(framework), color=palette.colour(framework))
                points += [(display(framework), a, b) for a, b in zip(x, y)]
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
            plots.append(
                Plot(
                    _slug("speedup", g["spec"], g["variant"], g["device"], g["scaling"], "b%d" % batch, len(plots)),
                    title,
                    (
                        "Strong scaling: the total mini-batch of %d split across N ranks; speedup over the "
                        "1-rank job = its median seconds per mini-batch / the N-rank one's." % batch
                        if g["scaling"] == "strong"
                        else "Weak scaling: %d samples per rank, the learning rate times N; W = samples/s at N "
                        "ranks / at 1." % batch
                    )
                    + " Dashed: the ideal, N.",
                    png(fig),
                    points=tuple(points),
                )
            )
    return plots


def _now_label(precision, threads):
    """'now, fp32, 2 threads'; ``threads`` may be a float (a column NaN made float: bundles reported together)."""
    if pd.isna(threads):
        return "now, %s" % precision
    return "now, %s, %d thread%s" % (precision, threads, "" if int(threads) == 1 else "s")


def efficiency_bars(rows):
    """The fraction of peak then and now (``rows``: answers.efficiency.PUBLISHED_COLUMNS with a measured fraction):
    per network, mini-batch, published framework and hardware, one bar for the published fraction (then) and one
    per precision and CPU thread count measured here (now), in percent; [] without rows."""
    rows = rows[rows["measured_fraction"].notna()]
    if rows.empty:
        return []
    rows = rows.assign(
        label=rows["model"]
        + " b"
        + rows["batch_size"].astype(str)
        + ", "
        + rows["published_framework"]
        + " ("
        + rows["published_peak_device"]
        + ")",
        now=[_now_label(p, t) for p, t in zip(rows["precision"], rows["measured_threads"])],
    )
    then = rows.groupby("label", sort=True)["published_fraction"].max() * 100  # several cells of a label: the largest
    now = rows.pivot_table(index="label", columns="now", values="measured_fraction", aggfunc="max") * 100
    labels = list(then.index)
    series = [("then", then)] + [(column, now[column]) for column in now.columns]
    height_px = int(DPI * (1.5 + 0.3 * len(labels) * max(1, len(series) / 2)))
    fig = Figure(figsize=(WIDTH_PX / DPI, height_px / DPI), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    bar = 0.8 / len(series)
    points = []
    for i, (name, values) in enumerate(series):
        shown = [values.get(label, float("nan")) for label in labels]
        ax.barh([y + i * bar for y in range(len(labels))], shown, bar, label=name)
        points += [(name, label, float(v)) for label, v in zip(labels, shown) if not pd.isna(v)]
    ax.set_yticks([y + bar * (len(series) - 1) / 2 for y in range(len(labels))], labels, fontsize="x-small")
    ax.invert_yaxis()
    ax.set_xlabel("achieved FLOP/s, % of the device's peak")
    ax.legend(fontsize="small")
    title = "Fraction of peak, then and now"
    fig.suptitle(title, fontsize="medium")
    return [
        Plot(
            "fraction-of-peak",
            title,
            "Achieved FLOP/s as % of the device's peak: each published cell on its "
            "own hardware (then), and this host's jobs of the same network and framework (now), one bar per "
            "precision and CPU thread count measured.",
            png(fig),
            (WIDTH_PX, height_px),
            tuple(points),
        )
    ]


def all_plots(summary, samples, efficiency=None):
    """Every figure of a report, in reading order (``efficiency``: answers.efficiency.PUBLISHED_COLUMNS rows)."""
    return (
        seconds_vs_batch(summary)
        + throughput_bars(summary)
        + speedup_vs_threads(summary)
        + speedup_vs_gpus(summary)
        + accuracy_vs_time(samples)
        + (efficiency_bars(efficiency) if efficiency is not None else [])
    )
