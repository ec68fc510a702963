"""The tasks that read what the store holds and answer: a study's report, a bundle's report, check against the
published values, compare two bundles, validate, merge, archive and verify (dlrepro.cli.tasks gathers every task
into the program). Each parses its options, asks dlrepro.answers.gather for the answer model once, renders it
(dlrepro.views, dlrepro.cli.render) and exits with the model's status.
"""

from invoke import Exit

from dlrepro import folders
from dlrepro.cli.console import console, dim, user_errors
from dlrepro.cli.options import BUNDLE_HELP, PRICE_HELP, RESULTS_HELP, task
from dlrepro.run.optiontext import names


def _bundle(name, results):
    """The folder of bundle ``name`` (folder, id under the results folder, or 'latest': the newest complete one)."""
    from dlrepro.answers import gather

    return gather.folders([name], folders.results_root(results))[0]


def _fraction(option, text, high, zero, example):
    """``text`` as a finite number from 0 (included when ``zero``) to ``high`` (excluded); raises DlreproError
    naming ``option``, with ``example`` as its remedy, for anything else (nan and inf included)."""
    from dlrepro.errors import DlreproError

    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 <= value < high if zero else 0 < value < high):  # nan is in no range
        raise DlreproError(
            "%s: expected a number from 0 (%s) to %g (excluded) (got %r)"
            % (option, "included" if zero else "excluded", high, text),
            "e.g. %s %s" % (option, example),
        )
    return value


def price(text):
    """--price-per-hour as a number of USD (> 0, finite), None when not given (""); raises DlreproError for
    anything else."""
    from dlrepro.errors import DlreproError

    if text in ("", None):
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise DlreproError(
            "--price-per-hour: expected a price in USD above 0 (got %r)" % text,
            "e.g. --price-per-hour 3.5 (USD per device-hour: one GPU, or one logical CPU)",
        )
    return value


@task(
    name="study-report",
    help={
        "name": "a study name (its latest record under RESULTS/studies/) or a study record file",
        "out": "folder for study.html, study.md and figures/ (default: RESULTS/reports/<study record name>)",
        "results": RESULTS_HELP,
        "allow_missing": "write the report (exit 0) even when bundles the record names are not under RESULTS",
        "price_per_hour": PRICE_HELP,
    },
)
def study_report(c, name, out="", results="", allow_missing=False, price_per_hour=""):
    """Write a study's report from its record.

    Rebuilt from the repository alone: a bundle the record names but RESULTS lacks is named as missing and
    the command exits 1 (after writing the report) unless --allow-missing."""
    with user_errors():
        made = write_study_report(
            name, out_folder(out), folders.results_root(results), allow_missing, price(price_per_hour)
        )
        for path in [made.html, made.markdown] + made.figures:
            console.print(str(path))


def out_folder(out):
    """The folder --out names (made when missing), None when not given (""); raises DlreproError when it,
    or the nearest folder above it that exists, is a file, or when it is a bundle's folder or lies in one (a
    file written there would make the bundle invalid: its checksums list its files)."""
    from pathlib import Path

    from dlrepro.errors import DlreproError

    if not out:
        return None
    at = folders.file_in_the_way(Path(out))
    if at:
        raise DlreproError(
            "--out %s: %s is not a folder" % (out, "it" if at == Path(out) else at),
            "give a folder for the report (it is made when missing), not a file",
        )
    bundle = folders.bundle_around(out)
    if bundle:
        raise DlreproError(
            "--out %s: %s the bundle folder %s; a bundle holds only the files its checksums list, "
            "so nothing is written there" % (out, "it is" if bundle == Path(out).resolve() else "it lies in", bundle),
            "give a folder outside the bundle, or leave --out out",
        )
    return Path(out)


def write_study_report(name, out, results_dir, allow_missing, price_per_hour=None):
    """Write the study report of record ``name`` into folder ``out`` (a Path; None: RESULTS/reports/<record
    name>), its costs at ``price_per_hour`` (None: the price table's); prints its answer first, and a line when it
    replaced a report there."""
    from pathlib import Path

    from dlrepro.answers import gather
    from dlrepro.views import study_report as reports

    answer = gather.study(name, results_dir, price_per_hour)
    console.print(answer.answer, soft_wrap=True, highlight=False)
    folder = out or results_dir / "reports" / Path(answer.record_path).stem
    there = _report_there(folder, "study.md", "study.html")
    made = reports.write(answer, folder, allow_missing)
    _rewrote(folder, there)
    return made


@task(help={"bundle": BUNDLE_HELP, "results": RESULTS_HELP})
def validate(c, bundle, results=""):
    """Check a bundle's files against its schema.

    Checksums, bundle.json, spec hash, jobs, tables, statistics; exit status 1 when any check fails."""
    from dlrepro.cli import render
    from dlrepro.store import validate as checks

    with user_errors():
        folder = _bundle(bundle, results).resolve()
        problems = checks.check(folder)
        render.problems(problems)
        if problems:
            console.print("[red]invalid:[/] %s: %d problem(s)" % (folder, len(problems)))
            raise Exit(code=1)
        console.print("[green]valid[/] %s: %s" % (folder, ", ".join(c.__name__ for c in checks.CHECKS)))


@task(
    more=True,
    help={
        "bundles": "bundles (folders, ids under --results, or 'latest'), comma- or space-separated",
        "out": "folder for summary.parquet, summary.csv and samples.parquet (default: print the summary only)",
        "results": RESULTS_HELP,
    },
)
def merge(c, bundles, out="", results=""):
    """Merge bundles into one summary and samples table.

    A bundle given twice is read once; the same job measured in several bundles is kept each
    time, numbered in the columns measurement / measurements."""
    from dlrepro.cli import render
    from dlrepro.store import tables

    with user_errors():
        summary, samples = tables.merge_to([_bundle(b, results) for b in names(bundles) or []], out_folder(out))
        if out:
            console.print("wrote %s: %d jobs, %d samples" % (out, len(summary), len(samples)))
        console.print(
            render.summary_frame(
                summary,
                [
                    "bundle_id",
                    "job_id",
                    "device_name",
                    "framework_version",
                    "status",
                    "median",
                    "throughput",
                    "measurement",
                    "measurements",
                ],
                "%d bundles, %d jobs" % (summary["bundle_id"].nunique(), len(summary)),
            )
        )


def _exit(found, fail_on, json, failed):
    """Write the result's JSON (in every case) and exit with its status under ``fail_on``: 2 nothing compared (its
    reason printed), 1 something fails (``failed``: what, in words), else 0."""
    import json as jsonlib
    from pathlib import Path

    if json:
        Path(json).write_text(jsonlib.dumps(found.to_json(fail_on), indent=1) + "\n")
    status = found.exit_status(fail_on)
    if status == 2:
        console.print("[red]nothing compared[/] (exit status 2): %s" % found.nothing, soft_wrap=True)
    elif status == 1:
        console.print("[red]failed[/] (--fail-on %s): %s" % (fail_on, failed), soft_wrap=True)
    if status:
        raise Exit(code=status)


def _json_file(json):
    """Raise DlreproError naming --json when ``json`` (a path, or "" when not given) cannot be written as a file:
    a folder, or a file in no folder; checked before anything is read or compared."""
    from pathlib import Path

    from dlrepro.errors import DlreproError

    path = Path(json)
    if json and (path.is_dir() or not path.parent.is_dir()):
        raise DlreproError(
            "--json %s: %s" % (json, "it is a folder" if path.is_dir() else "no folder %s" % path.parent),
            "give a file name in a folder that exists, e.g. --json result.json",
        )


def _choice(option, value, choices):
    from dlrepro.errors import DlreproError

    if value not in choices:
        raise DlreproError("%s: expected one of %s (got %r)" % (option, ", ".join(choices), value))
    return value


@task(
    positional=["old", "new"],
    either={"new": "against"},
    help={
        "old": "the baseline bundle A (folder, id under --results, or 'latest'); with --against: the bundle B",
        "new": "the bundle B checked for regressions against A",
        "against": "the baseline A, for `compare B --against A` (the same as `compare A B`)",
        "min-effect": "smallest relative change of the median reported as a change, >= 0 and < 1 (default 0.05 = 5%)",
        "alpha": "significance level of the test, between 0 and 0.5 (default 0.01)",
        "fail-on": "exit status 1 when a configuration is: slower (default), "
        "faster, change (either), unproven (slower, "
        "'cannot tell' or 'not comparable') or never",
        "json": "also write the result as JSON to this file (in every case)",
        "results": RESULTS_HELP,
    },
)
def compare(c, old, new=None, against="", min_effect="0.05", alpha="0.01", fail_on="slower", json="", results=""):
    """Compare two bundles: faster, slower, no change.

    Per job configuration in both: Mann-Whitney U on the repeat medians and a minimum effect; the verdicts are
    faster, slower, no change or cannot tell. Exit status: 0 when nothing fails under --fail-on, 1 when a
    configuration does (a pipeline stops on a regression), 2 when the bundles share no configuration or an input
    is bad (a bundle not found, an option value).
    Against the published values: `dlrepro check BUNDLE`."""
    from dlrepro.answers import gather, model
    from dlrepro.cli import render
    from dlrepro.errors import DlreproError

    with user_errors():
        if against and new:
            raise DlreproError("give two bundles (compare A B) or one and --against (compare B --against A), not both")
        a, b = (against, old) if against else (old, new)
        _choice("--fail-on", fail_on, model.FAIL_ON)
        _json_file(json)
        effect = _fraction("--min-effect", min_effect, 1, True, "0.05 (a change of 5%)")
        level = _fraction("--alpha", alpha, 0.5, False, "0.01")
        found = gather.comparison(a, b, effect, level, folders.results_root(results))
        render.comparison(found)
        _exit(found, fail_on, json, "%d configuration(s)" % len(found.failing(fail_on)))


@task(
    help={
        "bundle": BUNDLE_HELP,
        "fail-on": "exit status 1 when: never (default) or change (a cell outside the published tolerance, or a "
        "ranking that does not hold)",
        "json": "also write the result as JSON to this file (in every case)",
        "results": RESULTS_HELP,
    }
)
def check(c, bundle, fail_on="never", json="", results=""):
    """Check a bundle against the published numbers.

    Per published cell: measured / published and a verdict; per published ranking: Kendall's tau.
    Exit status: 0 (by default whatever the verdicts: other hardware differs), 1 when --fail-on change and a
    cell or ranking fails, 2 when no job of the bundle matches a published reference or an input is bad."""
    from dlrepro.answers import gather, model
    from dlrepro.cli import render

    with user_errors():
        _choice("--fail-on", fail_on, model.CHECK_FAIL_ON)
        _json_file(json)
        found = gather.bundles([bundle], folders.results_root(results))
        render.check(found)
        cells, rankings = found.failing(fail_on)
        _exit(
            found,
            fail_on,
            json,
            "%d cell(s)%s" % (len(cells), ", %d ranking(s) that do not hold" % len(rankings) if len(rankings) else ""),
        )


@task(
    help={
        "bundle": BUNDLE_HELP,
        "out": "the archive to write, or a folder (ending in /: created when missing) for <bundle-id>.tar.gz "
        "(default: ./<bundle-id>.tar.gz)",
        "images": "also `docker save` the bundle's images, by the image IDs bundle.json records (large)",
        "license": "SPDX id of the results' license, recorded in the RO-Crate (default CC-BY-4.0)",
        "author": "name of the person archiving, recorded as the run's agent in the RO-Crate",
        "results": RESULTS_HELP,
    }
)
def archive(c, bundle, out="", images=False, license="CC-BY-4.0", author="", results=""):
    """Archive a bundle into one checkable tar.gz.

    With RO-Crate metadata and a manifest; `dlrepro verify ARCHIVE` rechecks it anywhere, years later."""
    from dlrepro.store import archive as archives
    from dlrepro.views import numbers

    with user_errors():
        made = archives.create(
            str(_bundle(bundle, results)),
            out or None,
            images,
            license,
            author or None,
            log=lambda m: console.print(dim(m)),
        )
        for warning in made.warnings:
            console.print("[yellow]warning:[/] %s" % warning)
        console.print(
            "archive: %s (%d files, %s)" % (made.path, len(made.members), numbers.size(made.path.stat().st_size))
        )


@task(help={"archive": "a tar.gz written by `dlrepro archive`"})
def verify(c, archive):
    """Recheck an archive's checksums and schema.

    Every checksum (manifest, the bundle's SHA256SUMS, RO-Crate); exit status 1 when any check fails, each
    problem naming its file."""
    from dlrepro.cli import render
    from dlrepro.store import archive as archives

    with user_errors():
        result = archives.verify(archive)
        render.problems(result.problems)
        if not result.ok:
            console.print(
                "[red]verify failed:[/] %d problem(s) in %d file(s) of %s"
                % (len(result.problems), len({p.file for p in result.problems}), result.archive)
            )
            raise Exit(code=1)
        console.print(
            "[green]ok[/] %s: %d files; MANIFEST.sha256, SHA256SUMS and the RO-Crate agree; the bundle is "
            "valid (dlrepro validate's checks)" % (result.bundle_id, result.files)
        )


@task(
    more=True,
    help={
        "bundles": "bundles (folders, ids under --results, or 'latest'), comma- or space-separated",
        "out": "folder for report.html, report.md and figures/ (default: RESULTS/reports/<first bundle id>[+N])",
        "results": RESULTS_HELP,
        "price_per_hour": PRICE_HELP,
    },
)
def report(c, bundles, out="", results="", price_per_hour=""):
    """Write report.md and report.html of bundles.

    Environment (the studies' vs here), results, comparison with the published values, ranking
    verdicts, and plots: seconds per mini-batch vs batch size, throughput bars, accuracy vs time.
    Written where study reports go, RESULTS/reports/, unless --out; a report there before is replaced."""
    from dlrepro.answers import gather
    from dlrepro.views import report as reports

    with user_errors():
        root, target = folders.results_root(results), out_folder(out)
        answer = gather.bundles(names(bundles) or [], root, price(price_per_hour))
        more = "+%d" % (len(answer.ids) - 1) if len(answer.ids) > 1 else ""
        target = target or root / "reports" / (answer.ids[0] + more)
        there = _report_there(target, "report.md", "report.html")
        made = reports.write(answer, target)
        for line in made.headline:
            console.print(line, soft_wrap=True, highlight=False)
        _written(made, there)


@task(
    help={
        "results": RESULTS_HELP,
        "price_per_hour": PRICE_HELP,
        "out": "the folder to build the site in (default: RESULTS/reports); the committed study reports there "
        "are never written by the site (its study reports go to OUT/records/)",
    }
)
def site(c, results="", price_per_hour="", out=""):
    """Build the results site of every bundle and study.

    OUT/index.html (OUT: --out, default RESULTS/reports): every bundle and study record with their
    data files, each configuration's history across bundles (regressions by compare's rules, an
    Atom feed of them), each configuration across hardware and versions, each study's claims x
    (host, version set), cost and energy per sample; each page's table as JSON beside it.
    Incremental: a report whose bundle, record and code are unchanged is not drawn again, a page
    is written only when it changed. Static and deterministic: open it in a browser or copy the
    folder. A bundle or record that cannot be read is a row saying why, the rest is built, and
    the exit status is 1."""
    from dlrepro.cli import site_task as sitemod

    with user_errors():
        made = sitemod.build(
            folders.results_root(results),
            price(price_per_hour),
            progress=lambda line: console.print(line, soft_wrap=True, highlight=False),
            out=out or None,
        )
        for problem in made.problems:
            console.print("[yellow]no report:[/] %s" % problem, soft_wrap=True, highlight=False)
        console.print(
            "site: %s (%d bundles, %d study records, %d configurations; %d reports drawn, %d files "
            "written)" % (made.index, made.bundles, made.studies, made.configurations, made.drawn, made.written),
            soft_wrap=True,
            highlight=False,
        )
        if made.problems:
            raise Exit(code=1)


def _report_there(folder, *names):
    """Whether ``folder`` holds a report already (one of the files ``names``)."""
    return folder is not None and any((folder / name).is_file() for name in names)


def _written(made, rewritten):
    """Print where a report went (its HTML, Markdown and figures), after _rewrote's line."""
    _rewrote(made.html.parent, rewritten)
    for path in [made.html, made.markdown] + made.figures:
        console.print(str(path), soft_wrap=True)


def _rewrote(folder, rewritten):
    """'rewrote FOLDER: ...' when the report just written in ``folder`` replaced one that was there."""
    if rewritten:
        console.print("rewrote %s: the report there before is replaced" % folder, soft_wrap=True)
