"""`invoke report`: Markdown and self-contained HTML reports of real bundles, opened in headless Chromium."""

import base64
import json
import re
import struct
import subprocess
import sys
from html import unescape
from io import BytesIO

import pandas as pd
import pytest
from PIL import Image, ImageChops, ImageStat

from dlrepro import REPO_ROOT
from dlrepro.answers import gather
from dlrepro.inputs.frameworks import display
from dlrepro.store import tables
from dlrepro.views import numbers, palette, plots, report
from tests.views.pages import Tables, chromium, headless

ALEXNET = REPO_ROOT / "results" / "alexnet-20261130T031432Z-74e68a2e"  # AlexNet-S, 7 frameworks, CPU batch 16
FCN = REPO_ROOT / "results" / "fcn-20261130T022354Z-cc755c44"  # FCN-R convergence, 3 frameworks, 5 epochs
FCN_FAILED = REPO_ROOT / "results" / "fcn-20261130T014428Z-a5ac0efc"  # FCN-R: torch ok, 3 failed
BUNDLES = [ALEXNET, FCN, FCN_FAILED]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return report.write(gather.bundles(BUNDLES), out)


@pytest.fixture(scope="module")
def page(made):
    return Tables(made.html.read_text())


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_results_table_has_every_framework_median_iqr_and_ci(made, page):
    summary = tables.summary(ALEXNET)
    assert len(summary) == 7
    shown = page.table("alexnet, throughput mode: seconds per mini-batch (s)").set_index("framework")
    assert sorted(shown.index) == sorted(summary["framework"])
    markdown = made.markdown.read_text()
    for _, row in summary.iterrows():
        cells = shown.loc[row["framework"]]
        # AlexNet-S on 2 CPUs takes 1.1-3.8 s a mini-batch: the column is in seconds, 3 significant digits
        assert cells["median (s)"] == numbers.significant(row["median"]) and "e" not in cells["median (s)"]
        assert cells["IQR (q1-q3) (s)"] == "%s-%s" % (numbers.significant(row["q1"]), numbers.significant(row["q3"]))
        assert cells["95% CI (s)"] == "%s-%s" % (
            numbers.significant(row["ci95_low"]),
            numbers.significant(row["ci95_high"]),
        )
        assert cells["throughput (samples/s)"] == numbers.rate(row["throughput"])
        assert cells["status"] == "ok" and cells["parameters"] == "62,378,344"
        assert "| %s | %s |" % (row["framework"], row["framework_version"]) in markdown
    assert shown.loc["cntk", "median (s)"] == "1.11" and shown.loc["cntk", "throughput (samples/s)"] == "14.5"
    assert "| 1.11 | 1.04-1.15 |" in markdown


def test_convergence_table_has_accuracy_and_failed_jobs_with_reason(page):
    shown = page.table("fcn, convergence mode: seconds per epoch (s)")
    ok = shown[shown["status"] == "ok"].set_index("framework")
    assert ok.loc["jax", "test accuracy"] == "92.5%" and ok.loc["jax", "total s"] == "668.8"
    assert sorted(ok.index) == ["jax", "mxnet", "tensorflow", "torch"]
    failed = shown[shown["status"] == "failed"]
    assert sorted(failed["framework"]) == ["jax", "mxnet", "tensorflow"]
    assert set(failed["bundle"]) == {FCN_FAILED.name}
    # the long reasons leave the table: a [n] mark per row, the text once below it
    assert set(failed["note"]) == {"[1]"} and "reason" not in shown.columns
    after = page.html.split("fcn, convergence mode: seconds per epoch (s)", 1)[1]
    footnotes = re.findall(r'<ol class="note footnotes">(.*?)</ol>', after, re.S)[0]
    assert footnotes.count("<li>") == 1 and "UndefinedError" in footnotes


def test_environment_sets_the_studies_hardware_beside_this_host(page):
    side = page.table("Environment: the studies vs here")
    paper = side[side["side"].str.startswith("paper")]
    assert paper["hardware and system"].str.contains("GTX Titan X (Maxwell)", regex=False).any()
    assert paper["frameworks"].str.contains("CNTK 1.7.1", regex=False).any()
    here = side[side["side"] == "here"]
    assert len(here) == 1 and here["hardware and system"].iloc[0].startswith("AMD EPYC, 2 CPUs")
    assert "caffe2 1.10.2+cu102" in here["frameworks"].iloc[0]
    images = page.table("Images here").set_index("framework")
    assert len(images) == 7
    assert (
        images.loc["torch", "image ID"]
        == tables.summary(ALEXNET).set_index("framework").loc["torch", "image_id"].split(":")[1][:12]
    )


def test_comparison_and_ranking_verdicts(made, page):
    summary = tables.summary(ALEXNET).set_index("framework")
    cells = page.table("Comparison with the published values").set_index("framework")
    # DLBench's AlexNet-S at batch 16 as rerun on a GTX Titan X: Caffe, CNTK, MXNet and TensorFlow (Lua Torch is not
    # PyTorch)
    codes = {display(f): f for f in summary.index}
    assert sorted(cells.index) == ["CNTK", "Caffe", "MXNet", "TensorFlow"]
    for framework, row in cells.iterrows():
        assert row["measured"] == numbers.significant(summary.loc[codes[framework], "median"])
        assert row["verdict"] == "other hardware [1]"  # the reason once, as footnote 1 under the table
        assert "GTX Titan X" in row["published by"] and row["measured with"].endswith("on AMD EPYC")
    html = unescape(made.html.read_text())
    assert "<li>measured on AMD EPYC, published on NVIDIA GTX Titan X (Maxwell)" in html
    # a CPU run is not ranked against the Titan X rerun's order, and nothing is called the study's conclusion
    assert "Kendall" not in html and "conclusion" not in html


def test_environment_names_gpus_and_driver_of_a_gpu_host():
    body = json.loads((ALEXNET / "bundle.json").read_text())
    body["host"]["gpus"] = [{"index": 0, "name": "NVIDIA H200", "driver": "580.95.05", "capability": "9.0"}]
    side, _ = report.environment([body], tables.summary(ALEXNET))
    here = [row for row in side.rows if row[0] == "here"]
    assert len(here) == 1 and "NVIDIA H200 (driver 580.95.05)" in here[0][1]


def test_html_embeds_every_figure_as_png_and_is_self_contained(made, page):
    html = made.html.read_text()
    # alexnet: throughput bars; fcn: throughput bars and accuracy vs time
    assert len(page.images) == len(made.figures) == 3
    files = {p.read_bytes() for p in made.figures}
    for img in page.images:
        head, data = img["src"].split(",", 1)
        assert head == "data:image/png;base64"
        png = base64.b64decode(data)
        assert png_size(png) == (plots.WIDTH_PX, plots.HEIGHT_PX)
        assert png in files
    assert not re.search(r"<script|<link|@import|url\(|(src|href)=\"(?!data:)", html)
    markdown = made.markdown.read_text()
    for path in made.figures:
        assert "](figures/%s)" % path.name in markdown


def test_seconds_vs_batch_plot_only_for_several_batch_sizes():
    summary = tables.summary(ALEXNET)
    assert plots.seconds_vs_batch(summary) == []  # one batch size: the bars say it
    times = ["median", "q1", "q3"]
    sweep = pd.concat(
        [summary.assign(batch_size=b, **{t: summary[t] * b / 16 for t in times}) for b in (16, 32, 64, 128)]
    )
    figures = plots.seconds_vs_batch(sweep)
    assert len(figures) == 1 and png_size(figures[0].png) == (plots.WIDTH_PX, plots.HEIGHT_PX)


def test_no_line_across_an_unmeasured_batch_size_and_one_colour_per_framework():
    line = pd.DataFrame({"batch_size": [16, 32, 128]})
    parts = plots._segments(line, [16, 32, 64, 128])  # 64 was measured by another framework only
    assert [list(p["batch_size"]) for p in parts] == [[16, 32], [128]]
    assert palette.colour("torch") == "#d62728" and display("tensorflow") == "TensorFlow"
    assert palette.colour("theano") == "#7f7f7f"  # a framework outside the suite: grey


def test_every_measured_batch_size_is_a_point_of_its_figure():
    """The tables' batch_size is nullable Int64 (review N1: the smallest batch of each line was dropped): the
    committed H200 PyTorch AlexNet-S bundle read as a report reads it, b16 to b128, one point per job, in ms."""
    summary, _ = tables.merge([REPO_ROOT / "results" / "alexnet-20261130T041002Z-d802ef07"])
    assert str(summary["batch_size"].dtype) == "Int64"
    (figure,) = plots.seconds_vs_batch(summary)
    assert sorted((x, round(y, 6)) for _, x, y in figure.points) == sorted(
        (int(b), round(1000 * m, 6)) for b, m in zip(summary["batch_size"], summary["median"])
    )
    assert "in ms" in figure.caption


def test_a_cpu_thread_sweep_gets_a_speedup_plot_with_the_ideal_line():
    one = tables.summary(ALEXNET).iloc[:2]
    sweep = pd.concat([one.assign(threads=t, throughput=one["throughput"] * t**0.5) for t in (1, 2, 4)])
    (figure,) = plots.speedup_vs_threads(sweep)
    assert figure.title.startswith("Speedup vs CPU threads, batch 16") and "ideal, linear" in figure.caption
    assert plots.speedup_vs_threads(tables.summary(ALEXNET)) == []  # one thread count


def test_a_speedup_plot_per_data_parallel_run_and_its_scaling_column():
    one = tables.summary(ALEXNET).iloc[:2]  # two frameworks' rows of one bundle, made into 1/2/4-GPU jobs
    rows = pd.concat(
        [
            one.assign(ranks=n, scaling="strong", rank_batch_size=16 // n, median=one["median"] / n**0.8)
            for n in (1, 2, 4)
        ]
    )
    rows = tables.frame(tables.scaling(rows.to_dict("records")), tables.SUMMARY_COLUMNS)
    assert list(rows["speedup"].round(3)) == [1.0, 1.0, 1.741, 1.741, 3.031, 3.031]
    (figure,) = plots.speedup_vs_gpus(rows)
    assert figure.title.startswith("Speedup vs ranks (strong scaling, total mini-batch 16)")
    assert png_size(figure.png) == (plots.WIDTH_PX, plots.HEIGHT_PX) and "Dashed: the ideal, N." in figure.caption
    (table,) = report.results(rows)
    cells = [dict(zip(table.columns, r)) for r in table.rows]
    assert {c["ranks"] for c in cells} == {"1", "2", "4"} and "strong, 4 per rank: S 3.03, E 0.76" in {
        c["scaling"] for c in cells
    }
    assert plots.speedup_vs_gpus(tables.summary(ALEXNET)) == []  # no data-parallel jobs


def test_invoke_report_writes_and_prints_the_paths(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "invoke", "report", "%s,%s" % (ALEXNET, FCN), "--out", str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    for name in ("report.html", "report.md"):
        assert str(tmp_path / name) in done.stdout
    # the headline first: the fastest and slowest framework of AlexNet-S b16 on 2 CPUs
    assert done.stdout.startswith(
        "alexnet-s on AMD EPYC (throughput mode), fastest / slowest, samples/s: b16 CNTK 14.5 / JAX 4.25"
    )
    assert len(list((tmp_path / "figures").glob("*.png"))) == 3
    missing = subprocess.run(
        [sys.executable, "-m", "invoke", "report", str(tmp_path / "nothing")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "error:" in missing.stdout and "Traceback" not in missing.stderr


# --- the page in a real browser -------------------------------------------------------------------

PROBE = """<script>
addEventListener("load", function () {
  var found = [].map.call(document.images, function (img) {
    var r = img.getBoundingClientRect();
    return [img.naturalWidth, img.naturalHeight, r.left + scrollX, r.top + scrollY].map(Math.round).join(",");
  });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = found.join(";") + "|" + document.documentElement.scrollHeight;
  document.body.appendChild(out);
});
</script>
"""
WIDTH = 1400  # wider than a figure, so every image shows at its natural size


def test_chromium_renders_every_plot(made, tmp_path):
    browser = chromium()
    probe_page = tmp_path / "probe.html"
    probe_page.write_text(made.html.read_text().replace("</body>", PROBE + "</body>"))
    dom = headless(
        browser,
        tmp_path / "profile",
        "--window-size=%d,1000" % WIDTH,
        "--virtual-time-budget=10000",
        "--dump-dom",
        probe_page.as_uri(),
    )
    found, height = re.search(r'<pre id="probe">([^<]*)</pre>', dom).group(1).split("|")
    images = [tuple(map(int, i.split(","))) for i in found.split(";")]
    assert len(images) == 3
    assert all((w, h) == (plots.WIDTH_PX, plots.HEIGHT_PX) for w, h, _, _ in images), images

    shot = tmp_path / "page.png"
    headless(
        browser,
        tmp_path / "profile",
        "--window-size=%d,%s" % (WIDTH, height),
        "--screenshot=%s" % shot,
        made.html.as_uri(),
    )
    page = Image.open(shot).convert("L")
    assert page.size == (WIDTH, int(height))
    embedded = [
        Image.open(BytesIO(base64.b64decode(i["src"].split(",", 1)[1]))).convert("L")
        for i in Tables(made.html.read_text()).images
    ]
    for (w, h, left, top), original in zip(images, embedded):
        shown = page.crop((left, top, left + w, top + h))
        assert ImageStat.Stat(shown).stddev[0] > 20, "plot region at %d,%d is blank" % (left, top)
        # the browser shows the figure's own pixels: mean difference below 2 of 255 grey levels
        assert ImageStat.Stat(ImageChops.difference(shown, original)).mean[0] < 2


H200_RESNET50 = REPO_ROOT / "results" / "resnet50-20261130T041045Z-eb31f4df"  # torch on an H200, NVML telemetry


def test_gpu_jobs_show_clocks_power_and_the_throttle_flag(tmp_path):
    page = Tables(report.write(gather.bundles([H200_RESNET50]), tmp_path / "h200").html.read_text())
    state = page.table("resnet50, throughput mode").set_index("batch")["GPU during the measured iterations"]
    summary = tables.summary(H200_RESNET50)
    last = summary.iloc[-1]
    assert last["batch_size"] == 64 and last["telemetry_samples"] >= 5
    assert state["64"] == "not throttled: SM 1980 MHz, %.0f W, max %.0f C (%d samples)" % (
        last["power_median_w"],
        last["temperature_max_c"],
        last["telemetry_samples"],
    )
    throttled = summary.iloc[[-1]].assign(throttled=True, throttle_reasons="sw_power_cap", telemetry_samples=3)
    assert report._gpu_state(
        next(throttled.itertuples())
    ) == "THROTTLED (sw_power_cap): SM 1980 MHz, %.0f W, max %.0f C (3 samples: too few for the medians)" % (
        last["power_median_w"],
        last["temperature_max_c"],
    )
    silent = summary.iloc[[-1]].assign(sm_clock_median_mhz=float("nan"))
    assert report._gpu_state(next(silent.itertuples())) == "no telemetry"


def test_the_bundle_report_sets_published_cells_against_their_peak(tmp_path):
    """The committed H200 AlexNet-S bundles (issue 26): achieved TFLOP/s and fraction of peak per job; DLBench's
    Titan X rerun cells against the Titan X's fp32 peak are shown only beside a job of their framework measured
    here (none of the rerun's frameworks ran: no table, no figure, review N6), never reproduced."""
    answer = gather.bundles(["alexnet-20261201T201740Z-9f78cd5d", "alexnet-20261201T201858Z-76e63b6c"])
    made = report.write(answer, tmp_path)
    page = Tables(made.html.read_text())
    jobs = page.table("alexnet, throughput mode: seconds per mini-batch (s)")
    assert sorted(zip(jobs["TFLOP/s"], jobs["% of peak"])) == [
        ("143", "14.4% (h200-sxm)"),
        ("58.1", "86.8% (h200-sxm)"),
    ]
    cntk = answer.efficiency.set_index("published_framework").loc["CNTK"]
    assert (round(cntk["published_fraction"], 3), cntk["verdict"]) == (
        0.457,
        "not run",
    )  # 105.56 GFLOP in 0.035 s over 6.605 TFLOP/s (1075 MHz boost)
    assert not [t for t in page.tables if t[0].startswith("Fraction of peak")]
    assert "fraction-of-peak" not in {f.stem for f in made.figures}
