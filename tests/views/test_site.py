"""`dlrepro site`: the results site built from the committed results (every bundle and study record, each
configuration's history, each study's claims x (host, version set)), opened in headless Chromium; built twice
alike; a bundle added shows up; cost and energy per sample in the H200 bundles' reports."""

import hashlib
import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from dlrepro import REPO_ROOT
from dlrepro.answers import gather, history, matrix, verdicts
from dlrepro.errors import SpecError
from dlrepro.inputs import prices as pricesmod
from dlrepro.store import bundle, records, tables
from dlrepro.views import costs, numbers, plots, report
from dlrepro.views import site as siteview
from tests.bundles import Job, make
from tests.helpers import dlrepro_here
from tests.views.pages import Tables, chromium, headless
from tests.views.study_records import committed_answer

COMMITTED = REPO_ROOT / "results"
H200_FCN = "fcn-20261203T173433Z-74c9b923"  # JAX and PyTorch on an H200, NVML energy
# AlexNet-S b128, JAX 0.11.2 on an H200, in three bundles (a history of three runs)
JAX_ALEXNET = [
    "alexnet-20261130T041900Z-8c732bf9",
    "alexnet-20261201T202040Z-595d83e5",
    "alexnet-20261202T004102Z-57aa93db",
]


def _copy_results(target, bundles=None, studies=True):
    """A results folder at ``target`` with the committed bundles (``bundles``: those ids only) and study records,
    without the committed reports."""
    target.mkdir(parents=True)
    for folder in COMMITTED.iterdir():
        if (folder / "bundle.json").is_file() and (bundles is None or folder.name in bundles):
            shutil.copytree(folder, target / folder.name)
    if studies:
        shutil.copytree(COMMITTED / "studies", target / "studies")
    return target


def _site(results, *extra, status=0, process=False):
    """`dlrepro site --results RESULTS EXTRA`, its exit status ``status``: its output (stdout, then stderr). In this
    process (tests.helpers.dlrepro_here), or with ``process`` as the card spells it, `invoke site` in the checkout."""
    args = ["site", "--results", str(results), *extra]
    if process:
        done = subprocess.run(
            [sys.executable, "-m", "invoke", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800
        )
    else:
        done = dlrepro_here(*args)
    assert done.returncode == status and "Traceback" not in done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def _hashes(folder):
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    results = _copy_results(tmp_path_factory.mktemp("site") / "results")
    out = _site(results, process=True)
    return results, out


def _committed_bundles():
    return sorted(p.name for p in COMMITTED.iterdir() if (p / "bundle.json").is_file())


def _committed_records():
    return sorted(p.stem for p in (COMMITTED / "studies").glob("*.json") if records.STAMP.match(p.name))


def test_the_index_lists_every_committed_bundle_and_study_record(built):
    results, out = built
    site = results / "reports"
    assert re.search(r"site: \S+index\.html \((\d+) bundles, (\d+) study records", out).groups() == (
        str(len(_committed_bundles())),
        str(len(_committed_records())),
    )
    html = (site / "index.html").read_text()
    bundle_rows = re.findall(
        r'<tr id="bundle-[^"]*" data-spec="[^"]*" data-host="[^"]*" data-state="([^"]*)"><td>'
        r'<a href="([^"]+)/report\.html">',
        html,
    )
    assert sorted(b for _, b in bundle_rows) == _committed_bundles()
    smoke = {b for b in _committed_bundles() if (bundle.body(COMMITTED / b).get("options") or {}).get("quick")}
    assert {b: s for s, b in bundle_rows} == {
        b: "complete (smoke pass)" if b in smoke else "complete" for _, b in bundle_rows
    }
    studies = re.findall(r'<tr id="record-[^"]*"><td><a href="records/([^"]+)/study\.html">', html)
    assert sorted(studies) == _committed_records()


def test_each_row_of_the_index_says_host_commit_versions_and_headline(built):
    results, _ = built
    html = (results / "reports" / "index.html").read_text()
    row = re.search(
        r'<tr id="bundle-%s" data-spec="fcn" data-host="NVIDIA H200" data-state="complete"><td>'
        r'<a href="%s/report\.html">.*?</tr>' % (H200_FCN, H200_FCN),
        html,
        re.S,
    ).group(0)
    cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    body = bundle.body(COMMITTED / H200_FCN)
    # the answer first: the headline and the state, then what the bundle is, then its data files
    assert cells[0] == H200_FCN
    assert cells[1].startswith("fcn-s on NVIDIA H200 (throughput mode), fastest / slowest, samples/s: b32 JAX 35,903")
    assert cells[2:] == [
        "complete",
        "fcn",
        body["created"],
        "NVIDIA H200",
        "JAX 0.11.2, PyTorch 2.11.0+cu130",
        body["suite"]["git"]["commit"][:10],
        "summary.csv samples.parquet bundle.json SHA256SUMS",
    ]


def test_a_configuration_history_has_one_point_per_bundle_that_measured_it(built):
    results, _ = built
    folder = results / "reports" / "configurations"
    pages = {p.name: p.read_text() for p in folder.glob("*.html")}
    (name,) = [n for n in pages if n.startswith("alexnet.alexnet-s.jax-0.11.2.cuda.b128.fp32-")]
    points = re.search(r'<figure id="history" data-points="([^"]*)">', pages[name]).group(1).split()
    assert points == JAX_ALEXNET
    runs = Tables(pages[name]).table("Every bundle that measured it")
    assert runs["bundle"].tolist() == JAX_ALEXNET
    assert runs["against the run before"].tolist() == ["", "cannot tell", "no change"]
    assert runs["why"].iloc[2].startswith("+2.2%, 98.5% interval +0.5% to +2.9% inside -4.8% to +5.0%, 6 vs 6 repeats")
    # every bundle with an ok timed job is a point of some configuration, and each point is one bundle's
    measured = set()
    for bid in _committed_bundles():
        s = tables.summary(COMMITTED / bid)
        if ((s["status"] == "ok") & s["median"].notna()).any():
            measured.add(bid)
    plotted = [re.search(r'data-points="([^"]*)"', html).group(1).split() for html in pages.values()]
    assert set().union(*map(set, plotted)) == measured
    assert all(len(p) == len(set(p)) for p in plotted)
    assert len(pages) == len(Tables((results / "reports" / "configurations.html").read_text()).tables[0][2])


def test_a_study_matrix_cell_shows_its_strongest_evidence_not_its_newest_record():
    """Review U1: DLF's GRU-accuracy claim holds in the full 6-seed run dlf-20261203T135819Z, and read
    'inconclusive' because the smoke pass dlf-20261204T033514Z on the same host came later."""
    full, smoke = "dlf-20261203T135819Z", "dlf-20261204T033514Z"
    (found,) = matrix.matrices(
        [committed_answer(COMMITTED / "studies" / (n + ".json"), COMMITTED) for n in (smoke, full)]
    )
    (at,) = [i for i, c in enumerate(found.columns) if c.versions == matrix.TODAY]
    column, cell = found.columns[at], found.cells[("rnn-accuracy", at)]
    assert [(r.name, r.smoke) for r in column.records] == [(smoke, True), (full, False)]
    assert column.named == [
        "CNTK 2.7.post2",
        "Caffe2 1.10.2",
        "JAX 0.10.2",
        "MXNet 1.9.1",
        "PyTorch 2.13.0",
        "TensorFlow 2.21.0",
    ]
    assert (cell.best.record.name, cell.best.verdict.said) == (
        full,
        "holds for the 3 tools measured; not measured: CNTK",
    )
    assert [(o.record.name, o.verdict.said) for o in cell.others] == [(smoke, "inconclusive")]
    page = siteview.study_page(found)
    assert (
        '<span class="note">inconclusive: <a href="../records/%s/study.html">%s</a> (smoke pass)</span>'
        % (smoke, smoke)
        in page
    )


def test_the_study_matrix_shows_each_committed_studys_verdicts(built):
    """Every cell's verdict is the verdict of the record it links, in its column's version set; a cell comes from a
    smoke pass only where no full run of its column judged the claim."""
    results, _ = built
    for study in sorted({re.sub(r"-\d{8}T\d{6}Z$", "", r) for r in _committed_records()}):
        html = (results / "reports" / "studies" / ("%s.html" % study)).read_text()
        answers = {
            r: committed_answer(COMMITTED / "studies" / (r + ".json"), COMMITTED)
            for r in _committed_records()
            if r.startswith(study + "-")
        }
        said = {}
        for name, answer in answers.items():
            today = {v.claim: v.verdict for v in answer.claims}
            today.update({v.claim: v.verdict for _, group in answer.untestable for v in group})
            today.update({d.claim: d.today.verdict for d in answer.drift})
            said[(name, matrix.TODAY)] = today
            said[(name, matrix.PUBLISHED)] = {d.claim: d.published.verdict for d in answer.drift}
        heads = [unescape(h).rsplit(", ", 1)[1] for h in re.findall(r'<th id="[^"]*">([^<]*)<br>', html)]
        full = {r for r, a in answers.items() if not (a.record.get("asked") or {}).get("quick")}
        checked = 0
        for claim, row in re.findall(
            r'<tr id="[^"]*"><td class="small"><b><a href="#[^"]*">([^<]+)</a></b>.*?</td>'
            r"(.*?)</tr>",
            html,
            re.S,
        ):
            linked = (
                r'data-verdict="([^"]*)" id="[^"]*">(?:<span[^>]*>[^<]*</span>)?<br>'
                r'<a href="\.\./records/([^/]+)/study\.html#claim-[^"]+">'
            )
            for versions, (verdict, record) in zip(heads, re.findall(linked, row)):
                assert said[(record, versions)][claim] == unescape(verdict), (study, claim, record)
                checked += 1
                if record not in full and unescape(verdict) not in verdicts.UNJUDGED:
                    assert not any(
                        said[(r, versions)].get(claim) not in (None, *verdicts.UNJUDGED)
                        for r in full
                        if (r, versions) in said and answers[r].host == answers[record].host
                    ), claim
        assert checked >= len(re.findall(r'<tr id="[^"]*"><td class="small">', html)), study


def test_every_link_and_image_of_the_site_resolves_and_no_machine_path_shows(built, tmp_path):
    results, _ = built
    site = results / "reports"
    pages = [p for p in site.rglob("*.html")]
    assert len(pages) > 100
    for page in pages:
        text = page.read_text()
        for target in re.findall(r'(?:href|src)="([^"#]+)"', text):
            if target.startswith("data:"):
                continue
            assert not re.match(r"^[a-z]+:", target), (page, target)  # nothing from the network
            assert (page.parent / target).resolve().is_file(), (page, target)
        for path in (str(results), str(REPO_ROOT), "/tmp/", "/root/", "/home/"):
            assert path not in text, (page, path)


PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.from(document.images).map(function (i) { return i.complete && i.naturalWidth > 0; });
  var select = document.querySelector('select[data-column="spec"]');
  select.value = "fcn";
  select.dispatchEvent(new Event("change", {bubbles: true}));
  var rows = Array.from(document.getElementById(select.form.dataset.table).tBodies[0].rows);
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = images.join(",") + "|" + rows.filter(function (r) { return !r.hidden; }).length + "|" +
    select.form.querySelector(".shown").textContent;
  document.body.appendChild(out);
});
</script>
"""


def _probe(browser, page, profile):
    probe = page.with_name("probe-" + page.name)
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = headless(
        browser, profile, "--window-size=1400,1000", "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()
    )
    probe.unlink()
    return unescape(re.search(r'<pre id="probe">([^<]*)</pre>', dom).group(1)).split("|")


def test_chromium_opens_the_index_and_a_configuration_page_and_the_selectors_filter(built, tmp_path):
    browser = chromium()
    results, _ = built
    site = results / "reports"
    fcn = [b for b in _committed_bundles() if b.startswith("fcn-")]
    images, shown, said = _probe(browser, site / "index.html", tmp_path / "profile")
    assert int(shown) == len(fcn) and said == "%d of %d shown" % (len(fcn), len(_committed_bundles()))
    images, shown, said = _probe(browser, site / "configurations.html", tmp_path / "profile")
    configurations = list((site / "configurations").glob("fcn.*.html"))
    assert int(shown) == len(configurations) and said.startswith("%d of " % len(configurations))
    (page,) = (site / "configurations").glob("alexnet.alexnet-s.jax-0.11.2.cuda.b128.fp32-*.html")
    shot = tmp_path / "history.png"
    headless(browser, tmp_path / "profile", "--window-size=1400,1000", "--screenshot=%s" % shot, page.as_uri())
    shown = Image.open(shot).convert("L").crop((20, 140, 20 + plots.WIDTH_PX, 140 + plots.HEIGHT_PX))
    # an SVG line figure on white: its axes, grid, labels and points (5,230 pixels darker than 200 on 2026-12-06)
    assert sum(p < 200 for p in shown.getdata()) > 2000, "the history figure is blank"


def test_building_twice_gives_the_same_bytes_and_a_bundle_added_shows_up(tmp_path):
    results = _copy_results(tmp_path / "results", JAX_ALEXNET[:2] + [H200_FCN], studies=False)
    _site(results)
    first = _hashes(results / "reports")
    _site(results)
    assert _hashes(results / "reports") == first
    index = (results / "reports" / "index.html").read_text()
    assert JAX_ALEXNET[2] not in index
    shutil.copytree(COMMITTED / JAX_ALEXNET[2], results / JAX_ALEXNET[2])
    out = _site(results)
    assert "(4 bundles, 0 study records" in out
    assert '<a href="%s/report.html">' % JAX_ALEXNET[2] in (results / "reports" / "index.html").read_text()
    (page,) = (results / "reports" / "configurations").glob("alexnet.alexnet-s.jax-0.11.2.cuda.b128.fp32-*.html")
    assert re.search(r'data-points="([^"]*)"', page.read_text()).group(1).split() == JAX_ALEXNET


def test_a_record_or_bundle_it_cannot_read_is_a_row_saying_why_and_the_rest_is_built(tmp_path):
    results = _copy_results(tmp_path / "results", [H200_FCN], studies=False)
    (results / "studies").mkdir()
    (results / "studies" / "dlf-20261205T000000Z.json").write_text('{"x":')
    shutil.copytree(results / H200_FCN, results / "fcn-backup")  # a second folder holding the same bundle id
    out = " ".join(_site(results, status=1).split())
    assert "no report: dlf-20261205T000000Z.json: dlf-20261205T000000Z.json: not a study record (Expecting value" in out
    assert "no report: fcn-backup: the bundle id of fcn-backup, listed from %s" % H200_FCN in out
    assert "(1 bundles, 0 study records, 4 configurations; 1 reports drawn" in out
    html = (results / "reports" / "index.html").read_text()
    assert '<a href="%s/report.html">' % H200_FCN in html and "fcn-backup" in html
    rows = Tables(html).tables
    states = {r[0]: r[2] for _, _, body in rows for r in body}  # record / bundle, its answer or headline, its state
    assert states["dlf-20261205T000000Z"] == "unreadable" and states["fcn-backup"] == "unreadable"


def test_a_bundle_given_as_the_results_folder_is_refused(tmp_path):
    results = _copy_results(tmp_path / "results", [H200_FCN], studies=False)
    out = _site(results / H200_FCN, status=2)
    assert "error: --results %s: this is a bundle, not a results folder" % (results / H200_FCN) in out
    assert "remedy: give the folder that holds the bundles (here: %s)" % results in out
    assert not (results / H200_FCN / "reports").exists()


@pytest.mark.parametrize("given", ["abc", "0", "-1", "nan", "inf"])
def test_a_price_that_is_no_positive_number_is_refused(given, tmp_path):
    out = _site(tmp_path, "--price-per-hour", given, status=2)
    assert "error: --price-per-hour: expected a price in USD above 0 (got '%s')" % given in out
    assert not (tmp_path / "reports").exists()


def test_the_h200_report_gives_joules_per_sample_and_no_price_where_only_another_offer_is_sourced(tmp_path):
    """Review A7: the H200's only sourced price was a capacity-block rate, beside on-demand prices of other GPUs; the
    table has one offer type (on-demand), so the H200 reads 'no price' until a reader gives one per device-hour."""
    answer = gather.bundles([H200_FCN], COMMITTED)
    made = report.write(answer, tmp_path / "r")
    page = Tables(made.html.read_text())
    shown = page.table("fcn, throughput mode")
    s = tables.summary(COMMITTED / H200_FCN).sort_values(["variant", "device", "batch_size", "framework"])
    # measured before issue 52: every job's energy window holds its sampler's edge readings, each said beside it
    ratios = s["energy_window_s"] / s["measured_window_s"]
    assert shown["J per sample"].tolist() == [
        "%s (energy window %.2fx the measured one)" % (numbers.significant(v), r)
        for v, r in zip(s["energy_j_per_sample"], ratios)
    ]
    assert shown["J per sample"].iloc[0] == "0.0194 (energy window 2.27x the measured one)"
    assert set(shown["USD per 1M samples"]) == {"no price"} and pricesmod.load().offer == "on-demand"
    mine = Tables(
        report.write(gather.bundles([H200_FCN], COMMITTED, price_per_hour=2.0), tmp_path / "own").html.read_text()
    )
    # 1 H200 at 2 USD a device-hour: USD / 3600 / (samples/s) x 1,000,000
    assert mine.table("fcn, throughput mode")["USD per 1M samples"].tolist() == [
        "%s (price given)" % numbers.significant(2.0 / 3600 / t * 1e6) for t in s["throughput"]
    ]
    assert mine.table("Prices:").iloc[0].tolist() == [
        "2.00 USD per device-hour (a GPU, or one logical CPU)",
        "given with --price-per-hour",
    ]


def test_a_cpu_job_without_energy_reads_not_measured_and_is_priced_per_cpu_beside_its_dated_price():
    answer = gather.bundles(["cifar10-vgg-20261204T204409Z-33f42c63"], COMMITTED)
    rows = answer.summary
    assert rows["energy_j_per_sample"].isna().all() and (rows["price_devices"] == 2).all()
    context = report.context(answer)
    shown = Tables(report.TEMPLATES.get_template("report.html.j2").render(context, d=context))
    table = shown.table("cifar10-vgg, throughput mode")
    assert set(table["J per sample"]) == {"not measured"}
    # the c5 vCPU's launch price of 2017-11, a run of 2026-12: older than the run, said beside each cost
    assert table["USD per 1M samples"].tolist() == [
        "%s (2017-11 price, older than the run)" % numbers.significant(2 * 0.0425 / 3600 / t * 1e6)
        for t in rows.sort_values(["variant", "device", "batch_size", "framework"])["throughput"]
    ]
    assert shown.table("Prices:").iloc[0].tolist()[:5] == [
        "one logical CPU (vCPU)",
        "0.0425",
        "c5.large (2 vCPUs: one core, two hardware threads), Linux, US East (N. Virginia): 0.085 USD/h / 2",
        "2017-11",
        "launch price",
    ]


def test_a_given_price_is_per_device_hour_so_a_2_cpu_job_pays_twice_a_1_cpu_jobs(tmp_path):
    """Review A6: --price-per-hour 0.085 charged a 1-CPU and a 2-CPU job 0.085 USD an hour each, which flipped
    which was cheaper per sample (the table charges per device)."""
    folder = make(
        tmp_path,
        "alexnet",
        [
            Job("caffe", "alexnet-s", 16, medians=[0.10] * 6, threads=1),
            Job("caffe", "alexnet-s", 16, medians=[0.06] * 6, threads=2),
        ],
    )
    for given, table in ((0.0425, None), (None, pricesmod.load())):
        rows = gather.bundles([folder], price_per_hour=given).summary.sort_values("threads")
        assert rows["usd_per_hour"].tolist() == pytest.approx([0.0425, 0.085])
        # 160 and 266.7 samples/s: 0.0738 and 0.0885 USD per 1M samples: 1 thread stays the cheaper per sample
        assert rows["usd_per_million_samples"].tolist() == pytest.approx(
            [0.0425 / 3600 / 160 * 1e6, 0.085 / 3600 / (16 / 0.06) * 1e6]
        )
        assert costs.cost(rows) == (
            ["0.0738 (price given)", "0.0885 (price given)"]
            if given
            else ["0.0738 (2017-11 price, older than the run)", "0.0885 (2017-11 price, older than the run)"]
        )


def test_a_price_row_is_older_than_a_run_when_its_last_known_date_is_before_the_run():
    row = pricesmod.load().rows[0].model_copy(update={"as_of": "2018", "until": "2024"})
    assert (row.dated, row.older_than("2024-12-31T00:00:00Z"), row.older_than("2025-01-01T00:00:00Z")) == (
        "2018-2024",
        False,
        True,
    )
    assert costs.usd(20.94, "2016-09", True) == "20.9 (2016-09 price, older than the run)"


def test_a_device_no_price_row_names_reads_no_price():
    assert pricesmod.of("cuda", "GeForce GTX 1080", 1) is None
    assert pricesmod.of("cuda", "Tesla K80", 2).usd_per_hour == pytest.approx(2 * 0.90)
    rows = pd.DataFrame(
        {
            "usd_per_million_samples": [float("nan")] * 2,
            "price_id": [None, None],
            "price_dated": [None, None],
            "price_older": [None, None],
            "status": ["ok", "failed"],
            "throughput": [100.0, float("nan")],
        }
    )
    assert costs.cost(rows) == ["no price", ""]


def test_a_price_row_that_prices_two_kinds_is_refused_naming_the_file_line_and_field(tmp_path):
    bad = tmp_path / "prices.yaml"
    row = "  - id: aws-c5-vcpu\n    cpu: true\n"
    bad.write_text(Path(pricesmod.FILE).read_text().replace(row, row + "    names: [L4]\n"))
    with pytest.raises(SpecError) as err:
        pricesmod.load.__wrapped__(bad)
    assert "prices.yaml" in str(err.value) and "rows.5" in str(err.value) and "one of the two" in str(err.value)


def test_history_sets_a_smoke_pass_apart_from_a_full_run():
    folders = [COMMITTED / "cifar10-vgg-20261204T172229Z-5b3ae845", COMMITTED / "cifar10-vgg-20261204T200357Z-fb69836a"]
    summary, samples = tables.merge(folders)
    bodies = [bundle.body(f) for f in folders]
    (chainer,) = [
        c
        for c in history.history(bodies, summary, samples)
        if c.key["framework"] == "chainer" and c.key["framework_version"] == "3.4.0"
    ]
    assert [p.smoke for p in chainer.points] == [False, True]  # a full run, then the --quick study's
    assert chainer.points[1].verdict == "cannot tell" and chainer.points[1].reason == (
        "+25.7%, p = 0.86: 6 vs 1 repeats cannot give p < 0.01; " + history.SMOKE_ONE
    )


def test_a_history_point_says_when_its_j_per_sample_covers_another_window_than_the_measured_one():
    """The committed H200 FCN-S bundle (measured before issue 52): JAX b32's energy window 0.1179 s for 0.0519 s
    measured, said on its configuration page beside its J per sample."""
    folders = [COMMITTED / H200_FCN]
    summary, samples = tables.merge(folders)
    (jax,) = [
        c
        for c in history.history([bundle.body(f) for f in folders], summary, samples)
        if (c.key["framework"], c.key["batch_size"]) == ("jax", 32)
    ]
    assert jax.points[0].joules_window == pytest.approx(0.11789615499999684 / 0.05188462600000321)
    runs = Tables(siteview.configuration_page(jax, "../")).table("Every bundle that measured it")
    assert runs.iloc[0].tolist().count("0.0194 (energy window 2.27x the measured one)") == 1
