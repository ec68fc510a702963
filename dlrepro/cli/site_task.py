"""The results site: every bundle and study record under a results folder in one browsable, static folder, its
reports (RESULTS/reports/, where `dlrepro report` and `dlrepro study-report` write them) its pages.

  RESULTS/reports/index.html                   every bundle and study record (views.site.index_page)
  RESULTS/reports/configurations.html          every configuration, with selectors
  RESULTS/reports/configurations/<slug>.html   one configuration's history (answers.history)
  RESULTS/reports/studies/<study>.html         claims x (host, version set) (answers.matrix)
  RESULTS/reports/<bundle id>/report.html      each bundle's report (views.report)
  RESULTS/reports/<record>/study.html          each study record's report (views.study_report)

Built from the results folder alone (gather reads it), deterministic (the same results give the same bytes: no
clock, no machine path, every list sorted), self-contained (no network when viewed). Pages of configurations or
studies no longer in the results are removed; a report folder is rewritten, never removed. A bundle or record that
cannot be read (or a second folder holding a bundle id already listed) is a row that says why, and the rest is
built: ``Site.problems``.
"""
import functools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from dlrepro.errors import DlreproError
from dlrepro.answers import gather
from dlrepro.store import bundle, records, tables
from dlrepro.answers import cost, history as historymod, matrix as matrixmod
from dlrepro.views import report as reports, site as pages, study_report as study_reports


@dataclass
class Site:
    index: Path
    bundles: int
    studies: int
    configurations: int
    problems: list = field(default_factory=list)  # "<bundle or record>: why it has no report"


def _replace_pages(folder, pages_by_name):
    """Write {file name: HTML} into ``folder``, removing the .html files there that are not among them."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.html"):
        if old.name not in pages_by_name:
            old.unlink()
    for name, html in pages_by_name.items():
        (folder / name).write_text(html)


def _root(results_dir):
    """The results folder; raises DlreproError when it does not exist or is a bundle (its parent holds it)."""
    root = bundle.existing_root(results_dir)
    if (root / "bundle.json").is_file():
        raise DlreproError("--results %s: this is a bundle, not a results folder" % root,
                           "give the folder that holds the bundles (here: %s)" % root.parent)
    return root


def _bundle_report(row, root, out, price_per_hour):
    """Write the report of listed bundle ``row`` under ``out``; returns (its bundle.json body, its index row). Raises
    DlreproError for a bundle that cannot be read."""
    answer = gather.bundles([str(row["folder"])], root, price_per_hour)
    return answer.bodies[0], pages.bundle_row(row, answer, reports.write(answer, out / row["id"]))


def _study_report(path, root, out, price_per_hour):
    """Write the report of study record ``path`` under ``out``; returns its StudyAnswer. Raises DlreproError for a
    record (or its bundles) that cannot be read."""
    answer = gather.study(str(path), root, price_per_hour)
    study_reports.write(answer, out / path.stem, allow_missing=True)
    return answer


def _pool(tasks):
    """Worker processes for ``tasks`` reports, one per CPU (each report is drawn by matplotlib, one CPU each: the
    79 committed bundles' site took 104 s in one process on 2 CPUs). Forked, so each worker draws with the settings
    this process has: the same bytes whichever worker writes a page."""
    return ProcessPoolExecutor(max(1, min(tasks, os.cpu_count() or 1)), mp_context=multiprocessing.get_context("fork"))


def build(results_dir, price_per_hour=None, progress=print):
    """Build the site of ``results_dir`` (module docstring) with costs at ``price_per_hour`` (USD per device-hour;
    None: dlrepro/inputs/prices.yaml's); ``progress`` gets a line per report written. Returns the Site. Raises
    DlreproError when the folder does not exist or is a bundle."""
    root = _root(results_dir)
    out = root / "reports"
    bundle_rows, listed, bodies, problems, seen = [], [], [], [], {}
    rows = [row for row in bundle.listing(root)]
    records_found = [path for path in sorted(records.records_dir(root).glob("*.json")) if records.STAMP.match(path.name)]
    with _pool(len(rows) + len(records_found)) as pool:
        first = {}  # bundle id: the index of the first row listing it, the one whose report is written at once
        written = [pool.submit(_bundle_report, row, root, out, price_per_hour)
                   if first.setdefault(row["id"], i) == i else None for i, row in enumerate(rows)]
        studied = [pool.submit(_study_report, path, root, out, price_per_hour) for path in records_found]
        for row, future in zip(rows, written):
            try:
                if row["id"] in seen:
                    raise DlreproError("the bundle id of %s, listed from %s" % (row["folder"].name, seen[row["id"]]))
                # a later folder of an id whose first could not be read: its report, here
                body, index_row = future.result() if future else _bundle_report(row, root, out, price_per_hour)
            except DlreproError as exc:
                problems.append("%s: %s" % (row["folder"].name, exc))
                bundle_rows.append(pages.unreadable_row(row["folder"].name, str(exc), spec=row["spec"],
                                                        created=row["created"]))
                continue
            seen[row["id"]] = row["folder"].name
            listed.append(row)
            bodies.append(body)
            bundle_rows.append(index_row)
            progress("report %s" % row["id"])
        answers, study_rows = [], []
        for path, future in zip(records_found, studied):
            try:
                answer = future.result()
            except DlreproError as exc:
                problems.append("%s: %s" % (path.name, exc))
                study_rows.append(pages.unreadable_row(path.stem, str(exc)))
                continue
            answers.append(answer)
            study_rows.append(pages.study_row(answer, path.stem))
            progress("study report %s" % path.stem)
        summary, samples = tables.merge([r["folder"] for r in listed]) if listed else (None, None)
        configurations = historymod.history(bodies, cost.priced(summary, bodies, price_per_hour), samples) \
            if listed else []
        matrices = matrixmod.matrices(answers)
        drawn = pool.map(functools.partial(pages.configuration_page, up="../", matrices=matrices), configurations,
                         chunksize=max(1, len(configurations) // (4 * (os.cpu_count() or 1))))
        _replace_pages(out / "configurations", {"%s.html" % c.slug: page for c, page in zip(configurations, drawn)})
    _replace_pages(out / "studies", {"%s.html" % m.study: pages.study_page(m, matrices) for m in matrices})
    (out / "configurations.html").write_text(pages.configurations_page(configurations, matrices))
    index = out / "index.html"
    index.write_text(pages.index_page(bundle_rows, study_rows, matrices, configurations))
    return Site(index, len(listed), len(answers), len(configurations), problems)
