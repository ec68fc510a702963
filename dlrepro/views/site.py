"""The results site's own pages, a view of the answer model like the reports it links (dlrepro.cli.site_task writes
them): index.html (every bundle and study record), configurations.html (every configuration, a filter for each of
its keys), configurations/<slug>.html (one configuration's history: a figure and a table, each run's timer and its
verdict against the one before), across.html and across/<slug>.html (one spec, variant, framework, mode and mini-batch
on every host and version: answers.across), studies/<study>.html (the claims x (host, version set) matrix, an anchor
per claim and per cell). HTML only, self-contained (figures as inline SVG or base64 PNG, the filters' script inline),
links relative: the folder can be copied or served as it is. Each page's table is also given as rows (``*_rows``)
that the site writes beside it as JSON.
"""

import re

from dlrepro.answers import model, verdicts
from dlrepro.inputs.frameworks import display
from dlrepro.views import costs, history_svg, numbers, palette, plots
from dlrepro.views.report import TEMPLATES
from dlrepro.views.study_report import rests_on

FIGURE_SIZE = (plots.WIDTH_PX, plots.HEIGHT_PX)
# a configuration key's name as a reader reads it (answers.configkey.LINE)
KEY_LABELS = {
    "spec": "spec",
    "variant": "variant",
    "framework": "framework",
    "framework_version": "version",
    "device": "device",
    "mode": "mode",
    "batch_size": "mini-batch",
    "precision": "precision",
    "layout": "layout",
    "memory_layout": "memory layout",
    "cudnn_autotune": "cuDNN autotune",
    "threads": "CPU threads",
    "thread_pools": "thread pools",
    "gradients": "gradients",
    "ranks": "ranks (GPUs)",
    "sample": "timed sample",
    "device_name": "device model",
}


def key_value(name, value):
    """A configuration key's value as shown: CPU threads None: 'all the host's'; ranks None: '1'; a framework version
    None (a framework that reported none): 'version not reported'; other Nones ''."""
    if value is None:
        return {"threads": "all the host's", "ranks": "1", "framework_version": "version not reported"}.get(name, "")
    return display(value) if name == "framework" else str(value)


def title(configuration):
    """'jax 0.11.2, alexnet alexnet-s, throughput mode, b128, fp32, on NVIDIA H200' of an answers.history
    Configuration (CPU threads and ranks where set)."""
    k = configuration.key
    parts = [
        "%s %s" % (k["framework"], key_value("framework_version", k["framework_version"])),
        "%s %s" % (k["spec"], k["variant"]),
        "%s mode" % k["mode"],
        "b%s" % k["batch_size"],
        k["precision"] or "",
        numbers.count(k["threads"], "thread") if k["threads"] is not None else "",
        numbers.count(k["ranks"], "rank") if k["ranks"] not in (None, 1) else "",
        "on %s" % k["device_name"],
    ]
    return ", ".join(p for p in parts if p)


def _value(value, unit):
    if value is None:
        return ""
    if unit == "s":
        return numbers.in_unit(value, numbers.time_unit([value])) + " " + numbers.time_unit([value])
    return numbers.significant(value) + " " + unit


def _joules(p):
    return (
        "not measured"
        if p.joules is None
        else numbers.significant(p.joules)
        + ("" if p.joules_window is None else " (%s)" % costs.WINDOW % p.joules_window)
    )


def _fraction(value):
    return "" if value is None else "%.1f%%" % (100 * value)


def configuration_rows(configuration, up):
    """The rows of a configuration's table of runs, oldest first (``up``: the path to the site's root)."""
    return [
        {
            "bundle": p.bundle_id,
            "report": "%s%s/report.html" % (up, p.bundle_id),
            "created": p.created,
            "commit": (p.suite_commit or "")[:10],
            "timer": p.timer or model.UNRECORDED,
            "median": _value(p.median, p.unit),
            "interval": "%s to %s" % (_value(p.low, p.unit), _value(p.high, p.unit)) if p.low is not None else "",
            "pass": "smoke pass" if p.smoke else "full run",
            "verdict": p.verdict or "",
            "reason": p.reason or "",
            "joules": _joules(p),
            "usd": "" if p.usd is None else costs.usd(p.usd, p.usd_dated, p.usd_older),
            "colour": palette.verdict_colour(p.verdict),
        }
        for p in configuration.points
    ]


def configuration_page(configuration, up, across_slug=None):
    """The HTML of one configuration's page (``up``: the path from its folder to the site's root; ``across_slug``:
    its page across hardware and versions)."""
    figure = history_svg.history(configuration, title(configuration))
    key = [(KEY_LABELS[name], key_value(name, value)) for name, value in configuration.key.items()]
    return TEMPLATES.get_template("site_configuration.html.j2").render(
        title=title(configuration),
        key=key,
        rows=configuration_rows(configuration, up),
        figure=figure,
        up=up,
        figure_size=figure.size,
        slug=configuration.slug,
        across=across_slug,
    )


def filters(rows, columns):
    """[(column, label, sorted distinct values)] of the columns (KEY_LABELS names, or (column, label) pairs) whose
    rows' ``filters`` hold two values or more: one <select> each."""
    found = []
    for column in columns:
        column, label = column if isinstance(column, tuple) else (column, KEY_LABELS[column])
        values = sorted({r["filters"][column] for r in rows}, key=lambda v: (len(v), v) if v.isdigit() else (0, v))
        if len(values) > 1:
            found.append((column, label, values))
    return found


def configurations_rows(configurations, across_of):
    """The rows of the list of every configuration (``across_of``: {configuration slug: its across page's slug})."""
    return [
        {
            "slug": c.slug,
            "title": title(c),
            "across": across_of.get(c.slug),
            "runs": len(c.points),
            "last": c.points[-1].verdict or "",
            "colour": palette.verdict_colour(c.points[-1].verdict),
            "regressions": sum(p.verdict == verdicts.SLOWER for p in c.points),
            "throughput": numbers.significant(c.points[-1].throughput),
            "filters": {k: key_value(k, v) for k, v in c.key.items()},
        }
        for c in configurations
    ]


def configurations_page(configurations, across_of):
    """The HTML of the list of every configuration, a filter for each key with two values or more, a text search."""
    rows = configurations_rows(configurations, across_of)
    return TEMPLATES.get_template("site_configurations.html.j2").render(
        rows=rows, filters=filters(rows, list(KEY_LABELS)), figure_size=FIGURE_SIZE
    )


def anchor(*parts):
    """An id made of ``parts``, the same for the same parts on every build: 'rnn-accuracy.amd-epyc-7r13.today'."""
    return ".".join(re.sub(r"[^a-z0-9]+", "-", str(p).lower()).strip("-") for p in parts)


def study_cells(matrix):
    """{(claim, column index): the cell as shown} of an answers.matrix.Matrix, each with its anchor."""
    cells = {}
    for (claim, at), cell in matrix.cells.items():
        v, record = cell.best.verdict, cell.best.record
        column = matrix.columns[at]
        cells[(claim, at)] = {
            "verdict": v.verdict,
            "said": v.said,
            "colour": palette.verdict_colour(v.verdict),
            "rests_on": rests_on(v, record.smoke),
            "record": record.name,
            "anchor": anchor(claim, column.host, column.versions),
            "host": column.host,
            "versions": column.versions,
            "claim": claim,
            "mark": " (smoke pass)" if record.smoke else "",
            "evidence": v.evidence or v.reason or "",
            "others": [
                {"said": o.verdict.said, "record": o.record.name, "mark": " (smoke pass)" if o.record.smoke else ""}
                for o in cell.others
            ],
        }
    return cells


def study_page(matrix):
    """The HTML of one study's claims x (host, version set) matrix: an anchor per claim (its id) and per cell."""
    return TEMPLATES.get_template("site_study.html.j2").render(
        m=matrix, cells=study_cells(matrix), figure_size=FIGURE_SIZE, anchor=anchor
    )


def index_page(bundles, studies, matrices, configurations):
    """The HTML of the index: ``bundles`` and ``studies`` as the rows dlrepro.cli.site_task makes of them, the
    studies' matrices and the configurations counted."""
    bundles = [dict(b, filters={"spec": b["spec"], "host": b["host"], "state": b["state"]}) for b in bundles]
    return TEMPLATES.get_template("site_index.html.j2").render(
        bundles=bundles,
        studies=studies,
        matrices=matrices,
        configurations=len(configurations),
        regressions=sum(p.verdict == verdicts.SLOWER for c in configurations for p in c.points),
        filters=filters(bundles, [("spec", "spec"), ("host", "host"), ("state", "state")]),
        figure_size=FIGURE_SIZE,
    )
