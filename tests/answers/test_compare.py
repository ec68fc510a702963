"""Comparison with published references (ratios, verdicts, ranking with Kendall's tau) and between bundles."""

import json

import pandas as pd
import pytest
from scipy import stats

from dlrepro import REPO_ROOT
from dlrepro.answers import measured, model, published, ranking
from dlrepro.inputs import spec as specmod
from dlrepro.inputs.references import Reference
from dlrepro.store import bundle, tables
from tests.helpers import dlrepro_here, invoke

ALEXNET = REPO_ROOT / "results" / "alexnet-20261130T031432Z-74e68a2e"


def today(summary):
    """{spec: [Reference]} of the summary's specs as specs/ gives them (a constructed row records no spec)."""
    return {name: specmod.load(name).references for name in summary["spec"].dropna().unique()}


def test_alexnet_on_this_cpu_gives_a_ratio_per_cell_but_no_timing_verdict_and_no_ranking():
    body = bundle.body(ALEXNET)
    cells = published.against_published(
        measured.prepare(tables.summary(ALEXNET), [body]), model.recorded([body]).references
    )
    by = cells.set_index("framework")
    assert sorted(by.index) == ["caffe", "cntk", "mxnet", "tensorflow"]  # DLBench's Torch is Lua Torch, not PyTorch
    assert by.loc["cntk", "ratio"] == pytest.approx(1.107075 / 0.035, rel=1e-6)
    assert by.loc["cntk", "published_framework"] == "CNTK" and by.loc["cntk", "published_version"] == "1.7.1"
    assert set(cells["verdict"]) == {"other hardware"}
    assert (
        cells["why"].iloc[0].startswith("measured on AMD EPYC")
        and "published on NVIDIA GTX Titan X" in cells["why"].iloc[0]
    )
    # a CPU run is not ranked against a third party's Titan X order
    assert ranking.ranking(cells).empty


def _imdb_row(framework, total_seconds, accuracy, device_name="Tesla K80", spread=0.01):
    """A convergence row of 6 seeds (answers.measured.prepare's columns): medians with 95% intervals of +-spread."""
    return {
        "bundle_id": "b",
        "job_id": "imdb-gru.%s.cuda.b64" % framework,
        "spec": "imdb-gru",
        "variant": "imdb-gru",
        "framework": framework,
        "framework_version": "1",
        "device": "cuda",
        "device_name": device_name,
        "mode": "convergence",
        "batch_size": 64,
        "status": "ok",
        "quantity": "seconds per epoch",
        "epochs": 3,
        "total_seconds": total_seconds,
        "final_test_accuracy": accuracy,
        "seeds": 6,
        "planned_epochs": 3,
        "quick": False,
        "total_low": total_seconds * (1 - spread),
        "total_high": total_seconds * (1 + spread),
        "accuracy_low": accuracy * (1 - spread / 10),
        "accuracy_high": accuracy * (1 + spread / 10),
    }


def _frame(rows):
    return pd.DataFrame(rows).pipe(lambda f: tables.frame(f.to_dict("records"), tables.SUMMARY_COLUMNS))


def test_dlf_references_give_verdicts_on_their_hardware_and_a_ranking():
    # DLF README Table 4, K80: CNTK 32 s, Tensorflow 30 s, PyTorch 31 s, MXNet(Module API) 29 s; accuracy 85-86 %
    summary = _frame(
        [
            _imdb_row("cntk", 32.0, 0.85),
            _imdb_row("tensorflow", 15.0, 0.80),
            _imdb_row("torch", 62.0, 0.861),
            _imdb_row("mxnet", 29.5, 0.86),
        ]
    )
    cells = published.against_published(summary, today(summary))
    k80 = cells[cells["published_hardware"].str.contains("K80")].set_index(["framework", "metric"])
    assert k80.loc[("cntk", "training_wall_time_3_epochs"), "verdict"] == "reproduces"
    assert k80.loc[("tensorflow", "training_wall_time_3_epochs"), ["ratio", "verdict", "direction"]].tolist() == [
        0.5,
        "differs",
        "faster",
    ]
    assert k80.loc[("torch", "training_wall_time_3_epochs"), ["ratio", "verdict", "direction"]].tolist() == [
        2.0,
        "differs",
        "slower",
    ]
    # MXNet's K80 values are of its Module API, which the suite's (Gluon) adapter is not: no cell, as in the study
    assert "mxnet" not in k80.index.get_level_values("framework")
    assert k80.loc[("tensorflow", "test_accuracy"), ["published", "verdict", "direction"]].tolist() == [
        0.86,
        "differs",
        "lower",
    ]
    assert k80.loc[("torch", "test_accuracy"), "verdict"] == "reproduces"
    p100 = cells[cells["published_hardware"].str.contains("P100") & (cells["metric"] != "test_accuracy")]
    assert len(p100) and set(p100["verdict"]) == {"other hardware"}
    ranks = ranking.ranking(cells)
    times = ranks[(ranks["metric"] == "training_wall_time_3_epochs") & ranks["published_hardware"].str.contains("K80")]
    (rank,) = times.itertuples()
    assert rank.published_order == "tensorflow, torch, cntk" and rank.measured_order == "tensorflow, cntk, torch"
    expected = stats.kendalltau([32.0, 15.0, 62.0], [32.0, 30.0, 31.0])
    assert rank.tau == pytest.approx(expected[0]) and rank.p_value == pytest.approx(expected[1])
    # three frameworks are too few to rank: never a partial pass
    assert rank.verdict == "inconclusive" and rank.why == "n = 3: too few frameworks to rank"
    assert rank.sentence.endswith("swapped: cntk/torch.")  # each pair's intervals apart


def test_a_reference_tolerance_replaces_the_default_band():
    ref = specmod.load("imdb-gru").references[0]
    assert ref.id == "dlf.gru_imdb.k80.cntk" and ref.value == 32.0
    summary = _frame([_imdb_row("cntk", 48.0, 0.85)])
    assert published.against_published(summary, {"imdb-gru": [ref]})[["verdict", "direction"]].values.tolist() == [
        ["differs", "slower"]
    ]
    loose = Reference.model_validate(dict(ref.model_dump(), tolerance={"lower": 0.5, "upper": 1.6}))
    cell = published.against_published(summary, {"imdb-gru": [loose]}).iloc[0]
    assert (cell["ratio"], cell["lower"], cell["upper"], cell["verdict"]) == (1.5, 0.5, 1.6, "reproduces")
    with pytest.raises(ValueError, match="lower <= 1 <= upper"):
        Reference.model_validate(dict(ref.model_dump(), tolerance={"lower": 1.2, "upper": 1.6}))


def test_unknown_metrics_and_ranges_are_not_compared():
    assert measured.metric_kind("approx_speedup_percent_1_to_2_gpus") is None
    assert measured.metric_kind("wall_time_5_epochs") == "time" and measured.metric_kind("images_per_second") == "rate"
    row = pd.Series(_imdb_row("torch", 10.0, 0.9)).to_frame().T.astype({"epochs": "Int64"}).iloc[0]
    assert measured.interval(row, "test_accuracy") == pytest.approx((0.9 * 0.999, 0.9 * 1.001))
    assert measured.value(row, "training_wall_time_10_epochs") is None  # 3 epochs measured, not 10
    assert measured.short_of(row, "training_wall_time_10_epochs") == "trained 3 of 10 epochs"
    assert measured.value(row, "test_accuracy") == 0.9  # the spec's 3 epochs
    # a --quick run's one epoch is not the accuracy the study published after three
    short = pd.Series(dict(_imdb_row("torch", 10.0, 0.55), epochs=1)).to_frame().T.astype({"epochs": "Int64"}).iloc[0]
    assert measured.value(short, "test_accuracy") is None and measured.raw(short, "test_accuracy") == 0.55
    assert measured.smoke(short, "test_accuracy") == "trained 1 of 3 epochs"
    # a --quick job is a smoke pass whatever its epochs; a full job of one seed has no interval, which is not smoke
    quick = pd.Series(dict(_imdb_row("torch", 10.0, 0.55), quick=True, epochs=1)).to_frame().T.iloc[0]
    assert measured.smoke(quick, "test_accuracy") == "--quick: 1 epoch, each cut short"
    one = (
        pd.Series(dict(_imdb_row("torch", 10.0, 0.86), seeds=1, accuracy_low=None, accuracy_high=None))
        .to_frame()
        .T.iloc[0]
    )
    assert measured.smoke(one, "test_accuracy") is None and measured.interval(one, "test_accuracy") is None
    assert measured.no_interval(one, "test_accuracy") == "1 seed; a 95% interval needs 6"


def test_invoke_check_prints_ratios_verdicts_and_the_ranking():
    done = invoke("check", ALEXNET.name)
    assert done.returncode == 0, done.stderr
    assert "31.6x" in done.stdout and "other hardware" in done.stdout  # CNTK: 1.107 s here / 0.035 s published
    # a CPU run is not ranked against the Titan X rerun, and no order is ever called the study's conclusion
    assert "tau" not in done.stdout and "conclusion" not in done.stdout
    # what gives no cell is listed with its reason, under its table: frameworks the rerun has no number for, and
    # its tools the suite does not run (Lua Torch 7 it runs: the committed bundle has no job of it)
    assert done.stdout.strip().splitlines()[-1] == (
        "not compared: Caffe2, JAX, PyTorch: no published number in this table; Theano: not run by this suite; Torch: "
        "no job in this bundle"
    )


H200_TORCH = "alexnet-20261130T041002Z-d802ef07"  # PyTorch only, AlexNet-S b16-128: the rerun has no PyTorch


def test_check_with_nothing_to_compare_exits_2_saying_what_is_missing_and_what_to_run():
    done = dlrepro_here("check", H200_TORCH)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.strip().splitlines() == [
        "seconds per minibatch, third party rerun on NVIDIA GTX Titan X (Maxwell), Intel i7-5960X, CUDA 7.5, cuDNN "
        "5.1, driver 367.44: no cell here",
        "not compared: PyTorch: no published number in this table; Caffe, CNTK, MXNet, TensorFlow, Torch: no job in "
        "this bundle; Theano: not run by this suite",
        "not compared: PyTorch at alexnet-s, batch 32, 64, 128: no published number at this configuration",
        "nothing compared (exit status 2): no job of %s is at a published configuration with a published number "
        "for its framework (its jobs: PyTorch at alexnet-s, batch 16, 32, 64, 128); spec alexnet's published numbers "
        "are at alexnet-s, batch 16: CNTK, Caffe, MXNet, TensorFlow, Theano, Torch; e.g. `dlrepro run --spec=alexnet "
        "--variant=alexnet-s --batch-size=16 --framework=caffe,cntk,mxnet,tensorflow,torch7`" % H200_TORCH,
    ]


def test_check_of_bundles_that_compare_nothing_says_why_in_one_line_and_never_a_traceback():
    # the committed H200 JAX LSTM bundle: the spec's references include cells with no framework or variant
    done = dlrepro_here("check", "lstm-20261202T004512Z-59250ca9")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        "nothing compared (exit status 2): no job of lstm-20261202T004512Z-59250ca9 is at a published configuration "
        "with a published number for its framework (its jobs: JAX at lstm-synthetic, batch 1024); spec lstm's "
        "published numbers are at lstm, batch 128: CNTK, MXNet, TensorFlow, Theano, Torch; e.g. `dlrepro run "
        "--spec=lstm --variant=lstm --batch-size=128 --framework=cntk,mxnet,tensorflow,torch7`"
    )
    # the DLF study's CIFAR-10 bundle, every job skipped for the dataset: one clause for the five jobs, and the
    # recorded remedy (fetch the data; a resume alone would skip them again), as the dlrepro command
    skipped = dlrepro_here("check", "cifar10-vgg-20261201T234451Z-36d6a311")
    last = skipped.stdout.strip().splitlines()[-1]
    assert skipped.returncode == 2 and last.startswith(
        "nothing compared (exit status 2): the CNTK, Caffe2, MXNet, PyTorch, TensorFlow jobs were skipped: dataset "
        "cifar10 is not in the cache"
    )
    assert last.count("dataset cifar10 is not in the cache") == 1 and "`dlrepro datasets.fetch cifar10`" in last
    assert last.endswith(", then `dlrepro run --resume cifar10-vgg-20261201T234451Z-36d6a311`")


def _ref(framework, batch=16, variant="alexnet-s", value=0.03):
    return Reference(
        id="t.%s.%s.b%d" % (variant, framework, batch),
        kind="published",
        variant=variant,
        experiment="t",
        framework=framework,
        hardware="NVIDIA H200",
        batch_size=batch,
        metric="seconds_per_minibatch",
        value=value,
        unit="s",
        source="the test",
    )


def _job(framework, batch=16, status="ok", mode="throughput"):
    return {
        "bundle_id": "b",
        "job_id": "alexnet-s.%s.cuda.b%d" % (framework, batch),
        "spec": "alexnet",
        "variant": "alexnet-s",
        "framework": framework,
        "framework_version": "1",
        "device": "cuda",
        "device_name": "NVIDIA H200",
        "mode": mode,
        "batch_size": batch,
        "status": status,
        "reason": "boom" if status != "ok" else None,
        "precision": "fp32",
        "quantity": "seconds per mini-batch" if mode == "throughput" else "seconds per epoch",
        "median": 0.03 if status == "ok" and mode == "throughput" else None,
    }


def test_what_gives_no_cell_is_listed_with_its_reason():
    summary = tables.frame(
        [_job("torch"), _job("caffe"), _job("cntk", status="failed"), _job("jax", batch=32)], tables.SUMMARY_COLUMNS
    )
    refs = {"alexnet": [_ref("Caffe"), _ref("CNTK"), _ref("Theano"), _ref("MXNet")]}
    cells = published.against_published(summary, refs)
    assert list(cells["framework"]) == ["caffe"]
    left = published.left_out(summary, refs, cells)
    table = "seconds per minibatch, published on NVIDIA H200"
    assert left[["batch_size", "framework", "published_framework", "verdict", "reason", "why"]].fillna(
        "-"
    ).values.tolist() == [
        [16, "cntk", "CNTK", "not run", "the job was failed", "the CNTK job was failed: boom"],
        [16, "torch", "-", "cannot be compared", published.NO_NUMBER, "no published number for PyTorch in %s" % table],
        [16, "-", "MXNet", "not run", published.NO_JOB, "no MXNet job in this bundle"],
        [16, "-", "Theano", "cannot be compared", published.NOT_OURS, "Theano is not run by this suite"],
        [
            32,
            "jax",
            "-",
            "cannot be compared",
            published.NO_TABLE,
            "no published number for JAX at alexnet-s, batch size 32",
        ],
    ]
    assert set(left["table"].dropna()) == {table}
    # no cell at all: the unfinished job at a published configuration is named, with the command that reruns it
    failed = tables.frame([_job("cntk", status="failed"), _job("torch")], tables.SUMMARY_COLUMNS)
    none = published.against_published(failed, refs)
    assert (
        none.empty
        and published.nothing_compared("b", "alexnet", failed, refs["alexnet"], published.left_out(failed, refs, none))
        == "the CNTK job was failed: boom; run them again: `dlrepro run --resume b --retry-failed`"
    )
    other = tables.frame([_job("mxnet", mode="convergence")], tables.SUMMARY_COLUMNS)
    assert published.left_out(other, refs, published.against_published(other, refs))[
        ["reason", "why"]
    ].values.tolist() == [
        [published.OTHER_QUANTITY, "the MXNet job measured seconds per epoch, not seconds per minibatch"],
        [published.NO_JOB, "no CNTK job in this bundle"],
        [published.NO_JOB, "no Caffe job in this bundle"],
        [published.NOT_OURS, "Theano is not run by this suite"],
    ]
    assert published.nothing_compared("b", "alexnet", failed, [], published.left_out(failed, {}, none)) == (
        "spec alexnet has no published number to check a bundle against; compare two bundles instead "
        "(`dlrepro compare A B`)"
    )


def test_invoke_compare_against_another_bundle_and_merge(tmp_path):
    from tests.store.real_bundles import rewrite

    again = rewrite(ALEXNET, tmp_path, "1" * 64)
    report = tmp_path / "compare.json"
    done = invoke("compare", str(again), "--against", str(ALEXNET), "--json", str(report))
    assert done.returncode == 0, done.stderr
    # the same samples, but 3 repeats a side cannot show that nothing changed: "cannot tell", which passes
    # --fail-on slower
    cells = json.loads(report.read_text())["cells"]
    assert [(c["verdict"], c["n_a"], c["change"]) for c in cells] == [("cannot tell", 3, 0.0)] * 7
    merged = tmp_path / "merged"
    done = invoke("merge", "%s,%s" % (ALEXNET, again), "--out", str(merged))
    assert done.returncode == 0 and "wrote %s: 14 jobs, 336 samples" % merged in done.stdout.replace("\n", "")
    assert tables.read(merged, "summary")["framework"].value_counts()["cntk"] == 2


def test_published_values_that_all_tie_rank_nothing():
    # DLF README, IMDB GRU test accuracy on the K80: 86 % for PyTorch and Tensorflow alike
    summary = _frame([_imdb_row("torch", 30.0, 0.869), _imdb_row("tensorflow", 30.0, 0.860)])
    ranks = ranking.ranking(published.against_published(summary, today(summary)))
    (rank,) = ranks[(ranks["metric"] == "test_accuracy") & ranks["published_hardware"].str.contains("K80")].itertuples()
    assert rank.verdict == "not testable here" and "the published order on NVIDIA Tesla K80" in rank.sentence
    assert (
        "; all 0.86) against here (Tesla K80: torch, tensorflow). The published values all tie: there is no "
        "order to reproduce." in rank.sentence
    )


def _six_repeats(real, results_dir, digest, scale):
    """A bundle of ``real``'s jobs with each job's 24 iterations as 6 repeats of 4, times scaled per framework."""
    from dlrepro.store.bundle import BundleWriter
    from runner import stats as runner_stats

    body = json.loads((real / "bundle.json").read_text())
    writer = BundleWriter(results_dir, body["spec"]["name"], digest)
    for row in body["jobs"]:
        job_dir = real / "jobs" / row["job_id"]
        job, result = (json.loads((job_dir / name).read_text()) for name in ("job.json", "result.json"))
        seconds = [s * scale.get(job["framework"], 1.0) for rep in result["timing"]["repeats"] for s in rep]
        result["timing"]["repeats"] = [seconds[i : i + 4] for i in range(0, 24, 4)]
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
    done = dlrepro_here("compare", str(new), "--against", str(old), "--json", str(report))
    assert done.returncode == 1 and "failed (--fail-on slower): 1 configuration(s)" in done.stdout, (
        done.stdout + done.stderr
    )
    result = json.loads(report.read_text())
    assert result["failed"] is True and result["fail_on"] == "slower" and len(result["cells"]) == 7
    assert [(c["framework"], c["verdict"]) for c in result["failing_cells"]] == [("torch", "slower")]
    assert result["failing_cells"][0]["change"] == pytest.approx(0.5)
    assert dlrepro_here("compare", str(new), "--against", str(old), "--fail-on", "never").returncode == 0
    assert dlrepro_here("compare", str(old), "--against", str(new)).returncode == 0  # faster is not a regression
    # "cannot tell" passes --fail-on slower and fails --fail-on unproven: the noise of 6 repeats on this CPU leaves
    # five frameworks unproven (identical samples), MXNet's interval lies inside +-5%
    verdicts = {c["framework"]: c["verdict"] for c in result["cells"]}
    assert verdicts == {
        "torch": "slower",
        "mxnet": "no change",
        "caffe": "cannot tell",
        "caffe2": "cannot tell",
        "cntk": "cannot tell",
        "jax": "cannot tell",
        "tensorflow": "cannot tell",
    }
    done = dlrepro_here("compare", str(new), "--against", str(old), "--fail-on", "unproven", "--json", str(report))
    assert done.returncode == 1 and len(json.loads(report.read_text())["failing_cells"]) == 6
    assert dlrepro_here("compare", str(old), "--against", str(new), "--fail-on", "faster").returncode == 1
    assert dlrepro_here("compare", str(old), "--against", str(new), "--fail-on", "change").returncode == 1
    wrong = dlrepro_here("compare", str(old), "--against", str(new), "--fail-on", "worse")
    assert wrong.returncode == 2 and wrong.stdout.startswith("error: --fail-on: expected one of slower, faster, change")
    # `compare A B` is `compare B --against A`
    assert (
        dlrepro_here("compare", str(old), str(new)).returncode == 1
        and dlrepro_here("compare", str(new), str(old)).returncode == 0
    )
    both = dlrepro_here("compare", str(old), str(new), "--against", str(old))
    assert both.returncode == 2 and both.stdout.startswith("error: give two bundles (compare A B) or one and --against")
    # against the published values (check) the default is never; "change" finds nothing to fail on a CPU run against
    # the Titan X rerun: its cells are other hardware, and its ranking is not made; check has no "slower"
    assert dlrepro_here("check", str(old), "--json", str(report)).returncode == 0
    assert json.loads(report.read_text())["failed"] is False
    assert dlrepro_here("check", str(old), "--fail-on", "slower").stdout.startswith(
        "error: --fail-on: expected one of never, change (got 'slower')"
    )
    done = dlrepro_here("check", str(old), "--fail-on", "change", "--json", str(report))
    assert done.returncode == 0 and json.loads(report.read_text())["failing_rankings"] == []


def test_compare_of_a_smoke_pass_says_so_first_and_gives_no_change_verdict(tmp_path, capsys):
    """Review, further checks: a --quick bundle against a full one printed '+50.2%' and 'cannot tell' with no word
    that side A was a smoke pass, and advised only '--repeats 5'."""
    from dlrepro.answers import gather
    from dlrepro.cli import render
    from tests.bundles import Job, make

    quick = make(tmp_path / "q", "fcn", [Job("torch", "fcn-s", 64, medians=[0.15], per_repeat=3)], quick=True)
    full = make(tmp_path / "f", "fcn", [Job("torch", "fcn-s", 64, medians=[0.10] * 6)])
    found = gather.comparison(str(quick), str(full))
    assert (found.smoke, found.cells["verdict"].tolist()) == ([("A", quick.name)], ["cannot tell"])
    assert found.cells["reason"].iloc[0].startswith("A is a smoke pass (--quick); ")
    assert found.advice == "rerun %s without --quick (5 repeats or more), then compare" % quick.name
    render.comparison(found)
    shown = capsys.readouterr().out.splitlines()
    assert " ".join(shown[0].split()) == (
        "smoke pass: A (%s) was run with --quick, a few iterations a job: its "
        "changes below are indications, never verdicts" % quick.name
    )
    assert shown[1].startswith("A (before): %s" % quick.name)
    other = make(tmp_path / "g", "fcn", [Job("torch", "fcn-s", 64, medians=[0.10] * 6)])  # one bundle twice: refused
    again = gather.comparison(str(full), str(other))
    assert (again.smoke, again.cells["verdict"].tolist()) == ([], ["no change"])


def test_a_smoke_pass_against_a_bundle_sharing_no_configuration_gives_only_in_a_and_b(tmp_path):
    """`dlrepro compare` of a --quick AlexNet-S bundle against an older one with other configurations raised
    pandas' TypeError: every row's reason was None, so the column was float64 and the smoke pass's reason could not
    be written into it."""
    from dlrepro.answers import gather
    from tests.bundles import Job, make

    quick = make(tmp_path / "q", "fcn", [Job("torch", "fcn-s", 64, medians=[0.15], per_repeat=3)], quick=True)
    other = make(tmp_path / "o", "fcn", [Job("torch", "fcn-s", 32, medians=[0.10] * 6)])
    found = gather.comparison(str(other), str(quick))
    assert sorted(found.cells["verdict"]) == ["only in A", "only in B"]
    assert found.cells["reason"].isna().all() and found.cells["reason"].dtype == object
