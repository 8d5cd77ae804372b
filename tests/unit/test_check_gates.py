"""The build gates' logic without a kernel build: which commits --bisect
walks, how compiler and sparse output is read, and what counts as a new
warning (tests/e2e/test_gates.py builds for real)."""

from __future__ import annotations

from pathlib import Path

from ktopic import bisectable, manifest, new_warnings
from ktopic.workdir import Workdir

SRC = Path("/w/src")
OUT = Path("/w/build/topic_x")

START = """\
  CC      init/main.o
/w/src/init/main.c:780:13: warning: no previous prototype for 'do_one' [-Wmissing-prototypes]
  780 | void __init do_one(void)
      |             ^~~~~~
  CHECK   /w/src/init/main.c
/w/src/init/main.c:120:6: warning: symbol 'late_time_init' was not declared. Should it be static?
"""

HEAD = """\
  CC      init/main.o
/w/src/init/main.c:790:13: warning: no previous prototype for 'do_one' [-Wmissing-prototypes]
  790 | void __init do_one(void)
      |             ^~~~~~
/w/src/init/main.c:1625:13: warning: unused variable 'ktopic_unused' [-Wunused-variable]
 1625 |         int ktopic_unused;
      |             ^~~~~~~~~~~~~
  CHECK   /w/src/init/main.c
/w/src/init/main.c:125:6: warning: symbol 'late_time_init' was not declared. Should it be static?
./include/linux/x.h:3:1: error: expected ';' before 'int'
"""


def test_parse_diagnostics():
    ds = new_warnings.parse(HEAD, SRC, OUT)
    assert [(d.file, d.line, d.kind, d.tool) for d in ds] == [
        ("init/main.c", 790, "warning", "gcc"), ("init/main.c", 1625, "warning", "gcc"),
        ("init/main.c", 125, "warning", "sparse"), ("include/linux/x.h", 3, "error", "sparse")]
    assert ds[1].lines == [" 1625 |         int ktopic_unused;",
                           "      |             ^~~~~~~~~~~~~"]
    assert ds[1].message == "unused variable 'ktopic_unused' [-Wunused-variable]"
    # gcc in a UTF-8 locale quotes typographically: the same message
    utf = new_warnings.parse("/w/src/a.c:1:2: warning: unused variable \u2018x\u2019\n", SRC, OUT)
    assert utf[0].message == "unused variable 'x'"


def test_new_warnings_ignore_line_numbers_and_count():
    before = new_warnings.Collected("start", "s", ["init/main.c"],
                                    diagnostics=new_warnings.parse(START, SRC, OUT))
    after = new_warnings.Collected("head", "h", ["init/main.c"],
                                   diagnostics=new_warnings.parse(HEAD, SRC, OUT))
    r = new_warnings.compare(before, after)
    assert not r.ok
    assert [(d.where(), d.message) for d in r.new] == [
        ("init/main.c:1625", "unused variable 'ktopic_unused' [-Wunused-variable]"),
        ("include/linux/x.h:3", "expected ';' before 'int'")]
    assert (r.base_count, r.head_count) == (2, 4)
    assert "init/main.c:1625: unused variable" in "\n".join(r.render())
    f = r.findings()[0]
    assert f.kind == "new_warning" and f.line == 1625 and "int ktopic_unused;" in f.lines[1]
    # The same warning twice where the start had it once: one is new.
    twice = new_warnings.Collected("head", "h", ["init/main.c"],
                                   diagnostics=new_warnings.parse(START + START, SRC, OUT))
    r2 = new_warnings.compare(before, twice)
    assert len(r2.new) == 0        # the same file:line twice is one diagnostic (a header, per object)
    moved = START.replace("780:13", "900:13").replace("780 |", "900 |")
    r3 = new_warnings.compare(before, new_warnings.Collected(
        "head", "h", ["init/main.c"], diagnostics=new_warnings.parse(START + moved, SRC, OUT)))
    assert [d.line for d in r3.new] == [900]
    assert new_warnings.compare(before, before).ok


def test_bisect_plan_is_the_topics_own_commits(generated):
    m = manifest.load(generated.manifest)
    wd = Workdir(generated.workdir)
    counters = bisectable.plan(m, wd, "counters")
    names = bisectable.plan(m, wd, "names")
    assert not counters.error and not names.error
    assert [s for _, s in counters.commits] == ["lib/counter: return more",
                                               "lib/counter: return even more"]
    assert counters.start == generated.git("rev-parse", "base").strip()
    # names depends on counters: only its own commit, started on counters' head
    assert [s for _, s in names.commits] == ["lib/names: rename"]
    assert names.start == generated.git("rev-parse", "topic/counters").strip()
    assert names.build_name == "topic_names"
    assert [f.name for f in names.fragments] == ["base.config"]
    allp = bisectable.plan(m, wd, "integration")
    assert len(allp.commits) == 3 and allp.branch == "for-next"


def test_bisect_plan_without_branch(imported):
    m = manifest.load(imported.manifest)
    p = bisectable.plan(m, Workdir(imported.workdir), "counters")
    assert p.error.startswith("no branch topic/counters in the work repository")
    r = bisectable.walk(p, Workdir(imported.workdir))
    assert not r.ok and r.findings()[0].kind == "bisect"


def test_bisect_result_rendering():
    bad = bisectable.CommitBuild("a" * 40, "init: call it", False, 3.0, "kernel build failed",
                                 ["init/main.c:10:5: error: implicit declaration of function 'f'",
                                  "make[2]: *** [init/main.o] Error 1"])
    r = bisectable.BisectResult(ok=False, builds=[bad], total=2, first_bad=bad, start_ok=True)
    assert r.summary() == ("aaaaaaaaaaaa (init: call it) does not build: init/main.c:10:5: "
                           "error: implicit declaration of function 'f'")
    assert r.findings()[0].lines[0].startswith("init/main.c:10:5: error")
    ok = bisectable.BisectResult(ok=True, builds=[bisectable.CommitBuild("b" * 40, "x", True)],
                                 total=1)
    assert ok.summary() == "1/1 commits build" and not ok.findings()
