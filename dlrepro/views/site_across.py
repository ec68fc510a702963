"""The site's pages across hardware and versions (answers.across): across.html lists every spec, variant, framework,
mode and mini-batch with the device models that measured it; across/<slug>.html sets its history lines side by side
(throughput, fraction of peak, USD per 1M samples, J per sample of each line's newest run, the answer columns
first) with the published values of the same configuration beside them. And feed.xml: an Atom feed of the history's
changes (every run slower or faster than the one before, by ``dlrepro compare``'s rules), newest first.
"""

from xml.sax.saxutils import escape, quoteattr

from dlrepro.answers import verdicts
from dlrepro.inputs.frameworks import display
from dlrepro.views import costs, numbers
from dlrepro.views.report import TEMPLATES
from dlrepro.views.site import FIGURE_SIZE, _fraction, _joules, filters, key_value, title

CHANGES = (verdicts.SLOWER, verdicts.FASTER)
FEED_ID = "urn:dlrepro:site:changes"


def across_title(a):
    """'JAX, alexnet alexnet-s, throughput mode, b128' of an answers.across.Across."""
    k = a.key
    return "%s, %s %s, %s mode, b%s" % (display(k["framework"]), k["spec"], k["variant"], k["mode"], k["batch_size"])


def across_rows(a, up):
    """The rows of an Across page's table, answer columns first (``up``: the path to the site's root)."""
    rows = []
    for r in a.rows:
        c, p = r.configuration, r.point
        rows.append(
            {
                "device_name": c.key["device_name"],
                "throughput": numbers.significant(p.throughput),
                "fraction_of_peak": _fraction(p.fraction_of_peak),
                "joules": _joules(p),
                "usd": costs.usd(p.usd, p.usd_dated, p.usd_older)
                if p.usd is not None
                else "no price"
                if p.throughput is not None
                else "",
                "version": key_value("framework_version", c.key["framework_version"]),
                "precision": c.key["precision"] or "",
                "threads": key_value("threads", c.key["threads"]) if c.key["device"] == "cpu" else "",
                "ranks": key_value("ranks", c.key["ranks"]),
                "bundle": p.bundle_id,
                "created": p.created,
                "pass": "smoke pass" if p.smoke else "full run",
                "runs": len(c.points),
                "history": "%sconfigurations/%s.html" % (up, c.slug),
                "report": "%s%s/report.html" % (up, p.bundle_id),
                "filters": {
                    "device_name": c.key["device_name"],
                    "framework_version": key_value("framework_version", c.key["framework_version"]),
                    "precision": c.key["precision"] or "",
                },
            }
        )
    return rows


def published_rows(a):
    """The published values of an Across's configuration, as shown."""
    return [
        {
            "tool": ref.framework,
            "version": ref.framework_version or "",
            "hardware": ref.hardware,
            "metric": ref.metric,
            "value": " to ".join(numbers.significant(v) for v in ref.value)
            if isinstance(ref.value, list)
            else numbers.significant(ref.value),
            "unit": ref.unit,
            "kind": ref.kind.replace("_", " "),
            "source": ref.source,
            "id": ref.id,
        }
        for ref in a.published
    ]


def across_page(a, up="../"):
    """The HTML of one Across: its lines side by side, its published values beside them."""
    rows = across_rows(a, up)
    return TEMPLATES.get_template("site_across.html.j2").render(
        title=across_title(a),
        a=a,
        rows=rows,
        published=published_rows(a),
        up=up,
        slug=a.slug,
        filters=filters(rows, ["device_name", "framework_version", "precision"]),
        figure_size=FIGURE_SIZE,
    )


def across_list_rows(found):
    """The rows of across.html: one per Across."""
    return [
        {
            "slug": a.slug,
            "title": across_title(a),
            "hosts": ", ".join(a.hosts),
            "count": len(a.hosts),
            "lines": len(a.rows),
            "versions": ", ".join(
                sorted({key_value("framework_version", r.configuration.key["framework_version"]) for r in a.rows})
            ),
            "published": len(a.published),
            "filters": {
                "spec": a.key["spec"],
                "framework": display(a.key["framework"]),
                "mode": a.key["mode"],
                "batch_size": str(a.key["batch_size"]),
            },
        }
        for a in found
    ]


def across_list_page(found):
    """The HTML of across.html."""
    rows = across_list_rows(found)
    return TEMPLATES.get_template("site_across_list.html.j2").render(
        rows=rows, filters=filters(rows, ["spec", "framework", "mode", "batch_size"]), figure_size=FIGURE_SIZE
    )


def changes(configurations):
    """[(configuration, point)] of every run slower or faster than the one before, newest first (then by slug)."""
    found = [(c, p) for c in configurations for p in c.points if p.verdict in CHANGES]
    return sorted(found, key=lambda cp: (cp[1].created, cp[0].slug, cp[1].bundle_id), reverse=True)


def feed(configurations):
    """The Atom feed (XML text) of the history's changes: one entry per run slower or faster than the one before,
    its link relative to the site's root, its id the same on every build."""
    found = changes(configurations)
    updated = found[0][1].created if found else "1970-01-01T00:00:00Z"
    out = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom">',
        "<title>dlrepro results: runs slower or faster than the one before</title>",
        "<id>%s</id>" % FEED_ID,
        "<updated>%s</updated>" % escape(updated),
        '<link rel="alternate" href="index.html"/>',
        "<author><name>dlrepro site</name></author>",
    ]
    for c, p in found:
        link = "configurations/%s.html#run-%s" % (c.slug, p.bundle_id)
        out += [
            "<entry>",
            "<title>%s: %s</title>" % (escape(p.verdict), escape(title(c))),
            "<id>urn:dlrepro:change:%s:%s</id>" % (escape(c.slug), escape(p.bundle_id)),
            "<updated>%s</updated>" % escape(p.created),
            '<link rel="alternate" href=%s/>' % quoteattr(link),
            "<summary>%s</summary>" % escape("%s, bundle %s: %s" % (p.verdict, p.bundle_id, p.reason or "")),
            "</entry>",
        ]
    return "\n".join(out + ["</feed>", ""])
