"""Rich renderings of what the tasks return: specs layer by layer, result rows, tables, problems."""

import re

import pandas as pd
from rich.table import Table
from rich.text import Text

from dlrepro.answers import model
from dlrepro.answers import verdicts as words
from dlrepro.cli.console import MARK, console
from dlrepro.inputs.frameworks import display
from dlrepro.plan import hostinfo
from dlrepro.views import numbers, palette, ranking_text


def summary_table(rows, title):
    """bundle.json's job rows as a table: status, median, IQR, throughput, parameters, accuracy."""
    table = Table(title=title)
    for column in (
        "job",
        "status",
        "median (s)",
        "IQR (s)",
        "per",
        "throughput (samples/s)",
        "parameters",
        "accuracy",
        "study's quantity",
    ):
        table.add_column(
            column,
            justify="left" if column in ("job", "status") else "right",
            overflow="fold" if column == "job" else "ellipsis",
        )
    for r in rows:
        table.add_row(
            r["job_id"],
            MARK.get(r["status"], r["status"]),
            "%.4g" % r["median"] if r["median"] is not None else "",
            "%.2g" % r["iqr"] if r["iqr"] is not None else "",
            (r["quantity"] or "").replace("seconds per ", ""),
            "%.4g" % r["throughput"] if r["throughput"] is not None else "",
            format(r["parameters"], ",") if r["parameters"] else "",
            "%.2f%%" % (100 * r["final_test_accuracy"]) if r["final_test_accuracy"] is not None else "",
            "%.1f s loop" % r["total_seconds"]
            if r["total_seconds"] is not None
            else "%.3g s / 1000 images" % r["seconds_per_1000_images"]
            if r["seconds_per_1000_images"]
            else "",
        )
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
        table.add_row(
            name, "%d of %d" % (have, total), ("[green]yes[/]" if verified else "[red]NO[/]") if have else "-", title
        )
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


def _print(text):
    console.print(text, soft_wrap=True, highlight=False, markup=False)


def check(answer):
    """A BundleAnswer against the published values: one table per published source and hardware with the unit in its
    header, the ranking in one line under it, and what gave no cell in one line per table ('not compared: PyTorch,
    JAX: no published number in this table; Torch: not run by this suite'), then the jobs at configurations no
    reference covers. Each cell shows its ratio's 95% interval and the tolerance its verdict rests on, a "differs"
    its direction; frameworks timed differently are named."""
    left = answer.left_out
    keyed = left[left["reference_kind"].notna()]
    cells = answer.cells.sort_values(["variant", "batch_size", "framework"])
    groups = {
        key[:3]: group
        for key, group in cells.groupby(
            ["reference_kind", "published_hardware", "metric", "unit"], sort=True, dropna=False
        )
    }
    for key in sorted(set(groups) | set(zip(keyed["reference_kind"], keyed["published_hardware"], keyed["metric"]))):
        kind, hardware, metric = key
        group = groups.get(key)
        if group is not None:
            _published_table(group, answer.rankings)
        else:
            console.print("%s: no cell here" % published_table_name(metric, kind, hardware), soft_wrap=True)
        mine = keyed[
            (keyed["reference_kind"] == kind) & (keyed["published_hardware"] == hardware) & (keyed["metric"] == metric)
        ]
        if len(mine):
            _print("not compared: %s" % _left_out(mine))
    for (spec, mode), lines in sorted(answer.timers.items()):
        _print(
            "timed differently (on a GPU, two different quantities: docs/gpu.md), %s %s: %s"
            % (spec, mode, "; ".join(lines))
        )
    elsewhere = left[left["reference_kind"].isna()]
    for variant, group in elsewhere.groupby("variant", sort=True):
        _print(
            "not compared: %s at %s, batch %s: %s"
            % (
                ", ".join(sorted({display(f) for f in group["framework"]}, key=str.lower)),
                variant,
                ", ".join(str(int(b)) for b in sorted(set(group["batch_size"]))),
                group["reason"].iloc[0],
            )
        )


def published_table_name(metric, kind, hardware):
    """'seconds per minibatch, third party rerun on NVIDIA GTX Titan X (Maxwell)': one published table."""
    return "%s, %s on %s" % (metric.replace("_", " "), kind.replace("_", " "), hardware)


def _left_out(rows):
    """'PyTorch, JAX: no published number in this table; Theano, Torch: not run by this suite' of left_out rows."""
    names = {}
    for row in rows.itertuples():
        shown = display(row.framework) if isinstance(row.framework, str) else row.published_framework
        names.setdefault(row.reason, []).append(shown)
    return "; ".join("%s: %s" % (", ".join(sorted(set(n), key=str.lower)), reason) for reason, n in names.items())


def _published_table(group, ranks):
    """One published table (cells of one reference kind, hardware, metric and unit) and its rankings' lines; each
    reason once, as a numbered note under it."""
    kind, hardware, metric, unit = (
        group[c].iloc[0] for c in ("reference_kind", "published_hardware", "metric", "unit")
    )
    shown, measured = _values(group["measured"], unit, group["published"])
    _, values = _values(group["published"], unit, group["measured"])
    sources = sorted({re.sub(r"\b([0-9a-f]{7})[0-9a-f]{33}\b", r"\1", s) for s in group["source"]})
    table = Table(
        title="%s; here on %s"
        % (published_table_name(metric, kind, hardware), ", ".join(sorted(set(group["measured_hardware"])))),
        caption="; ".join(sources),
    )
    threads = group["threads"].notna().any()
    for column in (
        ("variant", "batch", "framework")
        + (("threads",) if threads else ())
        + (
            "here (%s)" % shown,
            "published (%s)" % shown,
            "measured / published",
            "95% interval",
            "tolerance",
            "verdict",
        )
    ):
        table.add_column(column, justify="left" if column in ("variant", "framework", "verdict") else "right")
    notes = {}
    for row, m, p in zip(group.itertuples(), measured, values):
        mark = ""
        if row.verdict not in (words.REPRODUCES, words.DIFFERS) and isinstance(row.why, str):
            mark = " [%d]" % notes.setdefault(row.why, len(notes) + 1)
        interval, tolerance = (_cell(row.ratio_interval), _cell(row.tolerance))
        said = _verdict(row.verdict) + (
            " (%s)" % row.direction if row.verdict == words.DIFFERS and isinstance(row.direction, str) else ""
        )
        table.add_row(
            row.variant,
            str(int(row.batch_size)),
            display(row.framework),
            *((_cell(row.threads),) if threads else ()),
            m,
            p,
            numbers.ratio(row.ratio),
            interval,
            tolerance,
            said + mark,
        )
    console.print(table)
    for why, number in notes.items():
        _print("[%d] %s" % (number, why))
    for rank in (
        ranks[
            (ranks["reference_kind"] == kind) & (ranks["published_hardware"] == hardware) & (ranks["metric"] == metric)
        ].itertuples()
        if ranks is not None
        else ()
    ):
        console.print(ranking_text.sentence(rank), soft_wrap=True)


def _side(side):
    return "%s (%s; %s; %s)" % (
        side.bundle,
        side.host or "host unknown",
        side.cpu or "CPU unknown",
        ", ".join(side.gpus) or "no GPU",
    )


def _shown(row, column):
    """A varying configuration column's text in a comparison row; the timer as 'A / B' where the sides differ."""
    if column == "timer":
        a, b = _cell(row.timer_a), _cell(row.timer_b)
        if row.verdict in (words.ONLY_IN_A, words.ONLY_IN_B):
            return a or b
        return a if a == b else "%s / %s" % (a or model.UNRECORDED, b or model.UNRECORDED)
    return _cell(getattr(row, column))


def comparison(found):
    """A Comparison of bundle B against A: first the sides that are a smoke pass, then the two bundles' hosts and
    devices, what differs between them beyond the configurations (yellow), then one row per configuration, before
    (A) / after (B) in one unit, the configuration columns whose values differ between rows (precision, threads,
    version, the timer as A / B, ...), the change in %, its interval, the test's p and the verdict (a "cannot tell"
    or "not comparable" marked [N], its reason as footnote N under the table, one per distinct reason), a closing
    line ('4 unchanged, 0 slower, 0 faster; alpha 0.01, min effect 5%') and the advice when the repeats cannot give
    a verdict."""
    a, b = found.sides
    for name, bid in found.smoke:  # first, before any change: a smoke pass's changes are indications
        console.print(
            "[yellow]smoke pass:[/] %s (%s) was run with --quick, a few iterations a job: its changes below "
            "are indications, never verdicts" % (name, bid),
            soft_wrap=True,
            highlight=False,
        )
    _print("A (before): %s" % _side(a))
    _print("B (after):  %s" % _side(b))
    for line in found.differs:
        console.print("[yellow]differs:[/] %s" % line, soft_wrap=True, highlight=False)
    cells = found.cells.assign(_batch=pd.to_numeric(found.cells["batch_size"], errors="coerce")).sort_values(
        ["variant", "framework", "device", "_batch"]
    )
    unit, before = _values(cells["median_a"], "s", cells["median_b"])
    _, after = _values(cells["median_b"], "s", cells["median_a"])
    table = Table(
        title="after %s against before %s (spec %s): seconds per %s"
        % (b.bundle, a.bundle, found.spec, "/".join(sorted(set(cells["sample"].dropna()))) or "sample")
    )
    shown = [c for c in found.varying if c not in ("framework_version",)]
    columns = (
        ["variant", "framework", "device", "batch"]
        + shown
        + ["repeats", "before (%s)" % unit, "after (%s)" % unit, "Δ%", "Δ% interval", "p", "verdict"]
    )
    for column in columns:
        table.add_column(column, justify="left" if column in ("variant", "framework", "device", "verdict") else "right")
    notes = {}  # (verdict, reason) of each "cannot tell" and "not comparable" -> its footnote number
    for row, x, y in zip(cells.itertuples(), before, after):
        interval = (
            "%s to %s" % (numbers.change(row.change_low), numbers.change(row.change_high))
            if pd.notna(row.change_low)
            else ""
        )
        mark = ""
        if row.verdict in (words.CANNOT_TELL, words.NOT_COMPARABLE) and isinstance(row.reason, str) and row.reason:
            mark = " [%d]" % notes.setdefault((row.verdict, row.reason), len(notes) + 1)
        version = ""
        if "framework_version" in found.varying and isinstance(row.framework_version, str):
            upgrade = isinstance(row.framework_version_b, str) and row.framework_version_b != row.framework_version
            version = row.framework_version + (" -> " + row.framework_version_b if upgrade else "")
        table.add_row(
            row.variant,
            " ".join(filter(None, [display(row.framework), version])),
            row.device,
            _cell(row.batch_size),
            *(_shown(row, c) for c in shown),
            "%s/%s" % (_cell(row.n_a) or "-", _cell(row.n_b) or "-"),
            x,
            y,
            numbers.change(row.change),
            interval,
            "" if pd.isna(row.p_value) else "%.2g" % row.p_value,
            _verdict(row.verdict) + mark,
        )
    console.print(table)
    for (verdict, reason), number in notes.items():
        _print("[%d] %s: %s" % (number, verdict, reason))
    tally = cells["verdict"].value_counts()
    line = ", ".join(
        "%d %s" % (tally.get(w, 0), SAME if w == words.NO_CHANGE else w)
        for w in (words.NO_CHANGE, words.SLOWER, words.FASTER)
    )
    line += "".join(
        ", %d %s" % (tally[w], w)
        for w in (words.CANNOT_TELL, words.NOT_COMPARABLE, words.ONLY_IN_A, words.ONLY_IN_B)
        if tally.get(w)
    )
    console.print(
        line + "; alpha %g, min effect %s" % (found.alpha, numbers.percent(found.min_effect, 0)), soft_wrap=True
    )
    if found.advice:
        console.print("[yellow]advice:[/] %s" % found.advice, soft_wrap=True, highlight=False)


def _group(row):
    """The heading of the bundles run alike: 'AMD EPYC (cpu), fp32: jax mxnet tensorflow torch' of a
    bundle.listing() row: the CPU or GPU model without its vendor's marks ("NVIDIA", "(R)", "Processor"; "2x"
    for two alike), the device class, the precision and the framework codes."""
    models = [
        re.sub(r"\s+", " ", re.sub(r"NVIDIA |\((R|TM)\)|\bCPU\b|\bProcessor\b|@.*", "", m)).strip()
        for m in row["hardware"]
        if m
    ]
    shown = ", ".join(
        "%s%s" % ("%dx " % models.count(m) if models.count(m) > 1 else "", m) for m in sorted(set(models))
    )
    return "%s(%s), %s: %s" % (
        shown + " " if shown else "",
        "+".join(row["devices"]),
        row["precision"],
        " ".join(row["frameworks"]) or "no job",
    )


def _state(row):
    """A bundle's state in words: 'complete', 'complete, nothing ran' (every job skipped), 'complete, every job
    failed', or what a partial bundle is waiting for (a live run, a Slurm array, or nobody)."""
    c = row["counts"]
    if row["state"] != "partial":
        return row["state"] + (
            ", nothing ran" if not c["ok"] and not c["failed"] else ", every job failed" if not c["ok"] else ""
        )
    if hostinfo.alive(row["running"]):
        return "partial (being written by pid %s)" % row["running"]["pid"]
    if row.get("submitted"):
        return "partial (submitted to Slurm: array %s)" % ", ".join(row["submitted"])
    return "partial (its run ended)"


def _jobs(counts):
    """'12/0/0' (ok/failed/skipped), then ' +3 to run' and ' +1 interrupted' where there are any."""
    return "%d/%d/%d" % (counts["ok"], counts["failed"], counts["skipped"]) + "".join(
        " +%d %s" % (counts[k], word)
        for k, word in (("missing", "to run"), ("interrupted", "interrupted"))
        if counts.get(k)
    )


def bundles(rows, spec=None):
    """bundle.listing() rows (those of ``spec`` where given) under one heading per hardware, device, precision
    and frameworks (_group; the groups in the order of their newest bundle, so the newest bundle is the last
    row), one line each in a 100-column terminal (the state of a few takes two in 80): id (the spec is its
    start), state, jobs ok/failed/skipped; each row's next step (its ``next``) as a numbered footnote under the
    table, one copyable line."""
    rows = [r for r in rows if spec is None or r["spec"] == spec]
    title = "bundles (%d)%s" % (len(rows), " of spec %s" % spec if spec else "")
    if not rows:
        console.print(title)
        return
    groups = {}
    for r in rows:
        groups.setdefault(_group(r), []).append(r)
    table = Table(title=title, box=None, padding=(0, 1), pad_edge=False, title_justify="left", header_style="bold")
    ids = max(len(r["id"]) for r in rows) + 2  # the ids never wrap: they are copied from here
    for column in ("bundle", "state", "ok/failed/\nskipped", "next"):
        table.add_column(
            column,
            no_wrap=column == "next",
            width=ids if column == "bundle" else None,
            justify="right" if column.startswith("ok") else "left",
        )
    steps = []
    for heading, members in sorted(groups.items(), key=lambda group: rows.index(group[1][-1])):
        table.add_row(Text(heading, style="bold"), "", "", "")
        for r in members:
            steps += [r["next"]] if r["next"] else []
            table.add_row(
                Text("  " + r["id"], no_wrap=True),
                _state(r),
                _jobs(r["counts"]),
                "[%d]" % len(steps) if r["next"] else "",
            )
    console.print(table, soft_wrap=False)  # fitted to the terminal: the state wraps, not the line
    for i, step in enumerate(steps, 1):
        console.print("[%d] %s" % (i, step), soft_wrap=True, highlight=False, markup=False)
