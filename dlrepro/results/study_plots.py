"""The figures of a study report, drawn with matplotlib (Agg) into PNG bytes (plots.Plot):

- ``claims_strip``: a row per judged claim, its verdict as a coloured chip on the left, the measured values
  as dots (one colour per framework, palette) against the stated band (shaded): a band or scaling claim's
  values, a ratio claim's per-tool speed ratios (the subject's speed over each other tool's), an ordering
  claim's values on their own axis, tools in the stated order labelled;
- ``stated_vs_measured``: for the judged ordering claims, a slope chart per claim: the tools at their stated
  place (tiers, best on top) on the left, at their measured place (best on top) on the right, a line each;
- ``ratio_dots``: measured / published per published cell with both values, on a log axis, the default
  tolerance of its kind shaded; filled markers on the published hardware, hollow ones on other hardware.

Both are WIDTH_PX wide; their height grows with the rows.
"""
from matplotlib.figure import Figure

from dlrepro.results import palette, plots
from dlrepro.results.answers import claims
from dlrepro.results.answers.published import DEFAULT_TOLERANCE
from dlrepro.results.answers import verdicts as words

ROW_PX = 75


def _points(study, v):
    """[(framework, value)] of a verdict and the band (low, high) they are read against, or None."""
    claim = study.claims[v.claim]
    if claim.kind == "ratio":
        sign = claims._better(claim.metric)
        mine = {row["batch_size"]: row["value"] for row in v.values if row["tool"] == claim.subject}
        found = []
        for row in v.values:
            subject = mine.get(row["batch_size"])
            if row["tool"] != claim.subject and subject and row["value"]:
                found.append((study.framework(row["tool"]),
                              row["value"] / subject if sign < 0 else subject / row["value"]))
        return found, tuple(claim.band)
    band = tuple(claim.band) if claim.kind in ("band", "scaling") and getattr(claim, "band", None) else None
    return [(study.framework(row["tool"]), row["value"]) for row in v.values], band


def claims_strip(study, verdict_list):
    """One row per judged claim (verdict chip, dots against the stated band); [] when none was judged."""
    judged = sorted([v for v in verdict_list if v.verdict != words.NOT_TESTABLE and v.values],
                    key=lambda v: palette.rank(v.verdict))
    if not judged:
        return []
    height = max(plots.HEIGHT_PX // 2, ROW_PX * len(judged) + 60)
    fig = Figure(figsize=(plots.WIDTH_PX / plots.DPI, height / plots.DPI), dpi=plots.DPI, layout="constrained")
    axes = fig.subplots(len(judged), 1, squeeze=False)[:, 0]
    seen = {}
    for ax, v in zip(axes, judged):
        points, band = _points(study, v)
        if band:
            ax.axvspan(band[0], band[1], color="#dddddd", zorder=0)
        for framework, value in points:
            seen[framework] = ax.scatter([value], [0], s=45, color=palette.colour(framework), zorder=2,
                                         label=palette.name(framework))
        ax.set_yticks([])
        claim = study.claims[v.claim]
        what = {"ratio": "speed ratio, %s over each tool" % claim.subject, "scaling": "speedup over %s" % claim.over,
                }.get(claim.kind, claim.metric.replace("_", " "))
        ax.set_title("%s: %s" % (v.claim, what), fontsize="small", loc="left", pad=3)
        ax.text(1.0, 1.04, v.verdict, transform=ax.transAxes, ha="right", va="bottom", fontsize="x-small",
                color="white", bbox={"boxstyle": "round,pad=0.2", "facecolor": palette.verdict_colour(v.verdict),
                                     "edgecolor": "none"})
        ax.tick_params(axis="x", labelsize="x-small")
    fig.legend(handles=list(seen.values()), loc="outside lower center", ncols=max(1, len(seen)), fontsize="small")
    fig.suptitle("The claims judged here: measured values against the stated band (grey)", fontsize="medium")
    return [plots.Plot("claims-strip", "The claims judged here",
                       "One row per judged claim, its verdict on the left; dots: the measured values, one colour "
                       "per framework; grey: the band the claim states (a ratio claim: the subject's speed over "
                       "each other tool's; a scaling claim: the speedup).", plots._png(fig),
                       (plots.WIDTH_PX, height))]


def stated_vs_measured(study, verdict_list):
    """A panel per judged ordering claim: stated place (tier) against measured place, one line per tool."""
    judged = [v for v in verdict_list if v.verdict != words.NOT_TESTABLE and v.values
              and study.claims[v.claim].kind == "ordering"]
    if not judged:
        return []
    columns = min(3, len(judged))
    lines = -(-len(judged) // columns)
    height = int(0.7 * plots.HEIGHT_PX) * lines
    fig = Figure(figsize=(plots.WIDTH_PX / plots.DPI, height / plots.DPI), dpi=plots.DPI, layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False).ravel()
    for ax, v in zip(axes, judged):
        claim = study.claims[v.claim]
        tier = {tool: i for i, tools in enumerate(claim.order) for tool in tools}
        sign = claims._better(claim.metric)
        best = {}
        for row in v.values:  # a tool's best value over the batch sizes measured
            if row["tool"] not in best or sign * row["value"] > sign * best[row["tool"]]:
                best[row["tool"]] = row["value"]
        measured = sorted(best, key=lambda t: -sign * best[t])
        for place, tool in enumerate(measured):
            colour = palette.colour(study.framework(tool))
            ax.plot([0, 1], [tier[tool], place], marker="o", color=colour)
            ax.text(1.05, place, palette.name(study.framework(tool)), va="center", fontsize="x-small", color=colour)
        ax.set_xticks([0, 1], ["stated", "measured"])
        ax.set_yticks([])
        ax.invert_yaxis()
        ax.set_xlim(-0.2, 1.6)
        ax.set_title("%s: %s" % (v.claim, v.verdict), fontsize="small", color=palette.verdict_colour(v.verdict))
    for ax in axes[len(judged):]:
        ax.set_visible(False)
    fig.suptitle("Ordering claims: the stated order (tiers, best on top) against the measured one", fontsize="medium")
    return [plots.Plot("stated-vs-measured", "Stated order against measured order",
                       "One panel per judged ordering claim: each tool at its stated tier (left, best on top) and "
                       "at its measured place (right, best on top, at its best batch size); crossing lines are "
                       "tools out of the stated order.", plots._png(fig), (plots.WIDTH_PX, height))]


def ratio_dots(tables):
    """Measured / published per cell with both, on a log axis; [] when no cell has both."""
    rows = [(t.name, c) for t in tables for c in t.cells.values() if c.ratio]
    if not rows:
        return []
    height = max(plots.HEIGHT_PX // 2, 22 * len(rows) + 90)
    fig = Figure(figsize=(plots.WIDTH_PX / plots.DPI, height / plots.DPI), dpi=plots.DPI, layout="constrained")
    ax = fig.add_subplot()
    low, high = DEFAULT_TOLERANCE["time"]
    ax.axvspan(low, high, color="#dddddd", zorder=0)
    ax.axvline(1, color="grey", linewidth=0.8)
    rows.sort(key=lambda r: (r[0], r[1].ratio))
    for y, (name, cell) in enumerate(rows):
        other = cell.outcome != words.REPRODUCES and cell.outcome != words.DIFFERS and cell.outcome != "differs"
        colour = palette.colour(cell.framework)
        ax.scatter([cell.ratio], [y], s=40, zorder=2, facecolors="none" if other else colour, edgecolors=colour)
    ax.set_yticks(range(len(rows)), ["%s: %s, %s" % (n, palette.name(c.framework), c.column) for n, c in rows],
                  fontsize="x-small")
    ax.set_xscale("log")
    ax.set_xlabel("measured / published (log scale; grey: %g-%g)" % (low, high))
    ax.invert_yaxis()
    fig.suptitle("Measured against published, per cell (hollow: other hardware)", fontsize="medium")
    return [plots.Plot("ratio-to-published", "Measured against published",
                       "Each published cell measured here: measured / published on a log axis; grey: %g-%g; filled "
                       "markers on the published hardware, hollow ones on other hardware (shown, not judged)."
                       % (low, high), plots._png(fig), (plots.WIDTH_PX, height))]


def all_plots(study, verdict_list, tables):
    """The study-level figures, in reading order."""
    return claims_strip(study, verdict_list) + stated_vs_measured(study, verdict_list) + ratio_dots(tables)
