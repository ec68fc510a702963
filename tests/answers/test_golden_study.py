"""The golden study: constructed summary rows (known medians and repeat-level intervals, no framework run) and a
small manifest with every kind of claim and every outcome of a published cell; every cell's measured value and
outcome and every claim's verdict asserted exactly (issue 21)."""

import pandas as pd
import pytest

from dlrepro import REPO_ROOT
from dlrepro.answers import cells, claims, verdicts
from dlrepro.inputs import studies
from dlrepro.inputs.references import Reference
from dlrepro.store import tables
from runner import stats

GOLDEN = REPO_ROOT / "tests" / "data" / "golden-study.yaml"
H200, H100, EPYC = "NVIDIA H200", "NVIDIA H100 80GB HBM3", "AMD EPYC 7B13"


def _row(
    run,
    variant,
    framework,
    median,
    device="cuda",
    name=H200,
    threads=None,
    ci=True,
    ranks=None,
    version="1",
    status="ok",
    throughput=None,
):
    """One summary row (a pandas Series in the table, as the study report passes it, answers.measured.prepare'd):
    seconds per mini-batch of a throughput job at b64, with a repeat-level 95% interval of +-2% over 6 repeats
    unless ``ci`` is False: then a --quick job's 3 iterations in 1 repeat."""
    return {
        "run": run,
        "bundle_id": "%s-bundle" % run,
        "spec": "fcn",
        "variant": variant,
        "framework": framework,
        "framework_version": version,
        "device": device,
        "device_name": name,
        "mode": "throughput",
        "quantity": "seconds per mini-batch",
        "batch_size": 64,
        "threads": threads,
        "precision": "fp32",
        "status": status,
        "reason": "boom" if status != "ok" else None,
        "median": median,
        "throughput": throughput or 64 / median,
        "ci95_low": median * 0.98 if ci else None,
        "ci95_high": median * 1.02 if ci else None,
        "ci95_method": stats.CI_METHOD if ci else None,
        "ci95_units": 6 if ci else 1,
        "n": 48 if ci else 3,
        "quick": not ci,
        "ranks": ranks,
        "scaling": "strong" if ranks else None,
        "job_id": "%s.%s.%s.b64%s%s-%s"
        % (variant, framework, device, ".t%d" % threads if threads else "", ".r%d" % ranks if ranks else "", version),
    }


ROWS = [
    _row("gpu", "fcn-s", "caffe", 0.010),
    _row("gpu", "fcn-s", "tensorflow", 0.020),
    _row("gpu", "fcn-s", "torch", 0.012, name=H100),
    _row("gpu", "fcn-s", "mxnet", 0.0101),
    _row("gpu", "fcn-s", "cntk", 0.010, status="failed"),
    _row("gpu-quick", "fcn-8", "caffe", 0.030, ci=False),
    _row("gpu-quick", "fcn-8", "torch", 0.040, ci=False),
    _row("gpu-quick", "fcn-8", "tensorflow", 0.05, version="2.1"),
    _row("gpu-quick", "fcn-8", "tensorflow", 0.06, version="1.15"),
    _row("cpu", "fcn-s", "caffe", 0.4, "cpu", EPYC, 1),
    _row("cpu", "fcn-s", "caffe", 0.1, "cpu", EPYC, 4),
    _row("cpu", "fcn-s", "tensorflow", 0.45, "cpu", EPYC, 1),
    _row("cpu", "fcn-s", "tensorflow", 0.15, "cpu", EPYC, 4),
    _row("cpu", "fcn-r", "caffe", 0.5, "cpu", EPYC, 4),
    _row("cpu", "fcn-r", "tensorflow", 0.6, "cpu", EPYC, 4),
    _row("multi", "fcn-s", "torch", 0.010, ranks=1),
    _row("multi", "fcn-s", "torch", 64 / 11520.0, ranks=2),
]


def _summary():
    rows = [{k: v for k, v in r.items() if k != "run"} for r in ROWS]
    return tables.frame(rows, tables.SUMMARY_COLUMNS).assign(run=[r["run"] for r in ROWS])


def _ref(variant, framework, value):
    return Reference(
        id="golden.%s.%s" % (variant, framework),
        kind="published",
        variant=variant,
        experiment="golden",
        framework=framework,
        hardware="NVIDIA H200",
        batch_size=64,
        metric="seconds_per_minibatch",
        value=value,
        unit="s",
        source="the golden test",
    )


REFERENCES = {
    "fcn": [
        _ref("fcn-s", "Caffe", 0.010),
        _ref("fcn-s", "TensorFlow", 0.0125),
        _ref("fcn-s", "PyTorch", 0.010),
        _ref("fcn-s", "CNTK", 0.010),
        _ref("fcn-8", "Caffe", 0.030),
        _ref("fcn-8", "TensorFlow", 0.030),
        _ref("fcn-8", "PyTorch", 0.035),
        _ref("fcn-8", "CNTK", 0.030),
    ]
}
MISSING = {"gpu-gone": "bundle fcn-gone missing"}
NOT_RUN = {"gpu-r": "not runnable here: it needs an NVIDIA GPU"}
SMOKE = "smoke pass (--quick: 3 iterations in 1 repeat)"
NO_VALUE = "the table has no value for this tool (%s)"
NOT_OURS = "a tool the suite does not run (Torch: needs Lua Torch 7, which no reachable registry serves)"
GONE = (verdicts.CANNOT_COMPARE, None, None, "cannot judge: bundle missing (bundle fcn-gone missing)")

EXPECTED_CELLS = {  # (table, tool, column): (outcome, measured s, ratio, why)
    ("h200", "Caffe", "GPU"): (verdicts.REPRODUCES, 0.010, 1.0, ""),
    ("h200", "TensorFlow", "GPU"): (verdicts.DIFFERS, 0.020, 1.6, "slower"),
    ("h200", "PyTorch", "GPU"): (
        verdicts.OTHER_HARDWARE,
        0.012,
        1.2,
        "other hardware (measured on %s, published on NVIDIA H200)" % H100,
    ),
    ("h200", "MXNet", "GPU"): (verdicts.CANNOT_COMPARE, 0.0101, None, NO_VALUE % "MXNet"),
    ("h200", "CNTK", "GPU"): (verdicts.NOT_RUN, None, None, "the job was failed (fcn-s.cntk.cuda.b64-1: boom)"),
    ("h200", "Torch", "GPU"): (verdicts.CANNOT_COMPARE, None, None, NOT_OURS),
    ("h200", "Caffe", "quick"): (verdicts.CANNOT_COMPARE, 0.030, None, SMOKE),  # a smoke pass is never a ratio
    ("h200", "TensorFlow", "quick"): (
        verdicts.CANNOT_COMPARE,
        None,
        None,
        "several jobs match (ambiguous: 2 jobs match (versions 1.15, 2.1))",
    ),
    ("h200", "PyTorch", "quick"): (verdicts.CANNOT_COMPARE, 0.040, None, SMOKE),
    ("h200", "MXNet", "quick"): (verdicts.CANNOT_COMPARE, None, None, NO_VALUE % "MXNet"),
    ("h200", "CNTK", "quick"): (
        verdicts.NOT_RUN,
        None,
        None,
        "the framework was not among those run (cntk in run gpu-quick)",
    ),
    ("h200", "Torch", "quick"): (verdicts.CANNOT_COMPARE, None, None, NOT_OURS),
    ("h200", "Caffe", "gone"): GONE,
    ("h200", "TensorFlow", "gone"): GONE,
    ("h200", "PyTorch", "gone"): GONE,
    ("h200", "MXNet", "gone"): (verdicts.CANNOT_COMPARE, None, None, NO_VALUE % "MXNet"),
    ("h200", "CNTK", "gone"): GONE,
    ("h200", "Torch", "gone"): (verdicts.CANNOT_COMPARE, None, None, NOT_OURS),
    # the column names 1 thread: the 1-thread jobs, not the last row (4 threads)
    ("h200", "Caffe", "CPU"): (
        verdicts.OTHER_HARDWARE,
        0.4,
        40.0,
        "other hardware (measured on %s, published on NVIDIA H200)" % EPYC,
    ),
    ("h200", "TensorFlow", "CPU"): (
        verdicts.OTHER_HARDWARE,
        0.45,
        36.0,
        "other hardware (measured on %s, published on NVIDIA H200)" % EPYC,
    ),
    ("h200", "PyTorch", "CPU"): (
        verdicts.NOT_RUN,
        None,
        None,
        "the framework was not among those run (torch in run cpu)",
    ),
    ("h200", "MXNet", "CPU"): (verdicts.CANNOT_COMPARE, None, None, NO_VALUE % "MXNet"),
    ("h200", "CNTK", "CPU"): (verdicts.NOT_RUN, None, None, "the framework was not among those run (cntk in run cpu)"),
    ("h200", "Torch", "CPU"): (verdicts.CANNOT_COMPARE, None, None, NOT_OURS),
    ("lost", "Caffe", "GPU"): (
        verdicts.CANNOT_COMPARE,
        0.010,
        None,
        "the published values were not retrieved (nowhere)",
    ),
}

EXPECTED_CLAIMS = {  # claim: (verdict, the start of its evidence)
    "ordering-holds": (verdicts.HOLDS, "1 of 1 pairs in the stated order, 1 of them with separated 95% intervals"),
    "ordering-reversed": (
        verdicts.DOES_NOT_HOLD,
        "0 of 1 pairs in the stated order, 1 of them with separated 95% "
        "intervals; TensorFlow not ahead of Caffe at b64 (0.02 vs 0.01)",
    ),
    "ordering-noise": (
        verdicts.INCONCLUSIVE,
        "0 of 1 pairs in the stated order, 0 of them with separated 95% "
        "intervals; MXNet not ahead of Caffe at b64 (0.0101 vs 0.01, within noise)",
    ),
    "ratio-band": (
        verdicts.DIRECTION_ONLY,
        "ratio of Caffe to each other tool: min 1.2 (PyTorch, b64), max 2 (TensorFlow, b64) (stated band 1.5-3)",
    ),
    "band": (
        verdicts.HOLDS,
        "value per tool at 4 threads: min 0.1 (Caffe, b64), max 0.15 (TensorFlow, b64) (stated "
        "band 0.05-0.2); each: Caffe 0.1 [0.098-0.102] (b64), TensorFlow 0.15 [0.147-0.153] (b64)",
    ),
    "threads": (verdicts.HOLDS, "throughput at threads 4 / at 1: min 3 (TensorFlow, b64), max 4 (Caffe, b64)"),
    "gpus": (verdicts.HOLDS, "throughput at gpus 2 / at 1: min 1.8 (PyTorch, b64), max 1.8 (PyTorch, b64)"),
    "gpus-caffe": (verdicts.NOT_TESTABLE, "Caffe: no data-parallel training in the caffe adapter"),
    "device-scoped": (
        verdicts.NOT_TESTABLE,
        "too few of its tools can run here (can: TensorFlow): Caffe has no CUDA image",
    ),
    "smoke": (verdicts.INCONCLUSIVE, "smoke pass of Caffe, PyTorch (--quick: 3 iterations in 1 repeat); 1 of 1 pairs"),
    "gone": (verdicts.NOT_TESTABLE, "cannot judge: bundle fcn-gone missing"),
    "untestable": (verdicts.NOT_TESTABLE, "it needs two GPU models"),
}


def test_every_published_cell_of_the_golden_study():
    study = studies.load(str(GOLDEN))
    built = cells.build(study, _summary(), REFERENCES, NOT_RUN, MISSING)
    found = {
        (t.name, row, column): (c.outcome, c.measured, c.ratio, c.why)
        for t in built
        for (row, column), c in t.cells.items()
    }
    assert set(found) == set(EXPECTED_CELLS)
    for key, (outcome, value, ratio, why) in EXPECTED_CELLS.items():
        assert found[key] == (outcome, pytest.approx(value), pytest.approx(ratio), why), key
    by_name = {t.name: t for t in built}
    assert by_name["h200"].cells[("Caffe", "GPU")].interval == pytest.approx((0.0098, 0.0102))
    assert by_name["h200"].cells[("Caffe", "quick")].smoke == "--quick: 3 iterations in 1 repeat"
    assert by_name["h200"].cells[("TensorFlow", "GPU")].direction == "slower"
    # rankings: two tools on the H200 are too few; the --quick column is a smoke pass; a CPU is not ranked
    # against an H200 order
    assert len(by_name["h200"].rankings) == 2  # GPU and quick; the CPU and gone columns rank nothing
    assert by_name["h200"].rankings[0].startswith("GPU: fcn-s, batch 64, seconds_per_minibatch: the published order")
    assert by_name["h200"].rankings[0].endswith("inconclusive (n = 2: too few frameworks to rank).")
    assert (
        by_name["h200"].rankings[1].startswith("quick: ")
        and "inconclusive (smoke pass: caffe, torch)" in by_name["h200"].rankings[1]
    )
    total, why = cells.counts(built)
    assert total == {
        verdicts.REPRODUCES: 1,
        verdicts.DIFFERS: 1,
        verdicts.CANNOT_TELL: 0,
        verdicts.OTHER_HARDWARE: 3,
        verdicts.CANNOT_COMPARE: 16,
        verdicts.NOT_RUN: 4,
    }
    assert why[verdicts.CANNOT_COMPARE] == {
        "the table has no value for this tool": 4,
        "a tool the suite does not run": 4,
        "smoke pass": 2,
        "several jobs match": 1,
        "cannot judge: bundle missing": 4,
        "the published values were not retrieved": 1,
    }


def _planned(study, gpus, gpu="H200"):
    """{claim: coverage Outcome} on a host of ``gpus`` GPUs (the golden rows' H200; none for 0) and 16 cores, with
    the image matrix less its Caffe CUDA image: the golden study sets Caffe on GPUs as the tool no image runs."""
    from dlrepro.images import matrix as matrixmod
    from dlrepro.plan import coverage

    host = coverage.Hardware(gpu if gpus else None, gpus, 16, coverage.every_dataset())
    loaded = matrixmod.load()
    cpu_caffe = loaded.model_copy(update={"images": [i for i in loaded.images if i.name != "caffe-1.0.0-cuda"]})
    return {o.what: o for o in coverage.plan(study, host, cpu_caffe)["claims"]}


def test_every_claim_of_the_golden_study():
    study = studies.load(str(GOLDEN))
    found = {v.claim: v for v in claims.evaluate(study, _summary(), NOT_RUN, MISSING, _planned(study, 2))}
    assert set(found) == set(EXPECTED_CLAIMS)
    for name, (verdict, evidence) in EXPECTED_CLAIMS.items():
        assert (found[name].verdict, found[name].evidence[: len(evidence)]) == (verdict, evidence), name
    # what each rests on, and the values a smoke pass still shows
    assert found["ordering-holds"].rests_on == verdicts.RestsOn(
        repeats=[6, 6], test="pairs' 95% intervals", device="cuda", smoke=False
    )
    assert found["smoke"].rests_on.smoke and [(v["tool"], v["value"]) for v in found["smoke"].values] == [
        ("Caffe", 0.03),
        ("PyTorch", 0.04),
    ]
    assert [(v["tool"], v["threads"], v["value"]) for v in found["band"].values] == [
        ("Caffe", 4, 0.1),
        ("TensorFlow", 4, 0.15),
    ]
    assert found["ratio-band"].measured_on == "%s, %s" % (H100, H200)
    assert found["device-scoped"].device == "cuda" and found["untestable"].device is None


def test_a_claim_on_two_device_classes_is_refused(tmp_path):
    text = GOLDEN.read_text().replace(
        "    runs: [gpu]\n    variant: fcn-s\n    order: [[Caffe], [TensorFlow]]",
        "    runs: [gpu, cpu]\n    variant: fcn-s\n    order: [[Caffe], [TensorFlow]]",
        1,
    )
    path = tmp_path / "two.yaml"
    path.write_text(text)
    with pytest.raises(Exception) as err:
        studies.load(str(path))
    assert "claims.ordering-holds.runs: runs on cpu and cuda: give the claim's device" in str(err.value)
    path.write_text(text.replace("    runs: [gpu, cpu]\n", "    runs: [gpu, cpu]\n    device: cuda\n", 1))
    with pytest.raises(Exception) as err:
        studies.load(str(path))
    assert "claims.ordering-holds.runs: a cuda claim lists runs on cpu: drop them" in str(err.value)


def test_the_value_of_a_row_is_the_same_for_a_dict_a_series_and_a_namedtuple():
    from dlrepro.answers import measured

    summary = _summary()
    series = summary.iloc[0]
    (named,) = summary.iloc[[0]].itertuples(index=False)
    for row in (ROWS[0], series, named):
        assert measured.value(row, "seconds_per_minibatch") == 0.010
        assert measured.interval(row, "seconds_per_minibatch") == pytest.approx((0.0098, 0.0102))
    assert isinstance(series, pd.Series)


def test_an_accuracy_after_fewer_epochs_than_the_spec_is_a_smoke_pass_with_its_value_shown():
    from dlrepro.answers import published
    from dlrepro.inputs import spec as specmod

    # DLF's IMDB GRU: 3 epochs, 85-86% on the K80; a --quick pass trains one capped epoch
    row = {
        "run": "cpu-rnn",
        "spec": "imdb-gru",
        "variant": "imdb-gru",
        "framework": "torch",
        "status": "ok",
        "mode": "convergence",
        "quantity": "seconds per epoch",
        "device": "cpu",
        "device_name": EPYC,
        "batch_size": 64,
        "epochs": 1,
        "final_test_accuracy": 0.55,
        "total_seconds": 40.0,
        "precision": "fp32",
        "job_id": "imdb-gru.torch.cpu.b64",
        "planned_epochs": 3,
    }  # the recorded spec's schedule
    ref = next(
        r for r in specmod.load("imdb-gru").references if r.metric == "test_accuracy" and r.framework == "PyTorch"
    )
    judged = published.judge(row, ref)
    assert (judged.verdict, judged.measured, judged.why) == (
        verdicts.CANNOT_COMPARE,
        0.55,
        "smoke pass: trained 1 of 3 epochs",
    )
    dlf = studies.load("dlf")
    study = dlf.model_copy(update={"claims": {"rnn-accuracy": dlf.claims["rnn-accuracy"]}})
    summary = tables.frame([{k: v for k, v in row.items() if k != "run"}], tables.SUMMARY_COLUMNS).assign(run="cpu-rnn")
    (verdict,) = claims.evaluate(study, summary)
    assert verdict.verdict == verdicts.INCONCLUSIVE and verdict.device == "any"
    assert verdict.evidence.startswith(
        "smoke pass of PyTorch (trained 1 of 3 epochs); value per tool: min 55.0% (PyTorch, "
        "b64), max 55.0% (PyTorch, b64) (stated band 84-87.5%)"
    )  # review N15: percent
    assert verdict.values[0]["value"] == 0.55


def test_an_untestable_claim_is_folded_under_one_reason_and_a_multi_gpu_claim_names_the_gpus_it_needs():
    """The reasons come from the plan of the host (dlrepro.plan.coverage): on the golden rows' 2 x H200 Caffe's
    data-parallel claim has no data-parallel path; on one H200 it needs 2 GPUs, and no 2 GPUs of any model would
    do (Caffe has none); on a CPU-only host a GPU claim needs a GPU, naming the models whose images run it, or
    says that none would."""
    study = studies.load(str(GOLDEN))
    reasons = {v.claim: v.reason for v in claims.evaluate(study, _summary(), NOT_RUN, MISSING, _planned(study, 2))}
    assert {c: r for c, r in reasons.items() if r} == {
        "gpus-caffe": "Caffe: no data-parallel training in the caffe adapter: pycaffe's multi-GPU path (caffe.NCCL, "
        "one process per GPU) needs Caffe compiled with USE_NCCL, and its CUDA image compiles Debian's "
        "recipe, which has no NCCL (PyPI's nvidia-nccl-cu11 has the header and library for its CUDA "
        "11.8; not built yet); NCCL has no CPU transport, so a CPU image has none",
        "device-scoped": "too few of its tools can run here: no image of a tool for the device",
        "gone": "cannot judge: bundle missing",
        "untestable": "it needs two GPU models",
    }
    one_gpu = {v.claim: v for v in claims.evaluate(study, _summary(), NOT_RUN, MISSING, _planned(study, 1))}
    assert one_gpu["gpus-caffe"].reason == "no GPU makes it testable with the suite's images"
    assert one_gpu["gpus-caffe"].evidence.startswith(
        "no GPU makes it testable with the suite's images; on every GPU model: Caffe: no data-parallel training in the "
        "caffe adapter"
    )
    # judged from its rows all the same (they were measured on 2 GPUs): the plan only gives reasons
    assert one_gpu["gpus"].verdict != verdicts.NOT_TESTABLE
    assert _planned(study, 1)["gpus"].reason == "needs 2 GPUs (this host has 1) (one of: A100, L4, H100)"
    # a CPU-only host: every GPU run not runnable; the one-GPU claims need a GPU, the 2-GPU ones need 2
    summary = _summary()
    cpu_only = summary[summary["device"] == "cpu"]
    no_gpu = {
        r: "not runnable here: it needs an NVIDIA GPU; NVML sees none on this host" for r in study.runs if r != "cpu"
    }
    here = {
        v.claim: v.reason
        for v in claims.evaluate(study, cpu_only, no_gpu, {}, _planned(study, 0))
        if v.verdict == verdicts.NOT_TESTABLE
    }
    nothing = (
        "no GPU makes it testable with the suite's images"  # each sets Caffe, which has no CUDA image here, on GPUs
    )
    assert here == {
        "ordering-holds": nothing,
        "ordering-reversed": nothing,
        "ordering-noise": nothing,
        "ratio-band": nothing,
        "device-scoped": nothing,
        "smoke": nothing,
        "gone": nothing,
        "gpus": "needs 2 GPUs (this host has 0)",
        "gpus-caffe": nothing,
        "untestable": "it needs two GPU models",
    }
