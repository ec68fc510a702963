"""Rich renderings of what the tasks return: specs layer by layer, result rows, tables, problems."""
import re

import pandas as pd
from rich.table import Table

from dlrepro.cli.console import MARK, console
from dlrepro.results import bundle, numbers, palette, report
from dlrepro.results.answers import verdicts as words
from dlrepro.references import KINDS
from dlrepro.run import hostinfo
from runner import shapes


def layer_summary(layer):
    """A compact description of a layer: "conv 3x3/2 64", composite layers by their branches."""
    kind = layer["type"]
    if kind == "conv":
        text = "conv %dx%d%s %d" % (layer["kernel"], layer["kernel"],
                                    "/%d" % layer["stride"] if layer.get("stride", 1) != 1 else "", layer["filters"])
        return text + (" p%d" % layer["pad"] if layer.get("pad") else "")
    if kind in ("residual", "concat"):
        parts = [(key, layer.get(key)) for key in ("body", "shortcut", "after") if layer.get(key)]
        return " | ".join("%s: %s" % (key, ", ".join(layer_summary(l) for l in branch)) for key, branch in parts) + \
            (" | shortcut: identity" if kind == "residual" and not layer.get("shortcut") else "")
    settings = ", ".join("%s=%s" % (k, v) for k, v in layer.items() if k not in ("type", "name"))
    return "%s%s" % (kind, " (%s)" % settings if settings else "")


def spec_list(specs):
    """One line per spec and one per variant: parameters, data, batch sizes per device."""
    for s in specs:
        console.print("[bold]%s[/]: %s" % (s.name, s.title))
        for vname, v in s.variants.items():
            m = s.models[v.model]
            console.print("  %-12s %s parameters, %s, batch sizes %s" % (
                vname, format(m.parameters, ","), v.data.kind if v.data.kind == "synthetic" else v.data.name,
                ", ".join("%s %s" % (d, b) for d, b in v.batch_sizes.items())))


def spec_detail(s, unsupported):
    """A spec in full: each model layer by layer with shapes and parameters, each variant, which framework
    cannot express it (``unsupported``: [(variant, framework, reason)]), and its published references."""
    console.print("[bold]%s[/]: %s\nstudy: %s\nsource: %s\nframeworks: %s" % (
        s.name, s.title, s.study, s.source, ", ".join(s.frameworks)))
    for mname, m in s.models.items():
        table = Table(title="model %s: %s parameters" % (mname, format(m.parameters, ",")), caption=m.source)
        for column in ("layer", "settings", "input", "output", "parameters"):
            table.add_column(column, justify="right" if column == "parameters" else "left")
        for layer, shape_in, shape_out, params in shapes.trace(m.layer_dicts(), m.input_shape):
            table.add_row(layer["type"], layer_summary(layer), str(shape_in), str(shape_out), format(params, ","))
        console.print(table)
        console.print("initialisation of %s: %s%s" % (mname, "; ".join(
            "%s: %s" % (f, _init_text(m.init_for(f), f)) for f in s.frameworks),
            " (per framework: %s)" % m.framework_init_source if m.framework_init_source else ""))
    for vname, v in s.variants.items():
        console.print("[bold]variant %s[/]: %s" % (vname, v.description))
        console.print_json(data=v.model_dump(mode="json", exclude={"description"}, exclude_none=True))
        for variant, framework, reason in unsupported:
            if variant == vname:
                console.print("[yellow]unsupported[/] %s on %s: %s" % (vname, framework, reason))
    references(s)


def _init_text(init, framework):
    from runner.adapters.capabilities import DEFAULT_INIT

    if init.scheme == "default":
        return "default, %s" % DEFAULT_INIT[framework]
    return init.scheme + (" +-%g" % init.scale if init.scale else "")


def references(s):
    """The spec's published references as one table per kind, and what could not be retrieved."""
    for kind in KINDS:
        refs = [r for r in s.references if r.kind == kind]
        if not refs:
            continue
        table = Table(title="references: %s (%d)" % (kind, len(refs)))
        for column in ("variant", "framework", "hardware", "batch", "metric", "value", "source"):
            table.add_column(column, overflow="fold")
        for r in refs:
            value = "%s-%s" % tuple(r.value) if isinstance(r.value, list) else "%g" % r.value
            table.add_row(r.variant or "-", "%s %s" % (r.framework, r.framework_version or ""), r.hardware,
                          str(r.batch_size or ""), r.metric, "%s %s" % (value, r.unit), r.source)
        console.print(table)
    for m in s.missing_references:
        console.print("[yellow]missing[/] %s: %s (%s; %s)" % (m.id, m.what, m.where, m.status))


def summary_table(rows, title):
    """bundle.json's job rows as a table: status, median, IQR, throughput, parameters, accuracy."""
    table = Table(title=title)
    for column in ("job", "status", "median (s)", "IQR (s)", "per", "throughput (samples/s)", "parameters", "accuracy",
                   "study's quantity"):
        table.add_column(column, justify="left" if column in ("job", "status") else "right",
                         overflow="fold" if column == "job" else "ellipsis")
    for r in rows:
        table.add_row(r["job_id"], MARK.get(r["status"], r["status"]),
                      "%.4g" % r["median"] if r["median"] is not None else "",
                      "%.2g" % r["iqr"] if r["iqr"] is not None else "",
                      (r["quantity"] or "").replace("seconds per ", ""),
                      "%.4g" % r["throughput"] if r["throughput"] is not None else "",
                      format(r["parameters"], ",") if r["parameters"] else "",
                      "%.2f%%" % (100 * r["final_test_accuracy"]) if r["final_test_accuracy"] is not None else "",
                      "%.1f s loop" % r["total_seconds"] if r["total_seconds"] is not None else
                      "%.3g s / 1000 images" % r["seconds_per_1000_images"] if r["seconds_per_1000_images"] else "")
    console.print(table)


def _cell(value):
    if pd.api.types.is_scalar(value) and pd.isna(value):
        return ""
    if isinstance(value, float):
        return "%.4g" % value
    return str(value)


def summary_frame(frame, columns, title):
    """A rich table of ``columns`` of a DataFrame: floats to 4 significant digits, nulls blank."""
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in frame[columns].itertuples(index=False):
        table.add_row(*(MARK.get(v, _cell(v)) if isinstance(v, str) else _cell(v) for v in row))
    return table


def datasets_table(root, rows):
    """datasets.status() rows: files cached of the catalogued ones, and whether they re-hash to their SHA-256."""
    table = Table(title="datasets (cache: %s)" % root)
    for column in ("dataset", "files cached", "verified", "title"):
        table.add_column(column)
    for name, title, have, total, verified in rows:
        table.add_row(name, "%d of %d" % (have, total), ("[green]yes[/]" if verified else "[red]NO[/]")
                      if have else "-", title)
    console.print(table)


def problems(found):
    """One red line per Problem: ``CHECK FILE: MESSAGE``."""
    for p in found:
        console.print("[red]%s[/] %s: %s" % (p.check, p.file, p.message))


def _verdict(word):
    """A verdict word in its colour (palette)."""
    return "[%s]%s[/]" % (palette.verdict_colour(word), word)


def _values(values, unit, alongside=()):
    """(header unit, texts) for a column of values in ``unit`` ('s', 'images/s', 'fraction'): ms when they and
    ``alongside`` (the other columns shown in the same unit) are all below a second, thousands separators for
    rates, percent for fractions."""
    if unit == "s":
        shown = numbers.time_unit(list(values) + list(alongside))
        return shown, [numbers.in_unit(v, shown) for v in values]
    if unit == "fraction":
        return "%", [numbers.percent(v) for v in values]
    return unit, [numbers.rate(v) for v in values]


SAME = "unchanged"  # the closing line's word for verdicts.NO_CHANGE


def shared(found):
    """How many configurations two bundles both measured (bundle against bundle)."""
    return int((~found.cells["verdict"].isin([words.ONLY_IN_A, words.ONLY_IN_B])).sum())


def comparison(found, min_effect=None, alpha=None):
    """A compare.Comparison. Bundle against bundle: one row per configuration, before (A) / after (B) in one
    unit, the change in %, the test's p and the verdict, then a closing line ('4 unchanged, 0 slower, 0
    faster; alpha 0.01, min effect 5%'). Against the published values: one table per published source and
    hardware with the unit in its header, and the ranking in one line under it."""
    if found.kind == "bundle":
        _regression(found, min_effect, alpha)
        return
    if found.cells.empty:
        console.print("no job of %s matches a published reference of spec %s" % (found.bundle.name, found.spec))
        return
    cells = found.cells.sort_values(["variant", "batch_size", "framework"])
    for (kind, hardware, metric, unit), group in cells.groupby(
            ["reference_kind", "published_hardware", "metric", "unit"], sort=True, dropna=False):
        shown, measured = _values(group["measured"], unit, group["published"])
        _, published = _values(group["published"], unit, group["measured"])
        sources = sorted({re.sub(r"\b([0-9a-f]{7})[0-9a-f]{33}\b", r"\1", s) for s in group["source"]})
        table = Table(title="%s, %s on %s; here on %s" % (
            metric.replace("_", " "), kind.replace("_", " "), hardware,
            ", ".join(sorted(set(group["measured_hardware"])))), caption="; ".join(sources))
        for column in ("variant", "batch", "framework", "here (%s)" % shown, "published (%s)" % shown,
                       "measured / published", "verdict"):
            table.add_column(column, justify="left" if column in ("variant", "framework", "verdict") else "right")
        for row, m, p in zip(group.itertuples(), measured, published):
            table.add_row(row.variant, str(int(row.batch_size)), palette.name(row.framework), m, p,
                          numbers.ratio(row.ratio), _verdict(row.verdict))
        console.print(table)
        ranks = found.rankings
        for rank in ranks[(ranks["reference_kind"] == kind) & (ranks["published_hardware"] == hardware)
                          & (ranks["metric"] == metric)].itertuples() if ranks is not None else ():
            console.print(report.ranking_sentence(rank), soft_wrap=True)


def _regression(found, min_effect, alpha):
    cells = found.cells.assign(_batch=pd.to_numeric(found.cells["batch_size"], errors="coerce")).sort_values(
        ["variant", "framework", "device", "_batch"])
    unit, before = _values(cells["median_a"], "s", cells["median_b"])
    _, after = _values(cells["median_b"], "s", cells["median_a"])
    extra = [c for c in ("change_low", "change_high") if c in cells]
    table = Table(title="after %s against before %s (spec %s): seconds per %s" % (
        found.bundle.name, found.against.name, found.spec, "/".join(sorted(set(cells["sample"].dropna()))) or "sample"))
    columns = ["variant", "framework", "device", "batch", "repeats", "before (%s)" % unit, "after (%s)" % unit,
               "Δ%"] + (["Δ% interval"] if len(extra) == 2 else []) + ["p", "verdict"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("variant", "framework", "device", "verdict") else "right")
    for row, a, b in zip(cells.itertuples(), before, after):
        interval = ["%s to %s" % (numbers.change(getattr(row, "change_low")), numbers.change(getattr(row, "change_high")))
                    if pd.notna(getattr(row, "change_low")) else ""] if len(extra) == 2 else []
        table.add_row(row.variant, palette.name(row.framework), row.device, _cell(row.batch_size),
                      "%s/%s" % (_cell(row.n_a) or "-", _cell(row.n_b) or "-"), a, b, numbers.change(row.change),
                      *interval, "" if pd.isna(row.p_value) else "%.2g" % row.p_value, _verdict(row.verdict))
    console.print(table)
    tally = cells["verdict"].value_counts()
    line = ", ".join("%d %s" % (tally.get(w, 0), SAME if w == words.NO_CHANGE else w)
                     for w in (words.NO_CHANGE, words.SLOWER, words.FASTER))
    line += "".join(", %d %s" % (tally[w], w) for w in (words.CANNOT_TELL, words.ONLY_IN_A, words.ONLY_IN_B)
                    if tally.get(w))
    settings = [s for s in ("alpha %g" % alpha if alpha is not None else "",
                            "min effect %s" % numbers.percent(min_effect, 0) if min_effect is not None else "") if s]
    console.print(line + ("; " + ", ".join(settings) if settings else ""), soft_wrap=True)


def _remedy(folder):
    """The recorded remedy of a bundle's skipped or failed jobs, as a command where it names one."""
    for job in bundle.body(folder)["jobs"]:
        found = re.search(r"`([^`]+)`", job.get("remedy") or "")
        if job.get("status") in ("skipped", "failed") and found:
            return found.group(1)
    return None


def _hardware(folder):
    """(device classes, CPU or GPU model, frameworks) of a bundle, from its bundle.json."""
    body = bundle.body(folder)
    jobs = body["jobs"]
    devices = sorted({j.get("device") for j in jobs if j.get("device")})
    gpus = sorted({g["name"] for g in (body.get("host") or {}).get("gpus") or []})
    model = ", ".join(gpus) if "cuda" in devices and gpus else ((body.get("host") or {}).get("cpu") or {}).get("model", "")
    return ", ".join(devices), model, ", ".join(sorted({palette.name(j["framework"]) for j in jobs if j.get("framework")}))


def bundles(rows, spec=None):
    """bundle.listing() rows (those of ``spec`` where given): state, spec, device, CPU or GPU model,
    frameworks, job counts; the next step of each as a numbered footnote under the table, one copyable line
    (the recorded remedy where the jobs were skipped for it, else the command that continues the bundle)."""
    rows = [r for r in rows if spec is None or r["spec"] == spec]
    table = Table(title="bundles (%d)%s" % (len(rows), " of spec %s" % spec if spec else ""))
    for column in ("bundle", "state", "spec", "device", "hardware", "frameworks", "ok", "failed", "skipped",
                   "missing", "next"):
        table.add_column(column, overflow="fold", no_wrap=column == "bundle",
                         justify="right" if column in ("ok", "failed", "skipped", "missing") else "left")
    steps = []
    for r in rows:
        c = r["counts"]
        if r["state"] == "partial":
            state = "partial (being written by pid %s)" % r["running"]["pid"] if hostinfo.alive(r["running"]) \
                else "partial (submitted to Slurm: array %s)" % ", ".join(r["submitted"]) if r.get("submitted") \
                else "partial (its run ended)"
        else:
            state = r["state"]
        step = ""
        remedy = _remedy(r["folder"]) if c["skipped"] or c["failed"] else None
        if remedy:
            step = remedy
        elif r["state"] == "partial" or c["missing"] or c["skipped"]:
            step = "invoke run --resume %s" % r["id"] + ("; or invoke publish %s" % r["id"]
                                                          if r["state"] == "partial" and not r.get("submitted") else "")
        elif c["failed"]:
            step = "invoke run --resume %s --retry-failed" % r["id"]
        if step:
            steps.append(step)
        table.add_row(r["id"], state, r["spec"], *_hardware(r["folder"]),
                      *(str(c[k]) for k in ("ok", "failed", "skipped", "missing")),
                      "[%d]" % len(steps) if step else "")
    console.print(table)
    for i, step in enumerate(steps, 1):
        console.print("[%d] %s" % (i, step), soft_wrap=True, highlight=False, markup=False)
