"""The build gates' logic without a kernel build: which commits --bisect
walks, how compiler and sparse output is read, and what counts as a new
warning (tests/e2e/test_gates.py builds for real)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ktopic.gates import bisectable, check, gatecache, new_warnings
from ktopic.model import manifest
from ktopic.model import results as R
from ktopic.model.workdir import Workdir

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
  CC      init/calibrate.o
/w/src/init/main.c:1783:14: warning: context imbalance in 'do_one' - wrong count at exit
"""


def test_parse_diagnostics():
    ds = new_warnings.parse(HEAD, SRC, OUT)
    assert [(d.file, d.line, d.kind, d.tool) for d in ds] == [
        ("init/main.c", 790, "warning", "gcc"), ("init/main.c", 1625, "warning", "gcc"),
        ("init/main.c", 125, "warning", "sparse"), ("include/linux/x.h", 3, "error", "sparse"),
        # -j interleaves a CC with the CHECK: a warning without [-W...] is sparse's
        ("init/main.c", 1783, "warning", "sparse")]
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
        ("include/linux/x.h:3", "expected ';' before 'int'"),
        ("init/main.c:1783", "context imbalance in 'do_one' - wrong count at exit")]
    assert (r.base_count, r.head_count) == (2, 5)
    assert "  new sparse warning: init/main.c:1783: context imbalance" in "\n".join(r.render())
    assert "init/main.c:1625: unused variable" in "\n".join(r.render())
    f = r.findings()[0]
    assert f.kind == "new_warning" and "int ktopic_unused;" in f.lines[1]
    assert f.line == 0 and "init/main.c:1625" in f.message    # not a console line
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


# --- the gate cache: key and skip logic (fakes for the builds) ----------------

TOOLS = {"gcc": "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", "ld": "GNU ld 2.40",
         "sparse": "0.6.4 (Debian: 0.6.4-3)"}


def _plan(tmp_path, **kw) -> bisectable.Plan:
    frag = tmp_path / "base.config"
    if not frag.exists():
        frag.write_text("CONFIG_A=y\n")
    d = dict(topic="x", branch="topic/x", start="1" * 40, head="3" * 40,
             commits=[("2" * 40, "a"), ("3" * 40, "b")], fragments=[frag],
             build_name="topic_x")
    d.update(kw)
    return bisectable.Plan(**d)


def test_gate_cache_key(tmp_path):
    def key(gate="bisect", tools=TOOLS, rules="r1", **kw):
        return gatecache.key(gatecache.key_parts(gate, _plan(tmp_path, **kw), tools, rules))
    k = key()
    assert k == key() and len(k) == 24
    # what the verdict depends on changes the key ...
    assert key(head="4" * 40) != k
    assert key(start="0" * 40) != k
    assert key(commits=[("5" * 40, "a"), ("3" * 40, "b")]) != k
    assert key(gate="warnings") != k
    assert key(tools=dict(TOOLS, sparse="0.6.5")) != k
    assert key(tools=dict(TOOLS, gcc="gcc (Debian 13.2.0-1) 13.2.0")) != k
    assert key(rules="r2") != k
    other = tmp_path / "other.config"
    other.write_text("CONFIG_A=n\n")
    assert key(fragments=[other]) != k
    # ... what it does not depend on does not: names, subjects, comments in a fragment
    assert key(branch="topic/y", topic="y", build_name="topic_y") == k
    assert key(commits=[("2" * 40, "other subject"), ("3" * 40, "b")]) == k
    same = tmp_path / "same.config"
    same.write_text("# a comment\nCONFIG_A=y\n")
    assert key(fragments=[same]) == k
    files = bisectable.BisectGate.rule_files
    assert gatecache.rules_hash(files) == gatecache.rules_hash(files)
    assert gatecache.rules_hash(files) != gatecache.rules_hash(files[1:])


class _WD(Workdir):
    """A work directory at root (its properties name the layout)."""


def test_gate_cache_keeps_passes_only(tmp_path, monkeypatch):
    monkeypatch.setattr(gatecache, "toolchain", lambda cache: dict(TOOLS))
    cache = gatecache.GateCache(_WD(tmp_path))
    plan = _plan(tmp_path)
    ok = bisectable.BisectResult(ok=True, builds=[bisectable.CommitBuild("2" * 40, "a", True, 3.0),
                                                  bisectable.CommitBuild("3" * 40, "b", True, 4.0)],
                                 total=2)
    assert cache.load("bisect", plan) is None
    assert cache.store("bisect", plan, ok)
    hit = cache.load("bisect", plan)
    assert hit.cached and hit.ok and hit.builds == ok.builds and hit.summary() == ok.summary()
    assert hit.render()[0] == "bisect: ok: 2/2 commits build [cached]"
    assert cache.load("warnings", plan) is None                 # one gate's pass is not the other's
    assert cache.load("bisect", _plan(tmp_path, head="4" * 40)) is None
    # Warnings round-trip with their diagnostics.
    d = new_warnings.Diagnostic("init/main.c", 7, "warning", "old one", "sparse", ["  7 | x"])
    w = new_warnings.WarningsResult(ok=True, files=["init/main.c"], base_count=1, head_count=1)
    assert cache.store("warnings", plan, w)
    assert cache.load("warnings", plan).to_dict() == dict(w.to_dict(), cached=True)
    bad = new_warnings.WarningsResult(ok=False, new=[d], files=["init/main.c"])
    assert new_warnings.WarningsResult.from_dict(bad.to_dict()).new == [d]
    # Failures and errors are not kept.
    other = _plan(tmp_path, head="5" * 40)
    first_bad = bisectable.CommitBuild("5" * 40, "c", False, 1.0, "kernel build failed", ["e"])
    assert not cache.store("bisect", other, bisectable.BisectResult(
        ok=False, builds=[first_bad], total=1, first_bad=first_bad))
    assert not cache.store("warnings", other, bad)
    assert not cache.store("bisect", _plan(tmp_path, error="no branch"),
                           bisectable.BisectResult(ok=True))
    assert cache.load("bisect", other) is None and cache.load("warnings", other) is None
    # A damaged entry is a miss, not an error.
    cache.path("bisect", plan).write_text("{not json")
    assert cache.load("bisect", plan) is None


def test_gate_cache_toolchain_is_remembered(tmp_path, monkeypatch):
    calls = []

    def first_line(cmd):
        calls.append(cmd[0])
        return f"{cmd[0]} 1.0"
    monkeypatch.setattr(gatecache, "_first_line", first_line)
    v = gatecache.toolchain(tmp_path)
    assert set(v) == {"gcc", "ld", "sparse"} and len(calls) == 3
    assert gatecache.toolchain(tmp_path) == v and len(calls) == 3   # no program started


class _Fakes:
    """bisectable.walk/build_head and new_warnings.collect, recorded; a
    topic named in fail_bisect / fail_warnings fails that gate."""

    def __init__(self, monkeypatch):
        self.calls: list[tuple[str, str]] = []
        self.fail_bisect: set[str] = set()
        self.fail_warnings: set[str] = set()
        monkeypatch.setattr(bisectable, "walk", self.walk)
        monkeypatch.setattr(bisectable, "build_head", self.build_head)
        monkeypatch.setattr(new_warnings, "collect", self.collect)
        monkeypatch.setattr(gatecache, "toolchain", lambda cache: dict(TOOLS))

    def walk(self, p, wd, jobs=0, progress=False, log=None, steps=None):
        self.calls.append(("walk", p.topic))
        if p.topic in self.fail_bisect:
            b = bisectable.CommitBuild(p.commits[0][0], p.commits[0][1], False, 1.0, "failed",
                                       ["x.c:1:1: error: nope"])
            return bisectable.BisectResult(ok=False, builds=[b], total=len(p.commits),
                                           first_bad=b)
        return bisectable.BisectResult(ok=True, total=len(p.commits), builds=[
            bisectable.CommitBuild(sha, s, True, 1.0) for sha, s in p.commits])

    def build_head(self, p, wd, jobs=0, progress=False, log=None, steps=None):
        self.calls.append(("head", p.topic))
        return True

    def collect(self, p, wd, at, jobs=0, log=None):
        self.calls.append((f"collect-{at}", p.topic))
        diags = []
        if at == "head" and p.topic in self.fail_warnings:
            diags = [new_warnings.Diagnostic("lib/names.c", 3, "warning", "unused x", "gcc")]
        return new_warnings.Collected(at, p.start if at == "start" else p.head,
                                      ["lib/names.c"], diagnostics=diags)

    def topics(self):
        return sorted({t for _, t in self.calls})


def _gates(generated, bisect=True, warnings=True, wd=None):
    cfg = generated.root / "qemu" / "configs" / "base.config"
    if not cfg.exists():
        cfg.parent.mkdir(parents=True)
        cfg.write_text("CONFIG_64BIT=y\n")
    m = manifest.load(generated.manifest)
    wd = wd or Workdir(generated.workdir)
    tvs = [check.TopicVerdict(t, m.topics[t].branch) for t in ("counters", "names")]
    log: list[str] = []
    gates = tuple(g for g, on in (("bisect", bisect), ("warnings", warnings)) if on)
    check._run_gates(m, wd, tvs, check.Options(gates=gates), log.append)
    return {tv.topic: tv for tv in tvs}, log


def test_unchanged_topics_are_not_walked_again(generated, monkeypatch):
    fakes = _Fakes(monkeypatch)
    first, _ = _gates(generated)
    assert fakes.topics() == ["counters", "names"]
    assert ("walk", "counters") in fakes.calls and ("collect-head", "names") in fakes.calls
    assert first["counters"].gates["bisect"].ok and not first["counters"].gates["bisect"].cached
    fakes.calls.clear()

    # Nothing changed: no build, no lock, one line per topic.
    wd = Workdir(generated.workdir)
    monkeypatch.setattr(wd, "lock", lambda *a, **k: pytest.fail("the lock was taken"))
    again, log = _gates(generated, wd=wd)
    assert fakes.calls == []
    assert [ln.split(":")[0] for ln in log] == ["gates topic/counters", "gates topic/names"]
    assert all(": cached: bisect and warnings passed at " in ln for ln in log), log
    for tv in again.values():
        assert tv.gates["bisect"].cached and tv.gates["warnings"].cached and tv.gates["bisect"].ok and tv.gates["warnings"].ok
    assert again["counters"].gates["bisect"].builds == first["counters"].gates["bisect"].builds
    text = "\n".join(check.render(again["counters"], tools=False))
    assert "bisect: ok: 2/2 commits build [cached]" in text
    assert "warnings: ok: 0 new (start 0, head 0) in 1 file(s) [cached]" in text


def test_a_moved_head_is_walked_again(generated, monkeypatch):
    fakes = _Fakes(monkeypatch)
    _gates(generated)
    fakes.calls.clear()
    # counters' last commit is amended (its message): counters is walked
    # again, and so is names: it was made on the old counters, so its range
    # now reaches below the replaced commit (another start, another key).
    gd = generated.workdir / "linux.git"
    tree = generated.git("rev-parse", "topic/counters^{tree}").strip()
    parent = generated.git("rev-parse", "topic/counters~1").strip()
    new = subprocess.run(["git", f"--git-dir={gd}", "commit-tree", tree, "-p", parent, "-m",
                          "lib/counter: return even more, amended"], capture_output=True,
                         text=True, check=True,
                         env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e.org",
                                  GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e.org")
                         ).stdout.strip()
    generated.git("update-ref", "refs/heads/topic/counters", new)
    tvs, log = _gates(generated)
    assert ("walk", "counters") in fakes.calls and ("walk", "names") in fakes.calls
    assert tvs["counters"].gates["bisect"].builds[-1].subject == "lib/counter: return even more, amended"
    assert not tvs["counters"].gates["bisect"].cached and not tvs["names"].gates["bisect"].cached
    assert len(tvs["names"].gates["bisect"].builds) == 2
    assert any(ln.startswith("gates topic/counters: bisect and warnings at ") for ln in log), log
    fakes.calls.clear()
    _gates(generated)
    assert fakes.calls == []


def test_failures_are_walked_again(generated, monkeypatch):
    fakes = _Fakes(monkeypatch)
    fakes.fail_bisect.add("counters")
    fakes.fail_warnings.add("names")
    tvs, _ = _gates(generated)
    assert not tvs["counters"].gates["bisect"].ok and not tvs["names"].gates["warnings"].ok
    assert tvs["names"].gates["bisect"].ok
    fakes.calls.clear()
    tvs, log = _gates(generated)
    # counters failed bisect: walked again (its warnings were not made: it
    # did not build); names passed bisect (cached), failed warnings: only
    # the warnings again, on a head build instead of a walk.
    assert ("walk", "counters") in fakes.calls
    assert [c for c in fakes.calls if c[1] == "names"] == [
        ("collect-start", "names"), ("head", "names"), ("collect-head", "names")]
    assert tvs["names"].gates["bisect"].cached and not tvs["names"].gates["warnings"].cached
    assert any("names: warnings at" in ln and "bisect cached" in ln for ln in log), log
    assert not tvs["counters"].gates["bisect"].ok and not tvs["counters"].gates["bisect"].cached


def test_one_gate_cached_serves_a_run_of_that_gate_only(generated, monkeypatch):
    fakes = _Fakes(monkeypatch)
    _gates(generated, warnings=False)
    assert {c for c, _ in fakes.calls} == {"walk"}
    fakes.calls.clear()
    tvs, _ = _gates(generated, warnings=False)
    assert fakes.calls == [] and "warnings" not in tvs["names"].gates
    # --warnings later: only the warnings are made (the head built, not walked).
    tvs, _ = _gates(generated)
    assert {c for c, _ in fakes.calls} == {"collect-start", "head", "collect-head"}
    assert tvs["counters"].gates["bisect"].cached and tvs["counters"].gates["warnings"].ok


def test_check_branch_is_cached_when_the_gates_are(monkeypatch, tmp_path):
    """ci's check stage says cached only when the gate verdicts came from the
    cache too."""
    pv = check.PatchVerdict("patches/x/1.patch", "x: y", False, cached=True)

    def fake(m, wd, names, opts, log=None, steps=None):
        tv = check.TopicVerdict("x", "topic/x", patches=[pv])
        if "bisect" in opts.gates:
            tv.gates["bisect"] = bisectable.BisectResult(ok=True, cached=cached)
        return [tv]
    monkeypatch.setattr(check, "check_topics", fake)
    for cached, status in ((True, R.CACHED), (False, R.PASS)):
        st, _ = check.check_branch(None, None, "x", gates=("bisect",))
        assert st.status == status
    cached = False
    assert check.check_branch(None, None, "x")[0].status == R.CACHED


# --- options a later commit of the topic adds --------------------------------

def test_options_a_later_commit_adds_are_left_out_before_the_head(tmp_path, monkeypatch):
    """The fragment describes the head: at an earlier commit an option that
    does not exist yet cannot stick, and that is not the commit's failure;
    an option that exists and does not stick still is."""
    from ktopic.kernel import build as buildmod
    from ktopic.kernel import kconfig
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "Kconfig").write_text('source "lib/Kconfig"\n')
    (src / "lib" / "Kconfig").write_text("config SIX\n\tbool \"six\"\n"
                                         "menuconfig SIX_MENU\n\tbool \"menu\"\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e.org")
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(src), *cmd], check=True, env=env)
    gd = src / ".git"
    assert bisectable.undefined_symbols(gd, "HEAD", ["CONFIG_SIX", "CONFIG_SIX_MENU",
                                                    "CONFIG_SIX_KUNIT", "CONFIG_SI"]) == \
        ["CONFIG_SI", "CONFIG_SIX_KUNIT"]
    frag = tmp_path / "six.config"
    frag.write_text("# six\nCONFIG_SIX=y\nCONFIG_SIX_KUNIT=y\n# CONFIG_SIX_KUNIT_X is not set\n")
    copies = bisectable.without_symbols([frag], ["CONFIG_SIX_KUNIT", "CONFIG_SIX_KUNIT_X"],
                                        tmp_path / "out")
    assert copies[0].read_text() == "# six\nCONFIG_SIX=y\n"

    # build_commit: a value that did not stick, of an option the commit does
    # not define, is left out and the commit built again.
    seen = []

    def fake_build(root, git_dir, req):
        values = kconfig.requested_values(req.fragments)
        seen.append(sorted(values))
        missing = [f"{n}=y (got: not set)" for n in values if stick.get(n) is False]
        cfg = kconfig.ConfigResult(config=tmp_path / ".config", fragment_hash="", config_hash="",
                                   missing=missing)
        return buildmod.BuildResult(name=req.name, ok=not missing, out=tmp_path, config=cfg,
                                    error="config" if missing else "")
    monkeypatch.setattr(buildmod, "build", fake_build)
    plan = bisectable.Plan("six", "topic/six", start="s", head="h", fragments=[frag],
                           build_name="topic_six")
    wd = _WD(tmp_path)
    wd.git_dir = gd
    stick = {"CONFIG_SIX_KUNIT": False}
    b = bisectable.build_commit(plan, wd, "HEAD", None)
    assert b.ok and seen == [["CONFIG_SIX", "CONFIG_SIX_KUNIT", "CONFIG_SIX_KUNIT_X"],
                             ["CONFIG_SIX", "CONFIG_SIX_KUNIT_X"]]
    assert b.notes == ["not defined at this commit, left out: CONFIG_SIX_KUNIT"]
    r = bisectable.BisectResult(ok=True, builds=[b], total=1)
    assert "      note: not defined at this commit, left out: CONFIG_SIX_KUNIT" in r.render()
    # at the head every value must stick
    seen.clear()
    head = bisectable.Plan("six", "topic/six", start="s", head="HEAD", fragments=[frag],
                           build_name="topic_six")
    assert not bisectable.build_commit(head, wd, "HEAD", None).ok and len(seen) == 1
    # an option the commit defines that does not stick fails the commit
    seen.clear()
    stick = {"CONFIG_SIX": False}
    b = bisectable.build_commit(plan, wd, "HEAD", None)
    assert not b.ok and len(seen) == 1 and not b.notes


def test_a_c_file_included_by_another_is_not_compiled_alone(tmp_path):
    """lib/closure_test.c is #included by lib/closure.c: compiling it on its
    own gives only errors, so the warnings gate leaves it to closure.o."""
    from ktopic.gates import new_warnings
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / ".closure.o.cmd").write_text("deps := \\\n  /src/lib/closure.c \\\n  /src/lib/closure_test.c \\\n")
    (lib / ".names.o.cmd").write_text("deps := \\\n  /src/lib/names.c \\\n")
    assert new_warnings.included_only(tmp_path, "lib/closure_test.c")
    assert not new_warnings.included_only(tmp_path, "lib/closure.c")    # built on its own
    assert not new_warnings.included_only(tmp_path, "lib/fresh.c")      # in no object yet


def _one_commit_topic(tmp_path):
    """A work directory on a repository whose topic x adds a line to
    lib/a.c in one commit: (wd, plan)."""
    src = tmp_path / "repo"
    (src / "lib").mkdir(parents=True)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e.org")

    def git(*a):
        return subprocess.run(["git", "-C", str(src), *a], check=True, env=env,
                              capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    (src / "lib/a.c").write_text("int a;\n")
    git("add", "-A")
    git("commit", "-qm", "start")
    start = git("rev-parse", "HEAD")
    (src / "lib/a.c").write_text("int a;\nint b;\n")
    git("commit", "-qam", "head")
    wd = _WD(tmp_path / "work")
    wd.git_dir = src / ".git"
    head = git("rev-parse", "HEAD")
    return wd, bisectable.Plan("x", "topic/x", start=start, head=head,
                               commits=[(head, "head")], build_name="topic_x")


def test_the_warnings_pass_leaves_the_build_directory_as_it_was(tmp_path, monkeypatch):
    """W=1/sparse compiles the changed objects for real (they are moved
    aside first), then puts the normal ones back with their mtimes: the
    build right after the walk has nothing to compile or link again."""
    from ktopic.kernel import build as buildmod
    from ktopic.kernel import kconfig
    wd, plan = _one_commit_topic(tmp_path)
    out = wd.build_dir("topic_x")
    (out / "lib").mkdir(parents=True)
    (out / ".config").write_text("CONFIG_A=y\n")
    obj, cmd = out / "lib/a.o", out / "lib/.a.o.cmd"
    obj.write_text("normal")
    cmd.write_text("savedcmd_lib/a.o := gcc -c")
    for f in (obj, cmd):
        os.utime(f, (1000, 1000))
    monkeypatch.setattr(buildmod.Worktree, "checkout", lambda self, commit: None)
    monkeypatch.setattr(kconfig, "configure", lambda req: None)
    ran = []
    real_run = subprocess.run

    def fake_make(cmd_, **kw):
        if cmd_[0] != "make":
            return real_run(cmd_, **kw)
        ran.append(obj.exists())
        obj.write_text("W=1")
        cmd.write_text("savedcmd_lib/a.o := gcc -c -Wextra")
        return subprocess.CompletedProcess(cmd_, 0, "  CC      lib/a.o\n"
                                           "lib/a.c:2:5: warning: no previous declaration "
                                           "for 'b' [-Wmissing-variable-declarations]\n", "")
    monkeypatch.setattr(new_warnings.subprocess, "run", fake_make)
    col = new_warnings.collect(plan, wd, at="head")
    assert ran == [False]                                  # compiled for real
    assert [d.message for d in col.diagnostics] == [
        "no previous declaration for 'b' [-Wmissing-variable-declarations]"]
    assert col.not_built == []
    assert obj.read_text() == "normal" and obj.stat().st_mtime == 1000
    assert cmd.read_text() == "savedcmd_lib/a.o := gcc -c" and cmd.stat().st_mtime == 1000
    assert not (out / new_warnings.STASH).exists()


def test_the_warnings_pass_at_a_new_directory_configures_its_seed(tmp_path, monkeypatch):
    """W=1/sparse at a topic's start, in a build directory never used: it
    starts from the seed (a copy of a finished build) and is configured,
    not built.  A full build there is compiled again by the walk's first
    commit whenever that commit changes a header.  Without a finished
    seed the start is built first, as before."""
    from ktopic.gates import new_warnings
    from ktopic.kernel import build as buildmod
    from ktopic.kernel import kconfig
    wd, plan = _one_commit_topic(tmp_path)
    seed = wd.build_dir("base")
    (seed / "arch/x86/boot").mkdir(parents=True)
    (seed / "arch/x86/boot/bzImage").write_text("kernel")
    (seed / "lib").mkdir()
    (seed / "lib/a.o").write_text("base object")
    monkeypatch.setattr(buildmod.Worktree, "checkout", lambda self, commit: None)
    configured, built = [], []

    def configure(req):
        configured.append(req.out)
        (req.out / ".config").write_text("CONFIG_A=y\n")
    monkeypatch.setattr(kconfig, "configure", configure)
    out = wd.build_dir("topic_x")

    def build_commit(plan, wd, commit, parent, jobs):
        built.append(commit)
        out.mkdir(parents=True)
    monkeypatch.setattr(new_warnings, "build_commit", build_commit)
    real_run = subprocess.run
    monkeypatch.setattr(new_warnings.subprocess, "run", lambda cmd_, **kw: real_run(
        cmd_, **kw) if cmd_[0] != "make" else subprocess.CompletedProcess(cmd_, 0, "", ""))
    new_warnings.collect(plan, wd, at="start")
    assert built == [] and configured == [out]
    assert (out / "lib/a.o").read_text() == "base object"      # the seed's, kept
    (seed / "arch/x86/boot/bzImage").unlink()                   # no finished seed
    shutil.rmtree(out)
    new_warnings.collect(plan, wd, at="start")
    assert built == [plan.start]


def test_every_gate_result_round_trips_and_heads_its_lines():
    """The results share their first line and dict form (gates/base.py):
    nested dataclasses, a single one and None come back as they were."""
    from ktopic.gates import registry
    bad = bisectable.CommitBuild(commit="c" * 40, subject="two", ok=False, seconds=3.0,
                         error="make failed", details=["a.c:1: error: x"])
    good = bisectable.CommitBuild(commit="b" * 40, subject="one", ok=True, seconds=2.0)
    r = bisectable.BisectResult(ok=False, builds=[good, bad], total=2, first_bad=bad, start_ok=True)
    back = bisectable.BisectResult.from_dict(r.to_dict())
    assert back == r and back.first_bad == bad and back.builds[0] == good
    assert bisectable.BisectResult.from_dict(bisectable.BisectResult(ok=True).to_dict()).first_bad is None
    for name, gate in registry.GATES.items():
        failed = gate().failed("no branch topic/x")
        assert failed.render() == [f"{failed.label}: FAIL: no branch topic/x"], name
        assert type(failed).from_dict(failed.to_dict()) == failed, name


def test_beyond_counts_what_the_head_shows_more_often():
    from ktopic.gates.base import beyond
    start = [("a", 1), ("a", 9), ("b", 2)]
    head = [("a", 3), ("b", 4), ("a", 5), ("a", 7), ("c", 1)]
    assert beyond(start, head, lambda x: x[0]) == [("a", 7), ("c", 1)]
    assert beyond(head, start, lambda x: x[0]) == []
