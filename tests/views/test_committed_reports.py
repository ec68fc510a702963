"""Every committed report, rebuilt from the repository alone, is the committed copy: each study report
(results/reports/<record>/study.md, from its record and the bundles it names) and each bundle report (any
results/**/report.md, from the bundles its title names). Text equal byte for byte, every figure it links
committed, no machine path in it; a report whose bundles are not committed fails, naming them."""

import re

import pytest

from dlrepro import REPO_ROOT
from dlrepro.answers import gather
from dlrepro.views import report as bundle_report
from dlrepro.views import study_report
from tests.views.pages import first_screen, verdicts_of
from tests.views.study_records import committed_answer

RESULTS = REPO_ROOT / "results"
STUDIES = sorted((RESULTS / "reports").glob("*/study.md"))
BUNDLE_REPORTS = sorted(RESULTS.rglob("report.md"))
MACHINE = re.compile(r"(/home/|/root/|/tmp/|/work/|/opt/)")


def _record(report):
    """The record a committed study report was written from: results/**/<report folder name>.json."""
    found = [p for p in RESULTS.rglob(report.parent.name + ".json") if "reports" not in p.parts]
    assert len(found) == 1, "%s: its record %s.json is not (once) under results/" % (report, report.parent.name)
    return found[0]


def _same_files(committed, made):
    """The rebuilt Markdown equals the committed one; every figure the committed copy links is committed; no
    machine path in either page."""
    text = committed.read_text()
    assert made.read_text() == text, "%s differs from what the code writes now: regenerate it" % committed
    for figure in re.findall(r"\]\((figures/[^)]+)\)", text):
        assert (committed.parent / figure).is_file(), "%s links %s, which is not committed" % (committed, figure)
    for page in (text, committed.with_suffix(".html").read_text()):
        assert str(REPO_ROOT) not in page and not MACHINE.search(page), committed


def test_there_are_committed_reports_of_both_kinds():
    assert STUDIES and BUNDLE_REPORTS


@pytest.mark.parametrize("report", STUDIES, ids=[p.parent.name for p in STUDIES])
def test_a_committed_study_report_is_rebuilt_as_committed(report, tmp_path):
    made = study_report.write(committed_answer(_record(report), RESULTS), tmp_path / "again")  # MissingBundles
    _same_files(report, made.markdown)
    html = report.with_suffix(".html")
    assert verdicts_of(made.html.read_text()) == verdicts_of(html.read_text())
    answer, verdicts, loaded, images, _ = first_screen(html, tmp_path)
    assert answer < 900 and verdicts < 900 and loaded == images


@pytest.mark.parametrize("report", BUNDLE_REPORTS, ids=[str(p.parent.relative_to(RESULTS)) for p in BUNDLE_REPORTS])
def test_a_committed_bundle_report_is_rebuilt_as_committed(report, tmp_path):
    ids = re.match(r"# dlrepro report: (.+)", report.read_text()).group(1).split(", ")
    made = bundle_report.write(gather.bundles(ids, RESULTS), tmp_path / "again")
    _same_files(report, made.markdown)


@pytest.mark.parametrize("report", STUDIES, ids=[p.parent.name for p in STUDIES])
def test_every_not_testable_reason_of_a_committed_study_report_is_its_hosts_plan(report):
    """A claim the plan of the study's host (dlrepro.plan.coverage, the record's own or computed once from its manifest
    and its bundles' host record: dlrepro.plan.coverage_record) says it cannot test is folded under the plan's headline
    with the plan's reason as its evidence: no reason promises what the host, or any GPU, would not give."""
    from dlrepro.images import matrix as matrixmod
    from dlrepro.plan import coverage_record

    answer = committed_answer(_record(report), RESULTS)
    plans = coverage_record.of_record(answer.record, answer.study, answer.bundle.bodies, matrixmod.load())
    planned = plans.get("today") or next(iter(plans.values()))
    checked = 0
    for headline, group in answer.untestable:
        for v in group:
            o = planned[v.claim]
            if not o.testable:
                assert (headline, v.evidence if o.cause != "untestable" else o.reason) == (o.headline, o.reason), (
                    v.claim
                )
                checked += 1
    assert checked >= 5
