"""Verdicts and figures checked on constructed bundles with known answers (tests/bundles.py writes them the way a run
does): each class of wrong verdict a review found (issue 34) asserted exactly, and three properties over many
bundles drawn at random: every measured point is in its figure, no smoke pass is ever a ratio against a published
full-protocol value, and an interval across a tolerance or band is never an answer either way."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlrepro import REPO_ROOT
from dlrepro.answers import bands, cells, claims, gather, measured, model, verdicts
from dlrepro.cli import render
from dlrepro.inputs import hardware, studies
from dlrepro.store import bundle, tables
from dlrepro.views import plots, report, study_plots, study_report
from tests.bundles import Job, make

GOLDEN = REPO_ROOT / "tests" / "data" / "golden-study.yaml"
TITAN_X = "NVIDIA GeForce GTX TITAN X"  # DLBench's rerun hardware (Maxwell): its CNTK AlexNet-S b16 took 0.035 s
PUBLISHED = 0.035


def _cntk(tmp_path, medians, quick=False, spread=0.0, per_repeat=4):
    folder = make(
        tmp_path,
        "alexnet",
        [Job("cntk", "alexnet-s", 16, medians=medians, device="cuda", spread=spread, per_repeat=per_repeat)],
        quick=quick,
        gpu=TITAN_X,
    )
    cells = gather.bundles([folder]).cells
    return cells[cells["reference_id"] == "dlbench_early.alexnet_224.titanx_maxwell.cntk"].iloc[0]


@pytest.mark.parametrize(
    "medians, verdict, why",
    [
        ([0.0350, 0.0352, 0.0348, 0.0351, 0.0349, 0.0350], verdicts.REPRODUCES, None),  # interval 0.99-1.01x: inside
        (
            [0.0280, 0.0440, 0.0300, 0.0420, 0.0350, 0.0360],
            verdicts.CANNOT_TELL,  # 0.80-1.26x across 0.9-1.1
            "the 95% interval of the ratio, 0.8-1.26, crosses the tolerance 0.9-1.1",
        ),
        ([0.0500, 0.0505, 0.0495, 0.0502, 0.0498, 0.0500], verdicts.DIFFERS, None),  # 1.41-1.44x: wholly outside
        ([0.0350, 0.0352, 0.0348], verdicts.CANNOT_TELL, "no 95% interval: 3 repeats; a 95% interval needs 6"),
    ],
)
def test_a_cell_on_the_published_hardware_is_judged_on_its_interval(tmp_path, medians, verdict, why):
    cell = _cntk(tmp_path, medians)
    assert (cell["verdict"], cell["why"] if why else None) == (verdict, why)
    assert cell["ratio"] == pytest.approx(
        sorted(medians)[len(medians) // 2 - 1 : len(medians) // 2 + 1][-1] / PUBLISHED, rel=0.02
    )


def test_a_smoke_pass_is_shown_but_never_a_ratio(tmp_path):
    cell = _cntk(tmp_path, [0.035], quick=True, per_repeat=3)
    assert (cell["verdict"], cell["measured"], cell["ratio"]) == (verdicts.CANNOT_COMPARE, pytest.approx(0.035), None)
    assert cell["why"] == "smoke pass: --quick: 3 iterations in 1 repeat"


def test_laptop_and_regional_parts_are_not_the_desktop_card():
    desktop = "NVIDIA GeForce GTX 1080, Intel Xeon E5-2630 v3"
    for name in ("NVIDIA GeForce GTX 1080 with Max-Q Design", "NVIDIA GeForce GTX 1080M"):
        assert not hardware.same_hardware(desktop, "cuda", name)
    assert not hardware.same_hardware("NVIDIA GeForce RTX 4090", "cuda", "NVIDIA GeForce RTX 4090 D")
    assert hardware.same_hardware(desktop, "cuda", "NVIDIA GeForce GTX 1080")


def _two(tmp_path, a, b, host_b="known-answers", gpu_b="NVIDIA H200", version_b="1.0"):
    first = make(tmp_path / "a", "fcn", [Job("torch", "fcn-s", 64, medians=a, device="cuda")])
    second = make(
        tmp_path / "b",
        "fcn",
        [Job("torch", "fcn-s", 64, medians=b, device="cuda", version=version_b)],
        gpu=gpu_b,
        hostname=host_b,
    )
    return gather.comparison(str(first), str(second))


def test_an_effect_of_exactly_the_minimum_effect_is_slower_and_faster_both_ways(tmp_path):
    slow = _two(tmp_path / "1", [0.100] * 6, [0.105] * 6)
    fast = _two(tmp_path / "2", [0.105] * 6, [0.100] * 6)
    assert [slow.cells["verdict"].iloc[0], fast.cells["verdict"].iloc[0]] == [verdicts.SLOWER, verdicts.FASTER]


def test_a_comparison_names_what_differs_between_its_bundles(tmp_path):
    found = _two(
        tmp_path, [0.100] * 6, [0.100] * 6, host_b="other-host", gpu_b="NVIDIA H100 80GB HBM3", version_b="2.0"
    )
    assert found.differs == [
        "host known-answers / other-host",
        "GPUs 1 x NVIDIA H200 / 1 x NVIDIA H100 80GB HBM3",
        "torch versions 1.0 / 2.0",
    ]
    assert found.cells["reason"].tolist() == ["other host (GPUs 1 x NVIDIA H200 -> 1 x NVIDIA H100 80GB HBM3)"]
    assert "framework_version" in found.varying
    assert found.to_json()["b"]["host"] == "other-host" and found.to_json()["differs"] == found.differs


def test_an_ordering_claim_sets_tools_side_by_side_at_one_thread_count(tmp_path):
    """Caffe measured at 1 and 2 threads, TensorFlow at 1 only: the claim compares them at 1, and says so (at 2,
    Caffe would be ahead by its thread count alone)."""
    golden = studies.load(str(GOLDEN))
    claim = golden.claims["ordering-holds"].model_copy(update={"runs": ["cpu"]})  # "Caffe ahead of TensorFlow"
    study = golden.model_copy(update={"claims": {"cpu-ordering": claim}})
    folder = make(
        tmp_path,
        "fcn",
        [
            Job("caffe", "fcn-s", 64, medians=[1.0] * 6, threads=1),
            Job("caffe", "fcn-s", 64, medians=[0.5] * 6, threads=2),
            Job("tensorflow", "fcn-s", 64, medians=[0.8] * 6, threads=1),
        ],
    )
    summary = measured.prepare(tables.summary(folder), [bundle.body(folder)]).assign(run="cpu")
    (verdict,) = claims.evaluate(study, summary)
    assert {(v["tool"], v["threads"]) for v in verdict.values} == {("Caffe", 1), ("TensorFlow", 1)}
    assert (
        verdict.verdict == verdicts.DOES_NOT_HOLD
        and "measured at 1 thread (best first): TensorFlow 0.8" in verdict.evidence
    )


def test_a_claim_that_holds_on_some_of_its_tools_says_which_and_a_claim_not_asked_is_not_asked(tmp_path):
    """Review U16: 'holds' stood for every framework of a claim measured on 3 of its tools; U13: a claim whose runs
    the user did not ask for (--run cpu-rnn) was filed as 'not testable here'."""
    from types import SimpleNamespace

    from dlrepro.answers import study as studymod

    golden = studies.load(str(GOLDEN))
    band = golden.claims["band"].model_copy(update={"tools": ["Caffe", "TensorFlow", "MXNet", "Torch"]})
    study = golden.model_copy(update={"claims": {"band": band, "gpu": golden.claims["ordering-holds"]}})
    folder = make(
        tmp_path,
        "fcn",
        [Job("caffe", "fcn-s", 64, medians=[0.10] * 6), Job("tensorflow", "fcn-s", 64, medians=[0.12] * 6)],
    )
    summary = measured.prepare(tables.summary(folder), [bundle.body(folder)]).assign(run="cpu")
    held, asked = claims.evaluate(study, summary, not_run={"gpu": "not asked: --run cpu was given"})
    assert held.said == "holds for the 2 tools measured; not measured: MXNet, Torch"
    assert (asked.verdict, asked.reason, asked.evidence) == (
        "not asked",
        "--run cpu was given",
        "its runs (gpu) were not asked: --run cpu was given",
    )
    assert studymod.sentence(
        study.model_copy(update={"title": "Golden - constructed"}),
        "2-CPU AMD EPYC, no GPU",
        [held, asked],
        [(asked.reason, [asked])],
    ) == (
        "On this study's host (2-CPU AMD EPYC, no GPU) 1 of Golden's 2 claims could be tested: 1 holds (for the tools "
        "measured only). Not asked: --run cpu was given (1)."
    )
    # a claim the host could not test anyway keeps the host plan's reason, asked or not
    gpu = SimpleNamespace(testable=False, headline="needs an NVIDIA GPU", reason="no GPU here", cause="gpu")
    (_, untested) = claims.evaluate(
        study, summary, not_run={"gpu": "not asked: --run cpu was given"}, planned={"gpu": gpu}
    )
    assert (untested.verdict, untested.reason, untested.evidence) == (
        "not testable here",
        "needs an NVIDIA GPU",
        "no GPU here",
    )


# --- properties over bundles drawn at random ------------------------------------------------------------------

FRAMEWORKS = ["torch", "tensorflow", "mxnet", "jax", "cntk", "caffe"]
SLOW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW
@given(
    st.lists(
        st.tuples(st.sampled_from(FRAMEWORKS), st.sampled_from([16, 32, 64, 128]), st.floats(0.001, 2.0)),
        min_size=1,
        max_size=6,
        unique_by=lambda j: j[:2],
    )
)
def test_every_measured_point_appears_in_its_figures(tmp_path_factory, drawn):
    folder = make(
        tmp_path_factory.mktemp("points"),
        "alexnet",
        [Job(f, "alexnet-s", b, medians=[m] * 6, spread=0.01) for f, b, m in drawn],
    )
    answer = gather.bundles([folder])
    ok = answer.summary[answer.summary["status"] == "ok"]
    bars = [p for f in plots.throughput_bars(ok) for p in f.points]
    assert sorted((b, round(t, 6)) for _, b, t in bars) == sorted(
        (int(b), round(t, 6)) for b, t in zip(ok["batch_size"], ok["throughput"])
    )
    for framework, rows in ok.groupby("framework"):
        lines = plots.seconds_vs_batch(ok)
        if ok["batch_size"].nunique() > 1:  # every job a point of the seconds-vs-batch figure, smallest batch too
            scale = 1000 if ok["median"].max() < 1 else 1
            points = {(x, round(y, 6)) for f in lines for _, x, y in f.points}
            assert {(int(b), round(scale * m, 6)) for b, m in zip(rows["batch_size"], rows["median"])} <= points


@SLOW
@given(st.booleans(), st.floats(0.02, 0.06), st.floats(0.0, 0.3))
def test_no_smoke_pass_is_ever_a_ratio_against_a_published_value(tmp_path_factory, quick, median, spread):
    medians = [median * (1 + spread * (i - 2.5) / 2.5) for i in range(1 if quick else 6)]
    folder = make(
        tmp_path_factory.mktemp("smoke"),
        "alexnet",
        [
            Job(f, "alexnet-s", 16, medians=medians, device="cuda", per_repeat=3 if quick else 4)
            for f in ("cntk", "caffe", "tensorflow", "mxnet")
        ],
        quick=quick,
        gpu=TITAN_X,
    )
    cells = gather.bundles([folder]).cells
    assert len(cells) == 4
    if quick:
        assert cells["ratio"].isna().all() and set(cells["verdict"]) == {verdicts.CANNOT_COMPARE}
        assert cells["why"].str.startswith("smoke pass: --quick").all()
    else:
        assert cells["ratio"].notna().all()


@SLOW
@given(st.floats(0.02, 0.05), st.floats(0.0, 0.5))
def test_an_interval_across_the_tolerance_is_never_an_answer(tmp_path_factory, median, spread):
    medians = [median * (1 + spread * (i - 2.5) / 2.5) for i in range(6)]
    cell = _cntk(tmp_path_factory.mktemp("cell"), medians)
    low, high = cell["ci95_low"] / PUBLISHED, cell["ci95_high"] / PUBLISHED
    if low < 0.9 <= high or low <= 1.1 < high:
        assert cell["verdict"] == verdicts.CANNOT_TELL
    elif 0.9 <= low and high <= 1.1:
        assert cell["verdict"] == verdicts.REPRODUCES
    else:
        assert cell["verdict"] == verdicts.DIFFERS


@SLOW
@given(st.floats(0.5, 8.0), st.floats(0.0, 0.4))
def test_a_ratio_claim_across_its_band_is_inconclusive(tmp_path_factory, ratio, spread):
    """DLBench's "ResNet-50 about 5.5x faster in MXNet" (band 3.5-8): MXNet at 0.1 s, TensorFlow at ratio x 0.1 s,
    each with an interval of +-spread: the claim holds only when the ratio's interval lies inside the band."""
    study = studies.load("dlbench")
    claim = study.claims["resnet50-mxnet-ratio"]

    def spreadout(m):
        return [m * (1 + spread * (i - 2.5) / 2.5) for i in range(6)]

    folder = make(
        tmp_path_factory.mktemp("ratio"),
        "resnet50",
        [
            Job("mxnet", "resnet50", 16, medians=spreadout(0.1), device="cuda"),
            Job("tensorflow", "resnet50", 16, medians=spreadout(0.1 * ratio), device="cuda"),
        ],
    )
    summary = measured.prepare(tables.summary(folder), [bundle.body(folder)]).assign(run=claim.runs[0])
    study = study.model_copy(update={"claims": {"r": claim}})
    (verdict,) = claims.evaluate(study, summary)
    (point,) = verdict.points
    low, high = point["low"], point["high"]
    if 3.5 <= low and high <= 8.0:
        assert verdict.verdict == verdicts.HOLDS
    elif high < 3.5 and low > 1 or low > 8.0:
        assert verdict.verdict in (verdicts.DIRECTION_ONLY, verdicts.DOES_NOT_HOLD)
    elif high < 3.5 or low > 8.0:
        assert verdict.verdict == verdicts.DOES_NOT_HOLD
    else:
        assert verdict.verdict == verdicts.INCONCLUSIVE
    (strip,) = study_plots.claims_strip(study, [verdict])
    assert [p[1:] for p in strip.points] == [("TensorFlow", pytest.approx(point["value"]))]


def test_a_configuration_timed_differently_on_its_two_sides_is_not_comparable_in_compare(tmp_path, capsys):
    first = make(
        tmp_path / "a",
        "fcn",
        [
            Job("torch", "fcn-s", 64, medians=[0.100] * 6, device="cuda"),
            Job("jax", "fcn-s", 64, medians=[0.100] * 6, device="cuda"),
            Job("mxnet", "fcn-s", 64, medians=[0.100] * 6, device="cuda", timer=None),
        ],
    )
    second = make(
        tmp_path / "b",
        "fcn",
        [
            Job("torch", "fcn-s", 64, medians=[0.100] * 6, device="cuda"),
            Job("jax", "fcn-s", 64, medians=[0.080] * 6, device="cuda", timer="device_events"),
            Job("mxnet", "fcn-s", 64, medians=[0.100] * 6, device="cuda", timer="pipelined_wall"),
        ],
    )
    found = gather.comparison(str(first), str(second))
    assert found.differs == [
        "timer host_sync / device_events, not recorded / pipelined_wall: 2 of 3 configurations "
        "timed differently (on a GPU, two different quantities: docs/gpu.md): not comparable, "
        "never faster or slower"
    ]
    assert "timer" in found.varying
    rows = found.cells.set_index("framework")
    assert (rows.loc["jax", "timer_a"], rows.loc["jax", "timer_b"], rows.loc["jax", "verdict"]) == (
        "host_sync",
        "device_events",
        verdicts.NOT_COMPARABLE,
    )
    assert rows.loc["mxnet", "reason"] == "timer changed (not recorded -> pipelined_wall)"
    assert (rows.loc["torch", "timer_a"], rows.loc["torch", "timer_b"]) == ("host_sync", "host_sync")
    render.comparison(found)
    shown = capsys.readouterr().out
    assert "host_sync / device_events" in shown and "differs: timer host_sync / device_events" in shown


def test_frameworks_side_by_side_timed_differently_are_flagged_in_a_study_table_and_a_report(tmp_path):
    folder = make(
        tmp_path,
        "fcn",
        [
            Job("torch", "fcn-s", 64, medians=[0.10] * 6, device="cuda", timer="device_events"),
            Job("tensorflow", "fcn-s", 64, medians=[0.12] * 6, device="cuda"),
            Job("caffe", "fcn-s", 64, medians=[0.12] * 6, device="cuda"),
        ],
    )
    summary = measured.prepare(tables.summary(folder), [bundle.body(folder)]).assign(run="gpu")
    table = cells.build(studies.load(str(GOLDEN)), summary, {}, {})[0]
    assert table.timers == ["GPU: Caffe, TensorFlow by host_sync; PyTorch by device_events"]
    assert study_report.paper_table(table).note.endswith(
        "Timed differently (on a GPU, two different quantities: docs/gpu.md): GPU: Caffe, TensorFlow by host_sync; "
        "PyTorch by device_events."
    )
    answer = gather.bundles([folder])
    assert answer.timers == {
        ("fcn", "throughput"): ["fcn-s b64 on NVIDIA H200: Caffe, TensorFlow by host_sync; PyTorch by device_events"]
    }
    (shown,) = report.results(answer.summary, answer.timers)
    assert shown.note.endswith(
        "docs/gpu.md): fcn-s b64 on NVIDIA H200: Caffe, TensorFlow by host_sync; PyTorch by device_events."
    )
    timer = shown.columns.index("timer")
    assert sorted(row[timer] for row in shown.rows) == ["device_events", "host_sync", "host_sync"]
    assert answer.to_json()["timed_differently"] == [
        {"spec": "fcn", "mode": "throughput", "notes": answer.timers[("fcn", "throughput")]}
    ]


def test_compare_of_three_repeat_bundles_says_how_many_repeats_give_a_verdict_and_shows_the_precision(tmp_path, capsys):
    """Review N9: 3 repeats a side can never give p < 0.01, so a 20% change is "cannot tell" with the advice to rerun;
    two rows that differ only in precision show it."""

    def jobs(fp32, bf16):
        return [
            Job("torch", "fcn-s", 64, medians=[fp32] * 3, device="cuda"),
            Job("torch", "fcn-s", 64, medians=[bf16] * 3, device="cuda", precision="bf16"),
        ]

    found = gather.comparison(
        str(make(tmp_path / "a", "fcn", jobs(0.100, 0.050))), str(make(tmp_path / "b", "fcn", jobs(0.120, 0.060)))
    )
    assert list(found.cells["verdict"]) == [verdicts.CANNOT_TELL] * 2
    assert (
        found.advice
        == "3 vs 3 repeats cannot give p < 0.01: run both with --repeats %d or more" % (model.repeats_needed(0.01))
        and model.repeats_needed(0.01) == 5
    )
    assert found.varying == ["precision"] and sorted(found.cells["precision"]) == ["bf16", "fp32"]
    render.comparison(found)
    shown = capsys.readouterr().out
    assert "precision" in shown and "bf16" in shown and "run both with --repeats 5 or more" in shown


def test_energy_per_sample_is_shown_beside_the_throughput_where_it_was_measured(tmp_path):
    """Review N7: a job with its board energy has J per sample in the bundle report's results table; one without
    reads "not measured", never zero."""
    folder = make(
        tmp_path,
        "fcn",
        [
            Job("torch", "fcn-s", 64, medians=[0.1] * 6, device="cuda", joules=96.0),
            Job("jax", "fcn-s", 64, medians=[0.1] * 6, device="cuda"),
        ],
    )
    answer = gather.bundles([folder])
    (table,) = report.results(answer.summary, answer.timers)
    rows = {row[table.columns.index("framework")]: row for row in table.rows}
    column = table.columns.index("J per sample")
    assert table.columns[column - 1].startswith("throughput")  # beside the throughput
    # 6 repeats x 4 iterations x 64 samples in the measured window: 96 J / 1536 samples
    assert (rows["torch"][column], rows["jax"][column]) == ("0.0625", "not measured")


@pytest.mark.parametrize("quick", [True, False])
def test_a_smoke_pass_fraction_of_peak_is_marked_wherever_it_is_shown(tmp_path, quick):
    """Review: a --quick job's fraction of peak reached the 'then and now' table with no mark."""
    medians = [0.5] if quick else [0.5] * 6
    folder = make(
        tmp_path,
        "alexnet",
        [Job("caffe", "alexnet-s", 16, medians=medians, threads=2, per_repeat=3 if quick else 4)],
        quick=quick,
    )
    answer = gather.bundles([folder])
    (job,) = answer.summary["fraction_of_peak_label"]
    rows = answer.efficiency[answer.efficiency["framework"] == "caffe"]
    assert len(rows) and job
    assert job.endswith(", smoke pass") == quick
    assert all(label.endswith(", smoke pass") == quick for label in rows["measured_fraction_label"])
    assert all((", smoke pass" in s) == quick for s in rows["sentence"])


def test_a_reason_shows_an_interval_on_the_side_of_each_band_edge_it_lies():
    """Review: 'the 95% interval of the ratio, 1-1, crosses the tolerance 0.9995-1.0005' (3 digits rounded it)."""
    assert bands.words(0.99975, 1.00196, (0.9995, 1.0005)) == ("0.9998-1.002", "0.9995-1.0005")
    assert bands.words(0.8, 1.25, (0.9, 1.1)) == ("0.8-1.25", "0.9-1.1")
    assert bands.words(0.899999, 1.05, (0.9, 1.1)) == ("0.899999-1.05", "0.9-1.1")


def test_a_report_headline_says_when_its_order_is_a_smoke_pass_or_timed_differently(tmp_path):
    quick = make(
        tmp_path / "q",
        "fcn",
        [
            Job("torch", "fcn-s", 64, medians=[0.1], per_repeat=3, device="cuda"),
            Job("jax", "fcn-s", 64, medians=[0.2], per_repeat=3, device="cuda"),
        ],
        quick=True,
    )
    lines = report.headline(gather.bundles([quick]))
    assert lines[0].startswith("Smoke pass (--quick): %s; few iterations a job" % quick.name)
    assert lines[1].endswith("b64 PyTorch 640 / JAX 320 (smoke pass)")
    mixed = make(
        tmp_path / "m",
        "fcn",
        [
            Job("torch", "fcn-s", 64, device="cuda", timer="device_events"),
            Job("jax", "fcn-s", 64, medians=[0.2] * 6, device="cuda"),
        ],
    )
    (line, _) = report.headline(gather.bundles([mixed]))
    assert line.endswith("b64 PyTorch 640 / JAX 320 (timed differently: JAX by host_sync; PyTorch by device_events)")


def test_a_report_headline_sets_bf16_beside_bf16_never_against_fp32(tmp_path):
    """Review A4: 'b64 PyTorch 6,400 / PyTorch 3,200' set torch bf16 against torch fp32."""
    folder = make(
        tmp_path,
        "fcn",
        [
            Job("torch", "fcn-s", 64, medians=[0.01] * 6, device="cuda", precision="bf16"),
            Job("torch", "fcn-s", 64, medians=[0.02] * 6, device="cuda"),
            Job("jax", "fcn-s", 64, medians=[0.015] * 6, device="cuda"),
        ],
    )
    assert report.headline(gather.bundles([folder]))[0] == (
        "fcn-s on NVIDIA H200 (throughput mode), fastest / slowest, samples/s: b64 bf16: PyTorch 6,400; "
        "b64 fp32: JAX 4,267 / PyTorch 3,200"
    )


def test_check_shows_the_interval_tolerance_and_direction_a_verdict_rests_on_and_the_timers(tmp_path, capsys):
    folder = make(
        tmp_path,
        "alexnet",
        [
            Job("cntk", "alexnet-s", 16, medians=[0.0500, 0.0505, 0.0495, 0.0502, 0.0498, 0.0500], device="cuda"),
            Job("torch", "alexnet-s", 16, medians=[0.02] * 6, device="cuda", timer="device_events"),
        ],
        gpu=TITAN_X,
    )
    render.check(gather.bundles([folder]))
    shown = capsys.readouterr().out
    (row,) = [line for line in shown.splitlines() if "CNTK" in line and "│" in line]
    assert [c.strip() for c in row.split("│")[4:10]] == [
        "50.0",
        "35.0",
        "1.43x",
        "1.41-1.44",
        "0.9-1.1",
        "differs (slower)",
    ]
    assert (
        "timed differently (on a GPU, two different quantities: docs/gpu.md), alexnet throughput: alexnet-s b16 "
        "on %s: CNTK by host_sync; PyTorch by device_events" % TITAN_X in " ".join(shown.split())
    )
