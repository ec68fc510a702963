"""Every committed study report (results/reports/<record>/study.{html,md}, the layout of
dlrepro.results.study_report) rebuilt from the repository alone gives the committed verdicts; a report
whose bundles are not committed fails, naming them."""
import re

import pytest

from dlrepro import REPO_ROOT
from dlrepro.results import study_report
from tests.test_study_report import first_screen, verdicts_of

RESULTS = REPO_ROOT / "results"
COMMITTED = sorted((RESULTS / "reports").glob("*/study.html"))


def _record(report):
    """The record a committed report was written from: results/**/<report folder name>.json."""
    found = [p for p in RESULTS.rglob(report.parent.name + ".json") if "reports" not in p.parts]
    assert len(found) == 1, "%s: its record %s.json is not (once) under results/" % (report, report.parent.name)
    return found[0]


def test_committed_study_reports_exist():
    if not COMMITTED:
        pytest.skip("no study report committed under results/reports/ yet (the layout of "
                    "dlrepro.results.study_report); the old results/cpu-studies-20261201/*.md are not in it")


@pytest.mark.parametrize("report", COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_a_committed_study_report_is_rebuilt_with_the_same_verdicts(report, tmp_path):
    made = study_report.write(str(_record(report)), tmp_path / "again", RESULTS)  # MissingBundles names them
    assert verdicts_of(made.html.read_text()) == verdicts_of(report.read_text())
    markdown = report.with_suffix(".md")
    for figure in re.findall(r"\]\((figures/[^)]+)\)", markdown.read_text()):
        assert (report.parent / figure).is_file(), "%s links %s, which is not committed" % (markdown, figure)
    for text in (report.read_text(), markdown.read_text()):
        assert str(REPO_ROOT) not in text and not re.search(r"(/home/|/root/|/tmp/|/work/)", text)
    answer, verdicts, loaded, images, _ = first_screen(report, tmp_path)
    assert answer < 900 and verdicts < 900 and loaded == images
