"""The results site's own pages and the index's rows, a view of the answer model like the reports it links
(dlrepro.cli.site_task writes them): index.html (every bundle and study record), configurations.html (every
configuration, with selectors), configurations/<slug>.html (one configuration's history: a figure and a table, each
run's timer and its verdict against the one before), studies/<study>.html (the claims x (host, version set)
matrix). HTML only, self-contained (figures as base64 PNG, the selectors' script inline), links relative: the folder
can be copied or served as it is.
"""
from matplotlib.figure import Figure

from dlrepro.inputs.frameworks import display
from dlrepro.answers import model, verdicts
from dlrepro.views import costs, numbers, palette, plots
from dlrepro.views.report import TEMPLATES
from dlrepro.views.study_report import rests_on

MARKERS = {verdicts.SLOWER: "v", verdicts.FASTER: "^"}  # a run slower / faster than the one before; "o" otherwise
FIGURE_SIZE = (plots.WIDTH_PX, plots.HEIGHT_PX)


def title(configuration):
    """'jax 0.11.2, alexnet alexnet-s, throughput mode, b128, fp32, on NVIDIA H200' of an answers.history
    Configuration (CPU threads and ranks where set)."""
    k = configuration.key
    parts = ["%s %s" % (k["framework"], k["framework_version"]), "%s %s" % (k["spec"], k["variant"]),
             "%s mode" % k["mode"], "b%s" % k["batch_size"], k["precision"] or "",
             numbers.count(k["threads"], "thread") if k["threads"] is not None else "",
             numbers.count(k["ranks"], "rank") if k["ranks"] not in (None, 1) else "", "on %s" % k["device_name"]]
    return ", ".join(p for p in parts if p)


def history_plot(configuration):
    """The history figure of an answers.history.Configuration: its median against the run (in the order the bundles
    were made), whiskers at the 95% CI, a run slower or faster than the one before marked (red v, green ^), a smoke
    pass hollow. ``points``: one (bundle id, run, median) per bundle."""
    points = configuration.points
    time = numbers.time_unit([p.median for p in points]) if points[0].unit == "s" else None
    scale = {"ms": 1e3, "us": 1e6, "min": 1 / 60}.get(time, 1)
    fig = Figure(figsize=(plots.WIDTH_PX / plots.DPI, plots.HEIGHT_PX / plots.DPI), dpi=plots.DPI, layout="constrained")
    ax = fig.add_subplot()
    colour = palette.colour(configuration.key["framework"])
    xs = list(range(1, len(points) + 1))
    ax.plot(xs, [p.median * scale for p in points], color=colour, linewidth=1, zorder=1)
    for x, p in zip(xs, points):
        if p.low is not None and p.high is not None:
            ax.plot([x, x], [p.low * scale, p.high * scale], color=colour, linewidth=2, alpha=0.5, zorder=1)
        ax.scatter([x], [p.median * scale], marker=MARKERS.get(p.verdict, "o"), s=60, zorder=2,
                   color="white" if p.smoke else palette.verdict_colour(p.verdict) if p.verdict in MARKERS else colour,
                   edgecolors=palette.verdict_colour(p.verdict) if p.verdict in MARKERS else colour)
    ax.set_xticks(xs, [p.created[:10] for p in points], rotation=30 if len(points) > 6 else 0, fontsize=8)
    ax.set_xlim(0.5, len(points) + 0.5)
    ax.set_xlabel("run (the date its bundle was made)")
    ax.set_ylabel("%s (%s)" % (points[0].quantity or "median", time or points[0].unit))
    ax.set_title(title(configuration), fontsize=9)
    return plots.Plot("history", "History of %s" % title(configuration),
                      "Median %s of each bundle that measured it, whiskers at its 95%% CI; a run the rules of "
                      "`dlrepro compare` find slower than the one before: red v, faster: green ^; a smoke pass "
                      "(--quick): hollow." % (points[0].quantity or "time"), plots.png(fig),
                      points=tuple((p.bundle_id, x, p.median) for x, p in zip(xs, points)))


def _value(value, unit):
    if value is None:
        return ""
    if unit == "s":
        return numbers.in_unit(value, numbers.time_unit([value])) + " " + numbers.time_unit([value])
    return numbers.significant(value) + " " + unit


def configuration_page(configuration, up, matrices=()):
    """The HTML of one configuration's page (``up``: the path from its folder to the site's root; ``matrices``: the
    studies' answers.matrix.Matrix, linked from the page's head)."""
    figure = history_plot(configuration)
    rows = [{"bundle": p.bundle_id, "report": "%s%s/report.html" % (up, p.bundle_id), "created": p.created,
             "commit": (p.suite_commit or "")[:10], "timer": p.timer or model.UNRECORDED,
             "median": _value(p.median, p.unit),
             "interval": "%s to %s" % (_value(p.low, p.unit), _value(p.high, p.unit)) if p.low is not None else "",
             "smoke": "smoke pass" if p.smoke else "", "verdict": p.verdict or "", "reason": p.reason or "",
             "joules": "not measured" if p.joules is None else numbers.significant(p.joules) + (
                 "" if p.joules_window is None else " (%s)" % costs.WINDOW % p.joules_window),
             "usd": "" if p.usd is None else costs.usd(p.usd, p.usd_dated, p.usd_older),
             "colour": palette.verdict_colour(p.verdict)} for p in configuration.points]
    key = [(name, "" if value is None else str(value)) for name, value in configuration.key.items()]
    return TEMPLATES.get_template("site_configuration.html.j2").render(
        title=title(configuration), key=key, rows=rows, figure=figure, up=up, figure_size=figure.size,
        matrices=matrices)


def configurations_page(configurations, matrices=()):
    """The HTML of the list of every configuration, with selectors (spec, framework, device model, mode)."""
    rows = [{"slug": c.slug, "title": title(c), "spec": c.key["spec"], "framework": display(c.key["framework"]),
             "version": c.key["framework_version"], "device": c.key["device_name"], "mode": c.key["mode"],
             "batch": c.key["batch_size"], "runs": len(c.points),
             "last": c.points[-1].verdict or "", "colour": palette.verdict_colour(c.points[-1].verdict),
             "regressions": sum(p.verdict == verdicts.SLOWER for p in c.points)} for c in configurations]
    return TEMPLATES.get_template("site_configurations.html.j2").render(
        rows=rows, selectors=_selectors(rows, ["spec", "framework", "device", "mode"]), figure_size=FIGURE_SIZE,
        matrices=matrices)


def _selectors(rows, columns):
    """{column: sorted distinct values} for the pages' <select> filters."""
    return {c: sorted({str(r[c]) for r in rows}) for c in columns}


def study_page(matrix, matrices=()):
    """The HTML of one study's claims x (host, version set) matrix (``matrices``: every study's, for the head)."""
    cells = {}
    for (claim, at), cell in matrix.cells.items():
        v, record = cell.best.verdict, cell.best.record
        cells[(claim, at)] = {"verdict": v.verdict, "said": v.said, "colour": palette.verdict_colour(v.verdict),
                              "rests_on": rests_on(v, record.smoke), "record": record.name,
                              "mark": " (smoke pass)" if record.smoke else "", "evidence": v.evidence or v.reason or "",
                              "others": [{"said": o.verdict.said, "record": o.record.name,
                                          "mark": " (smoke pass)" if o.record.smoke else ""} for o in cell.others]}
    return TEMPLATES.get_template("site_study.html.j2").render(m=matrix, cells=cells, figure_size=FIGURE_SIZE,
                                                               matrices=matrices)


def _host(row):
    hardware = row["hardware"]
    return ", ".join("%d x %s" % (hardware.count(h), h) if hardware.count(h) > 1 else h
                     for h in dict.fromkeys(hardware))


def bundle_row(row, answer, made):
    """The index row of a bundle: its listing ``row`` (store.bundle.listing), its BundleAnswer, its written
    report (views.report.write's)."""
    summary, body = answer.summary, answer.bodies[0]
    versions = sorted(set((summary["framework"].map(display) + " " + summary["framework_version"].fillna("")).dropna()))
    counts = row["counts"]
    jobs = ", ".join("%d %s" % (n, k) for k, n in counts.items() if n and k != "ok")
    lines = [line for line in made.headline if not line.startswith("Smoke pass")]
    return {"id": row["id"], "report": "%s/report.html" % row["id"], "spec": row["spec"],
            "created": row["created"] or "", "host": _host(row),
            "commit": (((body.get("suite") or {}).get("git") or {}).get("commit") or "")[:10],
            "frameworks": ", ".join(v.strip() for v in versions), "headline": lines[0] if lines else "",
            "state": row["state"] + (" (smoke pass)" if answer.smoke else ""), "jobs": jobs}


def study_row(answer, name):
    """The index row of study record ``name``: its StudyAnswer ``answer``."""
    asked = answer.record.get("asked") or {}
    versions = {"both": "published and today's", "published": "published"}.get(asked.get("versions"), "today's")
    return {"name": name, "report": "%s/study.html" % name, "study": answer.record["study"],
            "created": answer.record["created"], "host": answer.host or "no bundle", "versions": versions,
            "commit": (((answer.record.get("suite") or {}).get("git") or {}).get("commit") or "")[:10],
            "answer": answer.answer, "state": "finished" if answer.record.get("finished") else "not finished"}


def unreadable_row(name, why, **row):
    """An index row of a bundle or record that has no report: ``why``, in its headline or answer cell."""
    return dict({"id": name, "name": name, "report": None, "spec": "", "study": "", "created": "", "host": "",
                 "commit": "", "frameworks": "", "versions": "", "headline": why, "answer": why, "state": "unreadable",
                 "jobs": ""}, **row)


def index_page(bundles, studies, matrices, configurations):
    """The HTML of the index: ``bundles`` and ``studies`` as rows (bundle_row, study_row, unreadable_row), the
    studies' matrices and the configurations counted."""
    return TEMPLATES.get_template("site_index.html.j2").render(
        bundles=bundles, studies=studies, matrices=matrices, configurations=len(configurations),
        regressions=sum(p.verdict == verdicts.SLOWER for c in configurations for p in c.points),
        selectors=_selectors(bundles, ["spec", "host", "state"]), figure_size=FIGURE_SIZE)
