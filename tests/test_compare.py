"""Comparison with published references (ratios, verdicts, ranking with Kendall's tau) and between bundles."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dlrepro import REPO_ROOT, spec as specmod
from dlrepro.results import compare, tables
from dlrepro.references import Reference

ALEXNET = REPO_ROOT / "results" / "alexnet-20261130T031432Z-74e68a2e"


def test_alexnet_on_this_cpu_gives_a_ratio_per_cell_but_no_timing_verdict():
    cells = compare.against_published(tables.summary(ALEXNET))
    by = cells.set_index("framework")
    assert sorted(by.index) == ["caffe", "cntk", "mxnet", "tensorflow"]  # DLBench's Torch is Lua Torch, not PyTorch
    assert by.loc["cntk", "ratio"] == pytest.approx(1.107075 / 0.035, rel=1e-6)
    assert by.loc["cntk", "published_framework"] == "CNTK" and by.loc["cntk", "published_version"] == "1.7.1"
    assert set(cells["verdict"]) == {"not comparable (different hardware)"}
    (rank,) = compare.ranking(cells).itertuples()
    assert rank.n == 4 and rank.measured_order == "cntk, caffe, mxnet, tensorflow"
    assert rank.tau == pytest.approx(stats.kendalltau([1.107075, 1.4972648, 1.9656, 2.5258], [0.035, 0.046, 0.032, 0.032])[0])
    assert rank.verdict == "does not hold" and "Kendall's tau = -0.55" in rank.sentence


@pytest.mark.parametrize("hardware, device, name, same", [
    ("NVIDIA Tesla K80, one GK210 (half board), Azure NC6 DLVM", "cuda", "Tesla K80", True),
    ("NVIDIA Tesla P100-PCIE-16GB, Azure DLVM, CUDA 8.0.61", "cuda", "Tesla P100-PCIE-16GB", True),
    ("NVIDIA Tesla K80, one GK210 (half board)", "cuda", "NVIDIA H200", False),
    ("Azure NC6 CPU (6 vCPU), CPU-only", "cpu", "AMD EPYC", False),
    ("NVIDIA GTX Titan X (Maxwell), Intel i7-5960X", "cpu", "Intel(R) Core(TM) i7-5960X CPU @ 3.00GHz", False),
])
def test_hardware_is_the_same_only_for_the_same_device_model(hardware, device, name, same):
    assert compare.same_hardware(hardware, device, name) is same


def _imdb_row(framework, total_seconds, accuracy, device_name="Tesla K80"):
    return {"bundle_id": "b", "job_id": "imdb-gru.%s.cuda.b64" % framework, "spec": "imdb-gru", "variant": "imdb-gru",
            "framework": framework, "framework_version": "1", "device": "cuda", "device_name": device_name,
            "mode": "convergence", "batch_size": 64, "status": "ok", "quantity": "seconds per epoch", "epochs": 3,
            "total_seconds": total_seconds, "final_test_accuracy": accuracy}


def test_dlf_references_give_verdicts_on_their_hardware_and_a_ranking():
    # DLF README Table 4, K80: CNTK 32 s, Tensorflow 30 s, PyTorch 31 s, MXNet(Module API) 29 s; accuracy 85-86 %
    summary = tables.frame([_imdb_row("cntk", 32.0, 0.85), _imdb_row("tensorflow", 15.0, 0.80),
                            _imdb_row("torch", 62.0, 0.861), _imdb_row("mxnet", 29.5, 0.86)], tables.SUMMARY_COLUMNS)
    cells = compare.against_published(summary)
    k80 = cells[cells["published_hardware"].str.contains("K80")].set_index(["framework", "metric"])
    assert k80.loc[("cntk", "training_wall_time_3_epochs"), "verdict"] == "reproduces"
    assert k80.loc[("tensorflow", "training_wall_time_3_epochs"), ["ratio", "verdict"]].tolist() == [0.5, "faster"]
    assert k80.loc[("torch", "training_wall_time_3_epochs"), ["ratio", "verdict"]].tolist() == [2.0, "slower"]
    assert k80.loc[("mxnet", "training_wall_time_3_epochs"), "published_framework"] == "MXNet(Module API)"
    assert k80.loc[("tensorflow", "test_accuracy"), ["published", "verdict"]].tolist() == [0.86, "lower"]
    assert k80.loc[("torch", "test_accuracy"), "verdict"] == "reproduces"
    p100 = cells[cells["published_hardware"].str.contains("P100") & (cells["metric"] != "test_accuracy")]
    assert len(p100) and set(p100["verdict"]) == {"not comparable (different hardware)"}
    ranks = compare.ranking(cells)
    times = ranks[(ranks["metric"] == "training_wall_time_3_epochs") & ranks["published_hardware"].str.contains("K80")]
    (rank,) = times.itertuples()
    assert rank.published_order == "mxnet, tensorflow, torch, cntk" and rank.measured_order == "tensorflow, mxnet, cntk, torch"
    expected = stats.kendalltau([32.0, 15.0, 62.0, 29.5], [32.0, 30.0, 31.0, 29.0])
    assert rank.tau == pytest.approx(expected[0]) and rank.p_value == pytest.approx(expected[1])
    assert rank.verdict == "partly holds" and "swapped: cntk/torch, mxnet/tensorflow" in rank.sentence


def test_a_reference_tolerance_replaces_the_default_band():
    ref = specmod.load("imdb-gru").references[0]
    assert ref.id == "dlf.gru_imdb.k80.cntk" and ref.value == 32.0
    summary = tables.frame([_imdb_row("cntk", 48.0, 0.85)], tables.SUMMARY_COLUMNS)
    assert compare.against_published(summary, {"imdb-gru": [ref]})["verdict"].tolist() == ["slower"]
    loose = Reference.model_validate(dict(ref.model_dump(), tolerance={"lower": 0.5, "upper": 1.6}))
    cell = compare.against_published(summary, {"imdb-gru": [loose]}).iloc[0]
    assert (cell["ratio"], cell["lower"], cell["upper"], cell["verdict"]) == (1.5, 0.5, 1.6, "reproduces")
    with pytest.raises(ValueError, match="lower <= 1 <= upper"):
        Reference.model_validate(dict(ref.model_dump(), tolerance={"lower": 1.2, "upper": 1.6}))


def _samples(seconds_by_framework, repeats=6):
    """Sample rows of one bundle: per framework its seconds, split into ``repeats`` equal repeats in order."""
    rows = [{"spec": "alexnet", "variant": "alexnet-s", "framework": f, "device": "cpu", "mode": "throughput",
             "batch_size": 16, "precision": "fp32", "threads": 2, "sample": "iteration", "seconds": s,
             "bundle_id": "b", "job_id": "alexnet-s.%s.cpu.b16" % f, "repeat": 1 + i * repeats // len(seconds)}
            for f, seconds in seconds_by_framework.items() for i, s in enumerate(seconds)]
    return tables.frame(rows, tables.SAMPLE_COLUMNS)


def test_a_regression_needs_significance_and_the_minimum_effect():
    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 0.02, 48)
    a = _samples({"torch": base, "mxnet": base, "jax": rng.normal(1.0, 0.002, 48), "caffe": base})
    b = _samples({"torch": rng.normal(1.10, 0.02, 48), "mxnet": rng.normal(1.0, 0.02, 48),
                  "jax": rng.normal(1.02, 0.002, 48), "cntk": base})
    rows = compare.against_bundle(a, b, min_effect=0.05, alpha=0.01).set_index("framework")
    assert rows.loc["torch", "verdict"] == "slower" and rows.loc["torch", "change"] == pytest.approx(0.10, abs=0.02)
    assert rows.loc["torch", "n_a"] == rows.loc["torch", "n_b"] == 6  # repeats, not iterations
    assert rows.loc["torch", "p_value"] == pytest.approx(2 / 924)  # every repeat of B slower than every one of A
    assert rows.loc["mxnet", "verdict"] == "no change" and rows.loc["mxnet", "p_value"] > 0.01
    assert rows.loc["jax", "p_value"] < 0.01 and rows.loc["jax", "verdict"] == "no change"  # real but below 5 %
    assert rows.loc["caffe", "verdict"] == "only in A" and rows.loc["cntk", "verdict"] == "only in B"
    with pytest.raises(ValueError, match="alpha in"):
        compare.against_bundle(a, b, alpha=1.5)


def test_a_regression_is_judged_on_repeats_not_on_correlated_iterations():
    # B's six repeats drift around A's level: within each repeat the iterations agree closely, so pooled they look
    # like 48 independent samples over 5% slower (p < 0.01); over repeats the difference is noise
    rng = np.random.default_rng(3)
    level_a = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
    level_b = [1.2, 1.0, 1.15, 0.95, 1.1, 0.98]
    a = _samples({"torch": np.concatenate([rng.normal(m, 0.001, 8) for m in level_a])})
    b = _samples({"torch": np.concatenate([rng.normal(m, 0.001, 8) for m in level_b])})
    (row,) = compare.against_bundle(a, b).itertuples()
    pooled = stats.mannwhitneyu(a["seconds"], b["seconds"]).pvalue
    assert pooled < 0.01 and row.change > 0.05 and row.p_value > 0.1 and row.verdict == "no change"  # before: slower
    few = compare.against_bundle(_samples({"torch": np.full(24, 1.0)}, 3), _samples({"torch": np.full(24, 1.3)}, 3))
    assert few.iloc[0]["verdict"] == "cannot tell (too few repeats)" and few.iloc[0]["p_value"] > 0.01


def test_unknown_metrics_and_ranges_are_not_compared():
    assert compare.metric_kind("approx_speedup_percent_1_to_2_gpus") is None
    assert compare.metric_kind("wall_time_5_epochs") == "time" and compare.metric_kind("images_per_second") == "rate"
    row = pd.Series(_imdb_row("torch", 10.0, 0.9)).to_frame().T.astype({"epochs": "Int64"}).iloc[0]
    assert compare.measured_value(row, "training_wall_time_10_epochs") is None  # 3 epochs measured, not 10
    assert compare.measured_value(row, "test_accuracy") == 0.9  # the spec's 3 epochs
    # a --quick run's one epoch is not the accuracy the study published after three
    short = pd.Series(dict(_imdb_row("torch", 10.0, 0.55), epochs=1)).to_frame().T.astype({"epochs": "Int64"}).iloc[0]
    assert compare.measured_value(short, "test_accuracy") is None


def invoke(*args):
    return subprocess.run([sys.executable, "-m", "invoke"] + list(args), capture_output=True, text=True, timeout=120,
                          cwd=REPO_ROOT)


def test_invoke_check_prints_ratios_verdicts_and_the_ranking():
    done = invoke("check", ALEXNET.name)
    assert done.returncode == 0, done.stderr
    assert "31.63" in done.stdout and "not comparable" in done.stdout  # CNTK: 1.107 s here / 0.035 s published
    assert "Kendall's tau = -0.55 (p = 0.28, n = 4): the study's conclusion does not hold here" in done.stdout


def test_invoke_compare_against_another_bundle_and_merge(tmp_path):
    from tests.test_tables import rewrite

    again = rewrite(ALEXNET, tmp_path, "1" * 64)
    done = invoke("compare", str(again), "--against", str(ALEXNET))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("no change") == 7  # the same samples: no regression
    merged = tmp_path / "merged"
    done = invoke("merge", "%s,%s" % (ALEXNET, again), "--out", str(merged))
    assert done.returncode == 0 and "wrote %s: 14 jobs, 336 samples" % merged in done.stdout.replace("\n", "")
    assert tables.read(merged, "summary")["framework"].value_counts()["cntk"] == 2


def test_published_values_that_all_tie_rank_nothing():
    # DLF README, IMDB GRU test accuracy on the K80: 86 % for PyTorch, Tensorflow and MXNet(Module API) alike
    summary = tables.frame([_imdb_row("torch", 30.0, 0.869), _imdb_row("tensorflow", 30.0, 0.860),
                            _imdb_row("mxnet", 30.0, 0.862)], tables.SUMMARY_COLUMNS)
    ranks = compare.ranking(compare.against_published(summary))
    (rank,) = ranks[(ranks["metric"] == "test_accuracy") & ranks["published_hardware"].str.contains("K80")].itertuples()
    assert rank.verdict == "not ranked" and "published (published, NVIDIA Tesla K80" in rank.sentence
    assert " all 0.86; here (Tesla K80): torch, mxnet, tensorflow. The published values all tie: the study ranks nothing" in rank.sentence


def _six_repeats(real, results_dir, digest, scale):
    """A bundle of ``real``'s jobs with each job's 24 iterations as 6 repeats of 4, times scaled per framework."""
    from runner import stats as runner_stats

    from dlrepro.results.bundle import BundleWriter

    body = json.loads((real / "bundle.json").read_text())
    writer = BundleWriter(results_dir, body["spec"]["name"], digest)
    for row in body["jobs"]:
        job_dir = real / "jobs" / row["job_id"]
        job, result = (json.loads((job_dir / name).read_text()) for name in ("job.json", "result.json"))
        seconds = [s * scale.get(job["framework"], 1.0) for rep in result["timing"]["repeats"] for s in rep]
        result["timing"]["repeats"] = [seconds[i:i + 4] for i in range(0, 24, 4)]
        result["timing"]["summary"] = runner_stats.summarize_repeats(result["timing"]["repeats"])
        result["timing"]["throughput"] = job["batch_size"] / result["timing"]["summary"]["median"]
        writer.write_job(job)
        writer.write_result(row["job_id"], result)
    keep = ("command", "spec", "options", "executor", "host", "images", "datasets", "left_out", "interrupted")
    return writer.finish({k: body[k] for k in keep})


def test_exit_codes_gate_a_pipeline_and_json_is_written_every_time(tmp_path):
    old = _six_repeats(ALEXNET, tmp_path, "2" * 64, {})
    new = _six_repeats(ALEXNET, tmp_path, "3" * 64, {"torch": 1.5})
    report = tmp_path / "compare.json"
    done = invoke("compare", str(new), "--against", str(old), "--json", str(report))
    assert done.returncode == 1 and "failed (--fail-on slower): 1 cell(s)" in done.stdout, done.stdout + done.stderr
    result = json.loads(report.read_text())
    assert result["failed"] is True and result["fail_on"] == "slower" and len(result["cells"]) == 7
    assert [(c["framework"], c["verdict"]) for c in result["failing_cells"]] == [("torch", "slower")]
    assert result["failing_cells"][0]["change"] == pytest.approx(0.5)
    assert invoke("compare", str(new), "--against", str(old), "--fail-on", "never").returncode == 0
    assert invoke("compare", str(old), "--against", str(new)).returncode == 0  # faster is not a regression
    assert invoke("compare", str(old), "--against", str(new), "--fail-on", "faster").returncode == 1
    assert invoke("compare", str(old), "--against", str(new), "--fail-on", "change").returncode == 1
    wrong = invoke("compare", str(old), "--against", str(new), "--fail-on", "worse")
    assert wrong.returncode == 1 and wrong.stdout.startswith("error: --fail-on: expected one of slower, faster, change")
    # `compare A B` is `compare B --against A`
    assert invoke("compare", str(old), str(new)).returncode == 1 and invoke("compare", str(new), str(old)).returncode == 0
    both = invoke("compare", str(old), str(new), "--against", str(old))
    assert both.returncode == 1 and both.stdout.startswith("error: give two bundles (compare A B) or one and --against")
    # against the published values (check) the default is never; "change" fails on DLBench's ranking, which does not
    # hold here; check has no "slower"
    assert invoke("check", str(old), "--json", str(report)).returncode == 0
    assert json.loads(report.read_text())["failed"] is False
    assert invoke("check", str(old), "--fail-on", "slower").stdout.startswith(
        "error: --fail-on: expected one of never, change (got 'slower')")
    done = invoke("check", str(old), "--fail-on", "change", "--json", str(report))
    assert done.returncode == 1 and json.loads(report.read_text())["failing_rankings"][0]["verdict"] == "does not hold"
