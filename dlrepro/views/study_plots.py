"""The figures of a study report, drawn with matplotlib (Agg) into PNG bytes (views.plots.Plot):

- ``claims_strip``: a row per judged claim, its verdict as a coloured chip, what was judged against the stated band
  (answers.claims.Verdict.points: a band claim's values, a ratio claim's ratios, a scaling claim's speedups, an
  ordering claim's values) as dots with their 95% intervals, one colour per framework, the band shaded; accuracies
  in percent;
- ``stated_vs_measured``: for the judged ordering claims, a slope chart per claim: the tools at their stated
  place (tiers, best on top) on the left, at their measured place (best on top) on the right, a line each;
- ``ratio_dots``: measured / published per published cell with a ratio (never a smoke pass's), on a log axis, each
  cell's tolerance shaded behind it; filled markers on the published hardware, hollow ones on other hardware;
- ``then_vs_now``: a study run at both version sets, now / then per tool and published column on a log axis, a smoke
  pass's ratio hollow (an indication, never a verdict).

All are WIDTH_PX wide; their height grows with the rows. Each Plot carries the points it drew.
"""

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from dlrepro.answers import verdicts as words
from dlrepro.inputs import claimkinds
from dlrepro.inputs.frameworks import display
from dlrepro.views import palette, plots

ROW_PX = 75


def _scale(study, v):
    """(factor, unit words) for a claim's points: accuracies in percent, the rest as they are."""
    metric = study.claims[v.claim].metric or ""
    return (100.0, "test accuracy (%)") if metric == "test_accuracy" and v.kind == "band" else (1.0, None)


def claims_strip(study, verdict_list):
    """One row per judged claim (verdict chip, points with their intervals against the stated band); [] when none
    was judged."""
    judged = [v for v in verdict_list if v.verdict != words.NOT_TESTABLE and v.points]
    if not judged:
        return []
    height = max(plots.HEIGHT_PX // 2, ROW_PX * len(judged) + 60)
    fig = Figure(figsize=(plots.WIDTH_PX / plots.DPI, height / plots.DPI), dpi=plots.DPI, layout="constrained")
    axes = fig.subplots(len(judged), 1, squeeze=False)[:, 0]
    seen, drawn = {}, []
    for ax, v in zip(axes, judged):
        factor, unit = _scale(study, v)
        if v.band:
            ax.axvspan(v.band[0] * factor, v.band[1] * factor, color="#dddddd", zorder=0)
        for y, point in enumerate(v.points):
            x = point["value"] * factor
            err = None if point["low"] is None else [[x - point["low"] * factor], [point["high"] * factor - x]]
            seen[point["framework"]] = ax.errorbar(
                [x],
                [y],
                xerr=err,
                fmt="o",
                color=palette.colour(point["framework"]),
                capsize=3,
                zorder=2,
                label=display(point["framework"]),
            )
            drawn.append((v.claim, point["tool"], x))
        ax.set_yticks([])
        ax.set_ylim(-1, len(v.points))
        claim = study.claims[v.claim]
        what = unit or claimkinds.of(claim).axis(claim) or (claim.metric or "").replace("_", " ")
        ax.set_title("%s: %s" % (v.claim, what), fontsize="small", loc="left", pad=3)
        ax.text(
            1.0,
            1.04,
            v.verdict,
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize="x-small",
            color="white",
            bbox={"boxstyle": "round,pad=0.2", "facecolor": palette.verdict_colour(v.verdict), "edgecolor": "none"},
        )
        ax.tick_params(axis="x", labelsize="x-small")
    fig.legend(handles=list(seen.values()), loc="outside lower center", ncols=max(1, len(seen)), fontsize="small")
    fig.suptitle(
        "The claims judged here: measured values and their 95% intervals against the stated band (grey)",
        fontsize="medium",
    )
    return [
        plots.Plot(
            "claims-strip",
            "The claims judged here",
            "One row per judged claim, its verdict on the right; dots: what was judged, with whiskers at "
            "its 95% interval (none: no interval), one colour per framework; grey: the band the claim "
            "states (a ratio claim: the subject's speed over each other tool's; a scaling claim: the "
            "speedup; accuracies in percent).",
            plots.png(fig),
            (plots.WIDTH_PX, height),
            tuple(drawn),
        )
    ]


def stated_vs_measured(study, verdict_list):
    """A panel per judged ordering claim: stated place (tier) against measured place, one line per tool."""
    judged = [v for v in verdict_list if v.verdict != words.NOT_TESTABLE and v.points and v.kind == "ordering"]
    if not judged:
        return []
    columns = min(3, len(judged))
    lines = -(-len(judged) // columns)
    height = int(0.7 * plots.HEIGHT_PX) * lines
    fig = Figure(figsize=(plots.WIDTH_PX / plots.DPI, height / plots.DPI), dpi=plots.DPI, layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False).ravel()
    drawn = []
    for ax, v in zip(axes, judged):
        tier = {tool: i for i, tools in enumerate(study.claims[v.claim].order) for tool in tools}
        places = list(dict.fromkeys(p["tool"] for p in v.points))  # best first: a tool's best batch size
        for place, tool in enumerate(places):
            colour = palette.colour(study.framework(tool))
            ax.plot([0, 1], [tier[tool], place], marker="o", color=colour)
            ax.text(1.05, place, display(study.framework(tool)), va="center", fontsize="x-small", color=colour)
            drawn.append((v.claim, tool, place))
        ax.set_xticks([0, 1], ["stated", "measured"])
        ax.set_yticks([])
        ax.invert_yaxis()
        ax.set_xlim(-0.2, 1.6)
        ax.set_title("%s: %s" % (v.claim, v.verdict), fontsize="small", color=palette.verdict_colour(v.verdict))
    for ax in axes[len(judged) :]:
        ax.set_visible(False)
    fig.suptitle("Ordering claims: the stated order (tiers, best on top) against the measured one", fontsize="medium")
    return [
        plots.Plot(
            "stated-vs-measured",
            "Stated order against measured order",
            "One panel per judged ordering claim: each tool at its stated tier (left, best on top) and "
            "at its measured place (right, best on top, at its best batch size); crossing lines are "
            "tools out of the stated order.",
            plots.png(fig),
            (plots.WIDTH_PX, height),
            tuple(drawn),
        )
    ]


def _ticks(low, high):
    """Log-axis ticks between low and high from 1-2-5 steps, labelled plainly ('0.5', '1', '20')."""
    found = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        found += [m * 10**exponent for m in (1, 2, 5) if low <= m * 10**exponent <= high]
    return found or [1]


def _ratio_figure(rows):
    """(figure, axes, height in pixels) for ``rows`` rows of ratios on a log axis, the line at 1 drawn."""
    height = max(plots.HEIGHT_PX // 2, 22 * rows + 120)
    fig = Figure(figsize=(plots.WIDTH_PX / plots.DPI, height / plots.DPI), dpi=plots.DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.axvline(1, color="grey", linewidth=0.8)
    return fig, ax, height


def _ratio_axis(ax, labels, ratios, xlabel):
    """One labelled row per ratio (the first on top) on a plainly ticked log axis from below 0.8 to above 1.25."""
    ax.set_yticks(range(len(labels)), labels, fontsize="x-small")
    ax.set_xscale("log")
    ticks = _ticks(min(min(ratios), 0.8) * 0.9, max(max(ratios), 1.25) * 1.1)
    ax.set_xticks(ticks, ["%g" % t for t in ticks])
    ax.set_xlabel(xlabel)
    ax.invert_yaxis()


def ratio_dots(tables):
    """Measured / published per cell with a ratio, on a log axis, each cell's tolerance shaded; [] when none."""
    rows = [(t.name, c) for t in tables for c in t.cells.values() if c.ratio]
    if not rows:
        return []
    fig, ax, height = _ratio_figure(len(rows))
    rows.sort(key=lambda r: (r[0], r[1].ratio))
    drawn, frameworks = [], {}
    for y, (name, cell) in enumerate(rows):
        ax.fill_betweenx([y - 0.4, y + 0.4], cell.lower, cell.upper, color="#dddddd", zorder=0)
        judged = cell.outcome in (words.REPRODUCES, words.DIFFERS, words.CANNOT_TELL)
        colour = palette.colour(cell.framework)
        ax.scatter([cell.ratio], [y], s=40, zorder=2, facecolors=colour if judged else "none", edgecolors=colour)
        frameworks[cell.framework] = colour
        drawn.append((name, cell.row, cell.column, cell.ratio))
    _ratio_axis(
        ax,
        ["%s: %s, %s" % (n, display(c.framework), c.column) for n, c in rows],
        [c.ratio for _, c in rows],
        "measured / published (log scale; for times > 1 is slower, for accuracies > 1 is higher)",
    )
    handles = [Line2D([], [], marker="o", linestyle="", color=c, label=display(f)) for f, c in frameworks.items()]
    handles += [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markerfacecolor="none",
            color="grey",
            label="other hardware (shown, not judged)",
        )
    ]
    ax.legend(handles=handles, fontsize="x-small", loc="best")
    fig.suptitle("Measured against published, per cell (grey: the cell's tolerance)", fontsize="medium")
    return [
        plots.Plot(
            "ratio-to-published",
            "Measured against published",
            "Each published cell measured here with a comparable value: measured / published on a log axis, "
            "the cell's tolerance in grey behind it; filled markers on the published hardware, hollow ones "
            "on other hardware (shown, not judged); a smoke pass (--quick) is never set as a ratio.",
            plots.png(fig),
            (plots.WIDTH_PX, height),
            tuple(drawn),
        )
    ]


def then_vs_now(points):
    """now / then (seconds at today's versions over seconds at the published versions, same host and jobs) of each
    (row label, ratio, smoke) in ``points``, on a log axis; [] when there is none."""
    if not points:
        return []
    fig, ax, height = _ratio_figure(len(points))
    for y, (_, ratio, smoke) in enumerate(points):
        ax.scatter([ratio], [y], s=40, zorder=2, facecolors="none" if smoke else "#333333", edgecolors="#333333")
    _ratio_axis(
        ax,
        [label for label, _, _ in points],
        [ratio for _, ratio, _ in points],
        "now / then: seconds at today's versions / at the published ones\n(log scale; < 1: today's is faster)",
    )
    ax.minorticks_off()
    fig.legend(
        handles=[
            Line2D([], [], marker="o", linestyle="", color="#333333", label="full protocol"),
            Line2D(
                [],
                [],
                marker="o",
                linestyle="",
                markerfacecolor="none",
                color="#333333",
                label="smoke pass (--quick): an indication, never a verdict",
            ),
        ],
        fontsize="x-small",
        loc="outside lower center",
        ncols=2,
    )
    fig.suptitle("Then and now: each tool at today's version against its published one", fontsize="medium")
    return [
        plots.Plot(
            "then-vs-now",
            "Then and now",
            "Each published table measured at both version sets on this host: now / then per tool and "
            "column on a log axis (< 1: today's version is faster); hollow markers are smoke passes "
            "(--quick), indications only, never verdicts.",
            plots.png(fig),
            (plots.WIDTH_PX, height),
            tuple(points),
        )
    ]


def all_plots(study, verdict_list, tables):
    """The study-level figures, in reading order."""
    return claims_strip(study, verdict_list) + stated_vs_measured(study, verdict_list) + ratio_dots(tables)
