"""What the report tests share: an HTML table parser and a headless chromium to take a page's first screen."""

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pandas as pd
import pytest

from dlrepro import REPO_ROOT


class Tables(HTMLParser):
    """Every <table> of a page as (caption, header, rows of cell texts); every <img> src."""

    def __init__(self, html):
        super().__init__()
        self.tables, self.images, self._cell, self._caption = [], [], None, None
        self.html = html
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append(["", [], []])
        elif tag == "tr":
            self.tables[-1][2].append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "caption":
            self._caption = ""
        elif tag == "img":
            self.images.append(dict(attrs))

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._caption is not None:
            self._caption += data

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][2][-1].append(self._cell)
            self._cell = None
        elif tag == "caption":
            self.tables[-1][0], self._caption = self._caption, None
        elif tag == "table":
            caption, _, rows = self.tables[-1]
            self.tables[-1] = (caption, rows[0], rows[1:])

    def table(self, caption_start):
        found = [t for t in self.tables if t[0].startswith(caption_start)]
        assert len(found) == 1, [t[0] for t in self.tables]
        caption, header, rows = found[0]
        return pd.DataFrame(rows, columns=header)


def chromium():
    """Debian's chromium; missing, the test is skipped, unless DLREPRO_REQUIRE_BROWSER=1 (.ci/run) fails it."""
    found = shutil.which("chromium")
    if not found:
        if os.environ.get("DLREPRO_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed (apt-get install chromium) and DLREPRO_REQUIRE_BROWSER=1")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def headless(browser, profile, *args):
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--force-device-scale-factor=1",
        "--user-data-dir=%s" % profile,
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def verdicts_of(html):
    """{claim id: verdict} of a study report's HTML (the verdict table and the folded untestable claims)."""
    return dict(re.findall(r'data-claim="([^"]+)" data-verdict="([^"]+)"', html))


def first_screen(html, tmp_path):
    """(bottom of the answer, bottom of the verdict table (of the answer where no claim was judged), images decoded,
    images, page width), in CSS px, of a study report opened in headless Chromium at 1400 x 900."""
    probe = """<script>window.onload = () => { const f = e => e.getBoundingClientRect().bottom;
    const imgs = [...document.images]; const p = document.createElement('pre'); p.id = 'probe';
    p.textContent = [f(document.getElementById('answer')),
     f(document.getElementById('verdicts') || document.getElementById('answer')),
     imgs.filter(i => i.complete && i.naturalWidth > 0).length, imgs.length,
     document.documentElement.scrollWidth].join('|'); document.body.appendChild(p); };</script>"""
    page = tmp_path / "probe.html"
    page.write_text(html.read_text().replace("</body>", probe + "</body>"))
    dom = headless(
        chromium(),
        tmp_path / "profile",
        "--window-size=1400,900",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    )
    assert str(REPO_ROOT) not in dom
    return tuple(map(float, re.search(r'<pre id="probe">([^<]*)</pre>', dom).group(1).split("|")))
