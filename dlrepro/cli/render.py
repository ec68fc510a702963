"""Rich renderings of what the tasks return: specs layer by layer, result rows, tables, problems."""
import pandas as pd
from rich.table import Table

from dlrepro.cli.console import MARK, console
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


def comparison(found):
    """A compare.Comparison: bundle vs bundle per configuration, or measured vs published per cell and the
    ranking sentences."""
    if found.kind == "bundle":
        shown = ["variant", "framework", "device", "batch_size", "sample", "n_a", "n_b", "median_a", "median_b",
                 "change", "p_value", "verdict"]
        console.print(summary_frame(found.cells, shown, "%s (B) against %s (A), seconds; spec %s" % (
            found.bundle.name, found.against.name, found.spec)))
        return
    if found.cells.empty:
        console.print("no job of %s matches a published reference of spec %s" % (found.bundle.name, found.spec))
        return
    console.print(summary_frame(found.cells, ["variant", "batch_size", "framework", "metric", "measured", "published",
                                              "ratio", "verdict", "published_framework", "published_hardware",
                                              "measured_hardware"],
                                "%s against the published references" % found.bundle.name))
    for sentence in found.rankings["sentence"]:
        console.print("- " + sentence)


def bundles(rows):
    """bundle.listing() rows: state, spec, when, job counts and the command that continues each."""
    table = Table(title="bundles (%d)" % len(rows))
    for column in ("bundle", "state", "spec", "created", "ok", "failed", "skipped", "missing", "next"):
        table.add_column(column, overflow="fold", no_wrap=column == "bundle")
    for r in rows:
        c = r["counts"]
        if r["state"] == "partial":
            state = "partial (being written by pid %s)" % r["running"]["pid"] if hostinfo.alive(r["running"]) \
                else "partial (submitted to Slurm: array %s)" % ", ".join(r["submitted"]) if r.get("submitted") \
                else "partial (its run ended)"
        else:
            state = r["state"]
        step = ""
        if r["state"] == "partial" or c["missing"] or c["skipped"] or c.get("interrupted"):
            step = "invoke run --resume %s" % r["id"] + ("; or invoke publish %s" % r["id"]
                                                          if r["state"] == "partial" and not r.get("submitted") else "")
        elif c["failed"]:
            step = "invoke run --resume %s --retry-failed" % r["id"]
        table.add_row(r["id"], state, r["spec"], r["created"] or "", *(str(c[k]) for k in
                                                                         ("ok", "failed", "skipped", "missing")), step)
    console.print(table)
