"""`dlrepro plan` for a renter (issue 57): the host's price per hour, the study's time and cost there from recorded
passes (dlrepro.run.estimate), what to fetch, the command, and each reason once (dlrepro.cli.plan_text)."""

import subprocess
import sys

import pytest

from dlrepro import REPO_ROOT
from dlrepro.cli import plan_text
from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import prices, studies
from dlrepro.inputs import spec as specmod
from dlrepro.plan import coverage
from dlrepro.run import estimate
from dlrepro.run import jobs as jobsmod
from dlrepro.run.options import RunOptions

ALL = coverage.every_dataset()
ROW = dict(
    instance="a made-up instance of this test",
    as_of="2024-01",
    until=None,
    launch=False,
    source="https://example.org/prices",
)


def table(*rows):
    return prices.Prices(date="2026-12-06", currency="USD", offer="on-demand", rows=[prices.Row(**r) for r in rows])


def bundle(
    id_,
    spec="alexnet",
    device="cuda",
    gpu="NVIDIA H200",
    quick=False,
    attempts=(("00:00:00", "00:01:40"),),
    jobs=(("alexnet-s", "ok"),),
    **options,
):
    """A bundle.json body as a run writes the fields the estimate reads."""
    day = "2026-12-0%sT" % id_[-1]
    return {
        "id": id_,
        "spec": {"name": spec},
        "created": day + attempts[0][0] + "Z",
        "finished": day + attempts[-1][1] + "Z",
        "executor": {"device": device},
        "host": {"gpus": [{"name": gpu}] if device == "cuda" else [], "cpu": {"usable_cpus": 2, "logical_cpus": 2}},
        "options": dict(quick=quick, **options),
        "counts": {
            "ok": sum(s == "ok" for _, s in jobs),
            "failed": sum(s == "failed" for _, s in jobs),
            "skipped": sum(s == "skipped" for _, s in jobs),
        },
        "attempts": [{"started": day + a + "Z", "finished": day + b + "Z"} for a, b in attempts],
        "jobs": [{"variant": v, "status": s} for v, s in jobs],
    }


def test_a_hosts_price_is_its_devices_rows_times_their_count():
    rows = table(
        dict(ROW, id="h100", names=["H100 80GB HBM3"], usd_per_device_hour=12.29),
        dict(ROW, id="a100-40", names=["A100-SXM4-40GB"], usd_per_device_hour=4.096),
        dict(ROW, id="a100-80", names=["A100-SXM4-80GB"], usd_per_device_hour=5.12),
        dict(ROW, id="vcpu", cpu=True, usd_per_device_hour=0.0425),
    )
    four = estimate.price(coverage.Hardware("H100", 4, 16), rows)
    assert (round(four.usd_per_hour, 2), four.devices, four.row.id) == (49.16, 4, "h100")
    assert estimate.price(coverage.Hardware("NVIDIA H100 80GB HBM3", 1, 16), rows).row.id == "h100"
    assert estimate.price(coverage.Hardware("A100-SXM4-40GB", 2, 16), rows).usd_per_hour == 8.192
    assert estimate.price(coverage.Hardware("A100", 1, 16), rows) is None  # two rows: which A100 is not said
    assert estimate.price(coverage.Hardware("K80", 1, 16), rows) is None
    assert (
        estimate.price(
            coverage.Hardware("K80", 2, 16), table(dict(ROW, id="k80", names=["Tesla K80"], usd_per_device_hour=0.9))
        ).usd_per_hour
        == 1.8
    )
    assert [estimate.same_model(n, "P100") for n in ("Tesla P100-PCIE-16GB", "Tesla P100-SXM2-16GB", "P1000")] == [
        True,
        True,
        False,
    ]
    cpu = estimate.price(coverage.Hardware(None, 0, 16), rows)
    assert (cpu.usd_per_hour, cpu.devices, cpu.row.id) == (0.68, 16, "vcpu")
    assert plan_text.price_line(four, coverage.Hardware("H100", 4, 16)) == (
        "price: 49.16 USD an hour (4 x 12.29 USD per device-hour: H100 80GB HBM3; a made-up instance of this test, "
        "2024-01; dlrepro/inputs/prices.yaml h100)"
    )
    assert plan_text.price_line(None, coverage.Hardware("K80", 1, 16)).startswith(
        "price: none in dlrepro/inputs/prices.yaml for K80"
    )


def test_a_pass_is_a_bundles_wall_time_over_its_attempts_per_job_it_ran():
    body = bundle(
        "alexnet-b2",
        attempts=(("01:00:00", "01:01:00"), ("02:00:00", "02:00:30")),
        jobs=(("alexnet-s", "ok"), ("alexnet-s", "failed"), ("alexnet-r", "skipped")),
    )
    found = estimate.of_bundle(body)
    assert (found.jobs, found.seconds, found.per_job, found.variants, found.defaults) == (
        2,
        90.0,
        45.0,
        frozenset({"alexnet-s"}),
        True,
    )
    assert (found.host(), found.quick, found.mode) == ("1 x NVIDIA H200", False, None)
    assert estimate.of_bundle(bundle("alexnet-b3", jobs=(("alexnet-s", "skipped"),))) is None  # nothing ran
    assert not estimate.of_bundle(bundle("alexnet-b4", repeats=6)).defaults  # another length than a study's
    old = dict(bundle("alexnet-b5"), attempts=[])  # before attempts were recorded: created to finished
    assert estimate.of_bundle(old).seconds == 100.0


def test_the_source_of_a_run_is_a_pass_like_it_its_variant_first_then_the_gpu_model_then_the_newest():
    run = studies.Run(spec="alexnet", variants=["alexnet-r"], device="cuda", why="a test")
    older_r = estimate.of_bundle(bundle("alexnet-b1", jobs=(("alexnet-r", "ok"),)))
    newer_s = estimate.of_bundle(bundle("alexnet-b3"))
    h100_r = estimate.of_bundle(bundle("alexnet-b2", gpu="NVIDIA H100 80GB HBM3", jobs=(("alexnet-r", "ok"),)))
    quick_r = estimate.of_bundle(bundle("alexnet-b4", quick=True, jobs=(("alexnet-r", "ok"),)))
    longer_r = estimate.of_bundle(bundle("alexnet-b5", iterations=500, jobs=(("alexnet-r", "ok"),)))
    cpu_r = estimate.of_bundle(bundle("alexnet-b6", device="cpu", jobs=(("alexnet-r", "ok"),)))
    every = [older_r, newer_s, h100_r, quick_r, longer_r, cpu_r]
    assert estimate.source(every, run, False, "H200") is older_r  # its variant before a newer pass of another
    assert estimate.source(every, run, False, "H100") is h100_r
    assert estimate.source([newer_s, longer_r, cpu_r], run, False, "H100") is newer_s  # another variant: still one
    assert estimate.source(every, run, True, "H100") is quick_r
    assert estimate.source([longer_r, cpu_r], run, False, "H100") is None


@pytest.mark.parametrize(
    "spec,options",
    [
        ("alexnet", dict(device="cuda")),
        ("fcn", dict(device="cpu", threads=[1, 2], quick=True)),
        ("fcn", dict(device="cuda", variants=["fcn-r"], batch_sizes=[4096], ranks=[1, 2, 4])),
        ("lstm", dict(device="cuda", frameworks=["tensorflow", "cntk", "mxnet"])),
    ],
)
def test_count_is_the_number_of_jobs_expand_gives(spec, options):
    loaded = specmod.load(spec)
    assert jobsmod.count(loaded, RunOptions(**options)) == len(jobsmod.expand(loaded, RunOptions(**options)))


def test_a_runs_estimate_is_its_jobs_times_its_sources_seconds_per_job():
    matrix = matrixmod.load()
    given = coverage.inputs(studies.load("dlbench"), matrix)
    host = coverage.Hardware("H100", 4, 16, ALL)
    recorded = [
        estimate.of_bundle(
            bundle("alexnet-b1", attempts=(("00:00:00", "00:00:46"),), jobs=(("alexnet-s", "ok"), ("alexnet-s", "ok")))
        )
    ]
    found = {r.run: r for r in estimate.runs(given, host, recorded)}
    cnn = found["gpu-synthetic-cnn"]
    spec = specmod.load("alexnet")
    assert cnn.jobs == jobsmod.count(
        spec, RunOptions(device="cuda", variants=["alexnet-s"], frameworks=["torch", "tensorflow", "jax", "caffe"])
    )  # today's images that have H100 kernels (cntk's is PTX only)
    assert (cnn.source.bundle, cnn.seconds) == ("alexnet-b1", cnn.jobs * 23.0)
    assert cnn.images == ["caffe-1.0.0-cuda", "jax-0.10.2-cuda", "tensorflow-2.21.0-cuda", "torch-2.13.0-cuda"]
    assert found["gpu-real-cnn"].datasets == ["cifar10"]
    assert found["gpu-synthetic"].source is None  # no FCN pass was given
    assert "gpu-synthetic" not in {r.run for r in estimate.runs(given, coverage.Hardware(None, 0, 16, ALL), [])}


def test_the_time_lines_say_the_total_its_cost_and_where_each_runs_seconds_come_from():
    def made(run, device, jobs, seconds=None, ran=1):
        got = (
            estimate.of_bundle(
                bundle(
                    "alexnet-b1",
                    device=device,
                    attempts=(("00:00:00", "00:00:%02d" % seconds),),
                    jobs=(("alexnet-s", "ok"),) * ran,
                )
            )
            if seconds
            else None
        )
        return estimate.RunEstimate(run, device, jobs, got)

    price = prices.Price(49.16, 4, None)
    lines = plan_text.time_lines(
        [made("gpu-a", "cuda", 120, 45, 2), made("cpu-a", "cpu", 10, 30), made("gpu-b", "cuda", 4)], price
    )
    assert lines[0].startswith("time: at least 50 min for 134 jobs, at least 40.97 USD at that price (each run's")
    assert lines[1:] == [
        "  the GPU runs alone (--device cuda): at least 45 min for 124 jobs, at least 36.87 USD at that price",
        "  gpu-a: 120 jobs x 22.5 s = 45 min (from alexnet-b1: 2 jobs of alexnet-s in 45 s on 1 x NVIDIA H200)",
        "  cpu-a: 10 jobs x 30.0 s = 5 min (from alexnet-b1: 1 job of alexnet-s in 30 s on 2 CPU cores)",
        "  gpu-b: 4 jobs, no recorded GPU pass like it: not estimated",
    ]
    assert plan_text.time_lines([made("gpu-a", "cuda", 200, 45, 1)], None) == [
        "time: about 2 h 30 min for 200 jobs (each run's jobs here x the seconds per job of a recorded pass of its "
        "spec, device and mode at the spec's lengths: one of its variants first, then this GPU model, then the "
        "newest; not scaled to this host's speed)",
        "  gpu-a: 200 jobs x 45.0 s = 2 h 30 min (from alexnet-b1: 1 job of alexnet-s in 45 s on 1 x NVIDIA H200)",
    ]
    assert [plan_text.duration(s) for s in (48, 59.6, 90, 3599, 3600, 48000)] == [
        "48 s",
        "60 s",
        "2 min",
        "1 h 00 min",
        "1 h 00 min",
        "13 h 20 min",
    ]


def test_each_reason_is_said_once_a_shared_one_as_a_numbered_note():
    lstm = "CNTK: the cntk adapter has no layer lstm"
    torch = "the suite does not run Torch: needs Lua Torch 7"
    claims = [
        coverage.Outcome(
            "a",
            False,
            "model",
            "too few of its tools can run here (can: TensorFlow): %s; %s" % (lstm, torch),
            {"CNTK": lstm, "Torch": torch},
        ),
        coverage.Outcome(
            "b",
            False,
            "model",
            "too few of its tools can run here (can: none): %s; %s" % (lstm, torch),
            {"CNTK": lstm, "Torch": torch},
        ),
        coverage.Outcome("c", False, "tool", torch, {"Torch": torch, "Torch7": torch}),
        coverage.Outcome("d", False, "threads", "needs 16 CPU threads (this host has 2 cores)"),
        coverage.Outcome("e", True, caveat="Caffe: no cuDNN"),
        coverage.Outcome("f", True),
    ]
    cells = [
        coverage.Outcome("t / K80 / Torch", False, "tool", torch),
        coverage.Outcome("t / K80 / TF", True),
        coverage.Outcome("t / K80 / Caffe", True, other_hardware=True),
    ]
    found = {"claims": claims, "cells": cells}
    notes, shared = plan_text.Notes(), plan_text.shared_reasons(found)
    assert [plan_text.why_text(o, notes, shared) for o in claims] == [
        "too few of its tools can run here (can: TensorFlow): CNTK [1]; Torch [2]",
        "too few of its tools can run here (can: none): CNTK [1]; Torch [2]",
        "Torch, Torch7 [2]",
        "needs 16 CPU threads (this host has 2 cores)",
        "caveat: Caffe: no cuDNN",
        "",
    ]
    assert plan_text.cells_line(found, notes) == (
        "published cells not judged: 1 a tool the suite does not run [2], 1 measured on other hardware (shown)"
    )
    assert notes.lines() == ["[1] %s" % lstm, "[2] %s" % torch]


def test_what_to_fetch_says_the_recorded_sizes_and_which_are_not():
    runs = [
        estimate.RunEstimate("a", "cuda", 4, None, ["cifar10"], ["torch-2.13.0-cuda", "torch-2.13.0-cpu"]),
        estimate.RunEstimate("b", "cuda", 4, None, ["cifar10", "imdb"], ["torch-2.13.0-cuda"]),
    ]
    sizes = {"torch-2.13.0-cuda": 5352441177}
    assert plan_text.fetch_lines(runs, sizes, {"cifar10": 170498071, "imdb": None}.get) == [
        "images the study builds where missing: 2; sizes as built and measured "
        "(results/cuda-images-20261202/cuda-images.json): torch-2.13.0-cuda 5.35 GB, 5.35 GB in all; size not "
        "recorded: torch-2.13.0-cpu",
        "datasets the study fetches where missing: cifar10 0.17 GB, imdb (size not pinned)",
    ]
    assert estimate.dataset_bytes("cifar10") == 170498071  # datasets.yaml's pinned archive
    assert estimate.image_sizes()["torch-2.13.0-cuda"] == 5352441177


def test_the_committed_passes_are_read_as_recorded():
    """The repository's own bundles: the DLF RNN pass was resumed four times (its attempts, not created to finished,
    are its time: 3,841 s, not 27,518), and a study's quick pass on 2 cores (224 s of attempt, 225 s from created
    to finished)."""
    recorded = {p.bundle: p for p in estimate.passes()}
    rnn = recorded["imdb-gru-20261203T135820Z-85609df9"]
    assert (rnn.jobs, rnn.seconds, rnn.device, rnn.cpus, rnn.quick, rnn.defaults) == (24, 3841.0, "cpu", 2, False, True)
    quick = recorded["fcn-20261204T031414Z-4840d0b7"]
    assert (quick.jobs, quick.seconds, quick.quick, quick.variants) == (40, 224.0, True, frozenset({"fcn-s", "fcn-8"}))
    assert "alexnet-20261201T234442Z-ffc61f3d" not in recorded  # its 14 jobs were all skipped
    assert {p.spec for p in estimate.passes(specs={"lstm", "alexnet"})} == {"lstm", "alexnet"}
    fcn = recorded["fcn-20261202T004457Z-e87be62f"]
    assert (fcn.host(), fcn.jobs, fcn.seconds) == ("1 x NVIDIA H200", 1, 11.0)


def test_the_plan_of_four_h100s_gives_the_price_the_estimate_with_its_sources_and_no_reason_twice():
    run = subprocess.run(
        [sys.executable, "-m", "invoke", "plan", "dlbench", "--gpu-model", "H100", "--gpu-count", "4", "--cpus", "16"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    rent = lines[lines.index("To rent this host:") + 1 :]
    assert rent[0] == (
        "price: 49.16 USD an hour (4 x 12.29 USD per device-hour: H100 80GB HBM3; p5.48xlarge (8 x H100 SXM 80 GB), "
        "Linux, US East (N. Virginia): 98.32 USD/h / 8, 2023-07, launch price; dlrepro/inputs/prices.yaml aws-p5-h100)"
    )
    assert rent[1].startswith("time: at least ") and " USD at that price (each run's jobs here x " in rent[1]
    assert (
        "  gpu-synthetic-cnn: 16 jobs x 23.0 s = 6 min (from alexnet-20261202T004359Z-15ed712a: 1 job of "
        "alexnet-s in 23 s on 1 x NVIDIA H200)" in rent
    )
    assert rent[-1] == "run there: dlrepro study dlbench"
    torch7 = "the torch7 adapter has no layer embedding, lstm"
    arch = "torch7-7.0-cuda has no kernels for H100 (sm_90): it ships sm_60"  # Torch 7's CUDA image is Pascal only
    assert run.stdout.count(torch7) == 1 and run.stdout.count(arch) == 1
    notes = [line for line in lines if line.startswith("[")]
    assert len(notes) == len(set(notes))
    assert "published cells not judged: 5 a tool the suite does not run" in run.stdout
