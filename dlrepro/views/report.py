"""The report of one or more bundles, a view of their BundleAnswer (dlrepro.answers.model): report.md
(figures as PNG files beside it) and report.html (self-contained: figures embedded as base64 PNG, no external CSS,
scripts or fonts).

Sections, summary first: the headline (fastest and slowest framework per spec, variant, device, batch size and setting,
with joules per sample where measured; how many published cells were compared and what could not be); the figures
(views.plots); the results per spec and mode (median and IQR of the timed quantity, 95% CI, throughput and energy,
accuracy, status, the reasons of failed and skipped jobs as numbered footnotes); the comparison with the published
values and the ranking verdicts; the fraction of peak then and now; then how it was measured: the bundles and the
environment, the studies' (their published references' hardware and framework versions) next to this one's (host, GPUs
and driver, images by ID, CUDA and cuDNN). Numbers as views.numbers writes them, one unit per column. The view renders
the model and decides nothing.
"""

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import pandas as pd

from dlrepro.inputs.frameworks import display
from dlrepro.store.tables import POOLED_CI
from dlrepro.views import costs, numbers, plots, ranking_text

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("dlrepro.views", "templates"),
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=jinja2.select_autoescape(["html.j2"]),
    undefined=jinja2.StrictUndefined,
)
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


def table_of(title, frame, note=""):
    """A Table of a DataFrame of strings, leaving out columns that are empty in every row."""
    frame = frame.fillna("").astype(str)
    keep = [c for c in frame.columns if (frame[c] != "").any()]
    return Table(title, keep, frame[keep].values.tolist(), note)


def _short(image_id):
    return image_id.split(":")[-1][:12] if isinstance(image_id, str) else ""


INVOKE = re.compile(r"^\S*/invoke/__main__\.py")  # the recorded command as the reader would type it
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:[^/\s,;]+/)+([^/\s,;]+)")  # an absolute path of the machine that ran it


def command_shown(text):
    """The recorded command as a reader would type it: `invoke` for the path of Invoke's __main__, and every absolute
    path of the machine that ran it as '.../<last part>' (no machine path in a report)."""
    return MACHINE_PATH.sub(r".../\1", INVOKE.sub("invoke", text or ""))


def bundle_table(bundles):
    """One row per bundle: id, spec and its hash, when, suite version and commit, job counts, command."""
    rows = []
    for body in bundles:
        suite, git = body.get("suite") or {}, (body.get("suite") or {}).get("git") or {}
        commit = (git.get("commit") or "")[:12] or "unknown commit"
        commit += ", dirty" if git.get("dirty") else ""
        rows.append(
            [
                body["id"],
                "%s (sha256 %s)" % (body["spec"]["name"], body["spec"]["sha256"][:12]),
                body.get("created"),
                "%s (%s)" % (suite.get("version"), commit),
                ", ".join("%d %s" % (n, s) for s, n in (body.get("counts") or {}).items()),
                command_shown(body.get("command")),
            ]
        )
    return table_of("Bundles", pd.DataFrame(rows, columns=["bundle", "spec", "created", "suite", "jobs", "command"]))


def environment(bundles, summary):
    """Two tables: hardware and framework versions of the studies vs here; the images used here."""
    measured = set(zip(summary["spec"], summary["variant"]))
    paper = {}
    for body in bundles:
        spec = body["spec"]
        for ref in spec["resolved"].get("references") or []:
            if (spec["name"], ref.get("variant")) in measured:
                key = ("paper (%s)" % ref["kind"].replace("_", " "), ref["hardware"], ref["source"])
                paper.setdefault(key, set()).add(
                    " ".join(filter(None, (ref["framework"], ref.get("framework_version"))))
                )
    rows = [
        [side, hardware, ", ".join(sorted(frameworks)), source]
        for (side, hardware, source), frameworks in sorted(paper.items())
    ]
    here = {}  # hardware and system -> (framework versions, bundle ids)
    for body in bundles:
        host, executor = body["host"], body.get("executor") or {}
        gpus = "; ".join("%s (driver %s)" % (g["name"], g["driver"]) for g in host.get("gpus") or []) or "no GPU"
        hardware = "%s, %s CPUs, %.0f GiB; %s" % (
            host["cpu"]["model"],
            host["cpu"]["logical_cpus"],
            host["memory_bytes"] / 2**30,
            gpus,
        )
        ours = summary[(summary["bundle_id"] == body["id"]) & summary["framework_version"].notna()]
        engine = executor.get("engine") or ""  # a version string before engine records (name, version)
        engine = (
            " ".join((engine.get("name") or "", engine.get("version") or "")) if isinstance(engine, dict) else engine
        )
        system = "%s; %s executor %s" % (host["os"], executor.get("executor", ""), engine)
        versions, ids = here.setdefault(hardware + "; " + system.strip(), (set(), []))
        versions.update(ours["framework"] + " " + ours["framework_version"])
        ids.append(body["id"])
    rows += [
        ["here", machine, ", ".join(sorted(versions)), ", ".join(ids)] for machine, (versions, ids) in here.items()
    ]
    side_by_side = table_of(
        "Environment: the studies vs here",
        pd.DataFrame(rows, columns=["side", "hardware and system", "frameworks", "source"]),
        "Paper rows: the hardware of every published reference for the variants measured here (by kind).",
    )
    images = {}
    for body in bundles:
        for image in body.get("images") or []:
            base = image.get("base") or {}
            images[image["image_id"]] = [
                image["framework"],
                image["framework_version"],
                image["name"],
                _short(image["image_id"]),
                image.get("cuda") or "",
                image.get("cudnn") or "",
                "%s %s" % (base.get("name", ""), _short(base.get("digest"))),
                image.get("python"),
            ]
    used = pd.DataFrame(
        images.values(),
        columns=["framework", "version", "image", "image ID", "CUDA", "cuDNN", "base (digest)", "Python"],
    )
    if used.empty:  # local executor: the framework of the Python that ran the jobs, no image
        return [side_by_side]
    return [
        side_by_side,
        table_of(
            "Images here",
            used.sort_values(["framework", "version"]),
            "IDs and digests: the first 12 hex digits of their SHA-256.",
        ),
    ]


def results(summary, timers=None):
    """One table per (spec, mode): the timed quantity's median, IQR, 95% CI and n; throughput; accuracy; the timer
    of each job, and under the table the frameworks side by side that were timed differently (``timers``:
    BundleAnswer.timers)."""
    out = []
    for (spec, mode), rows in summary.groupby(["spec", "mode"], sort=True):
        rows = rows.sort_values(["variant", "device", "batch_size", "framework", "bundle_id"])
        quantity = rows["quantity"].dropna()
        unit = rows["unit"].dropna()
        frame = pd.DataFrame(
            {
                "bundle": rows["bundle_id"] if rows["bundle_id"].nunique() > 1 else "",
                "variant": rows["variant"],
                "device": (rows["device"] + " " + rows["device_name"].fillna("")).str.strip(),
                "batch": rows["batch_size"].astype(str),
                "framework": rows["framework"],
                "version": rows["framework_version"],
                "threads": rows["threads"].map(_fmt_int),
                "ranks": rows["ranks"].map(_fmt_int),
                "scaling": [
                    _scaling(*c)
                    for c in zip(
                        rows["scaling"],
                        rows["speedup"],
                        rows["scaled_speedup"],
                        rows["scaling_efficiency"],
                        rows["rank_batch_size"],
                    )
                ],
                "status": rows["status"],
                "median": rows["median"].map(_fmt),
                "IQR (q1-q3)": [_range(a, b) for a, b in zip(rows["q1"], rows["q3"])],
                "95% CI": [_range(a, b) for a, b in zip(rows["ci95_low"], rows["ci95_high"])],
                "CI over": [_ci_over(*c) for c in zip(rows["ci95_method"], rows["ci95_units"], rows["ci95_low"])],
                "effective parallelism": [
                    _parallelism(*p) for p in zip(rows["threads"], rows["effective_parallelism"], rows["device"])
                ],
                "n": rows["n"].map(_fmt_int),
                "mean": rows["mean"].map(_fmt),
                "throughput": [
                    _fmt(v) + " " + u if pd.notna(v) else ""
                    for v, u in zip(rows["throughput"], rows["throughput_unit"])
                ],
                "J per sample": costs.joules(rows),
                costs.HEADER: costs.cost(rows),
                "mean power (W)": rows["mean_power_w"].map(lambda v: "" if pd.isna(v) else "%.0f" % v),
                "test accuracy": [
                    _accuracy(*a)
                    for a in zip(
                        rows["final_test_accuracy"], _column(rows, "accuracy_low"), _column(rows, "accuracy_high")
                    )
                ],
                "seeds": _column(rows, "seeds").map(lambda n: "" if pd.isna(n) or n == 1 else str(int(n))),
                "perplexity": rows["final_perplexity"].map(_fmt),
                "total s": rows["total_seconds"].map(lambda v: _fmt(v, "%.1f")),
                "s per 1000 images": rows["seconds_per_1000_images"].map(_fmt),
                "TFLOP/s": rows["achieved_flops"].map(lambda v: "%.3g" % (v / 1e12) if pd.notna(v) else ""),
                "% of peak": [_peak(*p) for p in zip(_column(rows, "fraction_of_peak_label"), rows["peak_device"])],
                "parameters": [
                    _parameters(*p)
                    for p in zip(rows["parameters"], rows["parameters_equivalent"], rows["parameters_expected"])
                ],
                "options": [_options(*o) for o in zip(rows["precision"], rows["layout"], rows["ptx_jit"])],
                "timer": _column(rows, "timer").fillna(""),
                "GPU during the measured iterations": [_gpu_state(r) for r in rows.itertuples()],
                "reason": rows["reason"].fillna("") + ("; remedy: " + rows["remedy"]).fillna(""),
            }
        )
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
            frame = frame.rename(
                columns={c: "%s (%s)" % (c, time) for c in ("median", "mean", "IQR (q1-q3)", "95% CI")}
            )
        rates = rows["throughput_unit"].dropna()
        frame["throughput"] = rows["throughput"].map(numbers.rate)
        frame = frame.rename(columns={"throughput": "throughput (%s)" % (rates.iloc[0] if len(rates) else "samples/s")})
        mixed = (timers or {}).get((spec, mode))
        if mixed:
            note = " ".join(
                filter(
                    None,
                    [
                        note,
                        "Timed differently (on a GPU, two different quantities: docs/gpu.md): %s." % "; ".join(mixed),
                    ],
                )
            )
        marks, footnotes = numbered_notes(frame.pop("reason"))
        frame.insert(list(frame.columns).index("status") + 1, "note", marks)
        table = table_of(title, frame, note)
        table.footnotes = footnotes
        out.append(table)
    return out


def _peak(label, device):
    """'24.0% (nvidia-h200, fp32)': the fraction of peak as the model labels it (never a bare figure over 100%),
    with the device whose peak it is over (dlrepro/inputs/peaks.yaml)."""
    return "%s (%s)" % (label, device) if isinstance(label, str) and label else ""


def _column(rows, name):
    """A column the answer model adds (answers.measured.PREPARED), empty where the rows do not have it."""
    return rows[name] if name in rows else pd.Series(float("nan"), index=rows.index)


def _accuracy(median, low, high):
    """'86.9%', or '86.9% (86.1-87.4%)' with its 95% interval over seeds."""
    if pd.isna(median):
        return ""
    return numbers.percent(median) + (
        "" if pd.isna(low) else " (%s-%s)" % (numbers.percent(low), numbers.percent(high))
    )


def _now(framework, precision, batch, measured_batch, threads):
    """'Caffe fp32, 2 threads (mini-batch 128)': the measured job beside a published cell, or 'not measured here'."""
    if not isinstance(framework, str):
        return "not measured here"
    return "%s %s%s%s" % (
        display(framework),
        precision,
        ", %d thread%s" % (threads, "s" if threads != 1 else "") if pd.notna(threads) else "",
        "" if batch == measured_batch else " (mini-batch %d)" % measured_batch,
    )


def efficiency(shown, speedups):
    """(published cells set against their hardware's peak, the same framework then and now), as Tables or None
    (``shown``: answers.efficiency.PUBLISHED_COLUMNS rows, ``speedups``: THEN_AND_NOW_COLUMNS rows; published
    cells on other hardware are never 'reproduced'). Only the cells with a job measured here are rows; the others
    are counted in the note."""
    unmeasured = int(shown["measured_fraction"].isna().sum())
    shown = shown[shown["measured_fraction"].notna()]
    marks, footnotes = numbered_notes(
        ("published on %s; %s" % (h, s)) for h, s in zip(shown["published_hardware"], shown["source"])
    )
    table = (
        table_of(
            "Fraction of peak: the published cells then, this hardware now",
            pd.DataFrame(
                {
                    "network": shown["model"],
                    "batch": shown["batch_size"].astype(str),
                    "published": shown["published_framework"] + " " + pd.Series(marks, index=shown.index, dtype=object),
                    "then (% of peak)": shown["published_fraction_label"],
                    "now": [
                        _now(f, p, b, m, t)
                        for f, p, b, m, t in zip(
                            shown["framework"],
                            shown["precision"],
                            shown["batch_size"],
                            shown["measured_batch_size"],
                            shown["measured_threads"],
                        )
                    ],
                    "now (% of peak)": shown["measured_fraction_label"],
                    "verdict": shown["verdict"],
                    "basis": shown["basis"].fillna(""),
                }
            ),
            "FLOPs of one iteration counted from the spec (runner/flops.py), peaks from dlrepro/inputs/peaks.yaml; "
            "another "
            "device's figure is set beside this one's, never judged as reproducing.%s"
            % (
                " %s on hardware with a known peak: no job of their network and framework here."
                % numbers.count(unmeasured, "more published cell")
                if unmeasured
                else ""
            ),
        )
        if len(shown)
        else None
    )
    if table is not None:
        table.footnotes = footnotes
    since = (
        table_of(
            "The same framework then and now (this host)",
            pd.DataFrame(
                {
                    "spec": speedups["spec"],
                    "variant": speedups["variant"],
                    "batch": speedups["batch_size"].astype(str),
                    "framework": speedups["framework"].map(display),
                    "threads": [str(int(t)) if pd.notna(t) else "" for t in speedups["threads"]],
                    "versions": speedups["then_version"] + " -> " + speedups["now_version"],
                    "speedup": [
                        numbers.ratio(v) + (" (smoke pass: indicative)" if s and pd.notna(v) else "")
                        for v, s in zip(speedups["speedup"], speedups["smoke"])
                    ],
                    "95% interval": [
                        "%s-%s" % (numbers.ratio(a), numbers.ratio(b)) if pd.notna(a) and pd.notna(b) else ""
                        for a, b in zip(speedups["speedup_low"], speedups["speedup_high"])
                    ],
                }
            ),
            "seconds per mini-batch of the oldest version measured over the newest one's (the studies' era image "
            "against today's), the versions as the framework reports them.",
        )
        if len(speedups)
        else None
    )
    return table, since


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
        shown += ": %s %.3g, E %.2f" % (
            "S" if scaling == "strong" else "W",
            speedup if scaling == "strong" else scaled,
            efficiency,
        )
    return shown


def _options(precision, layout, ptx_jit):
    """The measurement options where they differ from the studies' defaults (fp32, the framework's layout)."""
    shown = [
        precision if isinstance(precision, str) and precision != "fp32" else "",
        layout if isinstance(layout, str) and layout != "default" else "",
        "PTX JIT" if ptx_jit is True else "",
    ]
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
        _fmt(row.sm_clock_median_mhz, "%.0f"),
        _fmt(row.power_median_w, "%.0f"),
        _fmt(row.temperature_max_c, "%.0f"),
        samples,
        "s"[samples == 1 :],
        ": too few for the medians" if samples < FEW_SAMPLES else "",
    )
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
    return "%s-%s" % (
        (numbers.in_unit(low, unit), numbers.in_unit(high, unit))
        if unit
        else (numbers.significant(low), numbers.significant(high))
    )


def _why(verdict, why, smoke):
    """The reason beside a cell that is not a plain answer: why it cannot tell or be compared, or is other hardware."""
    return "" if verdict in ("reproduces", "differs") or not isinstance(why, str) else why


def comparison(cells):
    """The measured / published ratio and verdict per cell, the ratio's 95% interval, both sides' hardware and
    versions; a smoke pass's value is shown with no ratio; reasons as numbered footnotes."""
    marks, footnotes = numbered_notes([_why(*w) for w in zip(cells["verdict"], cells["why"], cells["smoke"])])
    frame = pd.DataFrame(
        {
            "spec": cells["spec"],
            "variant": cells["variant"],
            "batch": cells["batch_size"].map(_fmt_int),
            "framework": cells["framework"].map(display),
            "threads": cells["threads"].map(_fmt_int),
            "verdict": [" ".join(filter(None, v)) for v in zip(cells["verdict"], marks)],
            "metric": cells["metric"] + " (" + cells["unit"] + ")",
            "measured": cells["measured"].map(numbers.significant),
            "published": cells["published"].map(numbers.significant),
            "ratio": cells["ratio"].map(numbers.ratio),
            "ratio 95% interval": [
                "%s-%s" % (numbers.ratio(lo / p), numbers.ratio(hi / p)) if pd.notna(lo) and pd.notna(r) else ""
                for lo, hi, p, r in zip(cells["ci95_low"], cells["ci95_high"], cells["published"], cells["ratio"])
            ],
            "tolerance": [_range(a, b) for a, b in zip(cells["lower"], cells["upper"])],
            "reference": cells["reference_id"] + " (" + cells["reference_kind"] + ")",
            "published by": (cells["published_framework"] + " " + cells["published_version"].fillna("")).str.strip()
            + " on "
            + cells["published_hardware"],
            "measured with": cells["measured_framework_version"].fillna("") + " on " + cells["measured_hardware"],
        }
    )
    table = table_of(
        "Comparison with the published values",
        frame,
        "ratio = measured / published; it reproduces when its 95% interval lies inside the tolerance, "
        "differs when it lies wholly outside; a smoke pass (--quick) is shown, never set as a ratio.",
    )
    table.footnotes = footnotes
    return table


def ranking(ranks):
    """The frameworks' order measured vs published per spec, variant, batch size and metric, with tau."""
    frame = pd.DataFrame(
        {
            "spec": ranks["spec"],
            "variant": ranks["variant"],
            "batch": ranks["batch_size"].map(_fmt_int),
            "metric": ranks["metric"],
            "threads": ranks["threads"].map(_fmt_int),
            "verdict": ranks["verdict"],
            "published on": ranks["published_hardware"] + " (" + ranks["reference_kind"] + ")",
            "published order": ranks["published_order"],
            "measured order": ranks["measured_order"],
            "n": ranks["n"].map(_fmt_int),
            "Kendall tau": ranks["tau"].map(lambda v: _fmt(v, "%.2f")),
            "p": ranks["p_value"].map(lambda v: _fmt(v, "%.2g")),
            "swapped": ranks["swapped"],
        }
    )
    return table_of(
        "Ranking of the frameworks: the published order against the measured one",
        frame,
        "orders: best first (fastest; highest rate or accuracy); Kendall's tau: 1 = the same order, "
        "-1 = reversed; swapped pairs within noise: their 95% CIs overlap.",
    )


def _rate(framework, rate, joules, window):
    return "%s %s%s" % (display(framework), numbers.rate(rate), costs.per_sample(joules, window))


def headline(answer):
    """The lines a reader wants first: per spec, variant, device, mode, batch size and setting (model.LIKE) the
    fastest and slowest framework (samples/s, J per sample where measured; the order's caveats: a smoke pass, timers
    that differ); how many published cells were compared, by verdict; what did not finish."""
    lines, groups = [], {}
    if answer.smoke:
        lines.append(
            "Smoke pass (--quick): %s; few iterations a job, so its times, orders and fractions of peak are "
            "indications, never figures of the full protocol." % ", ".join(answer.smoke)
        )
    for f in answer.fastest:
        groups.setdefault((f.spec, f.variant, f.device_name, f.mode, f.unit), []).append(
            "b%d%s %s"
            % (
                f.batch_size,
                " %s:" % f.setting if f.setting else "",
                _rate(f.best, f.best_rate, f.best_joules, f.best_window),
            )
            + (" / %s" % _rate(f.worst, f.worst_rate, f.worst_joules, f.worst_window) if f.worst else "")
            + (" (%s)" % "; ".join(f.caveats) if f.caveats and f.worst else "")
        )
    for (spec, variant, device, mode, unit), per in groups.items():
        lines.append("%s on %s (%s mode), fastest / slowest, %s: %s" % (variant, device, mode, unit, "; ".join(per)))
    if len(answer.cells):
        tally = answer.cells["verdict"].value_counts()
        lines.append(
            "%s compared with the published values: %s"
            % (numbers.count(len(answer.cells), "cell"), ", ".join("%d %s" % (n, w) for w, n in tally.items()))
        )
    else:
        lines.append("No published value matches a measured cell.")
    if answer.not_measured:
        lines.append(
            "Not measured: %s (reasons in the results' footnotes)."
            % ", ".join(numbers.count(n, "job") + " " + status for status, n in answer.not_measured.items())
        )
    return lines


def context(answer):
    """Everything the templates show of a BundleAnswer (figures as plots.Plot with PNG bytes)."""
    summary = answer.summary
    peak_table, since = efficiency(answer.efficiency, answer.then_and_now)
    return {
        "bundle_ids": answer.ids,
        "headline": headline(answer),
        "bundles": bundle_table(answer.bodies),
        "environment": environment(answer.bodies, summary),
        "results": results(summary, answer.timers),
        "prices": Table(*priced) if (priced := costs.prices(answer)) else None,
        "comparison": comparison(answer.cells) if len(answer.cells) else None,
        "ranking": ranking(answer.rankings) if len(answer.rankings) else None,
        "sentences": [ranking_text.sentence(r) for r in answer.rankings.itertuples()],
        "efficiency": peak_table,
        "then_and_now": since,
        "figures": plots.all_plots(summary, answer.samples, answer.efficiency),
        "figure_size": (plots.WIDTH_PX, plots.HEIGHT_PX),
    }


def write_figures(out, figures):
    """Write ``figures`` (plots.Plot) as out/figures/<name>.png, after removing the PNGs an earlier report left
    there; returns their paths."""
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for old in (out / "figures").glob("*.png"):
        old.unlink()
    paths = []
    for figure in figures:
        path = out / "figures" / (figure.name + ".png")
        path.write_bytes(figure.png)
        paths.append(path)
    return paths


def write(answer, out, site=None):
    """Write report.html, report.md and figures/*.png of a BundleAnswer into folder ``out``; returns the paths
    (Report). ``site``: {"up": the path to the results site's root, "data": [(label, href)]}, a page of the site
    (its navigation bar and data links in the HTML); None: a report of its own."""
    out = Path(out)
    ctx = dict(context(answer), site=site)
    report = Report(out / "report.html", out / "report.md", headline=ctx["headline"])
    report.figures = write_figures(out, ctx["figures"])
    report.html.write_text(TEMPLATES.get_template("report.html.j2").render(ctx, d=ctx))
    report.markdown.write_text(TEMPLATES.get_template("report.md.j2").render(ctx, d=ctx))
    return report
