"""The results site: every bundle and study record under a results folder in one browsable, static folder (SITE:
RESULTS/reports/ by default, where `dlrepro report` and `dlrepro study-report` write; ``out`` elsewhere).

  SITE/index.html, index.json                  every bundle and study record (views.site.index_page)
  SITE/configurations.html, .json              every configuration, a filter for each of its keys
  SITE/configurations/<slug>.html, .json       one configuration's history (answers.history)
  SITE/across.html, .json                      every spec, variant, framework, mode and mini-batch (answers.across)
  SITE/across/<slug>.html, .json               one of them on every host and version, published values beside
  SITE/studies/<study>.html, .json             claims x (host, version set) (answers.matrix)
  SITE/feed.xml                                the history's changes, an Atom feed
  SITE/<bundle id>/report.html, data/          each bundle's report, its data files (site_cache.DATA) beside it
  SITE/records/<record>/study.html             each study record's report (the committed study reports in
                                               RESULTS/reports/<record>/ are never written by the site)

The site's own pages are the named units of PAGES, written in order. Built from the results folder alone (gather
reads it), deterministic (the same results give the same bytes: no
clock, no machine path, every list sorted), self-contained (no network when viewed). Incremental: a report whose
inputs and code are unchanged (site_cache.stamp) is not drawn again, and a page is written only when its bytes
change. Pages of configurations or studies no longer in the results are removed; a report folder is rewritten,
never removed. A bundle or record that cannot be read (or a second folder holding a bundle id already listed) is a
row that says why, and the rest is built: ``Site.problems``.
"""

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from dlrepro.answers import across as acrossmod
from dlrepro.answers import cost, gather, model
from dlrepro.answers import history as historymod
from dlrepro.answers import matrix as matrixmod
from dlrepro.cli import site_cache
from dlrepro.errors import DlreproError
from dlrepro.inputs.frameworks import display
from dlrepro.store import bundle, records, tables
from dlrepro.views import report as reports
from dlrepro.views import site as pages
from dlrepro.views import site_across
from dlrepro.views import study_report as study_reports


@dataclass
class Site:
    index: Path
    bundles: int
    studies: int
    configurations: int
    problems: list = field(default_factory=list)  # "<bundle or record>: why it has no report"
    drawn: int = 0  # reports drawn (the others' inputs and code unchanged since the last build)
    written: int = 0  # files written (the others held their bytes already)


def _host(row):
    hardware = row["hardware"]
    return ", ".join(
        "%d x %s" % (hardware.count(h), h) if hardware.count(h) > 1 else h for h in dict.fromkeys(hardware)
    )


def _bundle_row(row, answer, made):
    """An index row of a bundle: listing ``row``, its BundleAnswer, its written report."""
    summary, body = answer.summary, answer.bodies[0]
    versions = sorted(set((summary["framework"].map(display) + " " + summary["framework_version"].fillna("")).dropna()))
    counts = row["counts"]
    jobs = ", ".join("%d %s" % (n, k) for k, n in counts.items() if n and k != "ok")
    lines = [line for line in made.headline if not line.startswith("Smoke pass")]
    return {
        "id": row["id"],
        "report": "%s/report.html" % row["id"],
        "spec": row["spec"],
        "created": row["created"] or "",
        "host": _host(row),
        "commit": (((body.get("suite") or {}).get("git") or {}).get("commit") or "")[:10],
        "frameworks": ", ".join(v.strip() for v in versions),
        "headline": lines[0] if lines else "",
        "state": row["state"] + (" (smoke pass)" if answer.smoke else ""),
        "jobs": jobs,
    }


def _study_row(answer, name):
    asked = answer.record.get("asked") or {}
    versions = {"both": "published and today's", "published": "published"}.get(asked.get("versions"), "today's")
    return {
        "name": name,
        "report": "records/%s/study.html" % name,
        "study": answer.record["study"],
        "created": answer.record["created"],
        "host": answer.host or "no bundle",
        "versions": versions,
        "commit": (((answer.record.get("suite") or {}).get("git") or {}).get("commit") or "")[:10],
        "answer": answer.answer,
        "state": "finished" if answer.record.get("finished") else "not finished",
    }


def _unreadable(name, why, **row):
    """An index row of a bundle or record that has no report: ``why``, in its headline or answer cell."""
    return dict(
        {
            "id": name,
            "name": name,
            "report": None,
            "spec": "",
            "study": "",
            "created": "",
            "host": "",
            "commit": "",
            "frameworks": "",
            "versions": "",
            "headline": why,
            "answer": why,
            "state": "unreadable",
            "jobs": "",
            "data": [],
        },
        **row,
    )


def _root(results_dir):
    """The results folder; raises DlreproError when it does not exist or is a bundle (its parent holds it)."""
    root = bundle.existing_root(results_dir)
    if (root / "bundle.json").is_file():
        raise DlreproError(
            "--results %s: this is a bundle, not a results folder" % root,
            "give the folder that holds the bundles (here: %s)" % root.parent,
        )
    return root


def _data_links(folder, root, out, bundle_id):
    """Copy the bundle's data files (site_cache.DATA, and its archive RESULTS/<id>.tar.gz where one exists) into
    SITE/<id>/data/; returns [(label, path from the report's folder)] and how many it copied."""
    found, copied = [], 0
    sources = [folder / name for name in site_cache.DATA] + [root / ("%s.tar.gz" % bundle_id)]
    for source in sources:
        if source.is_file():
            copied += site_cache.copy_if_changed(source, out / bundle_id / "data" / source.name)
            found.append((source.name, "data/%s" % source.name))
    return found, copied


def _bundle_report(row, root, out, price_per_hour, data):
    """Write the report of listed bundle ``row`` under ``out`` (``data``: its data links); returns its index row.
    Raises DlreproError for a bundle that cannot be read."""
    answer = gather.bundles([str(row["folder"])], root, price_per_hour)
    made = reports.write(answer, out / row["id"], site={"up": "../", "data": data})
    return _bundle_row(row, answer, made)


def _study_report(path, root, out, price_per_hour, draw):
    """The StudyAnswer of study record ``path``, its report written under SITE/records/ when ``draw``. Raises
    DlreproError for a record (or its bundles) that cannot be read."""
    answer = gather.study(str(path), root, price_per_hour)
    if draw:
        folder = out / "records" / path.stem
        site_cache.copy_if_changed(path, folder / "record.json")
        study_reports.write(
            answer,
            folder,
            allow_missing=True,
            site={"up": "../../", "data": [("record.json", "record.json"), ("study.json", "study.json")]},
        )
    return answer


def _pool(tasks):
    """Worker processes for ``tasks`` reports, one per CPU (each report is drawn by matplotlib, one CPU each: the
    79 committed bundles' site took 104 s in one process on 2 CPUs). Forked, so each worker draws with the settings
    this process has: the same bytes whichever worker writes a page."""
    return ProcessPoolExecutor(max(1, min(tasks, os.cpu_count() or 1)), mp_context=multiprocessing.get_context("fork"))


def _read_ahead(folders):
    """Read each bundle's tables in this process before _pool forks: its workers (each report, each study record's
    report over its bundles) and the history then share this one read (store.tables keeps them per process)."""
    for folder in folders:
        try:
            tables.summary(folder)
        except DlreproError:
            continue  # its report's row says why


def _json(rows):
    """A page's table as JSON text (asv's graphs/*.json): its rows, keys sorted."""
    return json.dumps(rows, indent=1, sort_keys=True, default=str) + "\n"


def _record_files(path, root):
    """A study record and the bundles' data files it names (under ``root``), for its stamp."""
    found, _ = records.bundles(records.find(str(path), root), root)
    return [path] + [f for folder in sorted(found.values()) for f in site_cache.bundle_files(folder)]


def build(results_dir, price_per_hour=None, progress=print, out=None):
    """Build the site of ``results_dir`` (module docstring) into ``out`` (None: RESULTS/reports) with costs at
    ``price_per_hour`` (USD per device-hour; None: dlrepro/inputs/prices.yaml's); ``progress`` gets a line per report
    drawn. Returns the Site. Raises DlreproError when the folder does not exist or is a bundle."""
    root = _root(results_dir)
    out = Path(out) if out else root / "reports"
    out.mkdir(parents=True, exist_ok=True)
    cache, fresh = site_cache.load(out), {"bundles": {}, "records": {}}
    bundle_rows, listed, bodies, problems, seen, written, drawn = [], [], [], [], {}, 0, 0
    rows = [row for row in bundle.listing(root)]
    records_found = [
        path for path in sorted(records.records_dir(root).glob("*.json")) if records.STAMP.match(path.name)
    ]
    stamps, links = {}, {}
    for row in rows:
        stamps[row["id"]] = site_cache.stamp(row["id"], site_cache.bundle_files(row["folder"]), price_per_hour)
        links[row["id"]], copied = _data_links(row["folder"], root, out, row["id"])
        written += copied
    record_stamps = {}
    for path in records_found:
        try:
            record_stamps[path.stem] = site_cache.stamp(path.stem, _record_files(path, root), price_per_hour)
        except DlreproError:
            record_stamps[path.stem] = None
    _read_ahead([row["folder"] for row in rows])
    with _pool(len(rows) + len(records_found)) as pool:
        draw = {
            p.stem: record_stamps[p.stem] is None
            or (cache["records"].get(p.stem) or {}).get("stamp") != record_stamps[p.stem]
            or not (out / "records" / p.stem / "study.html").is_file()
            for p in records_found
        }
        kept = {p.stem: site_cache.kept(out, p.stem, record_stamps[p.stem]) for p in records_found if not draw[p.stem]}
        studied = [  # submitted first: a study record's report takes longest, the pool ends with the short ones
            None
            if kept.get(path.stem) is not None
            else pool.submit(_study_report, path, root, out, price_per_hour, draw[path.stem])
            for path in records_found
        ]
        first = {}  # bundle id: the index of the first row listing it, the one whose report is written at once
        cached = cache["bundles"]
        written_now = [
            None
            if first.setdefault(row["id"], i) != i
            or (cached.get(row["id"]) or {}).get("stamp") == stamps[row["id"]]
            and (out / row["id"] / "report.html").is_file()
            else pool.submit(_bundle_report, row, root, out, price_per_hour, links[row["id"]])
            for i, row in enumerate(rows)
        ]
        for i, (row, future) in enumerate(zip(rows, written_now)):
            try:
                if row["id"] in seen:
                    raise DlreproError("the bundle id of %s, listed from %s" % (row["folder"].name, seen[row["id"]]))
                if future is not None:
                    index_row = future.result()
                elif first[row["id"]] == i:
                    index_row = cached[row["id"]]["row"]
                else:  # a later folder of an id whose first could not be read: its report, here
                    index_row = _bundle_report(row, root, out, price_per_hour, links[row["id"]])
            except DlreproError as exc:
                problems.append("%s: %s" % (row["folder"].name, exc))
                bundle_rows.append(_unreadable(row["folder"].name, str(exc), spec=row["spec"], created=row["created"]))
                continue
            seen[row["id"]] = row["folder"].name
            listed.append(row)
            bodies.append(bundle.body(row["folder"]))
            bundle_rows.append(
                dict(index_row, data=[(label, "%s/%s" % (row["id"], href)) for label, href in links[row["id"]]])
            )
            fresh["bundles"][row["id"]] = {"stamp": stamps[row["id"]], "row": index_row}
            if future is not None or first[row["id"]] != i:
                drawn += 1
                progress("report %s" % row["id"])
        answers, study_rows = [], []
        for path, future in zip(records_found, studied):
            try:
                answer = kept[path.stem] if future is None else future.result()
            except DlreproError as exc:
                problems.append("%s: %s" % (path.name, exc))
                study_rows.append(_unreadable(path.stem, str(exc)))
                continue
            answers.append(answer)
            study_rows.append(_study_row(answer, path.stem))
            fresh["records"][path.stem] = {"stamp": record_stamps[path.stem]}
            if future is not None:
                site_cache.keep(out, path.stem, record_stamps[path.stem], answer)
            if draw[path.stem]:
                drawn += 1
                progress("study report %s" % path.stem)
    summary, samples = tables.merge([r["folder"] for r in listed]) if listed else (None, None)
    configurations = historymod.history(bodies, cost.priced(summary, bodies, price_per_hour), samples) if listed else []
    found_across = acrossmod.across(configurations, model.recorded(bodies).references)
    across_of = {r.configuration.slug: a.slug for a in found_across for r in a.rows}
    matrices = matrixmod.matrices(answers)
    written += _pages(out, Drawn(configurations, found_across, across_of, matrices, bundle_rows, study_rows))
    site_cache.save(out, fresh)
    return Site(out / "index.html", len(listed), len(answers), len(configurations), problems, drawn, written)


@dataclass
class Drawn:
    """What the site's own pages are drawn from: the history's Configurations, the Across groups and {configuration
    slug: its Across slug}, the studies' Matrices, the index's rows of bundles and study records."""

    configurations: list
    across: list
    across_of: dict
    matrices: list
    bundle_rows: list
    study_rows: list


def _configuration_pages(d):
    return dict(
        [("%s.html" % c.slug, pages.configuration_page(c, "../", d.across_of.get(c.slug))) for c in d.configurations]
        + [("%s.json" % c.slug, _json(pages.configuration_rows(c, "../"))) for c in d.configurations]
    )


def _across_pages(d):
    return dict(
        [("%s.html" % a.slug, site_across.across_page(a)) for a in d.across]
        + [
            (
                "%s.json" % a.slug,
                _json({"lines": site_across.across_rows(a, "../"), "published": site_across.published_rows(a)}),
            )
            for a in d.across
        ]
    )


def _study_pages(d):
    return dict(
        [("%s.html" % m.study, pages.study_page(m)) for m in d.matrices]
        + [("%s.json" % m.study, _json([c for _, c in sorted(pages.study_cells(m).items())])) for m in d.matrices]
    )


def _lists(d):
    return {
        "configurations.html": pages.configurations_page(d.configurations, d.across_of),
        "configurations.json": _json(pages.configurations_rows(d.configurations, d.across_of)),
        "across.html": site_across.across_list_page(d.across),
        "across.json": _json(site_across.across_list_rows(d.across)),
    }


def _front(d):
    return {
        "feed.xml": site_across.feed(d.configurations),
        "index.json": _json({"bundles": d.bundle_rows, "studies": d.study_rows}),
        "index.html": pages.index_page(d.bundle_rows, d.study_rows, d.matrices, d.configurations),
    }


# The site's own pages, each unit with its name, in the order written (asv's OutputPublisher way): (name, its
# folder under the site, or None for the site's root, its files {name: text} drawn from a Drawn). A unit's folder
# holds only its files: the .html and .json files there that it did not make are removed.
PAGES = (
    ("configuration histories", "configurations", _configuration_pages),
    ("across hardware and versions", "across", _across_pages),
    ("study matrices", "studies", _study_pages),
    ("lists", None, _lists),
    ("index and feed", None, _front),
)


def _pages(out, drawn):
    """Write the units of PAGES where their bytes changed; returns how many files it wrote."""
    written = 0
    for _, folder, files in PAGES:
        made = files(drawn)
        written += (
            site_cache.replace_pages(out / folder, made)
            if folder
            else sum(site_cache.write_if_changed(out / name, text) for name, text in made.items())
        )
    return written
