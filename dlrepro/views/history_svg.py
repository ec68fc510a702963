"""A configuration's history as an inline SVG (the site's configuration pages): its median in each bundle against
the time the bundle was made, whiskers at the 95% CI, the y axis from 0 in the quantity's own unit ("time per
mini-batch (ms)"), the x axis a time axis (two runs of one day are two points of that day, not two categories).
Drawn as text, no plotting library: a page costs microseconds, and the same points give the same bytes.
"""

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape

from dlrepro.answers import verdicts
from dlrepro.views import numbers, palette, plots

WIDTH, HEIGHT = plots.WIDTH_PX, plots.HEIGHT_PX
LEFT, RIGHT, TOP, BOTTOM = 80, 20, 30, 60  # margins, px
TICKS = 5
MARKS = {verdicts.SLOWER: "v", verdicts.FASTER: "^"}  # a run slower / faster than the one before; a circle otherwise


@dataclass(frozen=True)
class Svg:
    title: str
    caption: str
    svg: str  # the <svg> element
    points: tuple  # (bundle id, created, median in seconds or the point's unit), in the order drawn
    size: tuple = (WIDTH, HEIGHT)


def y_label(quantity, unit, shown):
    """'time per mini-batch (ms)' of quantity 'seconds per mini-batch' in unit 's' shown in 'ms'; 'samples/s
    (samples/s)' style doubling avoided: another quantity keeps its name and unit."""
    if unit == "s" and quantity.startswith("seconds per "):
        return "time per %s (%s)" % (quantity[len("seconds per ") :], shown)
    return "%s (%s)" % (quantity or "median", shown)


def nice_step(top, ticks=TICKS):
    """A step of 1, 2 or 5 x 10^n that cuts 0..``top`` into at most ``ticks`` intervals (top > 0)."""
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _when(created):
    return datetime.strptime(created[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def _time_ticks(start, end):
    """(x value, label) ticks over the time span: days when it spans two days or more, else day and hour."""
    if end - start < 1:
        return [(start, datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%d %H:%M"))]
    form = "%Y-%m-%d" if end - start >= 2 * 86400 else "%m-%d %H:%M"
    return [
        (t, datetime.fromtimestamp(t, timezone.utc).strftime(form))
        for t in (start + (end - start) * i / (TICKS - 1) for i in range(TICKS))
    ]


def _marker(x, y, mark, fill, edge):
    if mark == "o":
        return '<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s" stroke="%s" stroke-width="1.5"/>' % (x, y, fill, edge)
    dy = 5 if mark == "v" else -5
    return '<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" stroke="%s" stroke-width="1.5"/>' % (
        x - 5,
        y - dy,
        x + 5,
        y - dy,
        x,
        y + dy,
        fill,
        edge,
    )


def history(configuration, title):
    """The Svg of an answers.history.Configuration titled ``title``."""
    points = configuration.points
    unit = points[0].unit
    shown = numbers.time_unit([p.median for p in points]) if unit == "s" else unit
    scale = {"ms": 1e3}.get(shown, 1) if unit == "s" else 1
    top = max(max(p.high if p.high is not None else p.median for p in points) * scale, 1e-12)
    step = nice_step(top * 1.05)
    y_max = step * math.ceil(top * 1.05 / step)
    decimals = max(0, -math.floor(math.log10(step)))
    times = [_when(p.created) for p in points]
    start, end = min(times), max(times)
    pad = max((end - start) * 0.05, 3600)
    x0, x1 = start - pad, end + pad
    width, height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(t):
        return LEFT + (t - x0) / (x1 - x0) * width

    def sy(v):
        return TOP + height - v * scale / y_max * height

    colour = palette.colour(configuration.key["framework"])
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" '
        'font-family="sans-serif" font-size="11">' % (WIDTH, HEIGHT, WIDTH, HEIGHT),
        "<title>%s</title>" % escape(title),
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    for i in range(int(round(y_max / step)) + 1):
        y = TOP + height - i * step / y_max * height
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (LEFT, LEFT + width, y, y))
        out.append(
            '<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>'
            % (LEFT - 6, y, "{:,.{}f}".format(i * step, decimals))
        )
    for t, label in _time_ticks(start, end):
        out.append(
            '<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999"/>' % (sx(t), sx(t), TOP + height, TOP + height + 5)
        )
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (sx(t), TOP + height + 18, label))
    out.append(
        '<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>' % (LEFT, LEFT + width, TOP + height, TOP + height)
    )
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>' % (LEFT, LEFT, TOP, TOP + height))
    out.append(
        '<text x="%d" y="%d" text-anchor="middle">when the bundle was made (UTC)</text>'
        % (LEFT + width // 2, HEIGHT - 12)
    )
    out.append(
        '<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">%s</text>'
        % (TOP + height // 2, escape(y_label(points[0].quantity, unit, shown)))
    )
    if len(points) > 1:
        out.append(
            '<polyline fill="none" stroke="%s" stroke-width="1" points="%s"/>'
            % (colour, " ".join("%.1f,%.1f" % (sx(t), sy(p.median)) for t, p in zip(times, points)))
        )
    for t, p in zip(times, points):
        if p.low is not None and p.high is not None:
            out.append(
                '<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" '
                'stroke-opacity="0.5"/>' % (sx(t), sx(t), sy(p.low), sy(p.high), colour)
            )
        edge = palette.verdict_colour(p.verdict) if p.verdict in MARKS else colour
        out.append(_marker(sx(t), sy(p.median), MARKS.get(p.verdict, "o"), "white" if p.smoke else edge, edge))
    out.append("</svg>")
    caption = (
        "Median %s of each bundle that measured it against when the bundle was made, whiskers at its 95%% "
        "CI, the axis from 0; a run the rules of `dlrepro compare` find slower than the one before: red v, "
        "faster: green ^; a smoke pass (--quick): hollow." % (points[0].quantity or "time")
    )
    return Svg(
        "History of %s" % title, caption, "".join(out), tuple((p.bundle_id, p.created, p.median) for p in points)
    )
