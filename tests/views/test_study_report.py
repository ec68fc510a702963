"""The study report rebuilt from the repository alone: a constructed study (tests/data/report-study.yaml) over
the committed CPU AlexNet-S bundle, a GPU run this host cannot do and a run whose bundle is missing."""

import hashlib
import json
import re
import subprocess
import sys

import pytest

from dlrepro import REPO_ROOT
from dlrepro.answers import gather, verdicts
from dlrepro.errors import DlreproError
from dlrepro.store import records
from dlrepro.views import numbers, report, study_report
from tests.views.pages import Tables, first_screen, verdicts_of
from tests.views.study_records import GONE, write_record


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    record = write_record(tmp)
    return study_report.write(gather.study(str(record), REPO_ROOT / "results"), tmp / "report", allow_missing=True)


def test_the_answer_comes_first_and_counts_the_claims(made):
    html = made.html.read_text()
    answer = re.search(r'<p id="answer" class="answer">([^<]+)</p>', html).group(1)
    assert answer.startswith(
        "On this study&#39;s host (2-CPU AMD EPYC, no GPU) 3 of Report Study&#39;s 7 claims could be tested: "
    )
    # the reasons of the host's plan (dlrepro.plan.coverage): its GPU claim sets Caffe (compiled with CUDA) on GPUs
    assert "Not testable here: needs an NVIDIA GPU (1); " in answer
    assert "cannot judge: bundle missing (1)" in answer and "it needs two GPU models (1)" in answer
    assert "too few of its tools can run here: a tool the suite does not run (1)" in answer
    # the banner of a smoke pass (the record asked --quick) sits under the title, before the answer
    assert html.index('id="smoke"') < html.index('id="answer"') < html.index('id="verdicts"')


def test_the_verdict_table_sorts_answers_first_and_folds_the_untestable(made):
    html = made.html.read_text()
    table = Tables(html).table("The claims judged here")
    # the bundle has 3 repeats a job, too few for a repeat-level interval: every judged claim is inconclusive,
    # and says that it has no interval (it is not a --quick smoke pass)
    assert list(table["claim"]) == ["cntk-ahead", "tensorflow-ahead", "cntk-ratio"]
    found = verdicts_of(html)
    assert found["gpu-only"] == found["torch"] == found["fcn"] == found["untestable"] == "not testable here"
    assert found["cntk-ahead"] == found["tensorflow-ahead"] == found["cntk-ratio"] == "inconclusive"
    assert all(
        "no 95% interval for CNTK, TensorFlow (a bundle from before repeat-level intervals)" in e
        for e in table["evidence"]
    )
    order = [c for c in re.findall(r'<tr [^>]*data-claim="([^"]+)"', html)]  # after the claim's anchor id
    ranks = [verdicts.rank(found[c]) for c in order]
    assert ranks == sorted(ranks) and len(order) == 3
    assert html.count("<details>") == 4 and 'class="chip" style="background: #' in html
    # the missing bundle is named, and so is its run's claim
    assert "1 bundle of this record not found under results/: %s (run fcn)." % GONE in html
    assert "cannot judge: bundle %s not found under results" % GONE in html


def test_an_empty_table_is_one_line_and_units_are_in_the_header(made):
    html = made.html.read_text()
    assert (
        "A GPU table never retrieved: 0 published values, none measured here (the published values were not "
        "retrieved (2))." in html
    )
    early = Tables(html).table("Seconds per mini-batch (third-party rerun)")
    assert "AlexNet (b16) published (s)" in early.columns or "AlexNet (b16) published (ms)" in early.columns
    assert all("e+" not in v for v in early.values.ravel())


def test_no_machine_path_and_every_figure_embedded(made):
    for text in (made.html.read_text(), made.markdown.read_text()):
        assert str(REPO_ROOT) not in text and "/home/" not in text and "/tmp/" not in text
    page = Tables(made.html.read_text())
    assert page.images and all(i["src"].startswith("data:image/png;base64,") for i in page.images)
    for name in re.findall(r"\]\((figures/[^)]+)\)", made.markdown.read_text()):
        assert (made.markdown.parent / name).is_file(), name
    assert {p.name for p in made.figures} == {
        "claims-strip.png",
        "stated-vs-measured.png",
        "ratio-to-published.png",
        "throughput-alexnet-alexnet-s-throughput-cpu-0.png",
    }


def test_a_missing_bundle_exits_1_unless_allowed(tmp_path):
    record = write_record(tmp_path)
    run = [sys.executable, "-m", "invoke", "study-report", "--name", str(record), "--out", str(tmp_path / "r")]
    done = subprocess.run(run, capture_output=True, text=True, cwd=REPO_ROOT, timeout=600)
    assert done.returncode == 1
    assert "names 1 bundle not found under results: %s" % GONE in done.stdout + done.stderr
    assert (tmp_path / "r" / "study.html").is_file()  # written all the same, saying so
    allowed = subprocess.run(run + ["--allow-missing"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=600)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_a_record_is_found_by_study_name_anywhere_under_results(tmp_path):
    write_record(tmp_path / "a", name="report-study-20261201T000000Z.json")
    newer = write_record(tmp_path / "b" / "deeper", name="report-study-20261202T000000Z.json")
    write_record(tmp_path / "c", name="report-study-extra-20261203T000000Z.json")  # another study's name
    assert records.find("report-study", tmp_path).path == newer
    with pytest.raises(DlreproError, match="report: no such study; studies: dlbench, dlf"):
        records.find("report", tmp_path)


def test_a_changed_manifest_is_refused(tmp_path):
    record = write_record(tmp_path, sha256="0" * 64)
    with pytest.raises(DlreproError, match="changed since the record was made"):
        gather.study(str(record), REPO_ROOT / "results")


def test_a_changed_manifest_of_an_older_schema_is_refused_naming_its_commit():
    first = "bad6887"  # the commit that added studies/dlbench.yaml: its claims then mixed CPU and GPU runs
    old = subprocess.run(["git", "-C", str(REPO_ROOT), "show", "%s:studies/dlbench.yaml" % first], capture_output=True)
    if old.returncode != 0:
        pytest.skip("this checkout has no history back to %s (a shallow clone)" % first)
    sha = hashlib.sha256(old.stdout).hexdigest()
    record = records.Record(
        REPO_ROOT / "results" / "studies" / "dlbench-20261201T000000Z.json",
        {"manifest": {"file": "studies/dlbench.yaml", "sha256": sha}, "suite": {"git": {"commit": first}}},
    )
    with pytest.raises(DlreproError) as caught:
        records.manifest(record)
    assert (
        "the manifest as recorded (studies/dlbench.yaml at commit %s) does not validate under today's rules: "
        "studies/dlbench.yaml@%s:" % (first, first) in str(caught.value)
    )
    assert "runs on cpu and cuda" in str(caught.value)


def test_the_first_screen_holds_the_answer_and_the_verdict_table(made, tmp_path):
    answer, verdicts, loaded, images, width = first_screen(made.html, tmp_path)
    assert answer < 900 and verdicts < 900, (answer, verdicts)
    assert loaded == images == 4  # claims strip, stated vs measured order, ratio to published, the bars: decoded
    assert width <= 1400  # no horizontal scroll at 1400 px


def test_numbers_for_humans():
    assert numbers.rate(13650.2) == "13,650" and numbers.rate(4.571) == "4.57"
    assert numbers.duration(0.003499) == "3.50 ms" and numbers.duration(1500) == "25.0 min"
    assert numbers.change(-0.002608) == "-0.3%" and numbers.percent(0.8694) == "86.9%"
    assert numbers.count(1, "repeat") == "1 repeat" and numbers.count(3, "repeat") == "3 repeats"
    assert numbers.time_unit([0.0035, 0.8]) == "ms" and numbers.in_unit(0.0035, "ms") == "3.50"
    assert numbers.significant(1234567.8) == "1,234,568" and numbers.ratio(1.514) == "1.51x"


def test_dlf_table_2_is_in_minutes_as_published():
    from dlrepro.answers import cells as paper
    from dlrepro.inputs import spec as specmod
    from dlrepro.inputs import studies
    from dlrepro.store import tables

    study = studies.load("dlf")
    empty = tables.frame([], tables.SUMMARY_COLUMNS).assign(run=None)
    refs = {run.spec: specmod.load(run.spec).references for run in study.runs.values()}
    built = {t.name: t for t in paper.build(study, empty, refs, {r: "not runnable here: no GPU" for r in study.runs})}
    shown = study_report.paper_table(built["table2-densenet"])
    cells = [dict(zip(shown.columns, row)) for row in shown.rows]
    assert [c for c in shown.columns if "published" in c] == ["1x V100 published (min)", "4x V100 published (min)"]
    # the README's 25 and 8 minutes of PyTorch (stored in minutes, converted to seconds), shown in minutes again
    assert (cells[0]["tool"], cells[0]["1x V100 published (min)"], cells[0]["4x V100 published (min)"]) == (
        "PyTorch",
        "25.0",
        "8.00",
    )


def test_what_an_interval_rests_on_in_words():
    from runner.stats import CI_METHOD

    assert report._ci_over(CI_METHOD, 1, float("nan")) == "none: 1 repeat, needs 6"
    assert report._ci_over(CI_METHOD, 6, 0.01) == "6 repeats"
    assert report._ci_over(CI_METHOD.replace("repeat medians", "epochs"), 3, float("nan")) == "none: 3 epochs, needs 6"


def test_a_record_that_is_not_there_and_a_misspelled_study_say_so_in_one_line(tmp_path):
    from dlrepro.errors import DlreproError

    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "dlbench-20261201T231715Z.json").write_text("{}")
    with pytest.raises(DlreproError) as gone:
        records.find(str(tmp_path / "studies" / "dlbench-20990101T000000Z.json"), tmp_path)
    assert str(gone.value).endswith("dlbench-20990101T000000Z.json: no such study record file")
    assert "dlbench-20261201T231715Z.json" in gone.value.remedy
    with pytest.raises(DlreproError) as typo:
        records.find("dlbnch", tmp_path)
    assert str(typo.value) == "dlbnch: no such study (did you mean dlbench?); studies: dlbench, dlf"


def test_a_framework_measured_at_another_mini_batch_is_not_called_not_run():
    from dlrepro.answers import cells as paper
    from dlrepro.inputs import spec as specmod
    from dlrepro.inputs import studies
    from dlrepro.store import tables

    study = studies.load("dlf")
    row = dict.fromkeys(tables.SUMMARY_COLUMNS)
    row.update(
        spec="densenet121-chestxray",
        variant="densenet121-synthetic",
        framework="torch",
        batch_size=16,
        status="ok",
        device="cpu",
        mode="throughput",
        job_id="densenet121-synthetic.torch.cpu.b16",
    )
    summary = tables.frame([row], tables.SUMMARY_COLUMNS).assign(run="densenet-cpu")
    refs = {run.spec: specmod.load(run.spec).references for run in study.runs.values()}
    built = {t.name: t for t in paper.build(study, summary, refs, {"densenet": "not runnable here: no GPU"})}
    cell = built["table2-densenet"].cells[("PyTorch", "1x V100")]
    assert (cell.outcome, cell.why) == (
        "not run",
        "not measured at this mini-batch (torch measured mini-batch 16 in run densenet-cpu)",
    )


def test_a_study_file_outside_the_repository_is_the_manifest_while_its_sha256_holds(tmp_path):
    own = tmp_path / "my-study.yaml"
    own.write_bytes((REPO_ROOT / "studies" / "dlf.yaml").read_bytes())
    sha = hashlib.sha256(own.read_bytes()).hexdigest()
    record = records.Record(
        tmp_path / "my-study-20261203T000000Z.json",
        {"manifest": {"file": str(own), "sha256": sha}, "suite": {"git": {"commit": None}}},
    )
    study, note = records.manifest(record)
    assert (study.name, note) == ("dlf", None)
    own.write_text(own.read_text() + "\n# edited\n")
    with pytest.raises(DlreproError, match="the manifest my-study.yaml changed since the record was made"):
        records.manifest(record)


def test_a_study_run_at_both_version_sets_opens_with_the_drift_of_each_claim(tmp_path):
    """The committed AlexNet bundle as both version sets of run cpu (every tool's published version stands on
    today's image, as Caffe's does in DLBench): each claim judged here has one verdict at both and its change is
    "same images", never "keeps" (nothing was compared), and the report opens with that; flips, shifts and keeps
    from constructed rows are in tests/inputs/test_eras.py."""
    tools = {"Caffe": "caffe", "CNTK": "cntk", "MXNet": "mxnet", "TensorFlow": "tensorflow"}
    sets = {
        name: [{"tool": t, "token": f, "label": "%s (%s)" % (t, name)} for t, f in tools.items()]
        for name in ("published", "today")
    }
    record = write_record(tmp_path, versions=sets)
    answer = gather.study(str(record), REPO_ROOT / "results")
    judged = {v.claim: v.verdict for v in answer.claims}  # a --quick bundle: each judged one is inconclusive
    assert judged and {
        d.claim: (d.published.verdict, d.today.verdict, d.change) for d in answer.drift if d.claim in judged
    } == {c: (v, v, "same images") for c, v in judged.items()}
    assert answer.answer.endswith(". From the published versions to today's: 3 on the same images, 4 not judged.")
    made = study_report.write(answer, tmp_path / "report", allow_missing=True)
    markdown = made.markdown.read_text()
    assert markdown.index("### From the published versions to today's") < markdown.index("| verdict | claim |")
    assert (
        "At the published versions (or the nearest the image matrix has): CNTK (published); Caffe (published); "
        "MXNet (published); TensorFlow (published). Today's: CNTK (today)"
    ) in markdown
    assert [d["change"] for d in json.loads((tmp_path / "report" / "study.json").read_text())["drift"]] == [
        d.change for d in answer.drift
    ]
    assert "## The paper's tables, then and now" in markdown
    assert "| TensorFlow (published) -> (today) | " in markdown
    assert "[1] smoke pass: an indicative ratio of one repeat each, never a verdict" in markdown


def test_a_published_table_at_both_version_sets_sets_then_and_now_side_by_side_with_the_versions_that_ran():
    """Constructed cells: TensorFlow 1.4.0 standing for 0.11.0rc0 at 2.0 s then, 0.5 s now (now / then 0.25x); a
    tool the study ran at one version for both (Caffe 1.0.0) is folded into the note; a tool measured at one set
    only shows no ratio; a smoke pass on either side shows its ratio as an indication, marked (review U8)."""
    from dlrepro.answers.cells import Cell, PaperTable

    def table(values, smoke=None):
        cells = {
            (tool, "FCN-S"): Cell(
                tool, "FCN-S", published=0.03, measured=v, outcome="differs" if v else "not run", smoke=smoke
            )
            for tool, v in values.items()
        }
        return PaperTable(
            "t7",
            "Table 7 - seconds per mini-batch",
            "arXiv 1608.07249v7 Table 7",
            "published",
            list(values),
            ["FCN-S"],
            cells,
            kind="time",
        )

    chosen = {
        "published": [
            {"tool": "TensorFlow", "token": "tensorflow@1.4.0", "label": "TensorFlow 1.4.0 (published: 0.11.0rc0)"},
            {"tool": "Caffe", "token": "caffe", "label": "Caffe 1.0.0 (published: 1.0rc5)"},
        ],
        "today": [
            {"tool": "TensorFlow", "token": "tensorflow", "label": "TensorFlow 2.21.0"},
            {"tool": "Caffe", "token": "caffe", "label": "Caffe 1.0.0"},
        ],
    }
    record = {"runs": {"cpu": {"versions": chosen}}}
    then = table({"TensorFlow": 2.0, "Caffe": 1.0, "MXNet": None})
    now = table({"TensorFlow": 0.5, "Caffe": 1.0, "MXNet": 0.7})
    shown = study_report.then_and_now(now, then, record)
    assert shown.columns == [
        "tool (then -> now)",
        "FCN-S published (s)",
        "FCN-S then (s)",
        "FCN-S then: outcome",
        "FCN-S now (s)",
        "FCN-S now / then",
    ]
    assert shown.rows == [
        ["TensorFlow 1.4.0 (published: 0.11.0rc0) -> 2.21.0", "0.0300", "2.00", "differs", "0.500", "0.250x"],
        ["MXNet", "0.0300", "", "not run", "0.700", ""],
    ]
    assert shown.note.endswith(" The same version at both sets, not shown: Caffe 1.0.0 (published: 1.0rc5).")
    assert shown.footnotes == []
    quick = study_report.then_and_now(now, then, record, quick=True)
    assert [r[5] for r in quick.rows] == ["0.250x (smoke) [1]", ""] and quick.footnotes == [
        "smoke pass: an indicative ratio of one repeat each, never a verdict"
    ]
    assert [
        r[5]
        for r in study_report.then_and_now(
            table({"TensorFlow": 0.5, "Caffe": 1.0, "MXNet": 0.7}, smoke="--quick"), then, record
        ).rows
    ] == ["0.250x (smoke) [1]", ""]


def test_a_report_reads_the_plan_its_record_holds_whatever_the_files_say_today(tmp_path, monkeypatch):
    """`dlrepro study` records its host's plan (dlrepro.plan.coverage_record); the report reads it and plans nothing:
    with the planner and the spec loader broken, a committed record given a recorded plan is reported with the
    recorded reasons."""
    from dlrepro.images import matrix as matrixmod
    from dlrepro.inputs import spec as specmod
    from dlrepro.plan import coverage, coverage_record

    committed = REPO_ROOT / "results" / "studies" / "dlbench-20261204T031414Z.json"
    body = json.loads(committed.read_text())
    answer = gather.study(str(committed), REPO_ROOT / "results")
    plan = coverage_record.record(
        answer.study, coverage.Hardware(None, 0, 2, coverage.every_dataset()), matrixmod.load(), None
    )
    claim = next(o for o in plan["sets"]["today"]["claims"] if o["what"] == "fcn-s-ordering")
    claim.update(testable=False, cause="untestable", reason="as recorded when the study ran", tools={})
    body["plan"] = plan
    record = tmp_path / committed.name
    record.write_text(json.dumps(body))

    def broken(*args, **kwargs):
        raise AssertionError("a report with a recorded plan planned again")

    today = specmod.load
    monkeypatch.setattr(coverage, "plan", broken)  # and every spec file changed since: no published values left
    monkeypatch.setattr(specmod, "load", lambda name: today(name).model_copy(update={"references": []}))
    again = gather.study(str(record), REPO_ROOT / "results")
    reasons = {v.claim: why for why, group in again.untestable for v in group}
    assert reasons["fcn-s-ordering"] == "as recorded when the study ran"


def test_the_first_screen_says_which_of_the_studys_own_tables_are_not_in_the_suite(made):
    """Review U4: DLBench's own tables are empty (115 cells 'the published values were not retrieved') and no
    headline said so before someone rents a K80 to judge them."""
    line = (
        "Report Study's own tables are not in the suite (their published values were not retrieved): A GPU "
        "table never retrieved; so none of their cells can be judged, on their hardware or any other; the "
        "published cells here are a third-party rerun's (GTX Titan X: guolinke/deep-learning-benchmarks README)."
    )
    parts = made.markdown.read_text().split("\n\n")  # the title, the smoke and manifest notes, the answer, the line
    assert parts[3].startswith("On this study's host") and parts[4] == "> **%s**" % line
    html = made.html.read_text()
    assert '<p class="banner" id="unretrieved">%s</p>' % line.replace("'", "&#39;") in html


def test_then_and_now_gives_an_indicative_smoke_ratio_folds_unchanged_versions_and_collapses_unjudged_drift():
    """Review U8: every now / then cell read 'smoke pass: no ratio', rows whose version did not change (Caffe
    1.0.0 -> 1.0.0) read like drift, and 22 'not judged' drift rows said the same thing 22 times."""
    answer = gather.study(
        str(REPO_ROOT / "results" / "studies" / "dlbench-20261204T031414Z.json"), REPO_ROOT / "results"
    )
    context = study_report.context(answer)
    (row,) = context["drift"].rows
    assert row[0] == "not judged" and row[1].startswith("22 claims: fcn-s-ordering, resnet50-ordering, ")
    assert row[2] == "no verdict at either set: not testable here, or not asked"
    table = context["then_and_now"][0][1]
    assert table.note.endswith("The same version at both sets, not shown: Caffe 1.0.0 (published: 1.0rc5).")
    assert table.footnotes == ["smoke pass: an indicative ratio of one repeat each, never a verdict"]
    # MXNet 0.12.0 then 0.851 s, 1.9.1 now 0.428 s (one repeat each): 0.503x, marked, never a verdict
    assert table.rows[1][:6] == [
        "MXNet 0.12.0 (published: 0.9.3) -> 1.9.1",
        "0.0270",
        "0.851",
        "cannot be compared",
        "0.428",
        "0.503x (smoke) [1]",
    ]
    assert [r[0].split(" ")[0] for r in table.rows] == ["CNTK", "MXNet", "TensorFlow", "Theano", "Torch"]


def test_then_and_now_is_drawn_one_point_per_tool_and_measurement_a_smoke_pass_hollow():
    """Review U8: the DLBench report said 'nothing to plot' for then and now. The committed --versions both record of
    DLF: one point per tool and time table (its K80 and P100 columns hold one CPU job: one point), a tool at one
    version at both sets none, accuracies none; every point a smoke pass (the study ran --quick)."""
    answer = gather.study(str(REPO_ROOT / "results" / "studies" / "dlf-20261204T033514Z.json"), REPO_ROOT / "results")
    points = study_report.then_and_now_points(answer)
    assert [(label, round(ratio, 4), smoke) for label, ratio, smoke in points] == [
        ("Table 3: CNTK 2.5.1 (published: 2.4) -> 2.7.post2, K80, P100", 0.945, True),
        ("Table 3: MXNet(Gluon) 0.12.0 -> 1.9.1, K80, P100", 0.4156, True),
        ("Table 3: Tensorflow 1.4.0 -> 2.21.0, K80, P100", 0.3076, True),
        ("Table 3: PyTorch 1.0.0 (published: 0.3.1) -> 2.13.0, K80, P100", 0.7004, True),
        ("Table 4: MXNet(Gluon) 0.12.0 -> 1.9.1, K80, P100", 0.3982, True),
        ("Table 4: PyTorch 1.0.0 (published: 0.3.1) -> 2.13.0, K80, P100", 0.3693, True),
        ("Table 4: Tensorflow 1.4.0 -> 2.21.0, K80, P100", 0.4424, True),
    ]
    (figure,) = [f for f in study_report.context(answer)["figures"] if f.name == "then-vs-now"]
    assert figure.points == tuple(points) and figure.png.startswith(b"\x89PNG")
