"""Terminal output with rich: run progress, per-job lines, result tables, errors."""
import contextlib
import sys

import pandas as pd
from invoke import Exit
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from dlrepro.errors import DlreproError
from dlrepro.runs import Reporter

# logs and CI output are not terminals: give tables room rather than rich's 80 columns
console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
MARK = {"ok": "[green]ok[/]", "failed": "[red]failed[/]", "skipped": "[yellow]skipped[/]"}


def job_line(job_id, result):
    """One line for a finished job: status, median and spread, throughput, parameters, or the reason."""
    status = result["status"]
    line = "%s %s" % (MARK.get(status, status), job_id)
    timing = result.get("timing")
    if status == "ok" and timing:
        s = timing["summary"]
        line += "  %.4g s (IQR %.2g) %s, %.4g %s" % (s["median"], s["iqr"], timing["quantity"],
                                                     timing["throughput"], timing["throughput_unit"])
        params = result.get("parameters")
        if params:
            line += ", %s parameters" % format(params["measured"], ",")
            for c in params.get("conventions") or []:
                line += " (+%s by convention: %s)" % (format(c["difference"], ","), c["name"])
        conv = result.get("convergence") or {}
        if conv.get("final_test_accuracy") is not None:
            line += ", test accuracy %.2f%%" % (100 * conv["final_test_accuracy"])
        if conv.get("final_perplexity") is not None:
            line += ", test perplexity %.1f" % conv["final_perplexity"]
        if conv:
            line += ", %.1f s for %d epochs" % (conv["total_seconds"], len(conv["epochs"]))
        if result.get("inference"):
            line += ", %.3g s per 1000 images" % result["inference"]["seconds_per_1000_images"]
    elif result.get("reason"):
        line += ": " + result["reason"]
        if result.get("remedy"):
            line += "\n    remedy: " + result["remedy"]
    return line


class RichReporter(Reporter):
    def __init__(self):
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)
        self.task = None

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def log(self, message):
        self.progress.console.print("[dim]%s[/]" % message)

    def started(self, total):
        self.task = self.progress.add_task("jobs", total=total)

    def job_started(self, job_id):
        self.progress.update(self.task, description=job_id)

    def job_finished(self, job_id, result):
        self.progress.console.print(job_line(job_id, result))
        self.progress.advance(self.task)


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


def summary_table(rows, title):
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


@contextlib.contextmanager
def user_errors():
    """Turn the suite's errors into a red message and exit status 1 (no traceback)."""
    try:
        yield
    except DlreproError as exc:
        console.print("[red]error:[/] %s" % exc)
        raise Exit(code=1) from None
