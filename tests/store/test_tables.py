"""Tidy tables, bundle validation and merging, on bundles rewritten from a real seven-framework run."""

import json
import shutil

import pyarrow.parquet as pq
import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import BundleError
from dlrepro.store import tables, validate
from dlrepro.store.bundle import BundleWriter
from tests.helpers import dlrepro_here, invoke, seeded
from tests.store.real_bundles import REAL, rewrite

MEDIANS = {"caffe": 1.4972648284983734, "cntk": 1.107075, "torch": 2.719071340001392}


@pytest.fixture
def bundle(tmp_path):
    return rewrite(REAL, tmp_path / "results")


def test_tables_carry_every_job_and_iteration_with_provenance(bundle):
    summary, samples = tables.summary(bundle), tables.samples(bundle)
    assert list(summary.columns) == list(tables.SUMMARY_COLUMNS) and len(summary) == 7
    assert (
        tables.schema_of(bundle / "summary.parquet")
        == tables.schema_of(bundle / "samples.parquet")
        == "dlrepro.tables/10"
    )
    by_framework = summary.set_index("framework")
    assert by_framework.loc["caffe", "median"] == MEDIANS["caffe"]
    assert by_framework.loc["torch", "median"] == MEDIANS["torch"]
    assert by_framework.loc["torch", "image_id"].startswith("sha256:b5a176a069f5")
    assert (
        by_framework.loc["caffe", "framework_version"] == "1.0.0"
        and by_framework.loc["caffe", "device_name"] == "AMD EPYC"
    )
    assert set(summary["parameters"]) == {62_378_344} and set(summary["batch_size"]) == {16}
    iterations = samples[samples["sample"] == "iteration"]
    assert len(iterations) == 7 * 24 and set(iterations["repeat"]) == {1, 2, 3}
    assert iterations.groupby("framework")["seconds"].median()["caffe"] == MEDIANS["caffe"]
    assert (iterations["spec_sha256"] == summary["spec_sha256"][0]).all()
    csv = (bundle / "summary.csv").read_text().splitlines()
    assert csv[0].split(",") == list(tables.SUMMARY_COLUMNS) and len(csv) == 8


def test_a_bundle_of_schema_1_gives_the_same_tables_from_its_json(bundle):
    old, new = tables.summary(REAL), tables.summary(bundle)
    assert old["median"].tolist() == new["median"].tolist() and old["image_id"].tolist() == new["image_id"].tolist()
    assert len(tables.samples(REAL)) == len(tables.samples(bundle)) == 168


def test_a_written_bundle_is_valid_and_every_check_names_what_breaks_it(bundle):
    assert validate.check(bundle) == [] and validate.check(REAL) == []
    result = bundle / "jobs" / "alexnet-s.cntk.cpu.b16" / "result.json"
    result.write_bytes(result.read_bytes().replace(b'"status": "ok"', b'"status": "OK"', 1))
    (bundle / "samples.parquet").unlink()
    problems = validate.check(bundle)
    assert ("checksums", "jobs/alexnet-s.cntk.cpu.b16/result.json") in [(p.check, p.file) for p in problems]
    assert ("checksums", "samples.parquet", "listed in SHA256SUMS but missing") in problems
    assert ("tables", "samples.parquet", "missing") in problems
    assert any(p.check == "jobs" and "status 'OK'" in p.message for p in problems)


def test_statistics_that_do_not_follow_from_the_samples_are_named(bundle):
    result_path = bundle / "jobs" / "alexnet-s.torch.cpu.b16" / "result.json"
    result = json.loads(result_path.read_text())
    result["timing"]["summary"]["median"] = 1.0  # a median that its own iterations do not give
    result_path.write_text(json.dumps(result))
    shutil.rmtree(bundle / "jobs" / "alexnet-s.caffe.cpu.b16")
    # regenerate the derived files as a careless tool would: the checksums then agree
    body = json.loads((bundle / "bundle.json").read_text())
    body["jobs"] = [r for r in body["jobs"] if r["job_id"] != "alexnet-s.caffe.cpu.b16"]
    (bundle / "bundle.json").write_text(json.dumps(body))
    (bundle / "summary.parquet").unlink()
    (bundle / "SHA256SUMS").write_text("")
    problems = validate.check(bundle)
    messages = {(p.check, p.file): p.message for p in problems}
    assert (
        "do not give the recorded n=24, median 1 s"
        in messages[("statistics", "jobs/alexnet-s.torch.cpu.b16/result.json")]
    )
    assert messages[("jobs", "bundle.json")].endswith(
        "do not match the results' statuses {'ok': 6, 'failed': 0, 'skipped': 0}"
    )
    assert ("tables", "summary.parquet") in messages


def test_merge_reads_a_bundle_once_and_labels_a_job_measured_twice(bundle, tmp_path):
    again = rewrite(REAL, tmp_path / "other", "1" * 64)  # the same jobs measured again: another bundle id
    summary, samples = tables.merge([bundle, again, bundle, REAL])
    assert len(summary) == 21 and summary["bundle_id"].nunique() == 3
    torch = summary[summary["framework"] == "torch"]
    assert torch["measurement"].tolist() == [1, 2, 3] and set(torch["measurements"]) == {3}
    assert len(samples) == 3 * 168 and set(samples["measurements"]) == {3}
    only_summary, none = tables.merge([bundle], with_samples=False)
    assert none is None and only_summary["median"].tolist() == tables.summary(bundle)["median"].tolist()
    with pytest.raises(BundleError, match="has no bundle.json"):
        tables.merge([tmp_path])
    twin = shutil.copytree(bundle, tmp_path / "twin" / bundle.name)  # the same id, other bytes
    (twin / "SHA256SUMS").write_text((twin / "SHA256SUMS").read_text()[1:])
    with pytest.raises(BundleError, match="two different bundles have the id %s" % bundle.name):
        tables.merge([bundle, twin])


def test_merged_tables_write_and_read_back_with_the_schema(bundle, tmp_path):
    summary, samples = tables.merge([bundle, REAL])
    out = tmp_path / "merged"
    out.mkdir()
    tables.write(out, summary.to_dict("records"), samples.to_dict("records"))
    back = pq.read_table(out / "summary.parquet").to_pandas()
    assert tables.schema_of(out / "summary.parquet") == tables.SCHEMA
    assert back["median"].tolist() == summary["median"].tolist()
    assert (
        back["measurement"].tolist() == summary["measurement"].tolist()
        and sorted(back["measurement"]) == [1] * 7 + [2] * 7
    )


def test_invoke_validate_exits_1_naming_the_changed_file(bundle):

    assert invoke("validate", str(bundle)).returncode == 0
    log = bundle / "jobs" / "alexnet-s.jax.cpu.b16" / "job.json"
    log.write_text(log.read_text() + " ")
    done = invoke("validate", str(bundle))
    assert done.returncode == 1
    assert "checksums jobs/alexnet-s.jax.cpu.b16/job.json: SHA-256 differs from SHA256SUMS" in done.stdout


H200_RESNET50 = REPO_ROOT / "results" / "resnet50-20261130T041045Z-eb31f4df"  # torch 2.11, H200, tables version 1


def test_tables_of_an_older_version_are_derived_again_with_the_gpu_telemetry():
    assert tables.schema_of(H200_RESNET50 / "summary.parquet") == "dlrepro.tables/1"
    assert validate.check(H200_RESNET50) == []  # valid against the version it declares
    assert "throttled" not in pq.read_schema(H200_RESNET50 / "summary.parquet").names
    summary = tables.summary(H200_RESNET50)
    assert list(summary.columns) == list(tables.SUMMARY_COLUMNS) and summary["batch_size"].tolist() == [8, 16, 32, 64]
    assert set(summary["device_name"]) == {"NVIDIA H200"} and set(summary["driver"]) == {"580.159.04"}
    assert set(summary["throttled"]) == {False} and set(summary["sm_clock_median_mhz"]) == {1980.0}
    assert summary["power_median_w"].is_monotonic_increasing and summary["power_median_w"].iloc[-1] > 500
    merged, _ = tables.merge([H200_RESNET50, REAL], with_samples=False)
    assert merged.groupby("device")["throttled"].apply(lambda s: s.isna().all()).to_dict() == {
        "cpu": True,
        "cuda": False,
    }


def test_a_gpu_bundle_from_the_h200_and_the_cpu_bundle_from_here_merge_into_one_table():
    h200 = (
        REPO_ROOT / "results" / "alexnet-20261130T041002Z-d802ef07"
    )  # invoke run --spec=alexnet --device cuda --gpus 0
    summary, samples = tables.merge([REAL, h200])
    assert len(summary) == 7 + 4 and summary.groupby("device")["executor"].first().to_dict() == {
        "cpu": "docker",
        "cuda": "local",
    }
    gpu = summary[summary["device"] == "cuda"].set_index("batch_size")
    assert gpu.index.tolist() == [16, 32, 64, 128] and set(gpu["device_name"]) == {"NVIDIA H200"}
    assert gpu.loc[128, "median"] < 0.02 < summary[summary["device"] == "cpu"]["median"].min()
    assert set(summary["parameters"]) == {62_378_344} and (samples["device"] == "cpu").sum() == 168
    assert (samples["device"] == "cuda").sum() == gpu["n"].sum() > 0


H200_ALEXNET = {"fp32": "alexnet-20261201T201740Z-9f78cd5d", "bf16": "alexnet-20261201T201858Z-76e63b6c"}


@pytest.mark.parametrize("precision, peak_tflops", [("fp32", 67.0), ("bf16", 989.4)])
def test_tables_v6_give_achieved_flops_and_the_fraction_of_peak_at_the_precision_run(precision, peak_tflops):
    """AlexNet-S b128 on the H200 (torch, tables v5 files: derived again): 843.6 GFLOPs a training iteration
    (runner.flops) over the median, against the H200's fp32 (TF32 off) or dense bf16 peak."""
    row = tables.summary(REPO_ROOT / "results" / H200_ALEXNET[precision]).iloc[0]
    assert row["precision"] == precision and row["device_name"] == "NVIDIA H200"
    assert row["flops_per_iteration"] == 843_604_258_512
    assert row["achieved_flops"] == pytest.approx(843_604_258_512 / row["median"])
    assert row["peak_flops"] == pytest.approx(peak_tflops * 1e12) and row["peak_device"] == "h200-sxm"
    assert row["fraction_of_peak"] == pytest.approx(row["achieved_flops"] / (peak_tflops * 1e12))
    assert row["peak_source"].startswith("NVIDIA H200 Tensor Core GPU datasheet")


def test_a_cpu_job_without_a_recorded_clock_has_work_but_no_peak():
    summary = tables.summary(REAL)
    # AlexNet-S b16: 16 x (products 6,585,512,448 + other 4,171,160) + SGD 2 x 62,378,344
    assert set(summary["flops_per_iteration"]) == {16 * (6_585_512_448 + 4_171_160) + 124_756_688} == {105_559_694_416}
    assert summary["fraction_of_peak"].isna().all() and summary["achieved_flops"].notna().all()
    assert set(summary["peak_source"]) == {"no peak known for AMD EPYC (cpu, fp32): the job recorded no CPU clock"}


def test_damaged_bundles_give_one_error_line_naming_the_file(bundle, tmp_path):

    parquet = bundle / "summary.parquet"
    parquet.write_bytes(parquet.read_bytes()[:100])
    with pytest.raises(BundleError, match="summary.parquet: cannot be read .*`dlrepro validate "):
        tables.merge([REAL, bundle])
    broken = shutil.copytree(REAL, tmp_path / "broken" / REAL.name)
    (broken / "bundle.json").write_text("{")
    for args in (
        ["check", str(broken)],
        ["merge", "%s,%s" % (bundle, broken)],
        ["report", str(broken)],
        ["compare", str(bundle), "--against", str(REAL), "--alpha", "2"],
    ):
        done = dlrepro_here(*args)
        assert done.returncode == 2 and done.stdout.startswith("error: ") and "Traceback" not in done.stderr, args


def test_each_seed_of_a_convergence_job_is_a_row_with_its_seed(tmp_path):
    from dlrepro.run import jobs
    from dlrepro.run.options import RunOptions
    from runner.contract import new_result

    writer = BundleWriter(tmp_path, "imdb-gru", "0" * 64)
    for job, accuracy in zip(
        jobs.expand(seeded(3), RunOptions(frameworks=["torch"], variants=["imdb-gru"])), (0.851, 0.862, 0.847)
    ):
        writer.write_job(job)
        epochs = [
            {
                "epoch": e,
                "iterations": 390,
                "seconds": 60.0,
                "cumulative_seconds": 60.0 * e,
                "test_accuracy": accuracy - 0.01 * (3 - e),
            }
            for e in (1, 2, 3)
        ]
        writer.write_result(
            job["id"],
            dict(
                new_result(job["id"], "ok"),
                convergence={
                    "epochs": epochs,
                    "total_seconds": 180.0,
                    "final_test_accuracy": accuracy,
                    "final_perplexity": None,
                },
            ),
        )
    folder = writer.finish({})
    summary, samples = tables.summary(folder), tables.samples(folder)
    assert tables.schema_of(folder / "summary.parquet") == "dlrepro.tables/10"
    assert summary[["job_id", "seed", "final_test_accuracy"]].values.tolist() == [
        ["imdb-gru.torch.cpu.b64.s0", 0, 0.851],
        ["imdb-gru.torch.cpu.b64.s1", 1, 0.862],
        ["imdb-gru.torch.cpu.b64.s2", 2, 0.847],
    ]
    assert samples.groupby("seed")["test_accuracy"].max().round(3).to_dict() == {0: 0.851, 1: 0.862, 2: 0.847}
    assert pq.read_schema(folder / "summary.parquet").field("seed").type == "int64"
    # tables written before the column existed are derived again: every job then trained seed 0
    assert (
        set(tables.summary(REAL)["seed"]) == {0} and tables.columns_of("dlrepro.tables/6", "summary").count("seed") == 0
    )


def test_torch7_steps_from_before_the_gradients_option_are_labelled_by_what_their_backward_computed():
    """The torch7 adapter ran nn's backward whole (the first layer's gradient with respect to the mini-batch too)
    until suite commit 12f47db, whatever the job asked: DLBench's --quick study of 2026-12-06 ran before it, its
    jobs asked "pruned" and their environments do not say. Since 12f47db the environment says, and the job's value
    holds; an inference job has none."""
    old = REPO_ROOT / "results" / "alexnet-20261206T193116Z-6c26d52c"  # dlrepro study dlbench --quick, f5dde18
    summary = tables.summary(old).set_index("job_id")
    asked = {p.parent.name: json.loads(p.read_text())["gradients"] for p in old.glob("jobs/*/job.json")}
    assert {job: asked[job] for job in summary.index if ".torch7." in job} == {
        "alexnet-s.torch7.cpu.b16.t1": "pruned",
        "alexnet-s.torch7.cpu.b16.t2": "pruned",
    }
    torch7 = summary["framework"] == "torch7"
    assert summary[torch7]["gradients"].tolist() == ["gate_op", "gate_op"]
    assert summary[~torch7]["gradients"].to_dict() == {job: asked[job] for job in summary[~torch7].index}
    job = {"framework": "torch7", "optimizer": {"name": "sgd"}, "gradients": "pruned"}
    since = {"framework": "torch7", "gradients": "nn's backward less the first module's (nn.SpatialConvolution)..."}
    assert (tables.gradients(job, since), tables.gradients({**job, "optimizer": None}, {"framework": "torch7"})) == (
        "pruned",
        None,
    )
    assert tables.gradients(job, {}) == "pruned"  # a job that failed before its harness said anything


def test_a_committed_older_bundle_gets_its_memory_layout_from_its_results():
    """Tables v10's memory_layout, re-derived for a bundle written at v7: DLF's 2026-12-04 Keras rows on a CPU ran
    channels-last on every backend (the Keras 2 adapter before suite commit 687072a)."""
    folder = REPO_ROOT / "results" / "cifar10-vgg-20261204T204409Z-33f42c63"
    assert tables.schema_of(folder / "summary.parquet") == "dlrepro.tables/7"
    rows = tables.summary(folder)
    keras = rows[rows["framework"].str.startswith("keras-")]
    assert dict(zip(keras["framework"], keras["memory_layout"])) == {
        "keras-cntk": "NHWC",
        "keras-tensorflow": "NHWC",
        "keras-theano": "NHWC",
    }
    assert set(rows["layout"]) == {"default"}
