"""A report of one or more bundles: report.md (figures as PNG files beside it) and report.html
(self-contained: figures embedded as base64 PNG, no external CSS, scripts or fonts).

Sections, summary first: the headline (fastest and slowest framework per spec, variant, device and batch
size; how many published cells were compared and what could not be); the figures (``dlrepro.plots``);
the results per spec and mode (median and IQR of the timed quantity, 95% CI, throughput, accuracy, status,
the reasons of failed and skipped jobs as numbered footnotes); the comparison with the published values and
the ranking verdicts (``dlrepro.compare``); then how it was measured: the bundles and the environment, the
studies' (their published references' hardware and framework versions) next to this one's (host, GPUs and
driver, images by ID, CUDA and cuDNN). Numbers as dlrepro.results.numbers writes them, one unit per column.
"""
import base64
import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import pandas as pd

from dlrepro.results import bundle, compare, numbers, palette, plots, tables
from dlrepro.results.answers import published
from dlrepro.results.answers.efficiency import plot as efficiency_plot, published_efficiency as efficiency_rows, then_and_now
from dlrepro.results.answers.ranking import ranking as rank_frameworks
from dlrepro.results.tables import POOLED_CI
from dlrepro.errors import DlreproError

TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("dlrepro.results", "templates"), trim_blocks=True,
                               lstrip_blocks=True, autoescape=jinja2.select_autoescape(["html.j2"]),
                               undefined=jinja2.StrictUndefined)
TEMPLATES.filters["b64"] = lambda data: base64.b64encode(data).decode("ascii")
TEMPLATES.filters["md"] = lambda text: str(text).replace("|", "\\|").replace("\n", " ")
NUMERIC = re.compile(r"^[+-]?[\d,]*\.?\d+(e[+-]?\d+)?\s?(%|x|ms|s|min)?$")
TEMPLATES.tests["numeric"] = lambda text: bool(NUMERIC.match(str(text)))  # right-aligned in a table


@dataclass
class Table:
    title: str
    columns: list
    rows: list  # lists of strings, one per column
    note: str = ""
    footnotes: list = field(default_factory=list)  # texts of the [1], [2], ... marks in the rows


@dataclass
class Report:
    html: Path
    markdown: Path
    figures: list = field(default_factory=list)  # PNG paths beside report.md
    headline: list = field(default_factory=list)  # the report's first lines (report.headline)


def _fmt(value, spec="%.4g"):
    """A number as text ('' for a missing one)."""
    return "" if value is None or pd.isna(value) else spec % value


def _table(title, frame, note=""):
    """A Table of a DataFrame of strings, leaving out columns that are empty in every row."""
    frame = frame.fillna("").astype(str)
    keep = [c for c in frame.columns if (frame[c] != "").any()]
    return Table(title, keep, frame[keep].values.tolist(), note)


def _short(image_id):
    return image_id.split(":")[-1][:12] if isinstance(image_id, str) else ""


INVOKE = re.compile(r"^\S*/invoke/__main__\.py")  # the recorded command as the reader would type it


def bundle_table(bundles):
    """One row per bundle: id, spec and its hash, when, suite version and commit, job counts, command."""
    rows = []
    for body in bundles:
        suite, git = body.get("suite") or {}, (body.get("suite") or {}).get("git") or {}
        commit = (git.get("commit") or "")[:12] or "unknown commit"
        commit += ", dirty" if git.get("dirty") else ""
        rows.append([body["id"], "%s (sha256 %s)" % (body["spec"]["name"], body["spec"]["sha256"][:12]),
                     body.get("created"), "%s (%s)" % (suite.get("version"), commit),
                     ", ".join("%d %s" % (n, s) for s, n in (body.get("counts") or {}).items()),
                     INVOKE.sub("invoke", body.get("command") or "")])
    return _table("Bundles", pd.DataFrame(rows, columns=["bundle", "spec", "created", "suite", "jobs", "command"]))


def environment(bundles, summary):
    """Two tables: hardware and framework versions of the studies vs here; the images used here."""
    measured = set(zip(summary["spec"], summary["variant"]))
    paper = {}
    for body in bundles:
        spec = body["spec"]
        for ref in spec["resolved"].get("references") or []:
            if (spec["name"], ref.get("variant")) in measured:
                key = ("paper (%s)" % ref["kind"].replace("_", " "), ref["hardware"], ref["source"])
                paper.setdefault(key, set()).add(" ".join(filter(None, (ref["framework"], ref.get("framework_version")))))
    rows = [[side, hardware, ", ".join(sorted(frameworks)), source]
            for (side, hardware, source), frameworks in sorted(paper.items())]
    here = {}  # hardware and system -> (framework versions, bundle ids)
    for body in bundles:
        host, executor = body["host"], body.get("executor") or {}
        gpus = "; ".join("%s (driver %s)" % (g["name"], g["driver"]) for g in host.get("gpus") or []) or "no GPU"
        hardware = "%s, %s CPUs, %.0f GiB; %s" % (host["cpu"]["model"], host["cpu"]["logical_cpus"],
                                                  host["memory_bytes"] / 2 ** 30, gpus)
        ours = summary[(summary["bundle_id"] == body["id"]) & summary["framework_version"].notna()]
        engine = executor.get("engine") or ""  # a version string before engine records (name, version)
        engine = " ".join((engine.get("name") or "", engine.get("version") or "")) if isinstance(engine, dict) else engine
        system = "%s; %s executor %s" % (host["os"], executor.get("executor", ""), engine)
        versions, ids = here.setdefault(hardware + "; " + system.strip(), (set(), []))
        versions.update(ours["framework"] + " " + ours["framework_version"])
        ids.append(body["id"])
    rows += [["here", machine, ", ".join(sorted(versions)), ", ".join(ids)] for machine, (versions, ids) in here.items()]
    side_by_side = _table("Environment: the studies vs here", pd.DataFrame(
        rows, columns=["side", "hardware and system", "frameworks", "source"]),
        "Paper rows: the hardware of every published reference for the variants measured here (by kind).")
    images = {}
    for body in bundles:
        for image in body.get("images") or []:
            base = image.get("base") or {}
            images[image["image_id"]] = [image["framework"], image["framework_version"], image["name"],
                                         _short(image["image_id"]), image.get("cuda") or "", image.get("cudnn") or "",
                                         "%s %s" % (base.get("name", ""), _short(base.get("digest"))), image.get("python")]
    used = pd.DataFrame(images.values(), columns=["framework", "version", "image", "image ID", "CUDA", "cuDNN",
                                                  "base (digest)", "Python"])
    if used.empty:  # local executor: the framework of the Python that ran the jobs, no image
        return [side_by_side]
    return [side_by_side, _table("Images here", used.sort_values(["framework", "version"]),
                                 "IDs and digests: the first 12 hex digits of their SHA-256.")]


def results(summary):
    """One table per (spec, mode): the timed quantity's median, IQR, 95% CI and n; throughput; accuracy."""
    out = []
    for (spec, mode), rows in summary.groupby(["spec", "mode"], sort=True):
        rows = rows.sort_values(["variant", "device", "batch_size", "framework", "bundle_id"])
        quantity = rows["quantity"].dropna()
        unit = rows["unit"].dropna()
        frame = pd.DataFrame({
            "bundle": rows["bundle_id"] if rows["bundle_id"].nunique() > 1 else "",
            "variant": rows["variant"], "device": (rows["device"] + " " + rows["device_name"].fillna("")).str.strip(),
            "batch": rows["batch_size"].astype(str), "framework": rows["framework"],
            "version": rows["framework_version"], "threads": rows["threads"].map(_fmt_int),
            "ranks": rows["ranks"].map(_fmt_int),
            "scaling": [_scaling(*c) for c in zip(rows["scaling"], rows["speedup"], rows["scaled_speedup"],
                                                   rows["scaling_efficiency"], rows["rank_batch_size"])],
            "status": rows["status"], "median": rows["median"].map(_fmt),
            "IQR (q1-q3)": [_range(a, b) for a, b in zip(rows["q1"], rows["q3"])],
            "95% CI": [_range(a, b) for a, b in zip(rows["ci95_low"], rows["ci95_high"])],
            "CI over": [_ci_over(*c) for c in zip(rows["ci95_method"], rows["ci95_units"], rows["ci95_low"])],
            "effective parallelism": [_parallelism(*p) for p in zip(rows["threads"], rows["effective_parallelism"],
                                                                     rows["device"])],
            "energy": [_energy(*e) for e in zip(rows["energy_j"], rows["energy_j_per_sample"], rows["mean_power_w"])],
            "n": rows["n"].map(_fmt_int), "mean": rows["mean"].map(_fmt),
            "throughput": [_fmt(v) + " " + u if pd.notna(v) else "" for v, u in zip(rows["throughput"],
                                                                                      rows["throughput_unit"])],
            "test accuracy": rows["final_test_accuracy"].map(lambda v: _fmt(100 * v, "%.2f%%") if pd.notna(v) else ""),
            "perplexity": rows["final_perplexity"].map(_fmt),
            "total s": rows["total_seconds"].map(lambda v: _fmt(v, "%.1f")),
            "s per 1000 images": rows["seconds_per_1000_images"].map(_fmt),
            "TFLOP/s": rows["achieved_flops"].map(lambda v: "%.3g" % (v / 1e12) if pd.notna(v) else ""),
            "% of peak": [_peak(*p) for p in zip(rows["fraction_of_peak"], rows["peak_device"])],
            "parameters": [_parameters(*p) for p in zip(rows["parameters"], rows["parameters_equivalent"],
                                                          rows["parameters_expected"])],
            "options": [_options(*o) for o in zip(rows["precision"], rows["layout"], rows["ptx_jit"])],
            "GPU during the measured iterations": [_gpu_state(r) for r in rows.itertuples()],
            "reason": rows["reason"].fillna("") + ("; remedy: " + rows["remedy"]).fillna(""),
        })
        title, note = "%s, %s mode" % (spec, mode), ""
        if len(quantity):
            title += ": %s (%s)" % (quantity.iloc[0], unit.iloc[0])
            note = "median, IQR and 95%% CI of the %s over every measured sample." % quantity.iloc[0]
        time = numbers.time_unit(rows["median"]) if len(unit) and unit.iloc[0] == "s" else None
        if time:
            for column, values in (("median", rows["median"]), ("mean", rows["mean"])):
                frame[column] = [numbers.in_unit(v, time) for v in values]
            frame["IQR (q1-q3)"] = [_range(a, b, time) for a, b in zip(rows["q1"], rows["q3"])]
            frame["95% CI"] = [_range(a, b, time) for a, b in zip(rows["ci95_low"], rows["ci95_high"])]
            frame = frame.rename(columns={c: "%s (%s)" % (c, time) for c in ("median", "mean", "IQR (q1-q3)",
                                                                              "95% CI")})
        rates = rows["throughput_unit"].dropna()
        frame["throughput"] = rows["throughput"].map(numbers.rate)
        frame = frame.rename(columns={"throughput": "throughput (%s)" % (rates.iloc[0] if len(rates) else
                                                                        "samples/s")})
        marks, footnotes = numbered_notes(frame.pop("reason"))
        frame.insert(list(frame.columns).index("status") + 1, "note", marks)
        table = _table(title, frame, note)
        table.footnotes = footnotes
        out.append(table)
    return out


def _peak(fraction, device):
    """'24% (nvidia-h200, fp32)': achieved FLOP/s over the peak of the device it was matched to (dlrepro/peaks.yaml)."""
    return "%s (%s)" % (numbers.percent(fraction), device) if pd.notna(fraction) else ""


def _now(framework, precision, batch, measured_batch, threads):
    """'Caffe fp32, 2 threads (mini-batch 128)': the measured job beside a published cell, or 'not measured here'."""
    if not isinstance(framework, str):
        return "not measured here"
    return "%s %s%s%s" % (palette.name(framework), precision,
                          ", %d thread%s" % (threads, "s" if threads != 1 else "") if pd.notna(threads) else "",
                          "" if batch == measured_batch else " (mini-batch %d)" % measured_batch)


def efficiency(summary, references):
    """(published cells set against their hardware's peak, the same framework then and now), as Tables or None,
    and the figure of the first (answers.efficiency; published cells on other hardware are never 'reproduced')."""
    shown = efficiency_rows(summary, references)
    marks, footnotes = numbered_notes(("published on %s; %s" % (h, s)) for h, s in zip(shown["published_hardware"],
                                                                                         shown["source"]))
    table = _table("Fraction of peak: the published cells then, this hardware now", pd.DataFrame({
        "network": shown["model"], "batch": shown["batch_size"].astype(str),
        "published": shown["published_framework"] + " " + pd.Series(marks, index=shown.index, dtype=object),
        "then (% of peak)": shown["published_fraction"].map(numbers.percent),
        "now": [_now(f, p, b, m, t) for f, p, b, m, t in zip(shown["framework"], shown["precision"],
                                                            shown["batch_size"], shown["measured_batch_size"],
                                                            shown["measured_threads"])],
        "now (% of peak)": shown["measured_fraction"].map(numbers.percent), "verdict": shown["verdict"],
        "basis": shown["basis"].fillna("")}),
        "FLOPs of one iteration counted from the spec (runner/flops.py), peaks from dlrepro/peaks.yaml; another "
        "device's figure is set beside this one's, never judged as reproducing.") if len(shown) else None
    if table is not None:
        table.footnotes = footnotes
    figure = None
    if len(shown) and shown["measured_fraction"].notna().any():  # then against now: a figure once both exist
        png = efficiency_plot(shown)
        figure = plots.Plot("fraction-of-peak", "Fraction of peak, then and now", "Achieved FLOP/s as % of the "
                            "device's peak: each published cell on its own hardware, and this host's jobs of the same "
                            "network and framework.", png, _png_size(png))
    speedups = then_and_now(summary)
    since = _table("The same framework then and now (this host)", pd.DataFrame({
        "spec": speedups["spec"], "variant": speedups["variant"], "batch": speedups["batch_size"].astype(str),
        "framework": speedups["framework"].map(palette.name),
        "versions": speedups["then_version"] + " -> " + speedups["now_version"],
        "speedup": [numbers.ratio(v) for v in speedups["speedup"]],
        "95% interval": ["%s-%s" % (numbers.ratio(a), numbers.ratio(b)) if pd.notna(a) and pd.notna(b) else ""
                         for a, b in zip(speedups["speedup_low"], speedups["speedup_high"])]}),
        "seconds per mini-batch of the paper's version over the newest one's.") if len(speedups) else None
    return table, since, figure


def _png_size(png):
    """(width, height) in pixels from a PNG's IHDR chunk."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def numbered_notes(reasons):
    """('[1]' marks per row, the distinct texts in order): long reasons leave the table for footnotes."""
    texts, marks = [], []
    for text in reasons:
        if text and text not in texts:
            texts.append(text)
        marks.append("[%d]" % (texts.index(text) + 1) if text else "")
    return marks, texts


def _ci_over(method, units, low):
    """What the 95% CI rests on: 'repeats (6)', 'epochs (6)', 'iterations pooled' (tables before v4), or why none."""
    if not isinstance(method, str):
        return ""
    if method == POOLED_CI:
        return "iterations pooled (before v4)"
    what = "epoch" if "epochs" in method else "repeat"
    if pd.isna(units):
        return "%ss" % what
    return numbers.count(int(units), what) if pd.notna(low) else "none: %s, needs 6" % numbers.count(int(units), what)


def _parallelism(threads, measured, device):
    """'0.98 (asked 1)': the CPUs a CPU job kept busy over its measured window, against the threads it asked for."""
    if device != "cpu" or pd.isna(measured):
        return ""
    return "%.2f%s" % (measured, " (asked %d)" % threads if pd.notna(threads) else "")


def _scaling(scaling, speedup, scaled, efficiency, per_rank):
    """'strong, 512 per rank: S 1.6, E 0.80' for a data-parallel job (S or W over the run's 1-rank job), or ''."""
    if not isinstance(scaling, str):
        return ""
    shown = "%s, %s per rank" % (scaling, _fmt_int(per_rank))
    if pd.notna(efficiency):
        shown += ": %s %.3g, E %.2f" % ("S" if scaling == "strong" else "W",
                                       speedup if scaling == "strong" else scaled, efficiency)
    return shown


def _energy(joules, per_sample, watts):
    """'51.2 J, 0.1 J/sample, 610 W' over the measured window (board or package level), or ''."""
    if pd.isna(joules):
        return ""
    return "%s J, %s J/sample, %s W" % (_fmt(joules, "%.3g"), _fmt(per_sample, "%.3g"), _fmt(watts, "%.0f"))


def _options(precision, layout, ptx_jit):
    """The measurement options where they differ from the studies' defaults (fp32, the framework's layout)."""
    shown = [precision if isinstance(precision, str) and precision != "fp32" else "",
             layout if isinstance(layout, str) and layout != "default" else "", "PTX JIT" if ptx_jit is True else ""]
    return ", ".join(s for s in shown if s)


FEW_SAMPLES = 5  # NVML samples (10 Hz) below which the medians say little about the measured window


def _gpu_state(row):
    """'not throttled: SM 1980 MHz, 465 W, max 49 C (24 samples)' from the job's NVML telemetry;
    'THROTTLED (reasons)' when power or thermal limits held the clocks back; 'no telemetry' for a
    GPU job that ran without it; a note when the window held too few samples for the medians (the
    throttle flag also comes from NVML's violation counters, read at the window's start and end)."""
    if row.device != "cuda" or row.status != "ok":
        return ""
    if pd.isna(row.sm_clock_median_mhz):
        return "no telemetry"
    samples = 0 if pd.isna(row.telemetry_samples) else int(row.telemetry_samples)
    text = "SM %s MHz, %s W, max %s C (%d sample%s%s)" % (
        _fmt(row.sm_clock_median_mhz, "%.0f"), _fmt(row.power_median_w, "%.0f"), _fmt(row.temperature_max_c, "%.0f"),
        samples, "s"[samples == 1:], ": too few for the medians" if samples < FEW_SAMPLES else "")
    return ("THROTTLED (%s): " % row.throttle_reasons if row.throttled is True else "not throttled: ") + text


def _parameters(measured, equivalent, expected):
    """'62,378,344'; the count under a declared convention where it differs ('6,174,480 (6,182,672 by
    convention)'), and the spec's count where that differs too ('... (spec: 62,378,344)')."""
    if pd.isna(measured):
        return ""
    text, compared = format(measured, ","), measured
    if pd.notna(equivalent) and equivalent != measured:
        text, compared = text + " (%s by convention)" % format(equivalent, ","), equivalent
    return text + (" (spec: %s)" % format(expected, ",") if pd.notna(expected) and expected != compared else "")


def _fmt_int(value):
    return "" if pd.isna(value) else str(int(value))


def _range(low, high, unit=None):
    """'3.41-3.62' (in ``unit``, 'ms' or 's', for times), '' when either end is missing."""
    if pd.isna(low) or pd.isna(high):
        return ""
    return "%s-%s" % ((numbers.in_unit(low, unit), numbers.in_unit(high, unit)) if unit else
                      (numbers.significant(low), numbers.significant(high)))


def comparison(cells):
    """The measured / published ratio and verdict per cell, both sides' hardware and versions."""
    frame = pd.DataFrame({
        "spec": cells["spec"], "variant": cells["variant"], "batch": cells["batch_size"].map(_fmt_int),
        "framework": cells["framework"], "verdict": cells["verdict"],
        "metric": cells["metric"] + " (" + cells["unit"] + ")", "measured": cells["measured"].map(numbers.significant),
        "published": cells["published"].map(numbers.significant), "ratio": cells["ratio"].map(numbers.ratio),
        "tolerance": [_range(a, b) for a, b in zip(cells["lower"], cells["upper"])],
        "reference": cells["reference_id"] + " (" + cells["reference_kind"] + ")",
        "published by": (cells["published_framework"] + " " + cells["published_version"].fillna("")).str.strip()
        + " on " + cells["published_hardware"],
        "measured with": cells["measured_framework_version"].fillna("") + " on " + cells["measured_hardware"],
    })
    return _table("Comparison with the published values", frame,
                  "ratio = measured / published; the tolerance is the ratio range counted as reproducing.")


def ranking(ranks):
    """The frameworks' order measured vs published per spec, variant, batch size and metric, with tau."""
    frame = pd.DataFrame({
        "spec": ranks["spec"], "variant": ranks["variant"], "batch": ranks["batch_size"].map(_fmt_int),
        "metric": ranks["metric"], "verdict": ranks["verdict"],
        "published on": ranks["published_hardware"] + " (" + ranks["reference_kind"] + ")",
        "published order": ranks["published_order"], "measured order": ranks["measured_order"],
        "n": ranks["n"].map(_fmt_int), "Kendall tau": ranks["tau"].map(lambda v: _fmt(v, "%.2f")),
        "p": ranks["p_value"].map(lambda v: _fmt(v, "%.2g")), "swapped": ranks["swapped"],
    })
    return _table("Ranking of the frameworks: the published order against the measured one", frame,
                  "orders: best first (fastest; highest rate or accuracy); Kendall's tau: 1 = the same order, "
                  "-1 = reversed; swapped pairs within noise: their 95% CIs overlap.")


def headline(summary, cells):
    """The lines a reader wants first: per spec, variant, device, mode and batch size the fastest and slowest
    framework (samples/s); how many published cells were compared, by verdict; what could not be run."""
    lines = []
    ok = summary[(summary["status"] == "ok") & summary["throughput"].notna()]
    for (spec, variant, device, mode), group in ok.groupby(["spec", "variant", "device_name", "mode"], sort=True,
                                                           dropna=False):
        per = []
        for batch, rows in group.groupby("batch_size", sort=True):
            rows = rows.sort_values("throughput", ascending=False)
            best, worst = rows.iloc[0], rows.iloc[-1]
            per.append("b%d %s %s" % (batch, palette.name(best["framework"]), numbers.rate(best["throughput"]))
                       + (" / %s %s" % (palette.name(worst["framework"]), numbers.rate(worst["throughput"]))
                          if len(rows) > 1 else ""))
        lines.append("%s on %s (%s mode), fastest / slowest, %s: %s" % (
            variant, device, mode, group["throughput_unit"].iloc[0], "; ".join(per)))
    if len(cells):
        tally = cells["verdict"].value_counts()
        lines.append("%s compared with the published values: %s" % (
            numbers.count(len(cells), "cell"), ", ".join("%d %s" % (n, w) for w, n in tally.items())))
    else:
        lines.append("No published value matches a measured cell.")
    other = summary[summary["status"] != "ok"]["status"].value_counts()
    if len(other):
        lines.append("Not measured: %s (reasons in the results' footnotes)." % ", ".join(
            numbers.count(n, "job") + " " + status for status, n in other.items()))
    return lines


def ranking_sentence(rank):
    """'alexnet-s b16: published (third party rerun, GTX Titan X): TensorFlow > MXNet > CNTK > Caffe; here (AMD
    EPYC): CNTK > Caffe > MXNet > TensorFlow (tau -0.55, n 4, p 0.28)' from a compare.RANKING_COLUMNS row: a
    published order beside the measured one, never called the study's conclusion (that word is for the
    claims of studies/*.yaml)."""
    def order(text):
        return " > ".join(palette.name(t.strip()) for t in str(text).split(","))

    line = "%s b%s: published (%s, %s): %s; here (%s): %s" % (
        rank.variant, rank.batch_size, rank.reference_kind.replace("_", " "), rank.published_hardware,
        order(rank.published_order), rank.measured_hardware, order(rank.measured_order))
    if pd.notna(rank.tau):
        line += " (tau %.2f, n %d, p %.2g)" % (rank.tau, rank.n, rank.p_value)
    return line


def bundle_folders(names):
    """Bundle folders from paths or bundle ids under results/ (bundle.locate), in order, each once."""
    folders = []
    for found in map(bundle.locate, names):
        if found.resolve() not in {f.resolve() for f in folders}:
            folders.append(found)
    return folders


def context(bundle_dirs, summary, samples):
    """Everything the templates show (figures as plots.Plot with PNG bytes)."""
    bundles = [bundle.body(d) for d in bundle_dirs]
    cells = published.against_published(summary, compare.recorded_references(bundles))
    ranks = rank_frameworks(cells)
    peak_table, since, peak_figure = efficiency(summary, compare.recorded_references(bundles))
    return {
        "bundle_ids": [b["id"] for b in bundles],
        "headline": headline(summary, cells),
        "bundles": bundle_table(bundles),
        "environment": environment(bundles, summary),
        "results": results(summary),
        "comparison": comparison(cells) if len(cells) else None,
        "ranking": ranking(ranks) if len(ranks) else None,
        "sentences": [ranking_sentence(r) for r in ranks.itertuples()],
        "efficiency": peak_table, "then_and_now": since,
        "figures": plots.all_plots(summary, samples) + ([peak_figure] if peak_figure else []),
        "figure_size": (plots.WIDTH_PX, plots.HEIGHT_PX),
    }


def write(bundles, out_dir=None):
    """Write report.html, report.md and figures/*.png into out_dir (default: reports/<first bundle id>,
    '+N' appended for N more bundles); ``bundles``: folders or bundle ids. Returns the paths."""
    bundle_dirs = bundle_folders(bundles)
    if not bundle_dirs:
        raise DlreproError("no bundle given")
    more = "+%d" % (len(bundle_dirs) - 1) if len(bundle_dirs) > 1 else ""
    out = Path(out_dir or Path("reports") / (bundle_dirs[0].name + more))
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for old in (out / "figures").glob("*.png"):  # figures of an earlier report written here
        old.unlink()
    summary, samples = tables.merge(bundle_dirs)
    ctx = context(bundle_dirs, summary, samples)
    report = Report(out / "report.html", out / "report.md", headline=ctx["headline"])
    for figure in ctx["figures"]:
        path = out / "figures" / (figure.name + ".png")
        path.write_bytes(figure.png)
        report.figures.append(path)
    report.html.write_text(TEMPLATES.get_template("report.html.j2").render(ctx, d=ctx))
    report.markdown.write_text(TEMPLATES.get_template("report.md.j2").render(ctx, d=ctx))
    return report
