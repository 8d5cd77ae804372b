"""The coccicheck gate on a small repository with a fake spatch (which
reports every line holding BAD), and once with the real spatch on a file
with a known hit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ktopic.gates import bisectable, check, coccicheck, gatecache, registry
from ktopic.model.manifest import Waiver

ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e.org", GIT_COMMITTER_NAME="t",
           GIT_COMMITTER_EMAIL="t@e.org", GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent")

FAKE_SPATCH = """\
import os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("spatch version 0.0-fake"); sys.exit(0)
assert "-D" in args and "report" in args and "--very-quiet" in args, args
script = args[args.index("--cocci-file") + 1]
if "virtual report" not in open(script).read():
    sys.exit(3)
name = os.path.basename(script)
for d, _, files in sorted(os.walk(args[args.index("--dir") + 1])):
    for f in sorted(files):
        for n, line in enumerate(open(os.path.join(d, f)), 1):
            if "BAD" in line:
                print(f"{os.path.join(d, f)}:{n}:1-3: WARNING: {name} does not like this")
"""

COCCI = "// Options: --no-includes\nvirtual report\n@r@\n@@\nf();\n"


@pytest.fixture
def fake_spatch(tmp_path, monkeypatch):
    exe = tmp_path / "bin" / "spatch"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\n" + FAKE_SPATCH)
    exe.chmod(0o755)
    monkeypatch.setattr(coccicheck, "SPATCH", str(exe))
    return exe


@pytest.fixture
def repo(tmp_path):
    """base: lib/a.c (one BAD line), lib/b.c, two scripts; topic/x: a.c
    gets lines above its old BAD and a new BAD, b.c is untouched."""
    src = tmp_path / "src"
    src.mkdir()

    def git(*a):
        return subprocess.run(["git", *a], cwd=src, env=ENV, check=True, capture_output=True,
                              text=True).stdout.strip()
    git("init", "-q", "-b", "base")
    (src / "scripts/coccinelle/misc").mkdir(parents=True)
    (src / "scripts/coccinelle/misc/bad_thing.cocci").write_text(COCCI)
    (src / "scripts/coccinelle/misc/patch_only.cocci").write_text("virtual patch\n")
    (src / "lib").mkdir()
    (src / "lib/a.c").write_text("int a;\nint BAD_old;\n")
    (src / "lib/b.c").write_text("int BAD_b;\n")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    start = git("rev-parse", "HEAD")
    (src / "lib/a.c").write_text("int a;\nint x;\nint y;\nint BAD_old;\nint BAD_new;\n")
    git("commit", "-q", "-am", "lib: a")
    head = git("rev-parse", "HEAD")
    patch = tmp_path / "0001-lib-a.patch"
    patch.write_text(git("format-patch", "--stdout", "-1", head) + "\n")
    wd = SimpleNamespace(git_dir=src / ".git", gate_cache=tmp_path / "cache")
    wd.gate_cache.mkdir()
    plan = bisectable.Plan("x", "topic/x", start=start, head=head,
                           commits=[(head, "lib: a")])
    return SimpleNamespace(src=src, git=git, wd=wd, plan=plan, patch=patch)


def manifest(patch: Path, waivers=()):
    p = SimpleNamespace(path=patch, waivers=list(waivers))
    return SimpleNamespace(resolve=lambda names: [SimpleNamespace(patches=[("x", p)])])


def test_a_report_the_head_adds_fails_the_topic(repo, fake_spatch):
    res = coccicheck.check(repo.plan, repo.wd)
    assert not res.ok and res.files == ["lib/a.c"] and res.scripts == 1
    assert (res.base_count, res.head_count) == (1, 2)
    # The old BAD moved two lines down: still the start's, not new.
    assert [(r.file, r.line, r.script) for r in res.new] == [("lib/a.c", 5, "misc/bad_thing.cocci")]
    f = res.findings()[0]
    assert f.kind == "coccicheck" and f.message.startswith("lib/a.c:5: WARNING: bad_thing")
    assert "COCCI_BAD_THING" in f.lines[1]
    assert res.render()[0].startswith("coccicheck: FAIL: lib/a.c:5: ")
    back = coccicheck.CocciResult.from_dict(res.to_dict())
    assert back == res


def test_a_waiver_on_the_patch_that_touches_the_file(repo, fake_spatch):
    assert coccicheck.waiver_type("misc/bad_thing.cocci") == "COCCI_BAD_THING"
    m = manifest(repo.patch, [Waiver("COCCI_BAD_THING", "the name says BAD, the code is fine")])
    res = coccicheck.check(repo.plan, repo.wd, m)
    assert res.ok and res.new[0].waived.startswith("the name says")
    assert "1 waived" in res.summary() and res.findings() == []
    # Another script's waiver, or one on a patch that does not touch the file: not waived.
    other = manifest(repo.patch, [Waiver("COCCI_OTHER", "a waiver of another script")])
    assert not coccicheck.check(repo.plan, repo.wd, other).ok
    repo.patch.write_text(repo.patch.read_text().replace("lib/a.c", "lib/c.c"))
    assert not coccicheck.check(repo.plan, repo.wd, m).ok


def test_no_touched_c_file_runs_nothing(repo, fake_spatch, monkeypatch):
    monkeypatch.setattr(coccicheck, "_spatch", lambda *a: pytest.fail("spatch ran"))
    plan = bisectable.Plan("x", "topic/x", start=repo.plan.start, head=repo.plan.start)
    res = coccicheck.check(plan, repo.wd)
    assert res.ok and res.files == [] and "0 new report(s)" in res.summary()


def test_missing_spatch_is_a_failure_that_says_so(repo, monkeypatch):
    monkeypatch.setattr(coccicheck, "SPATCH", "/nonexistent/spatch")
    res = coccicheck.check(repo.plan, repo.wd)
    assert not res.ok and "not installed" in res.error
    assert res.findings()[0].kind == "coccicheck"


def test_a_script_spatch_cannot_compile_names_what_to_install(repo, fake_spatch):
    """Debian's coccinelle leaves out the OCaml compiler that scripts with
    OCaml rules need: the gate fails, naming the package."""
    fake_spatch.write_text(fake_spatch.read_text() + (
        "\nsys.stderr.write('No OCaml compiler found! Install either ocamlopt or "
        "ocamlopt.opt\\n'); sys.exit(1)\n"))
    fake_spatch.write_text(fake_spatch.read_text().replace(
        "            if \"BAD\" in line:", "            if False:"))
    res = coccicheck.check(repo.plan, repo.wd)
    assert not res.ok and "No OCaml compiler found" in res.error
    assert "ocaml-nox" in res.error


def test_the_cache_key_is_the_touched_files_scripts_spatch_and_waivers(repo, fake_spatch):
    def key(plan=repo.plan, m=None, rules="r1"):
        return gatecache.key(gatecache.key_parts("coccicheck", plan, {}, rules, repo.wd, m))
    k = key()
    assert k == key() and key(rules="r2") != k
    assert key(m=manifest(repo.patch, [Waiver("COCCI_X", "a reason long enough")])) != k
    # Another commit with the same touched files at start and head: the same key.
    repo.git("commit", "-q", "--allow-empty", "-m", "nothing")
    same = bisectable.Plan("x", "topic/x", start=repo.plan.start,
                           head=repo.git("rev-parse", "HEAD"))
    assert key(same) == k
    # An untouched file does not count; a touched one and the scripts do.
    (repo.src / "lib/b.c").write_text("int b;\n")
    repo.git("commit", "-q", "-am", "b")
    assert key(bisectable.Plan("x", "topic/x", start=repo.plan.start,
                               head=repo.git("rev-parse", "HEAD"))) != k   # b.c is touched now
    parts = gatecache.key_parts("coccicheck", repo.plan, {}, "r1", repo.wd)
    assert parts["spatch"] == "spatch version 0.0-fake" and parts["scripts"]
    assert set(parts["files"]) == {"lib/a.c"}


def test_gate_runs_through_check_and_is_cached(repo, fake_spatch, monkeypatch):
    """check's gate loop: a pass is stored and answered from the cache,
    without the lock (the gate builds nothing)."""
    m = manifest(repo.patch, [Waiver("COCCI_BAD_THING", "the name says BAD, the code is fine")])
    monkeypatch.setattr(bisectable, "plan", lambda m_, wd, topic: repo.plan)
    repo.wd.lock = lambda *a, **k: pytest.fail("the lock was taken")
    calls = []
    real = coccicheck.check
    monkeypatch.setattr(coccicheck, "check", lambda *a, **k: calls.append(1) or real(*a, **k))
    for cached in (False, True):
        tv = check.TopicVerdict("x", "topic/x")
        log: list[str] = []
        check._run_gates(m, repo.wd, [tv], check.Options(gates=("coccicheck",)), log.append)
        assert tv.gates_ok() and tv.gates["coccicheck"].cached is cached
        assert list(tv.to_dict()["gates"]) == ["coccicheck"]
    assert len(calls) == 1 and "cached: coccicheck passed" in log[-1]


def test_registered_in_the_main_job_and_not_in_plain_check():
    from ktopic.commands import cmd_check, cmd_ci
    from ktopic.runner.options import MAIN_JOB_GATES
    gate = registry.GATES["coccicheck"]
    assert not gate.builds and "coccicheck" in MAIN_JOB_GATES
    assert check.Options().gates == ()
    import argparse
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    cmd_check.register(sub)
    cmd_ci.register(sub)
    assert p.parse_args(["check", "--coccicheck"]).coccicheck
    assert not p.parse_args(["check"]).coccicheck
    # Not in the quick pipeline variant, but it may be asked for there: it builds nothing.
    chosen = cmd_ci.gates_of(p.parse_args(["ci", "--main-job", "--gates-only"]))
    assert not any(chosen.values())
    chosen = cmd_ci.gates_of(p.parse_args(["ci", "--gates-only", "--coccicheck"]))
    assert {g for g, on in chosen.items() if on} == {"coccicheck"}


def test_a_coccicheck_waiver_is_no_stale_checkpatch_waiver():
    pv = check.PatchVerdict("patches/x/1.patch", "x: y", False)
    check._apply_waivers(pv, [Waiver("COCCI_BAD_THING", "r" * 10),
                              Waiver("LONG_LINE", "r" * 10)])
    assert pv.unused_waivers == ["LONG_LINE"]


def test_real_spatch_reports_a_known_hit(tmp_path):
    """Debian's spatch on a file that divides a sizeof by its element's."""
    if not shutil.which("spatch"):
        pytest.skip("missing spatch: apt install coccinelle")
    src = tmp_path / "src"
    (src / "scripts/coccinelle/misc").mkdir(parents=True)
    (src / "scripts/coccinelle/misc/array_size.cocci").write_text(ARRAY_SIZE)
    (src / "lib").mkdir()
    (src / "lib/t.c").write_text("int tab[4];\n")
    g = SimpleNamespace(run=lambda *a: subprocess.run(["git", *a], cwd=src, env=ENV, check=True,
                                                      capture_output=True, text=True).stdout)
    g.run("init", "-q", "-b", "base")
    g.run("add", ".")
    g.run("commit", "-q", "-m", "base")
    start = g.run("rev-parse", "HEAD").strip()
    (src / "lib/t.c").write_text("int tab[4];\nint n(void)\n{\n"
                                 "\treturn sizeof(tab) / sizeof(tab[0]);\n}\n")
    g.run("commit", "-q", "-am", "n")
    plan = bisectable.Plan("x", "topic/x", start=start, head=g.run("rev-parse", "HEAD").strip())
    res = coccicheck.check(plan, SimpleNamespace(git_dir=src / ".git"))
    assert not res.ok, res
    assert [(r.file, r.line) for r in res.new] == [("lib/t.c", 4)]
    assert "ARRAY_SIZE" in res.new[0].message


# Written here for the test, in the form of the kernel's report-mode scripts.
ARRAY_SIZE = """\
// Options: --no-includes --include-headers
virtual report

@r depends on report@
type T;
T[] E;
position p;
@@
(
 sizeof(E)@p /sizeof(*E)
|
 sizeof(E)@p /sizeof(E[...])
|
 sizeof(E)@p /sizeof(T)
)

@script:python depends on report@
p << r.p;
@@
coccilib.report.print_report(p[0], "WARNING: an ARRAY_SIZE by hand")
"""


def test_findings_show_in_report_json_and_html(repo, fake_spatch, tmp_path):
    from ktopic.model import results as R
    from ktopic.report import report as rep
    res = coccicheck.check(repo.plan, repo.wd)
    br = R.BranchResult(branch="topic/x", topic="x", head=repo.plan.head)
    br.stages = [R.StageResult("generate", R.PASS, 0.0, ""),
                 R.StageResult("check", R.FAIL, 1.0, f"coccicheck: {res.summary()}")]
    br.findings = res.findings()
    out = tmp_path / "out"
    rep.write_all(R.Report(base_version="6.1", branches=[br]), out)
    data = (out / "report.json").read_text()
    assert '"kind": "coccicheck"' in data and "lib/a.c:5: WARNING: bad_thing" in data
    html = (out / rep.HTML_NAME).read_text()
    assert "lib/a.c:5: WARNING: bad_thing.cocci does not like this" in html
