"""Comparable across hardware (dlrepro.answers.efficiency): achieved FLOP/s and fraction of peak of a
job, the published cells set against it, and the same framework then and now."""

import pandas as pd
import pytest

from dlrepro.answers import efficiency
from dlrepro.answers.verdicts import NOT_RUN, OTHER_HARDWARE
from dlrepro.inputs import spec
from dlrepro.store import peak_columns, tables
from dlrepro.views import plots, report
from runner import flops


def resolved(name):
    """Spec ``name`` as a bundle records it (bundle.json's spec.resolved)."""
    return spec.load(name).model_dump(mode="json")


FCN_S = spec.load("fcn").models["fcn-s"]
MODEL = {"layers": FCN_S.layer_dicts(), "input_shape": list(FCN_S.input_shape), "parameters": FCN_S.parameters}


def _job(device="cuda", **extra):
    return dict(
        {
            "device": device,
            "mode": "throughput",
            "batch_size": 64,
            "model": MODEL,
            "optimizer": {"name": "sgd", "lr": 0.05},
        },
        **extra,
    )


WORK = flops.of_model(MODEL, 64, {"name": "sgd", "lr": 0.05})["training"]
OK = {"status": "ok"}


@pytest.mark.parametrize("precision, tflops", [("fp32", 67), ("tf32", 494.7), ("bf16", 989.4)])
def test_a_cuda_job_is_set_against_its_gpus_peak_at_the_precision_it_ran(precision, tflops):
    out = peak_columns.job_columns(_job(), OK, precision, "NVIDIA H200", 0.01, "seconds per mini-batch")
    assert out["flops_per_iteration"] == WORK and out["achieved_flops"] == pytest.approx(WORK / 0.01)
    assert out["peak_flops"] == pytest.approx(tflops * 1e12) and out["peak_device"] == "h200-sxm"
    assert out["fraction_of_peak"] == pytest.approx(WORK / 0.01 / (tflops * 1e12))


def test_two_ranks_on_a_k80_board_are_set_against_the_board():
    out = peak_columns.job_columns(_job(ranks=2), OK, "fp32", "Tesla K80", 0.5, "seconds per mini-batch")
    assert out["peak_device"] == "tesla-k80-board" and out["peak_flops"] == pytest.approx(8.74e12)


def test_no_peak_known_keeps_the_work_and_says_why():
    out = peak_columns.job_columns(_job(), OK, "fp32", "NVIDIA GeForce GTX 1080 Ti", 0.1, "seconds per mini-batch")
    assert out["achieved_flops"] == pytest.approx(WORK / 0.1) and out["fraction_of_peak"] is None
    assert out["peak_source"] == "no peak known for NVIDIA GeForce GTX 1080 Ti (cuda, fp32)"
    k80 = peak_columns.job_columns(_job(), OK, "bf16", "Tesla K80", 0.1, "seconds per mini-batch")
    assert k80["peak_device"] == "tesla-k80-gk210" and k80["fraction_of_peak"] is None


ZEN4 = {
    "model": "AMD EPYC 9B14 96-Core Processor",
    "vendor": "AuthenticAMD",
    "family": 25,
    "model_number": 0x11,
    "flags": ["avx", "avx2", "fma", "avx512f", "avx512_bf16"],
}


def _cpu_result(cpu, chosen=None):
    """A cpu job's ok result: its environment's cpu record and, for a job with a thread count, the CPUs chosen for it
    ([siblings of each chosen CPU], as runner.topology.describe records them)."""
    choice = {"rule": "...", "cpus": [{"cpu": i, "siblings": s} for i, s in enumerate(chosen)]} if chosen else None
    return {"status": "ok", "environment": {"cpu": cpu, "process": {"cpu_choice": choice}}}


def test_a_cpu_job_gets_an_estimate_from_its_threads_clock_and_flags():
    """A record from before family and cores were kept: its threads counted as cores, an upper bound."""
    result = {
        "status": "ok",
        "environment": {"cpu": {"usable_cpus": 8, "mhz": 2000.0, "flags": ["avx", "avx2", "fma"]}},
    }
    out = peak_columns.job_columns(_job("cpu", threads=4), result, "fp32", "AMD EPYC", 2.0, "seconds per mini-batch")
    assert out["peak_flops"] == 4 * 2000e6 * 32 and out["peak_device"] == "CPU estimate"
    assert out["peak_source"].startswith(
        "estimate (an upper bound): 4 logical CPUs (their physical cores were not "
        "recorded: each counted as a core) x 2000 MHz x 32"
    )


def test_this_hosts_zen4_epyc_gets_32_flops_a_cycle_not_avx512s_64():
    """The audit's host: AMD EPYC family 25 model 0x11 with avx512f, 2 logical CPUs on 2 cores, 2596.148 MHz."""
    cpu = dict(ZEN4, usable_cpus=2, usable_cores=2, mhz=2596.148)
    peak = peak_columns.job_peak(_job("cpu"), _cpu_result(cpu), "fp32", "AMD EPYC")
    assert peak.flops == 2 * 2596.148e6 * 32 and peak.flops == pytest.approx(1.66e11, rel=0.001)
    assert peak.source.startswith("estimate: 2 cores (2 logical CPUs) x 2596 MHz x 32 fp32 FLOPs a cycle (AMD Zen 4")


@pytest.mark.parametrize(
    "chosen, cores, text",
    [
        ([[0, 1], [0, 1]], 1, "1 core (2 logical CPUs)"),  # two SMT siblings of one core: one core of peak
        ([[0, 2], [1, 3]], 2, "2 cores (2 logical CPUs)"),  # one thread of each of two cores
    ],
)
def test_a_job_pinned_to_smt_siblings_counts_their_core_once(chosen, cores, text):
    cpu = dict(ZEN4, usable_cpus=2, usable_cores=cores, mhz=2600.0)
    out = peak_columns.job_columns(
        _job("cpu", threads=2), _cpu_result(cpu, chosen), "fp32", "AMD EPYC", 0.5, "seconds per mini-batch"
    )
    assert peak_columns.cpu_count(_job("cpu", threads=2), _cpu_result(cpu, chosen)) == (cores, 2)
    assert out["peak_flops"] == cores * 2600e6 * 32
    assert out["peak_source"].startswith("estimate: %s x 2600 MHz x 32 fp32 FLOPs a cycle" % text)


def test_an_unpinned_job_counts_the_physical_cores_of_the_cpus_it_could_use():
    cpu = dict(ZEN4, usable_cpus=4, usable_cores=2, mhz=2600.0)
    peak = peak_columns.job_peak(_job("cpu"), _cpu_result(cpu), "fp32", "AMD EPYC")
    assert peak.flops == 2 * 2600e6 * 32 and peak.source.startswith("estimate: 2 cores (4 logical CPUs) x 2600 MHz")


def test_a_fraction_above_the_peak_is_never_shown_as_a_bare_figure_over_100_percent():
    """A 1-thread job whose achieved FLOP/s exceed the estimate (turbo above the recorded clock): the fraction is kept
    in the row; the label every view renders caps it and says so."""
    cpu = dict(ZEN4, usable_cpus=1, usable_cores=1, mhz=2000.0)
    peak = 1 * 2000e6 * 32
    out = peak_columns.job_columns(
        _job("cpu", threads=1),
        _cpu_result(cpu, [[0]]),
        "fp32",
        "AMD EPYC",
        WORK / (1.033 * peak),
        "seconds per mini-batch",
    )
    assert out["fraction_of_peak"] == pytest.approx(1.033)
    assert efficiency.fraction_label(out["fraction_of_peak"], estimate=True) == "≥100% (at or above the estimate)"
    assert efficiency.fraction_label(1.2) == "≥100% (at or above the peak)"
    assert efficiency.fraction_label(0.797, estimate=True) == "79.7%" and efficiency.fraction_label(1.0) == "100.0%"
    assert efficiency.fraction_label(0.004) == "0.4%" and efficiency.fraction_label(None) == ""
    summary = pd.DataFrame(
        [
            _row(
                spec="fcn",
                variant="fcn-s",
                framework="caffe",
                batch_size=64,
                device="cpu",
                device_name="AMD EPYC",
                threads=1,
                median=0.8,
                fraction_of_peak=1.033,
                peak_device="CPU estimate",
            )
        ]
    )
    fcn = spec.load("fcn")
    refs = {"fcn": [r for r in fcn.references if r.id == "dlbench_early.fcn5_26752.titanx_maxwell.caffe"]}
    row = efficiency.published_efficiency(summary, refs, {"fcn": resolved("fcn")}).iloc[0]
    assert row["measured_fraction_label"] == "≥100% (at or above the estimate)"
    assert row["published_fraction_label"] == "%.1f%%" % (100 * row["published_fraction"])
    assert row["sentence"].endswith(", ≥100% (at or above the estimate) of this AMD EPYC's now")
    # the model labels each job's fraction for every view (the results tables' "% of peak")
    assert efficiency.labelled(summary)["fraction_of_peak_label"].tolist() == ["≥100% (at or above the estimate)"]


@pytest.mark.parametrize(
    "job, result, quantity",
    [
        (_job(mode="convergence"), OK, "seconds per mini-batch"),
        (_job(), {"status": "failed"}, "seconds per mini-batch"),
        (_job(), OK, "seconds per epoch"),
    ],
)
def test_jobs_without_a_timed_mini_batch_get_no_efficiency(job, result, quantity):
    assert set(peak_columns.job_columns(job, result, "fp32", "NVIDIA H200", 0.01, quantity).values()) == {None}


def test_a_published_timing_is_turned_into_work_over_its_seconds():
    """CNTK on the GTX Titan X (Maxwell): AlexNet-S b16 in 0.035 s; 105.56 GFLOPs per iteration (runner.flops)
    over 6.605 TFLOP/s (its 1075 MHz boost clock): 46% of its peak."""
    alexnet = spec.load("alexnet")
    ref = next(r for r in alexnet.references if r.id == "dlbench_early.alexnet_224.titanx_maxwell.cntk")
    work, seconds, basis = efficiency.published_work(resolved("alexnet"), ref)
    assert work == 105_559_694_416 and seconds == 0.035 and basis == "a training iteration"
    vgg = spec.load("cifar10-vgg")
    k80 = next(r for r in vgg.references if r.id == "dlf.cnn_cifar10.k80.pytorch")
    work, seconds, basis = efficiency.published_work(resolved("cifar10-vgg"), k80)
    iteration = flops.of_model(
        {"layers": vgg.models["vgg"].layer_dicts(), "input_shape": [3, 32, 32], "parameters": 3_441_592},
        64,
        {"name": "sgd", "lr": 0.01, "momentum": 0.9},
    )["training"]
    assert work == 10 * 781 * iteration and seconds == 169 and basis.startswith("7810 training iterations")


def _row(**values):
    base = {c: None for c in tables.SUMMARY_COLUMNS}
    base.update(
        status="ok",
        quantity="seconds per mini-batch",
        mode="throughput",
        device="cuda",
        host="h",
        threads=None,
        ranks=None,
        precision="fp32",
        bundle_id="b",
        job_id="j",
    )
    base.update(values)
    return base


def test_published_cells_are_set_against_the_same_network_and_framework_as_other_hardware():
    summary = pd.DataFrame(
        [
            _row(
                spec="cifar10-vgg",
                variant="cifar10-vgg-synthetic",
                framework="torch",
                batch_size=64,
                device_name="NVIDIA H200",
                median=0.002,
                fraction_of_peak=0.15,
                achieved_flops=1e13,
                peak_device="h200-sxm",
            ),
            _row(
                spec="cifar10-vgg",
                variant="cifar10-vgg-synthetic",
                framework="jax",
                batch_size=64,
                device_name="NVIDIA H200",
                median=0.002,
                fraction_of_peak=0.2,
            ),
        ]
    )
    vgg = spec.load("cifar10-vgg")
    refs = {
        "cifar10-vgg": [
            r for r in vgg.references if r.id in ("dlf.cnn_cifar10.k80.pytorch", "dlf.cnn_cifar10.k80.caffe2")
        ]
    }
    rows = efficiency.published_efficiency(summary, refs, {"cifar10-vgg": resolved("cifar10-vgg")}).set_index(
        "reference_id"
    )
    # set beside a measured job: other hardware; nothing measured (no Caffe2 job): not run, never other hardware
    assert rows["verdict"].to_dict() == {
        "dlf.cnn_cifar10.k80.pytorch": OTHER_HARDWARE,
        "dlf.cnn_cifar10.k80.caffe2": NOT_RUN,
    }
    pytorch = rows.loc["dlf.cnn_cifar10.k80.pytorch"]
    assert pytorch["framework"] == "torch" and pytorch["measured_fraction"] == 0.15
    assert pytorch["published_fraction"] == pytest.approx(pytorch["flops"] / 169 / 4.37e12)
    assert pytorch[
        "sentence"
    ] == "other hardware: %.0f%% of a tesla-k80-gk210's peak then, 15%% of this NVIDIA H200's now" % (
        100 * pytorch["published_fraction"]
    )
    caffe2 = rows.loc["dlf.cnn_cifar10.k80.caffe2"]  # no Caffe2 measured: shown, not set against jax
    assert pd.isna(caffe2["framework"]) and caffe2[
        "sentence"
    ] == "not run: %.0f%% of a tesla-k80-gk210's peak then; not measured now" % (100 * caffe2["published_fraction"])
    (figure,) = plots.efficiency_bars(rows.reset_index())
    assert figure.png.startswith(b"\x89PNG\r\n\x1a\n")
    assert {p[0] for p in figure.points} == {"then", "now, fp32"}  # the never-measured cell has its "then" bar only
    assert plots.efficiency_bars(rows.iloc[:0]) == []


def test_another_mini_batch_is_named_when_the_published_one_was_not_measured():
    summary = pd.DataFrame(
        [
            _row(
                spec="alexnet",
                variant="alexnet-s",
                framework="tensorflow",
                batch_size=128,
                device_name="NVIDIA H200",
                median=0.01,
                fraction_of_peak=0.3,
            )
        ]
    )
    alexnet = spec.load("alexnet")
    refs = {"alexnet": [r for r in alexnet.references if r.id == "dlbench_early.alexnet_224.titanx_maxwell.tensorflow"]}
    row = efficiency.published_efficiency(summary, refs, {"alexnet": resolved("alexnet")}).iloc[0]
    assert row["measured_batch_size"] == 128 and row["sentence"].endswith(
        "30% of this NVIDIA H200's now (mini-batch 128, 16 then)"
    )


def test_then_and_now_gives_the_speedup_since_the_papers_version_with_its_interval():
    key = dict(spec="alexnet", variant="alexnet-s", batch_size=16, framework="mxnet", device="cpu", device_name="EPYC")
    summary = pd.DataFrame(
        [
            _row(framework_version="0.12.0", median=2.0, ci95_low=1.8, ci95_high=2.4, job_id="old", **key),
            _row(framework_version="1.9.1", median=1.0, ci95_low=0.9, ci95_high=1.2, job_id="new", **key),
            _row(framework_version="1.9.1", median=1.0, ci95_low=0.9, ci95_high=1.2, **dict(key, batch_size=32)),
            _row(framework_version="0.12.0", median=3.0, **dict(key, host="other")),
            _row(framework_version="2.21.0", median=1.0, **dict(key, framework="tensorflow")),
        ]
    )
    rows = efficiency.then_and_now(summary)
    assert len(rows) == 1
    row = rows.iloc[0]
    assert (row["then_version"], row["now_version"], row["then_job_id"], row["now_job_id"]) == (
        "0.12.0",
        "1.9.1",
        "old",
        "new",
    )
    assert (
        row["speedup"] == 2.0
        and row["speedup_low"] == pytest.approx(1.5)
        and row["speedup_high"] == pytest.approx(2.4 / 0.9)
    )
    smoke = efficiency.then_and_now(summary.assign(quick=[True] + [False] * 4)).iloc[0]  # the era job a smoke pass
    assert (smoke["speedup"], smoke["speedup_low"], smoke["smoke"]) == (2.0, None, True)  # an indication (review U8)
    _, since = report.efficiency(
        efficiency.published_efficiency(summary, {}, {}),
        efficiency.then_and_now(summary.assign(quick=[True] + [False] * 4)),
    )
    assert since.rows[0][since.columns.index("speedup")] == "2.00x (smoke pass: indicative)"


def test_a_published_cell_measured_at_another_mini_batch_says_which_and_one_never_measured_says_not_run():
    summary = pd.DataFrame(
        [
            _row(
                spec="cifar10-vgg",
                variant="cifar10-vgg-synthetic",
                framework="torch",
                batch_size=128,
                device_name="NVIDIA H200",
                median=0.004,
                fraction_of_peak=0.15,
                achieved_flops=1e13,
                peak_device="h200-sxm",
            )
        ]
    )
    refs = {
        "cifar10-vgg": [
            r
            for r in spec.load("cifar10-vgg").references
            if r.id in ("dlf.cnn_cifar10.k80.pytorch", "dlf.cnn_cifar10.k80.caffe2")
        ]
    }
    rows = efficiency.published_efficiency(summary, refs, {"cifar10-vgg": resolved("cifar10-vgg")})
    table, _ = report.efficiency(rows, efficiency.then_and_now(summary))
    shown = {
        row[table.columns.index("published")]: (
            row[table.columns.index("batch")],
            row[table.columns.index("now")],
            row[table.columns.index("verdict")],
        )
        for row in table.rows
    }
    # only the cell measured here is a row; the one never measured is counted in the note
    assert shown == {"PyTorch [1]": ("64", "PyTorch fp32 (mini-batch 128)", OTHER_HARDWARE)}
    assert table.note.endswith(
        "1 more published cell on hardware with a known peak: no job of their network and framework here."
    )
    # the published hardware and source once, as the footnote both rows mark
    assert len(table.footnotes) == 1 and table.footnotes[0].startswith("published on NVIDIA Tesla K80")
    # a CPU job names its thread count (a sweep gives a row per count)
    assert report._now("caffe", "fp32", 16, 16, 2.0) == "Caffe fp32, 2 threads"
    assert report._now("caffe", "fp32", 16, 16, 1.0) == "Caffe fp32, 1 thread"
    assert report._now("torch", "bf16", 64, 128, float("nan")) == "PyTorch bf16 (mini-batch 128)"
