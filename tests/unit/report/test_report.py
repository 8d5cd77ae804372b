"""ktopic.report.report: JSON round trip, JUnit XML, HTML escaping, terminal tables."""

from __future__ import annotations

import argparse
import html.parser
import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.commands import cmd_report  # noqa: E402
from ktopic.report import report  # noqa: E402
from ktopic.errors import KtopicError  # noqa: E402
from ktopic.model.results import (BranchResult, CaseResult, Finding, Report,  # noqa: E402
                            StageResult, SuiteResult)

SAMPLE = REPO / "tests" / "data" / "reports" / "sample.json"
EVIL = "<script>alert('x')</script>"


def small_report() -> Report:
    """Two branches: one clean, one with a failed case, a crashed suite, a
    finding (with markup and control characters) and a finding the base
    shows too."""
    ok = BranchResult(
        branch="topic/ok", topic="ok", head="1" * 40, tree="a" * 40,
        stages=[StageResult("generate", "pass", 0.1, "1 patch", "topic_ok/generate.log"),
                StageResult("build", "cached", 0.0, "cached", "topic_ok/build.log"),
                StageResult("boot", "pass", 1.5, "booted", "topic_ok/console.log")],
        suites=[SuiteResult("ok_suite", "pass", [CaseResult("a", "pass"),
                                                 CaseResult("b", "skip")])])
    bad = BranchResult(
        branch="topic/bad", topic="bad", head="2" * 40, tree="b" * 40, config_hash="cafe",
        stages=[StageResult("generate", "pass", 0.1, "2 patches", "topic_bad/generate.log"),
                StageResult("check", "skip", 0.0, "", ""),
                StageResult("build", "pass", 40.0, "bzImage", "topic_bad/build.log"),
                StageResult("boot", "fail", 2.0, f"oops {EVIL}", "topic_bad/console.log")],
        suites=[SuiteResult("bad_suite", "fail", [
                    CaseResult("works", "pass"),
                    CaseResult("broken", "fail", ["    Expected x == 1, but", "    x == 2"]),
                    CaseResult("crashes", "crash", ["Oops"])]),
                SuiteResult("empty_crash", "crash", [])],
        findings=[Finding("oops", f"Oops in {EVIL} & \"friends\"", 42,
                          [f"BUG: {EVIL}", "ansi \x1b[31mred\x1b[0m nul \x00 end"]),
                  Finding("warning", "known WARNING", 7, ["WARNING: old"], in_base=True)],
        repro={"config": "topic_bad/config",
               "qemu": "qemu-system-x86_64 -smp 2 -append 'console=ttyS0 <x>'",
               "initramfs": "sha256:0123", "toolchain": "gcc 12.2.0"})
    return Report(base_version="6.1.192", branches=[ok, bad])


# ------------------------------------------------------------------ JSON

def test_json_round_trip(tmp_path):
    r = small_report()
    path = report.write_json(r, tmp_path)
    assert path == tmp_path / "report.json"
    again = report.load_json(path)
    assert again == r
    assert again.to_json() == r.to_json()
    # Atomic write leaves no temporary file behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_sample_fixture_round_trips():
    text = SAMPLE.read_text()
    assert Report.from_json(text).to_json() == text


def test_load_json_errors(tmp_path):
    with pytest.raises(KtopicError, match="run `ktopic ci` first"):
        report.load_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "base_version": "6.1",\n  oops\n}\n')
    with pytest.raises(KtopicError) as e:
        report.load_json(bad)
    assert e.value.line == 3 and "not valid JSON" in str(e.value)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"branches": []}))
    with pytest.raises(KtopicError, match="not a ktopic report"):
        report.load_json(wrong)


# ------------------------------------------------------------ file names

@pytest.mark.parametrize("branch,name", [
    ("topic/mm", "topic_mm"), ("for-next", "for-next"), ("a/b/c", "a_b_c"),
    (".hidden/x", "_.hidden_x"), ("v6.1+port", "v6.1+port"), ("/", "_"),
])
def test_branch_dir(branch, name):
    assert report.branch_dir(branch) == name
    assert "/" not in name and not name.startswith(".")


def test_branch_dir_collision_is_an_error(tmp_path):
    r = Report("6.1", [BranchResult("topic/a", "a"), BranchResult("topic_a", "x")])
    with pytest.raises(KtopicError, match="both map to out/topic_a/"):
        report.write_junit(r, tmp_path)


# ----------------------------------------------------------------- JUnit

def parse_junit(path: Path) -> ET.Element:
    return ET.parse(path).getroot()     # raises if not well-formed


def test_junit_files_and_counts(tmp_path):
    r = small_report()
    paths = report.write_junit(r, tmp_path)
    assert paths == [tmp_path / "topic_ok" / "junit.xml", tmp_path / "topic_bad" / "junit.xml"]

    ok = parse_junit(paths[0])
    assert ok.tag == "testsuites"
    names = [s.get("name") for s in ok.findall("testsuite")]
    assert names == ["topic/ok stage generate", "topic/ok stage build",
                     "topic/ok stage boot", "topic/ok console", "ok_suite"]
    assert (ok.get("tests"), ok.get("failures"), ok.get("errors"), ok.get("skipped")) == \
        ("6", "0", "0", "1")

    bad = parse_junit(paths[1])
    suites = {s.get("name"): s for s in bad.findall("testsuite")}
    assert list(suites) == ["topic/bad stage generate", "topic/bad stage check",
                            "topic/bad stage build", "topic/bad stage boot",
                            "topic/bad console", "bad_suite", "empty_crash"]
    # Stages: boot failed, check skipped.
    assert suites["topic/bad stage boot"].get("failures") == "1"
    assert suites["topic/bad stage check"].get("skipped") == "1"
    # Findings: one failure, the base's one skipped; quoted lines in the text.
    console = suites["topic/bad console"]
    assert (console.get("tests"), console.get("failures"), console.get("skipped")) == ("2", "1", "1")
    failure = console.find("testcase/failure")
    assert EVIL in failure.text and "topic_bad/console.log:42" in failure.text
    assert "\x1b" not in failure.text and "\\x1b[31mred" in failure.text
    assert "qemu-system-x86_64 -smp 2" in failure.text          # the repro
    # KUnit cases: one failure, one error (crash); the crashed suite with no
    # cases still shows up as an error.
    s = suites["bad_suite"]
    assert (s.get("tests"), s.get("failures"), s.get("errors")) == ("3", "1", "1")
    broken = [c for c in s.findall("testcase") if c.get("name") == "broken"][0]
    assert broken.get("classname") == "topic/bad.bad_suite"
    assert "x == 2" in broken.find("failure").text
    assert suites["empty_crash"].get("errors") == "1"
    # Totals are the sums over suites.
    assert (bad.get("tests"), bad.get("failures"), bad.get("errors"), bad.get("skipped")) == \
        ("10", "3", "2", "2")    # 4 stages + 2 findings + 3 + 1 cases


def test_junit_has_no_invalid_characters():
    b = BranchResult("x", "x", stages=[StageResult("boot", "fail", 0, "bad \x00\x07 \ud800")],
                     findings=[Finding("panic", "\x1b[0m", 1, ["\x0c\x7f\x85 \ufffe"])])
    doc = report.junit_xml(b)
    root = ET.fromstring(doc)
    assert root.get("failures") == "2"


# ------------------------------------------------------------------ HTML

class TagCollector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.hrefs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.hrefs += [v for k, v in attrs if k in ("href", "src")]

    def handle_data(self, data):
        self.text.append(data)


def render(tmp_path: Path, r: Report | None = None) -> tuple[str, TagCollector]:
    r = r or small_report()
    path = report.write_html(r, tmp_path)
    text = path.read_text()
    p = TagCollector()
    p.feed(text)
    return text, p


def test_html_escapes_findings(tmp_path):
    text, p = render(tmp_path)
    assert "script" not in p.tags                 # nothing became markup
    assert "<script" not in text.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert EVIL in "".join(p.text)                # but the reader sees it as text
    assert "\x1b" not in text and "\x00" not in text
    assert "&amp; &quot;friends&quot;" in text


def test_html_is_self_contained_with_relative_links(tmp_path):
    text, p = render(tmp_path)
    assert "style" in p.tags and "link" not in p.tags and "img" not in p.tags
    assert "Content-Security-Policy" in text
    for href in p.hrefs:
        assert not href.startswith(("http:", "https:", "file:", "/", "//")), href
    assert "topic_bad/console.log" in p.hrefs
    assert "topic_bad/junit.xml" in p.hrefs
    assert "#b-topic_bad" in p.hrefs


def test_html_matrix_legend_and_repro(tmp_path):
    text, p = render(tmp_path)
    assert 'id="matrix"' in text and 'id="legend"' in text
    for status in ("pass", "fail", "skip", "cached", "crash"):
        assert f'class="st {status}"' in text
    # The failure of topic/bad says what reproduces it.
    section = text[text.index('id="b-topic_bad"'):]
    assert "ci/run-branch topic/bad" in section
    assert "qemu-system-x86_64 -smp 2 -append &#x27;console=ttyS0 &lt;x&gt;&#x27;" in section
    assert "sha256:0123" in section and "gcc 12.2.0" in section
    assert "crashes" in section and "x == 2" in section
    assert "also on base" in section
    # A suite that crashed with no case to show for it is still a failure.
    assert "the suite itself crashed" in section
    assert "1/3 (2 failed, 1 suite crashed)" in text


def test_html_links_repro_files_that_exist(tmp_path):
    (tmp_path / "topic_bad").mkdir()
    (tmp_path / "topic_bad" / "config").write_text("CONFIG_X=y\n")
    _, p = render(tmp_path)
    assert "topic_bad/config" in p.hrefs


def test_html_quotes_odd_log_paths(tmp_path):
    r = Report("6.1", [BranchResult("b", "b", stages=[
        StageResult("boot", "fail", 0, "", 'weird dir/"x" <y>.log')])])
    text, p = render(tmp_path, r)
    assert "weird%20dir/%22x%22%20%3Cy%3E.log" in p.hrefs


def test_html_makes_absolute_logs_under_out_relative(tmp_path):
    r = Report("6.1", [BranchResult("b", "b", stages=[
        StageResult("boot", "fail", 0, "", str(tmp_path / "b" / "console.log"))])])
    _, p = render(tmp_path, r)
    assert "b/console.log" in p.hrefs
    assert r.branches[0].stages[0].log == str(tmp_path / "b" / "console.log")  # not changed


def test_html_is_deterministic(tmp_path):
    a = report.render_html(small_report())
    assert a == report.render_html(small_report())


# -------------------------------------------------------------- terminal

def test_static_table():
    from rich.console import Console
    con = Console(record=True, width=100, force_terminal=False)
    report.print_report(small_report(), con)
    out = con.export_text()
    assert "topic/ok" in out and "topic/bad" in out
    assert "cached" in out and "1/3" in out
    assert "topic/bad: boot failed" in out
    assert "topic/bad: bad_suite.broken fail" in out
    assert "topic/bad: suite empty_crash crash" in out


def test_live_table_plain_lines_when_not_a_terminal():
    from rich.console import Console
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, width=80)
    with report.LiveTable(["topic/a"], console=con) as live:
        assert not live.interactive
        live.update("topic/a", "build", "running")
        live.update("topic/a", "build", "pass", "45 s")
        live.update("topic/b", "boot", "fail", "panic")
    lines = buf.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].endswith("topic/a: build running")
    assert lines[1].endswith("topic/a: build pass (45 s)")
    assert lines[2].endswith("topic/b: boot fail (panic)")
    assert "\x1b" not in buf.getvalue()


def test_live_table_on_a_terminal():
    from rich.console import Console
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=100)
    with report.LiveTable(["topic/a", "topic/b"], console=con) as live:
        assert live.interactive
        live.update("topic/a", "build", "pass")
        live.update("topic/b", "boot", "fail", "lockdep")
    out = buf.getvalue()
    assert "topic/a" in out and "lockdep" in out and "pending" in out
    assert live.rows == {"topic/a": {"build": "pass"}, "topic/b": {"boot": "fail"}}


# ------------------------------------------------------------------- CLI

def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("-m", "--manifest", type=Path, default=None)
    cmd_report.register(p.add_subparsers(dest="command"))
    return p.parse_args(argv)


def test_report_command_rerenders(tmp_path, capsys):
    r = small_report()
    report.write_json(r, tmp_path)
    args = parse(["report", "--json", str(tmp_path / "report.json")])
    assert args.func(args) == 0
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "topic_bad" / "junit.xml").is_file()
    assert "topic/bad" in capsys.readouterr().out


def test_report_command_html_only(tmp_path, capsys):
    report.write_json(small_report(), tmp_path)
    args = parse(["report", "--json", str(tmp_path / "report.json"), "--html"])
    assert args.func(args) == 0
    assert (tmp_path / "index.html").is_file()
    assert not (tmp_path / "topic_bad").exists()


def test_report_command_default_is_out_beside_manifest(tmp_path, capsys):
    report.write_json(small_report(), tmp_path / "out")
    (tmp_path / "branches.yaml").write_text("")
    args = parse(["-m", str(tmp_path / "branches.yaml"), "report", "--junit"])
    assert args.func(args) == 0
    assert (tmp_path / "out" / "topic_ok" / "junit.xml").is_file()
    assert not (tmp_path / "out" / "index.html").exists()


def test_report_command_without_report(tmp_path):
    args = parse(["report", "--json", str(tmp_path / "nope.json")])
    with pytest.raises(KtopicError):
        args.func(args)
