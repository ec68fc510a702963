"""Rich renderings of what the tasks return: specs layer by layer, result rows, tables, problems."""
from rich.table import Table

from dlrepro.cli.console import MARK, console
from dlrepro.run import hostinfo


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
    import pandas as pd

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
        if r["state"] == "partial" or c["missing"] or c["skipped"]:
            step = "dlrepro run --resume %s" % r["id"] + ("; or dlrepro finalize %s" % r["id"]
                                                          if r["state"] == "partial" and not r.get("submitted") else "")
        elif c["failed"]:
            step = "dlrepro run --resume %s --retry-failed" % r["id"]
        table.add_row(r["id"], state, r["spec"], r["created"] or "", *(str(c[k]) for k in
                                                                         ("ok", "failed", "skipped", "missing")), step)
    console.print(table)
