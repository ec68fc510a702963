"""The results site as a reader uses it, in headless Chromium driven through the DevTools protocol (tests.browser):
from the index to a bundle report, its summary.csv saved and back; a filter and a search applied, the page reloaded
from its address showing the same rows; a sortable column; a configuration's page across hardware listing the
device models of committed bundles. Built with --out from three committed AlexNet-S bundles (an H200, and a CPU
host at two dates)."""

import filecmp
import json
import shutil
import subprocess
import sys
from urllib.parse import parse_qs

import pytest

from dlrepro import REPO_ROOT
from dlrepro.store import tables
from tests.browser import Browser
from tests.views.pages import chromium

COMMITTED = REPO_ROOT / "results"
BUNDLES = [
    "alexnet-20261130T031432Z-74e68a2e",
    "alexnet-20261201T232146Z-647173f0",
    "alexnet-20261204T031800Z-9f852b81",
]
VISIBLE = (
    "Array.from(document.querySelectorAll('#%s tbody tr')).filter(r => !r.hidden).map(r => r.id || "
    "r.cells[0].textContent)"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    top = tmp_path_factory.mktemp("browse")
    results = top / "results"
    results.mkdir()
    for name in BUNDLES:
        shutil.copytree(COMMITTED / name, results / name)
    done = subprocess.run(
        [sys.executable, "-m", "invoke", "site", "--results", str(results), "--out", str(top / "site")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not (results / "reports").exists()  # --out: nothing written into the results folder
    return results, top / "site"


@pytest.fixture
def browser(tmp_path):
    found = Browser(chromium(), tmp_path / "profile")
    yield found
    found.close()


def test_from_the_index_to_a_bundle_report_its_summary_csv_and_back(site, browser, tmp_path):
    results, out = site
    browser.open((out / "index.html").as_uri())
    first = browser.evaluate("document.querySelector('#bundle-list tbody a').textContent")
    assert first == BUNDLES[0]
    browser.click("#bundle-list tbody a")
    assert browser.evaluate("location.href") == (out / BUNDLES[0] / "report.html").as_uri()
    assert browser.evaluate("document.querySelector('h1').textContent") == "dlrepro report: %s" % BUNDLES[0]
    links = browser.evaluate("Array.from(document.querySelectorAll('nav.site a')).map(a => a.textContent)")
    kept = [
        n
        for n in ("summary.csv", "samples.parquet", "bundle.json", "SHA256SUMS")
        if (results / BUNDLES[0] / n).is_file()
    ]
    assert links == ["Index", "Studies", "Configurations", "Across hardware and versions", "Changes (Atom)"] + kept
    assert "summary.csv" in kept and "bundle.json" in kept
    saved = browser.download('nav.site a[href$="summary.csv"]', tmp_path / "downloads")
    assert filecmp.cmp(saved, results / BUNDLES[0] / "summary.csv", shallow=False)
    browser.back()
    assert browser.evaluate("location.href") == (out / "index.html").as_uri()


def test_a_filter_and_a_search_are_in_the_address_and_a_reload_shows_the_same_rows(site, browser):
    _, out = site
    browser.open((out / "configurations.html").as_uri())
    everything = browser.evaluate(VISIBLE % "configuration-list")
    browser.evaluate(
        "var s = document.querySelector('select[data-column=\"device_name\"]');"
        "s.value = 'AMD EPYC'; s.dispatchEvent(new Event('change', {bubbles: true}));"
        "var q = document.querySelector('input[name=q]'); q.value = 'b16';"
        "q.dispatchEvent(new Event('input', {bubbles: true}))"
    )
    shown = browser.evaluate(VISIBLE % "configuration-list")
    state = parse_qs(browser.evaluate("location.hash").lstrip("#"))
    assert state == {"device_name": ["AMD EPYC"], "q": ["b16"]}
    rows = json.loads((out / "configurations.json").read_text())  # the page's table, as the site publishes it
    expected = [r["slug"] for r in rows if r["filters"]["device_name"] == "AMD EPYC" and "b16" in r["title"]]
    assert shown == expected and 0 < len(shown) < len(everything)
    browser.events.clear()
    browser.call("Page.reload")
    browser.wait_for_load()
    assert browser.evaluate(VISIBLE % "configuration-list") == shown
    assert browser.evaluate("document.querySelector('select[data-column=\"device_name\"]').value") == "AMD EPYC"
    assert browser.evaluate("document.querySelector('form.selectors .shown').textContent") == "%d of %d shown" % (
        len(shown),
        len(everything),
    )


def test_a_configuration_across_hardware_lists_the_device_models_of_the_committed_bundles(site, browser):
    results, out = site
    browser.open((out / "across.html").as_uri())
    browser.click('#across-list a[href*="alexnet.alexnet-s.torch.throughput.b16-"]')
    assert (
        browser.evaluate("document.querySelector('h1').textContent")
        == "PyTorch, alexnet alexnet-s, throughput mode, b16: across hardware and versions"
    )
    models = browser.evaluate(
        "Array.from(document.querySelectorAll('#across-lines tbody tr')).map(r => r.cells[0].textContent)"
    )
    summary, _ = tables.merge([results / b for b in BUNDLES])
    torch = summary[(summary["framework"] == "torch") & (summary["batch_size"] == 16) & (summary["status"] == "ok")]
    assert sorted(set(models)) == sorted(set(torch["device_name"])) and len(set(models)) >= 2
    # sorting by samples/s (the second column), highest first after two clicks; the order kept in the address
    browser.evaluate("document.querySelector('#across-lines thead th:nth-child(2)').click()")
    browser.evaluate("document.querySelector('#across-lines thead th:nth-child(2)').click()")
    rates = browser.evaluate(
        "Array.from(document.querySelectorAll('#across-lines tbody tr'))"
        ".map(r => parseFloat(r.cells[1].textContent.replace(/,/g, '')))"
    )
    assert rates == sorted(rates, reverse=True) and len(rates) == len(models)
    assert parse_qs(browser.evaluate("location.hash").lstrip("#")) == {"sort": ["1-desc"]}
