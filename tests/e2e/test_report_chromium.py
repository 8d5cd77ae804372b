"""Render out/index.html in headless Chromium and check what a browser sees.

The page is made from tests/data/reports/sample.json (five branches, a
lockdep report, a failed case, a finding that carries <script>).  Chromium
loads it from a file:// URL with networking off; the DOM it dumps must hold
the matrix (one row per branch, one cell per stage, coloured by status)
and no script element, and a screenshot must come out.
"""

from __future__ import annotations

import html.parser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from ktopic.report import report  # noqa: E402
from ktopic.model.results import STAGES  # noqa: E402

CHROMIUM = shutil.which("chromium")
SAMPLE = REPO / "tests" / "data" / "reports" / "sample.json"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="missing chromium: no headless Chromium on PATH (apt-get install chromium; make deps)")


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={profile}", *args]
    env = dict(os.environ, HOME=str(tmp_path))
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env,
                              check=True)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class Matrix(html.parser.HTMLParser):
    """Rows of the table with id=matrix, as (header cell text, [cell classes])."""

    def __init__(self):
        super().__init__()
        self.in_matrix = False
        self.rows: list[list] = []
        self.headers: list[str] = []
        self.cell: str | None = None
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "table" and a.get("id") == "matrix":
            self.in_matrix = True
        if not self.in_matrix:
            return
        if tag == "tr":
            self.rows.append(["", []])
        elif tag == "th" and self.rows and self.rows[-1][0] == "" and not self.rows[-1][1]:
            self.cell = "th"
        elif tag == "td":
            self.rows[-1][1].append(a.get("class", ""))

    def handle_endtag(self, tag):
        if tag == "table" and self.in_matrix:
            self.in_matrix = False
        if tag == "th":
            self.cell = None

    def handle_data(self, data):
        if self.in_matrix and self.cell == "th" and self.rows:
            self.rows[-1][0] += data


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out")
    r = report.load_json(SAMPLE)
    report.write_all(r, out)
    return out / "index.html"


def test_dom_has_the_matrix(page, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    m = Matrix()
    m.feed(dom)
    assert m.scripts == 0, "a <script> from a finding became markup"
    header, *rows = m.rows
    r = report.load_json(SAMPLE)
    assert [name.split(" (")[0] for name, _ in rows] == [b.branch for b in r.branches]
    # One cell per stage plus cases, findings, result; each with a status class.
    for (name, classes), b in zip(rows, r.branches):
        assert len(classes) == len(STAGES) + 3
        for stage, cls in zip(STAGES, classes):
            st = b.stage(stage)
            assert cls == f"st {st.status if st else 'none'}", (b.branch, stage)
        assert classes[-1] == ("st pass" if b.ok else "st fail")
    assert "alert(1)" in dom          # the finding is there, as text


def test_screenshot(page, tmp_path):
    shot = Path(os.environ.get("KTOPIC_SCREENSHOT", tmp_path / "report.png"))
    chromium(tmp_path, "--window-size=1280,1600", f"--screenshot={shot}",
             "--hide-scrollbars", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20000          # a page with a coloured table, not a blank one


class Links(html.parser.HTMLParser):
    """Every <a class="first-bad"> (href, text) and every element id."""

    def __init__(self):
        super().__init__()
        self.first_bad: list[list[str]] = []
        self.ids: set[str] = set()
        self._in = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("class") == "first-bad":
            self.first_bad.append([a.get("href", ""), ""])
            self._in = True

    def handle_endtag(self, tag):
        if tag == "a":
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.first_bad[-1][1] += data


def test_a_failing_cell_names_its_first_bad_patch(tmp_path):
    """As a browser renders it: the FAILED cell of a branch whose first bad
    commit was found says which patch, and links to its reproduce block."""
    r = report.load_json(SAMPLE)
    bad = next(b for b in r.branches if not b.ok)
    bad.attribution = {"commit": "3f2c4a1b9d0e" + "0" * 28, "subject": "mm: pagecache add lock",
                       "patch": "patches/mm/0001-mm-pagecache-add-lock.patch", "boots": 1,
                       "skipped": [], "other": []}
    out = tmp_path / "out"
    report.write_all(r, out)
    dom = chromium(tmp_path, "--dump-dom", (out / "index.html").as_uri()).stdout
    links = Links()
    links.feed(dom)
    assert [text for _, text in links.first_bad] == [
        "first bad: patches/mm/0001-mm-pagecache-add-lock.patch"]
    href = links.first_bad[0][0]
    assert href.startswith("#") and href[1:] in links.ids and href.endswith("-repro")
