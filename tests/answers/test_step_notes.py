"""The study report shows how each measured cell's step was timed, where its job or the study's own scripts timed
another step than the suite's default (answers.steps; studies/<name>.yaml ``steps``; issue 55). Engine-free."""

from dlrepro.answers import steps
from dlrepro.answers.cells import Cell, PaperTable
from dlrepro.inputs import studies
from dlrepro.views import study_report

DLBENCH = studies.load("dlbench")
STUDY_STEP = (
    "TensorFlow: timed as the study's scripts did: gradients gate_op, thread pools intra_op "
    "(studies/dlbench.yaml steps.TensorFlow)"
)
SUITE_STEP = (
    "TensorFlow: timed with the suite's step, gradients pruned, thread pools all; the study's scripts timed "
    "gradients gate_op, thread pools intra_op (studies/dlbench.yaml steps.TensorFlow)"
)


def _row(device="cpu", **options):
    return dict(device=device, **options)


def test_a_cell_timed_with_the_study_s_step_says_so_and_where_the_study_says_it():
    row = _row(gradients="gate_op", thread_pools="intra_op")
    assert steps.note(DLBENCH, "TensorFlow", "cpu-synthetic", row) == STUDY_STEP


def test_a_cell_of_a_table_before_the_step_columns_ran_the_suite_s_step_and_says_what_the_study_s_was():
    assert steps.note(DLBENCH, "TensorFlow", "cpu-synthetic", _row()) == SUITE_STEP  # no gradients/thread_pools
    assert (
        steps.note(DLBENCH, "TensorFlow", "cpu-synthetic", _row(gradients=None, thread_pools=float("nan")))
        == SUITE_STEP
    )


def test_a_gpu_cell_compares_the_gradients_only_and_a_run_the_step_does_not_name_says_nothing():
    assert steps.note(DLBENCH, "TensorFlow", "gpu-synthetic", _row("cuda", gradients="gate_op")) == (
        "TensorFlow: timed as the study's scripts did: gradients gate_op (studies/dlbench.yaml steps.TensorFlow)"
    )
    assert steps.note(DLBENCH, "TensorFlow", "cpu-synthetic-rnn", _row()) == ""  # DLBench's lstm.py: tf.gradients
    assert steps.note(DLBENCH, "PyTorch", "cpu-synthetic", _row()) == ""  # no steps entry, the suite's step


def test_a_job_that_ran_another_step_without_a_study_entry_names_what_it_ran():
    assert steps.note(DLBENCH, "PyTorch", "cpu-synthetic", _row(gradients="gate_op")) == (
        "PyTorch: timed with gradients gate_op, thread pools all"
    )


def test_work_the_study_s_step_did_that_the_suite_s_does_not_is_named_beside_the_cell():
    study = DLBENCH.model_copy(
        update={
            "steps": dict(
                DLBENCH.steps,
                MXNet=studies.StudyStep(
                    differs=["a cross-entropy fetched to the host each step"], runs=["cpu-synthetic"], source="x"
                ),
            )
        }
    )
    assert steps.note(study, "MXNet", "cpu-synthetic", _row()) == (
        "MXNet: the study's step also did, not reproduced here: a cross-entropy fetched to the host each step "
        "(studies/dlbench.yaml steps.MXNet)"
    )
    assert steps.note(study, "MXNet", "cpu-real-fcn", _row()) == ""


def _table(values):
    cells = {
        (tool, "FCN-S"): Cell(
            tool,
            "FCN-S",
            published=2.0,
            measured=v,
            ratio=v / 2.0,
            outcome="differs",
            why="slower" if v > 2.5 else "",
            step=step,
        )
        for tool, (v, step) in values.items()
    }
    return PaperTable(
        "t7",
        "Table 7 - seconds per mini-batch (s)",
        "arXiv 1608.07249v7 Table 7",
        "published",
        list(values),
        ["FCN-S"],
        cells,
        kind="time",
    )


def test_the_paper_table_marks_the_measured_value_with_its_step_and_numbers_it_once_with_the_reasons():
    shown = study_report.paper_table(
        _table({"TensorFlow": (3.0, STUDY_STEP), "MXNet": (2.2, ""), "Caffe": (2.8, STUDY_STEP)})
    )
    assert shown.rows == [
        ["TensorFlow", "2.00", "3.00 [1]", "1.50x", "differs [2]"],
        ["MXNet", "2.00", "2.20", "1.10x", "differs"],
        ["Caffe", "2.00", "2.80 [1]", "1.40x", "differs [2]"],
    ]
    assert shown.footnotes == [STUDY_STEP, "slower"]


def test_then_and_now_marks_each_side_s_value_with_its_step():
    then = _table({"TensorFlow": (3.0, STUDY_STEP)})
    now = _table({"TensorFlow": (1.5, "")})
    record = {
        "runs": {
            "cpu": {
                "versions": {
                    "published": [{"tool": "TensorFlow", "token": "tensorflow@1.4.0", "label": "TensorFlow 1.4.0"}],
                    "today": [{"tool": "TensorFlow", "token": "tensorflow", "label": "TensorFlow 2.21.0"}],
                }
            }
        }
    }
    shown = study_report.then_and_now(now, then, record)
    assert shown.rows == [["TensorFlow 1.4.0 -> 2.21.0", "2.00", "3.00 [1]", "differs", "1.50", "0.500x"]]
    assert shown.footnotes == [STUDY_STEP]


def test_the_plan_notes_the_work_a_study_s_step_did_that_the_suite_s_does_not():
    from dlrepro.run import study as studymod

    study = DLBENCH.model_copy(
        update={
            "steps": dict(
                DLBENCH.steps,
                MXNet=studies.StudyStep(
                    differs=["a cross-entropy fetched to the host each step"], runs=["cpu-synthetic"], source="x"
                ),
            )
        }
    )
    run = {
        p.id: p
        for p in studymod.plan(
            study, device="cpu", frameworks=["mxnet"], cpus=2, gpus=[], runs=["cpu-synthetic"], versions="published"
        )
    }["cpu-synthetic"]
    assert run.options.steps == {}
    assert run.notes[-1] == (
        "MXNet (mxnet@0.12.0): the suite's step, as the study's scripts (gradients pruned, "
        "thread_pools all); the study's step also did, not reproduced here: a cross-entropy "
        "fetched to the host each step"
    )


def test_a_study_report_from_a_record_whose_manifest_has_steps_shows_them_beside_the_cells(tmp_path):
    """End to end: tests/data/report-study.yaml with steps for TensorFlow (the study's gate_op and intra_op) and
    MXNet (a named difference) over the committed AlexNet-S bundle, whose jobs ran the suite's step."""
    import hashlib
    import json
    import re

    from dlrepro import REPO_ROOT
    from dlrepro.answers import gather
    from tests.views.study_records import MANIFEST, write_record

    manifest = tmp_path / "report-study.yaml"
    manifest.write_text(
        MANIFEST.read_text().replace(
            "\ntables:\n",
            (
                "\nsteps:\n  TensorFlow: {gradients: gate_op, thread_pools: intra_op, runs: [cpu], source: made up}\n"
                "  MXNet: {differs: [a metric fetched each step], runs: [cpu], source: made up}\n"
                "tables:\n"
            ),
            1,
        )
    )
    record = write_record(tmp_path, sha256=hashlib.sha256(manifest.read_bytes()).hexdigest())
    body = json.loads(record.read_text())
    body["manifest"]["file"] = str(manifest)
    record.write_text(json.dumps(body))
    made = study_report.write(gather.study(str(record), REPO_ROOT / "results"), tmp_path / "report", allow_missing=True)
    text = made.markdown.read_text()
    tf = (
        "TensorFlow: timed with the suite's step, gradients pruned, thread pools all; the study's scripts timed "
        "gradients gate_op, thread pools intra_op (studies/report-study.yaml steps.TensorFlow)"
    )
    mx = (
        "MXNet: the study's step also did, not reproduced here: a metric fetched each step "
        "(studies/report-study.yaml steps.MXNet)"
    )
    notes = dict((text_, mark) for mark, text_ in re.findall(r"^(\[\d+\]) (.+)$", text, re.M))
    assert tf in notes and mx in notes
    rows = {
        line.split("|")[1].strip(): line
        for line in text.splitlines()
        if line.startswith("| TensorFlow |") or line.startswith("| MXNet |")
    }
    assert notes[tf] in rows["TensorFlow"].split("|")[3] and notes[mx] in rows["MXNet"].split("|")[3]
