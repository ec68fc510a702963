"""Study manifests, the claims' verdicts, the paper's tables, and a whole (tiny) study end to end: its report's
summary counts checked against its bundles and its HTML opened in a real browser."""

import json
import re
import subprocess
import sys

import pytest

from dlrepro import REPO_ROOT
from dlrepro.answers import claims, verdicts
from dlrepro.inputs import studies
from dlrepro.run import study as studymod
from dlrepro.store import records, tables
from tests.helpers import dlrepro_here
from tests.inputs.studies import TINY, _bad, _rows
from tests.views.pages import Tables, chromium, headless


def test_the_two_studies_name_their_runs_tables_and_claims():
    dlbench, dlf = studies.load("dlbench"), studies.load("dlf")
    assert len(dlbench.runs) == 19 and set(dlbench.tables) == {"early-rerun", "table7-gpu", "table7-cpu", "table8"}
    assert dlbench.tables["table7-gpu"].status == "not retrieved" and dlbench.framework("Torch") == "torch7"
    assert dlbench.claims["fcn-s-ordering"].order == [["Caffe"], ["CNTK", "Torch"], ["TensorFlow", "MXNet"]]
    assert dlbench.claims["lstm-ordering"].order[0] == ["CNTK"]
    assert dlbench.runs["multigpu-fcn"].gpus == [1, 2, 4] and dlbench.runs["multigpu-fcn"].batch_sizes == [4096]
    assert dlf.framework("MXNet(Gluon)") == "mxnet" and dlf.framework("MXNet(Module API)") is None
    assert dlf.claims["rnn-accuracy"].band == [0.84, 0.875]


def test_a_tool_the_suite_does_not_run_says_why_wherever_it_is_named(tmp_path):
    """Each tool the studies map to null carries its reason (not_run), and the plan, the claims and the cells say
    it (a manifest recorded before not_run existed names the tool alone, so its report rebuilds as it was)."""
    for name in ("dlbench", "dlf"):
        study = studies.load(name)
        assert all(study.not_run.get(t) for t, f in study.tools.items() if f is None), name
    text = TINY.read_text()
    before = tmp_path / "before.yaml"
    before.write_text(text.replace("not_run:\n  Torch: needs Lua Torch 7, which no reachable registry serves\n", ""))
    assert studies.load(str(before)).not_run_text(["Torch", "PyTorch"]) == "Torch"
    _, problems = _bad(tmp_path, text, "  Torch: needs Lua", "  PyTorch: x\n  Torch: needs Lua")
    assert len(problems) == 1 and problems[0].endswith(
        "not_run: 'PyTorch': not a tool mapped to null; drop it, or map the tool to null"
    )
    dlf = studies.load("dlf")
    assert dlf.not_run_text(["PyTorch", "Keras(TF)", "Julia-Knet", "Keras(Theano)", "Lasagne(Theano)"]) == (
        "Julia-Knet: needs Julia and Knet from Julia's package registry, which is not reachable here; Lasagne(Theano): "
        "cannot run here: PyPI's only Lasagne, 0.1, imports "
        "theano.tensor.signal.downsample, which Theano 1.0 no longer "
        "has (checked in Theano 1.0.5's source), and DLF's 0.2.dev1 is a repository commit no registry here serves"
    )
    from dlrepro.images import matrix
    from dlrepro.plan import coverage

    assert coverage.tool_blocker(
        dlf, "cpu-cnn", "cifar10-vgg", "R-Keras(TF)", coverage.Hardware(None, 0, 16), matrix.load()
    ) == (
        "tool",
        "the suite does not run R-Keras(TF): needs CRAN's keras package for R, which is not reachable here "
        "(Debian has R and reticulate)",
    )


def test_a_bad_manifest_names_the_line_and_field(tmp_path):
    text = TINY.read_text()
    path, problems = _bad(
        tmp_path,
        text,
        "runs: [fcn]\n    variant: fcn-s\n    tools: [PyTorch]",
        "runs: [cpu]\n    variant: fcn-s\n    tools: [PyTorch]",
    )
    assert len(problems) == 1 and "claims.threads.runs: unknown run 'cpu'; the study has: fcn, gpu" in problems[0]
    _, problems = _bad(tmp_path, text, "order: [[PyTorch], [Torch]]", "order: [[PyTorch], [Lasagne]]")
    assert "claims.ordering: unknown tool 'Lasagne'" in problems[0]
    _, problems = _bad(tmp_path, text, "variants: [fcn-s]\n    device: cpu", "variants: [fcn-x]\n    device: cpu")
    assert "runs.fcn.variants: spec fcn has no variant 'fcn-x'" in problems[0]
    _, problems = _bad(tmp_path, text, "    band: [1.1, 2.5]", "    band: [1.1, 2.5]\n    band: [1.0, 3.0]")
    assert "duplicate key 'band'" in problems[0]
    _, problems = _bad(tmp_path, text, "    kind: scaling\n", "    kind: scaling\n    over: gpus\n")
    assert "duplicate key 'over'" in problems[0]


def test_an_ordering_claim_holds_does_not_or_is_inconclusive_by_its_separated_pairs():
    study = studies.load("dlbench")
    claim = {"fcn-s-ordering": study.claims["fcn-s-ordering"]}  # stated for GPUs

    def judged(values, **kw):
        return claims.evaluate(
            study.model_copy(update={"claims": claim}), _rows(values, run="gpu-synthetic", device="cuda", **kw)
        )[0]

    # stated: Caffe, then CNTK (and Lua Torch 7, not measured here), then TensorFlow and MXNet
    fine = judged({"caffe": 1.0, "cntk": 2.0, "tensorflow": 3.0, "mxnet": 4.0}, ci="tight")
    assert fine.verdict == verdicts.HOLDS and fine.rests_on.device == "cuda" and fine.rests_on.repeats == [6] * 4
    # CNTK behind TensorFlow and MXNet, and separated from them: a reversed pair is evidence against
    assert (
        judged({"caffe": 1.0, "cntk": 5.0, "tensorflow": 3.0, "mxnet": 4.0}, ci="tight").verdict
        == verdicts.DOES_NOT_HOLD
    )
    # the one reversed pair within noise: not evidence either way
    verdict = judged(
        {"caffe": 8.3, "cntk": 8.0, "tensorflow": 9.0, "mxnet": 10.0},
        ci={"caffe": (7.9, 8.6), "cntk": (7.5, 8.5), "tensorflow": (8.9, 9.1), "mxnet": (9.9, 10.1)},
    )
    assert verdict.verdict == verdicts.INCONCLUSIVE
    assert verdict.evidence.startswith(
        "4 of 5 pairs in the stated order, 4 of them with separated 95% intervals; "
        "Caffe not ahead of CNTK at b64 (8.3 vs 8, within noise)"
    )
    assert verdict.evidence.endswith("; no measurement of Torch (run gpu-synthetic, cuda)")
    # a --quick pass (one repeat, no interval) gives no verdict, but its values are shown
    smoke = judged({"caffe": 1.0, "cntk": 2.0, "tensorflow": 3.0, "mxnet": 4.0})
    assert smoke.verdict == verdicts.INCONCLUSIVE and smoke.evidence.startswith("smoke pass of ")
    assert smoke.rests_on.smoke and [(v["tool"], v["value"]) for v in smoke.values] == [
        ("CNTK", 2.0),
        ("Caffe", 1.0),
        ("MXNet", 4.0),
        ("TensorFlow", 3.0),
    ]
    # a full pass of 3 repeats: no interval, so no pair is separated; not a smoke pass
    bare = judged({"caffe": 1.0, "cntk": 2.0, "tensorflow": 3.0, "mxnet": 4.0}, quick=False)
    assert bare.verdict == verdicts.INCONCLUSIVE and not bare.rests_on.smoke
    assert bare.evidence.startswith("5 of 5 pairs in the stated order, 0 of them with separated 95% intervals")
    assert judged({"cntk": 1.0}, ci="tight").verdict == verdicts.NOT_TESTABLE
    # the same rows measured on a CPU: the claim is about GPUs
    (cpu,) = claims.evaluate(
        study.model_copy(update={"claims": claim}), _rows({"caffe": 1.0, "cntk": 2.0}, run="cpu-synthetic", ci="tight")
    )
    assert cpu.verdict == verdicts.NOT_TESTABLE
    assert cpu.evidence == "the claim is about GPUs; this host measured CPU only"


def test_ratio_band_and_scaling_claims():
    study = studies.load("dlbench")
    ratio = study.model_copy(update={"claims": {"r": study.claims["resnet50-mxnet-ratio"]}})
    # MXNet about 5.5x faster (band 3.5-8): each other tool's time / MXNet's
    gpu = dict(variant="resnet50", run="gpu-synthetic-resnet", device="cuda", ci="tight")
    (v,) = claims.evaluate(ratio, _rows({"mxnet": 1.0, "caffe": 6.0, "cntk": 5.0, "tensorflow": 4.0}, **gpu))
    assert v.verdict == verdicts.HOLDS
    assert "ratio of MXNet to each other tool: min 4 (TensorFlow, b64), max 6 (Caffe, b64)" in v.evidence
    (v,) = claims.evaluate(ratio, _rows({"mxnet": 1.0, "caffe": 2.0, "tensorflow": 1.5}, **gpu))
    assert v.verdict == verdicts.DIRECTION_ONLY  # faster, but 1.5-2x, not 3.5-8x
    # one tool inside the band, one slower than MXNet: the median (4.5) would hold, the tools do not
    (v,) = claims.evaluate(ratio, _rows({"mxnet": 1.0, "caffe": 8.0, "tensorflow": 0.5}, **gpu))
    assert v.verdict == verdicts.DOES_NOT_HOLD and "min 0.5 (TensorFlow, b64), max 8 (Caffe, b64)" in v.evidence
    (v,) = claims.evaluate(ratio, _rows({"mxnet": 3.0, "caffe": 2.0}, **gpu))
    assert v.verdict == verdicts.DOES_NOT_HOLD
    scaling = study.model_copy(update={"claims": {"s": study.claims["cpu-threads-scaling"]}})
    cpu = dict(variant="alexnet-s", run="cpu-synthetic-cnn", ci="tight")
    rows = _rows({("caffe", 4): 1.0, ("caffe", 16): 0.9, ("cntk", 4): 1.0, ("cntk", 16): 0.4}, **cpu)
    (v,) = claims.evaluate(scaling, rows)
    # band 0.8-1.5 holds 1: no direction is stated, so CNTK's 2.5x is a miss, not "direction holds"
    assert (
        v.verdict == verdicts.DOES_NOT_HOLD
        and "each: CNTK 2.5 [2.45-2.551] (b64), Caffe 1.111 [1.089-1.134] (b64); outside the band: CNTK" in v.evidence
    )
    # the same medians without intervals (3 repeats a job): the speedups have none, so nothing can hold or fail
    (v,) = claims.evaluate(scaling, rows.assign(ci95_low=None, ci95_high=None, ci95_method=None, ci95_units=1))
    assert v.verdict == verdicts.INCONCLUSIVE and v.evidence.endswith(
        "no 95% interval for CNTK, Caffe (1 repeat; a 95% interval needs 6) (run cpu-synthetic-cnn, cpu)"
    )
    (v,) = claims.evaluate(scaling, _rows({("caffe", 1): 1.0, ("caffe", 2): 0.6}, **cpu))
    assert v.verdict == verdicts.NOT_TESTABLE and "threads 4 and 16 were not both measured (here: 1, 2)" in v.evidence


def test_a_weak_scaling_claim_pairs_the_jobs_of_one_per_gpu_mini_batch():
    study = studies.load("dlf")
    claim = study.model_copy(update={"claims": {"w": study.claims["densenet-weak-scaling"]}})
    rows = _rows(
        {("torch", 1): 0.2, ("torch", 4): 0.25},
        variant="densenet121-synthetic",
        run="densenet",
        ci="tight",
        device="cuda",
    )
    rows = rows.assign(
        ranks=[1, 4],
        scaling="weak",
        rank_batch_size=64,
        batch_size=[64, 256],
        throughput=[64 / 0.2, 256 / 0.25],
        threads=None,
    )
    (v,) = claims.evaluate(claim, rows)
    assert v.verdict == verdicts.HOLDS and "throughput at gpus 4 / at 1: min 3.2 (PyTorch, b64)" in v.evidence  # W
    (v,) = claims.evaluate(claim, rows.assign(throughput=[64 / 0.2, 256 / 0.5]))
    assert (
        v.verdict == verdicts.DIRECTION_ONLY and "each: PyTorch 1.6 [1.568-1.632] (b64)" in v.evidence
    )  # not 2.5-3.8x


def test_a_study_on_one_gpu_runs_its_one_gpu_data_parallel_jobs():
    from dlrepro.run import study as studymod

    planned = {p.id: p for p in studymod.plan(studies.load("dlbench"), gpus=[{"index": 0}], quick=True)}
    fcn = planned["multigpu-fcn"]
    assert (
        fcn.why is None and fcn.options.ranks == [1] and fcn.notes == ["GPU counts 2, 4 left out: this host has 1 GPU"]
    )
    assert fcn.jobs == 4  # PyTorch, JAX, MXNet and TensorFlow: the adapters with a data-parallel path
    assert planned["multigpu-fcn"].options.batch_sizes == [4096]
    none = {p.id: p for p in studymod.plan(studies.load("dlbench"), gpus=[], quick=True)}
    assert none["multigpu-fcn"].why == "it needs an NVIDIA GPU; NVML sees none on this host"


def test_untestable_and_unmeasured_claims_say_why():
    study = studies.load("dlbench")
    empty = tables.frame([], tables.SUMMARY_COLUMNS).assign(run=None)
    found = {
        v.claim: v
        for v in claims.evaluate(
            study, empty, {"gpu-synthetic": "not runnable here: no GPU"}, {"gpu-synthetic-cnn": "bundle fcn-x missing"}
        )
    }
    assert found["fastest-gpu"].verdict == verdicts.NOT_TESTABLE
    assert found["fastest-gpu"].evidence.startswith("it compares three GPU models")
    assert found["early-gpu-fcn"].evidence == "not measured here (gpu-synthetic: not runnable here: no GPU)"
    assert found["early-gpu-cnn"].evidence == "cannot judge: bundle fcn-x missing"
    assert len(found) == len(study.claims)
    # DLBench's FCN-R 1 -> 2 GPU claim of CNTK and MXNet on 4 x H100: CNTK has no data-parallel path, MXNet no
    # kernels for the H100, and the host's plan says so
    from dlrepro.images import matrix as matrixmod
    from dlrepro.plan import coverage

    host = coverage.Hardware("H100", 4, 64, coverage.every_dataset())
    planned = {o.what: o for o in coverage.plan(study, host, matrixmod.load())["claims"]}
    multi = {v.claim: v for v in claims.evaluate(study, empty, {}, {}, planned)}["multigpu-fcn-r-fast"]
    assert multi.verdict == verdicts.NOT_TESTABLE and multi.evidence.startswith(
        "too few of its tools can run here (can: none): CNTK: no data-parallel training in the cntk adapter"
    )
    assert (
        multi.reason == "too few of its tools can run here: no data-parallel path in its tools' adapters"
        and "MXNet: mxnet-1.9.1-cuda has no kernels for H100" in multi.evidence
    )


def invoke(*args):
    return subprocess.run(
        [sys.executable, "-m", "invoke"] + list(args), capture_output=True, text=True, timeout=900, cwd=REPO_ROOT
    )


@pytest.mark.all_cpus  # the plan counts the cores this process may use
def test_a_study_runs_end_to_end_and_its_report_counts_its_bundles(tmp_path):
    results = tmp_path / "results"
    done = invoke(
        "study",
        str(TINY),
        "--executor",
        "local",
        "--framework",
        "torch",
        "--quick",
        "--results",
        str(results),
        "--out",
        str(tmp_path / "report"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (record_path,) = (results / "studies").glob("tiny-study-*.json")
    record = json.loads(record_path.read_text())
    assert record["runs"]["gpu"]["state"] == "not runnable" and "NVIDIA GPU" in record["runs"]["gpu"]["why_here"]
    # the host's plan, per claim and cell, as the record holds it (dlrepro.plan.coverage_record) and the report reads it
    plan = record["plan"]["sets"]
    assert list(plan) == ["today"] and {o["what"]: (o["testable"], o["cause"]) for o in plan["today"]["claims"]} == {
        "ordering": (False, "tool"),
        "threads": (True, None),
        "untestable": (False, "untestable"),
    }
    bundle = results / record["runs"]["fcn"]["bundle"]
    summary = tables.summary(bundle)
    assert record["runs"]["fcn"]["state"] == "complete" and list(summary["job_id"]) == [
        "fcn-s.torch.cpu.b64.t1",
        "fcn-s.torch.cpu.b64.t2",
    ]
    html = (tmp_path / "report" / "study.html").read_text()
    counts = dict(re.findall(r'data-outcome="([^"]+)">(\d+)<', html))
    # the table has 4 rows x 1 column: Caffe and TensorFlow not run (frameworks asked: torch), Lua Torch not ours,
    # PyTorch without a published value
    assert counts == {
        "reproduces": "0",
        "differs": "0",
        "cannot tell": "0",
        "other hardware": "0",
        "cannot be compared": "2",
        "not run": "2",
    }
    verdict = dict(re.findall(r'data-claim="([^"]+)" data-verdict="([^"]+)"', html))
    # --quick: one repeat, no interval: the scaling claim is a smoke pass whatever the speedup
    assert verdict == {"ordering": "not testable here", "threads": "inconclusive", "untestable": "not testable here"}
    assert re.search(r'data-claim="threads"[^\n]*smoke pass', html)
    early = Tables(html).table("Seconds per mini-batch (third-party rerun)")
    assert list(early["tool"]) == ["Caffe", "TensorFlow", "Torch", "PyTorch"]
    # one unit per column, ms when the whole column is under a second (the measured PyTorch time decides)
    published = {"FCN-5 published (ms)": "37.0", "FCN-5 published (s)": "0.0370"}
    (column,) = [c for c in early.columns if c in published]
    assert early.loc[0, column] == published[column] and early.loc[0, "FCN-5 outcome"] == "not run [1]"
    # the reason once, under the table
    assert "<li>the framework was not among those run (caffe in run fcn)</li>" in html
    # the same report opens in a real browser, with the summary at the top and the anchors of the contents
    browser = chromium()
    dom = headless(browser, tmp_path / "profile", "--dump-dom", (tmp_path / "report" / "study.html").as_uri())
    assert 'id="answer"' in dom and 'href="#early"' in dom and 'id="early"' in dom
    assert re.search(r'data-outcome="not run">2<', dom)
    again = dlrepro_here(  # in this process: the study's real process ran above
        "study", str(TINY), "--resume", "latest", "--results", str(results), "--out", str(tmp_path / "report2")
    )
    assert again.returncode == 0 and "study record: %s" % record_path in again.stdout  # nothing left to run


def test_the_study_summary_counts_every_published_cell_once():
    from dlrepro.answers import cells as paper
    from dlrepro.inputs import spec as specmod

    study = studies.load("dlbench")
    empty = tables.frame([], tables.SUMMARY_COLUMNS).assign(run=None)
    refs = {run.spec: specmod.load(run.spec).references for run in study.runs.values()}
    built = paper.build(study, empty, refs, {r: "not runnable here: no GPU" for r in study.runs})
    total, why = paper.counts(built)
    cells = sum(len(t.rows) * len(t.columns) for t in study.tables.values())
    assert sum(total.values()) == cells == 6 * 5 + 5 * 7 * 2 + 5 * 9  # Table 8: 3 networks x 1, 2 and 4 GPUs
    assert why["cannot be compared"]["the published values were not retrieved"] == 5 * 7 * 2 + 5 * 9
    assert total["reproduces"] == total["differs"] == total["other hardware"] == 0
    assert why["cannot be compared"]["a tool the suite does not run"] == 5  # Theano (Lua Torch 7 runs: torch7)
    assert why["cannot be compared"]["the table has no value for this tool"] == 1  # Caffe's LSTM-32: n/a
    assert total["not run"] == why["not run"]["not runnable here: no GPU"] == 5 * 5 - 1


def test_a_study_record_is_found_by_its_exact_name(tmp_path):
    folder = records.records_dir(tmp_path)
    folder.mkdir(parents=True)
    for stem in ("dlf-20261201T100000Z", "dlf-gpu-20261201T110000Z", "dlfx-20261201T120000Z"):
        (folder / (stem + ".json")).write_text(json.dumps({"schema": records.SCHEMA, "study": stem.rsplit("-", 1)[0]}))
    assert records.find("dlf", tmp_path).path.name == "dlf-20261201T100000Z.json"
    assert records.find("dlf-gpu", tmp_path).path.name == "dlf-gpu-20261201T110000Z.json"


def test_a_resume_keeps_the_recorded_options_and_the_published_runs_as_they_were():
    study = studies.load(str(TINY))
    here = studymod.plan(study, gpus=[], cpus=2)  # this host: 2 CPUs, no GPU
    assert [p.options.threads if p.options else p.why for p in here] == [
        [1, 2],
        "it needs an NVIDIA GPU; NVML sees none on this host",
    ]
    elsewhere = studymod.plan(study, gpus=[{"index": 0}], cpus=1)  # where the study started: 1 CPU and a GPU
    record = records.Record("unused.json", {"runs": {}})
    studymod._record_plan(record, elsewhere)
    record.body["runs"]["gpu"].update(state="published", bundle="gpu-bundle")
    published = dict(record.body["runs"]["gpu"])
    studymod._reuse_recorded(record, here)
    studymod._record_plan(record, here)
    assert record.body["runs"]["gpu"] == published and published["why_here"] is None
    fcn = next(p for p in here if p.id == "fcn")
    assert fcn.options.threads == [1] and record.body["runs"]["fcn"]["options"]["threads"] == [1]
    assert fcn.notes == ["thread counts 2 left out: more than this host's 1 CPUs"]


def test_run_picks_runs_of_the_study_and_records_the_others_as_not_asked(tmp_path):
    from dlrepro.errors import DlreproError

    dlf = studies.load("dlf")
    planned = {p.id: p for p in studymod.plan(dlf, gpus=[], cpus=2, runs=["cpu-rnn"])}
    assert list(planned) == list(dlf.runs)
    rnn = planned["cpu-rnn"]
    assert (
        rnn.why is None
        and rnn.options.variants == ["imdb-gru"]
        and rnn.options.frameworks
        == [
            "torch",
            "tensorflow",
            "mxnet",
            "jax",
            "cntk",
            "caffe2",
            "caffe",
            "chainer",
            "keras-tensorflow",
            "keras-jax",
            "keras-torch",
            "keras-cntk",
            "keras-theano",
        ]
    )
    assert rnn.jobs == 11 * 6  # the frameworks with a GRU (CNTK, Chainer, Keras on five backends), six seeds each
    assert {i: p.why for i, p in planned.items() if i != "cpu-rnn"} == {
        i: "not asked: --run cpu-rnn was given" for i in dlf.runs if i != "cpu-rnn"
    }
    two = [p.id for p in studymod.plan(dlf, gpus=[], cpus=2, runs=["cpu-rnn", "cnn-synthetic"]) if p.why is None]
    assert two == ["cnn-synthetic", "cpu-rnn"]  # in the study's order
    with pytest.raises(
        DlreproError,
        match=r"^--run: study dlf has no run 'cpu-rnx' \(did you mean cpu-rnn\?\); its "
        r"runs: gpu-cnn, cpu-cnn, cnn-synthetic, gpu-rnn, cpu-rnn, gpu-features, "
        r"cpu-features, densenet, densenet-cpu$",
    ):
        studymod.plan(dlf, gpus=[], cpus=2, runs=["cpu-rnn", "cpu-rnx"])
    with pytest.raises(DlreproError, match="^--run goes with a new study, not --resume"):
        studymod.run("dlf", resume="latest", runs=["cpu-rnn"], results_dir=tmp_path)
    assert not (tmp_path / "studies").exists()  # refused before any record is written


def test_a_framework_its_bundle_left_out_says_why_not_that_it_was_not_run():
    """CNTK has no GRU in its adapter: the DLF GRU run's bundle lists it in left_out, and Table 4's CNTK cells say
    so instead of "the framework was not among those run"."""
    from dlrepro.answers import cells

    dlf = studies.load("dlf")
    empty = tables.frame([], tables.SUMMARY_COLUMNS).assign(run=None)
    why = "unsupported: the cntk adapter has no layer embedding, gru, last_step (not expressed)"
    references = {"imdb-gru": studies.specmod.load("imdb-gru").references}
    built = cells.build(
        dlf, empty, references, {"gpu-rnn": "not runnable here: no GPU"}, {}, {("cpu-rnn", "imdb-gru", "cntk"): why}
    )
    (table,) = [t for t in built if t.name == "table4-rnn"]
    cell = table.cells[("CNTK", "K80")]
    assert (cell.outcome, cell.reason) == (verdicts.NOT_RUN, "left out of the run: unsupported")
    assert cell.why == "left out of the run: unsupported (cntk in run cpu-rnn: %s)" % why
    plain = cells.build(dlf, empty, references, {"gpu-rnn": "not runnable here: no GPU"}, {})
    (table,) = [t for t in plain if t.name == "table4-rnn"]
    assert table.cells[("CNTK", "K80")].reason == "the framework was not among those run"
