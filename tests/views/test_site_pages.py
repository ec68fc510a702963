"""The site's pages from constructed histories: the history figure (its y label and unit, its axis from 0, a time
axis), the pages across hardware and versions with their published values, the Atom feed of changes, the anchors
of a study matrix; and `dlrepro site` incremental and --out on committed bundles."""

import re
import shutil
from xml.etree import ElementTree

import pytest

from dlrepro import REPO_ROOT
from dlrepro.answers import across, verdicts
from dlrepro.answers.history import Configuration, Point
from dlrepro.cli import site_task as sitemod
from dlrepro.inputs.references import Reference
from dlrepro.views import history_svg, site_across
from dlrepro.views import site as siteview

COMMITTED = REPO_ROOT / "results"
JAX_ALEXNET = [
    "alexnet-20261130T041900Z-8c732bf9",
    "alexnet-20261201T202040Z-595d83e5",
    "alexnet-20261202T004102Z-57aa93db",
]


def _key(framework="jax", device_name="NVIDIA H200", version="0.11.2", batch=128):
    return {
        "spec": "alexnet",
        "variant": "alexnet-s",
        "framework": framework,
        "framework_version": version,
        "device": "cuda",
        "mode": "throughput",
        "batch_size": batch,
        "precision": "fp32",
        "layout": None,
        "cudnn_autotune": None,
        "threads": None,
        "thread_pools": None,
        "gradients": None,
        "ranks": None,
        "sample": "iteration",
        "device_name": device_name,
    }


def _point(bundle_id, created, median, verdict=None, **more):
    return Point(
        bundle_id,
        created,
        "abc",
        False,
        median,
        median * 0.99,
        median * 1.01,
        "s",
        "seconds per mini-batch",
        verdict=verdict,
        **more,
    )


def test_the_history_figure_says_its_unit_once_starts_at_0_and_puts_runs_on_a_time_axis():
    c = Configuration(
        _key(),
        "x",
        [
            _point("a", "2026-12-04T03:00:00Z", 0.0169),
            _point("b", "2026-12-04T05:00:00Z", 0.0164, verdicts.SLOWER),
            _point("c", "2026-12-06T03:00:00Z", 0.0150, verdicts.FASTER),
        ],
    )
    svg = history_svg.history(c, "t")
    labels = re.findall(
        r'<text x="(\d+)" y="([\d.]+)" text-anchor="end" dominant-baseline="middle">([^<]+)</text>', svg.svg
    )
    assert [t for _, _, t in labels] == ["0", "5", "10", "15", "20"]  # ms, step 5 from 0 past 17.1 ms
    assert 'rotate(-90)" text-anchor="middle">time per mini-batch (ms)</text>' in svg.svg
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg.svg)]
    tips = [float(x) for x in re.findall(r'<polygon points="([\d.]+),', svg.svg)]
    assert len(xs) == 1 and len(tips) == 2  # a circle for the first run, a v and a ^ for the changes
    first, second, third = xs[0], tips[0] + 5, tips[1] + 5
    assert (second - first) / (third - first) == pytest.approx(2 / 48, abs=1e-3)  # 2 h of 48 h
    assert svg.points == (
        ("a", "2026-12-04T03:00:00Z", 0.0169),
        ("b", "2026-12-04T05:00:00Z", 0.0164),
        ("c", "2026-12-06T03:00:00Z", 0.0150),
    )


@pytest.mark.parametrize("top, step", [(17.7, 5), (0.3, 0.1), (1.0, 0.2), (123.0, 50), (9.9, 2)])
def test_a_nice_step_is_1_2_or_5_times_a_power_of_10_within_5_ticks(top, step):
    assert history_svg.nice_step(top) == pytest.approx(step)


def test_another_quantity_keeps_its_own_unit_in_the_y_label():
    assert history_svg.y_label("seconds per epoch", "s", "s") == "time per epoch (s)"
    assert history_svg.y_label("accuracy", "fraction", "fraction") == "accuracy (fraction)"


def _ref(framework, batch, hardware="Tesla K80"):
    return Reference(
        id="r-%s-%s" % (framework, batch),
        kind="published",
        variant="alexnet-s",
        experiment="e",
        framework=framework,
        hardware=hardware,
        batch_size=batch,
        metric="seconds per minibatch",
        value=0.5,
        unit="s",
        source="DLBench table 7",
    )


def test_across_sets_one_configuration_side_by_side_on_every_device_model_with_its_published_values():
    h200 = Configuration(
        _key("torch"),
        "h200",
        [
            _point("a", "2026-12-01T00:00:00Z", 0.02, throughput=6400.0),
            _point("b", "2026-12-02T00:00:00Z", 0.016, throughput=8000.0),
        ],
    )
    cpu = Configuration(
        _key("torch", "AMD EPYC", "2.13.0"), "cpu", [_point("c", "2026-12-03T00:00:00Z", 1.6, throughput=80.0)]
    )
    other = Configuration(_key(), "jax", [_point("d", "2026-12-03T00:00:00Z", 0.01)])
    refs = {
        "alexnet": [
            _ref("TensorFlow", 128),
            _ref("PyTorch", 64),
            _ref("PyTorch", 128),
            _ref("PyTorch", 128, "Tesla P100"),
        ]
    }
    jax, torch = across.across([h200, cpu, other], refs)
    assert (jax.key["framework"], torch.key["framework"], jax.published) == ("jax", "torch", [])
    assert torch.hosts == ["AMD EPYC", "NVIDIA H200"]
    assert [(r.configuration.slug, r.point.bundle_id) for r in torch.rows] == [("cpu", "c"), ("h200", "b")]
    assert [(r.hardware, r.batch_size) for r in torch.published] == [("Tesla K80", 128), ("Tesla P100", 128)]
    shown = site_across.across_rows(torch, "../")
    assert [(r["device_name"], r["throughput"], r["version"], r["runs"], r["usd"]) for r in shown] == [
        ("AMD EPYC", "80.0", "2.13.0", 1, "no price"),
        ("NVIDIA H200", "8,000", "0.11.2", 2, "no price"),
    ]
    page = site_across.across_page(torch)
    assert "Measured on 2 device models (AMD EPYC, NVIDIA H200), in 2 history lines; 2 published values" in page


def test_a_framework_that_reported_no_version_is_shown_so_on_the_across_page_its_filters_and_titles():
    # Torch 7 before it reported "scm-<commit>" (runner.buildinfo.torch7_version): the site failed on None
    before = Configuration(_key("torch7", "AMD EPYC", None), "t7-none", [_point("a", "2026-12-06T00:00:00Z", 0.5)])
    now = Configuration(_key("torch7", "Intel Xeon", "scm-814ea4a"), "t7", [_point("b", "2026-12-06T01:00:00Z", 0.4)])
    (torch7,) = across.across([before, now], {})
    shown = site_across.across_rows(torch7, "../")
    assert [(r["device_name"], r["version"]) for r in shown] == [
        ("AMD EPYC", "version not reported"),
        ("Intel Xeon", "scm-814ea4a"),
    ]
    assert siteview.filters(shown, ["framework_version"]) == [
        ("framework_version", "version", ["scm-814ea4a", "version not reported"])
    ]
    assert siteview.title(before).startswith("torch7 version not reported, alexnet alexnet-s, throughput mode")
    assert site_across.across_list_rows([torch7])[0]["versions"] == "scm-814ea4a, version not reported"


def test_the_feed_has_one_entry_per_run_slower_or_faster_than_the_one_before_newest_first():
    c = Configuration(
        _key(),
        "cfg",
        [
            _point("a", "2026-12-01T00:00:00Z", 0.02),
            _point("b", "2026-12-02T00:00:00Z", 0.03, verdicts.SLOWER, reason="+50%"),
            _point("c", "2026-12-03T00:00:00Z", 0.03, verdicts.NO_CHANGE),
            _point("d", "2026-12-04T00:00:00Z", 0.02, verdicts.FASTER, reason="-33%"),
        ],
    )
    atom = "{http://www.w3.org/2005/Atom}"
    feed = ElementTree.fromstring(site_across.feed([c]))
    assert feed.find(atom + "updated").text == "2026-12-04T00:00:00Z"
    entries = [
        (e.find(atom + "id").text, e.find(atom + "title").text, e.find(atom + "link").get("href"))
        for e in feed.findall(atom + "entry")
    ]
    title = "jax 0.11.2, alexnet alexnet-s, throughput mode, b128, fp32, on NVIDIA H200"
    assert entries == [
        ("urn:dlrepro:change:cfg:d", "faster: " + title, "configurations/cfg.html#run-d"),
        ("urn:dlrepro:change:cfg:b", "slower: " + title, "configurations/cfg.html#run-b"),
    ]


def test_an_anchor_is_the_same_for_the_same_claim_and_column():
    assert (
        siteview.anchor("rnn-accuracy", "AMD EPYC (2 logical CPUs)", "today's")
        == "rnn-accuracy.amd-epyc-2-logical-cpus.today-s"
    )


def test_filters_offer_each_key_with_two_values_or_more():
    rows = [
        {"filters": {"spec": "fcn", "batch_size": "32"}},
        {"filters": {"spec": "fcn", "batch_size": "1024"}},
        {"filters": {"spec": "fcn", "batch_size": "128"}},
    ]
    assert siteview.filters(rows, ["spec", "batch_size"]) == [("batch_size", "mini-batch", ["32", "128", "1024"])]


def _mtimes(folder):
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_a_rebuild_draws_nothing_unchanged_and_one_new_bundle_draws_one_report_and_out_leaves_results_alone(tmp_path):
    results, out = tmp_path / "results", tmp_path / "site"
    results.mkdir()
    for name in JAX_ALEXNET[:2]:
        shutil.copytree(COMMITTED / name, results / name)
    first = sitemod.build(results, progress=lambda line: None, out=out)
    assert (first.bundles, first.drawn) == (2, 2) and not (results / "reports").exists()
    before = _mtimes(out)
    again = sitemod.build(results, progress=lambda line: None, out=out)
    assert (again.drawn, again.written) == (0, 0) and _mtimes(out) == before
    shutil.copytree(COMMITTED / JAX_ALEXNET[2], results / JAX_ALEXNET[2])
    said = []
    third = sitemod.build(results, progress=said.append, out=out)
    assert (third.bundles, third.drawn, said) == (3, 1, ["report %s" % JAX_ALEXNET[2]])
    after = _mtimes(out)
    assert {n for n in before if after[n] != before[n]} <= {
        "index.html",
        "index.json",
        "configurations.html",
        "configurations.json",
        "across.html",
        "across.json",
        "feed.xml",
        "site-cache.json",
    } | {n for n in before if n.startswith(("configurations/", "across/"))}
    assert not any(n.startswith(tuple(JAX_ALEXNET[:2])) and after[n] != before[n] for n in before)
    assert any(n.startswith(JAX_ALEXNET[2] + "/data/") for n in after)


def test_a_configuration_of_one_run_draws_no_one_dot_chart_and_links_its_page_across_hardware():
    one = Configuration(_key(), "x", [_point("a", "2026-12-04T03:00:00Z", 0.0169)])
    page = siteview.configuration_page(one, "../", "acr")
    figure = re.search(r'<figure id="history" data-points="a">(.*?)</figure>', page, re.S).group(1)
    assert "<svg" not in figure and '<a href="../across/acr.html">its page across hardware</a>' in figure
    two = Configuration(_key(), "x", one.points + [_point("b", "2026-12-05T03:00:00Z", 0.0169)])
    assert "<svg" in siteview.configuration_page(two, "../", "acr")
