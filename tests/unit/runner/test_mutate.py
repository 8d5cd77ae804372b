"""The mutation gate without a kernel: mutant files, the mutant commit
(no ref moves), caught/survived/invalid with build and boot replaced by
fakes, the result cache, and the report (JSON, JUnit, HTML)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.errors import Failure, KtopicError  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.model import results as R  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402
from ktopic.model import targets as T  # noqa: E402
from ktopic.report import report as rep  # noqa: E402
from ktopic.runner import mutate as M  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402

ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
           GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent")


# ------------------------------------------------------------------ mutants

MUTANT = """Breaks: f() returns the wrong value
Caught-by: suite_a.case_f

diff --git a/lib/f.c b/lib/f.c
--- a/lib/f.c
+++ b/lib/f.c
@@ -1,4 +1,4 @@
 int f(void)
 {
-\treturn 1;
+\treturn 2;
 }
"""


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


@pytest.mark.parametrize("name,text,line,msg", [
    ("0001-x.patch", "Broke: x\n", 1, "line 1 must be 'Breaks: ...'"),
    ("0001-x.patch", "Breaks: x\nCaught: y\n", 2, "line 2 must be 'Caught-by: ...'"),
    ("0001-x.patch", "Breaks: x\nCaught-by: y\nz\n", 3, "a blank line must follow"),
    ("0001-x.patch", "Breaks: x\nCaught-by: y\n\nno diff\n", 4, "no 'diff --git' section"),
    ("x.patch", MUTANT, 1, "named NNNN-<what-it-breaks>.patch"),
])
def test_bad_mutant_files_name_file_and_line(tmp_path, name, text, line, msg):
    p = write(tmp_path / "mutants" / "a" / name, text)
    with pytest.raises(KtopicError) as ei:
        M.load_mutants(tmp_path / "mutants", "a")
    assert ei.value.line == line and msg in ei.value.message
    assert ei.value.file == str(p)


def test_parse_mutant(tmp_path):
    write(tmp_path / "mutants" / "a" / "0001-wrong-value.patch", MUTANT)
    (m,) = M.load_mutants(tmp_path / "mutants", "a")
    assert (m.name, m.breaks, m.caught_by) == ("0001-wrong-value", "f() returns the wrong value",
                                               "suite_a.case_f")
    assert m.diff.startswith(b"diff --git")
    assert M.load_mutants(tmp_path / "mutants", "none") == []


def git(repo, *args, input=None):
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, text=True,
                          capture_output=True, input=input).stdout.strip()


def one_commit_repo(tmp_path):
    """A repository whose branch topic/a holds lib/f.c in one commit."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "topic/a")
    write(repo / "lib" / "f.c", "int f(void)\n{\n\treturn 1;\n}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "f")
    return repo, git(repo, "rev-parse", "HEAD")


def test_mutant_commit_moves_no_ref(tmp_path):
    repo, head = one_commit_repo(tmp_path)
    refs = git(repo, "for-each-ref")
    index = (repo / ".git" / "index").read_bytes()
    m = M.parse_mutant(write(tmp_path / "m" / "a" / "0001-v.patch", MUTANT), "a")
    c = M.mutant_commit(repo / ".git", head, m)
    assert git(repo, "show", f"{c}:lib/f.c") == "int f(void)\n{\n\treturn 2;\n}"
    assert git(repo, "rev-parse", f"{c}^") == head
    assert git(repo, "for-each-ref") == refs
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "status", "--porcelain") == ""
    # Same mutant, same head: the same commit (deterministic, cache-friendly).
    assert M.mutant_commit(repo / ".git", head, m) == c
    stale = M.parse_mutant(write(tmp_path / "m" / "a" / "0002-s.patch",
                                 MUTANT.replace("return 1", "return 7")), "a")
    with pytest.raises(Failure, match="does not apply"):
        M.mutant_commit(repo / ".git", head, stale)


def _br(**kw):
    b = R.BranchResult(branch="x", topic="a")
    for k, v in kw.items():
        setattr(b, k, v)
    return b


def test_named_failed():
    suites = [R.SuiteResult("suite_a", R.FAIL, [R.CaseResult("case_f", R.FAIL),
                                                R.CaseResult("case_g", R.PASS)])]
    assert M.named_failed("suite_a.case_f", _br(suites=suites))
    assert M.named_failed("suite_a", _br(suites=suites))
    assert not M.named_failed("suite_a.case_g", _br(suites=suites))
    f = R.Finding("expect", "six-read-then-write: expected a lockdep report ...")
    assert M.named_failed("six-read-then-write", _br(findings=[f]))
    f = R.Finding("missing_suite", "program fs_tmpfile printed no KTAP")
    assert M.named_failed("fs_tmpfile", _br(findings=[f]))
    f.in_base = True
    assert not M.named_failed("fs_tmpfile", _br(findings=[f]))


class FakeRunner:
    """Build and boot replaced: the boot 'fails' when the mutant changed lib/f.c."""

    def __init__(self, root, repo, fail_on: str):
        self.root, self.git_dir = root, repo / ".git"
        self.wd = Workdir(root)
        self.qemu_dir = root / "qemu"
        self.opts = Options(jobs=1, progress=False)
        self.fail_on = fail_on
        self.builds = 0
        self.out_dir = root / "out"

    def build_name(self, t):
        return buildmod.build_dir_name(t.git_branch or t.branch, t.variant)

    def seed(self, t):
        return None

    def out(self, t):
        d = self.out_dir / R.branch_dir(t.branch)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def rel(self, p):
        return str(p.relative_to(self.out_dir))

    def keep_build_outputs(self, t, res):
        pass

    def boot_and_test(self, t, br, res, stop_at=None):
        text = git(self.git_dir.parent, "show", f"{t.commit}:lib/f.c")
        if self.fail_on in text:
            br.suites = [R.SuiteResult("suite_a", R.FAIL, [R.CaseResult("case_f", R.FAIL)])]
            br.stages.append(R.StageResult("test", R.FAIL, 0.0, "1 failed"))
        else:
            br.stages.append(R.StageResult("test", R.PASS, 0.0, "ok"))

    def expectations(self, t, br, res):
        pass

    def mark_in_base(self, t, br):
        pass


def test_run_mutant_caught_survived_and_cached(tmp_path, monkeypatch):
    repo, head = one_commit_repo(tmp_path)
    built = []

    def fake_build(root, git_dir, req):
        built.append((req.name, req.commit))
        return buildmod.BuildResult(name=req.name, ok=True, out=root / "build" / req.name)
    monkeypatch.setattr(buildmod, "build", fake_build)
    runner = FakeRunner(tmp_path, repo, fail_on="return 2")
    t = T.Target(T.BranchSpec("topic", "a", "topic/a"), [], commit=head,
                 tree=git(repo, "rev-parse", "HEAD^{tree}"), key="k1")
    caught = M.parse_mutant(write(tmp_path / "m" / "a" / "0001-c.patch", MUTANT), "a")
    surv = M.parse_mutant(write(tmp_path / "m" / "a" / "0002-s.patch",
                                MUTANT.replace("return 2", "return 3")), "a")
    cache = tmp_path / "cache"
    r1 = M.run_mutant(runner, t, caught, cache, True)
    r2 = M.run_mutant(runner, t, surv, cache, True)
    assert (r1.status, r2.status) == (R.CAUGHT, R.SURVIVED)
    assert r1.named_failed and not r2.named_failed
    assert "suite_a.case_f should have failed" in r2.summary
    # Built in the branch's own build directory, never moving a ref.
    assert [b[0] for b in built] == ["topic_a", "topic_a"]
    assert git(repo, "rev-parse", "topic/a") == head
    # Cached by content: no second build; a changed branch key builds again.
    again = M.run_mutant(runner, t, caught, cache, True)
    assert again.cached and again.status == R.CAUGHT and len(built) == 2
    t.key = "k2"
    M.run_mutant(runner, t, caught, cache, True)
    assert len(built) == 3
    # A mutant that no longer applies is invalid, not caught.
    stale = M.parse_mutant(write(tmp_path / "m" / "a" / "0003-x.patch",
                                 MUTANT.replace("return 1", "return 9")), "a")
    r3 = M.run_mutant(runner, t, stale, cache, True)
    assert r3.status == R.INVALID and "does not apply" in r3.summary and not r3.ok


def test_stop_line_is_the_caught_by_not_ok():
    """The console line that decides a mutant: its case's (or its suite's
    or program's) KTAP "not ok", with or without the printk time stamp."""
    case = M.stop_line("six_lock.six_test_trylock")
    assert case.search(b"[    1.383600]     not ok 1 six_test_trylock")
    assert case.search(b"    not ok 12 six_test_trylock # crashed")
    assert not case.search(b"[    1.383600]     ok 1 six_test_trylock")
    assert not case.search(b"        not ok 1 six_test_trylock_percpu")
    assert not case.search(b"    # six_test_trylock: EXPECTATION FAILED: not ok 1 six_test_trylock")
    assert M.stop_line("closures").search(b"not ok 3 closures")


def one_mutant(tmp_path, monkeypatch, boot_and_test):
    """A FakeRunner that boots with boot_and_test, the one-commit topic a,
    its mutant 0001-c, and the commits built (each build succeeds at once)."""
    repo, head = one_commit_repo(tmp_path)
    built = []

    def fake_build(root, git_dir, req):
        built.append(req.commit)
        return buildmod.BuildResult(name=req.name, ok=True, out=root / "build" / req.name)
    monkeypatch.setattr(buildmod, "build", fake_build)
    runner = FakeRunner(tmp_path, repo, fail_on="no such text")
    runner.boot_and_test = boot_and_test
    t = T.Target(T.BranchSpec("topic", "a", "topic/a"), [], commit=head,
                 tree=git(repo, "rev-parse", "HEAD^{tree}"), key="k1")
    m = M.parse_mutant(write(tmp_path / "m" / "a" / "0001-c.patch", MUTANT), "a")
    return runner, t, m, built


def test_a_mutant_boot_stops_at_its_caught_by_failure(tmp_path, monkeypatch):
    """The boot ends at the Caught-by case's failure, and that decides the
    mutant.  A stop on a namesake (a case of that name in another suite)
    decides nothing: the mutant boots again, to the end."""
    from ktopic.kernel import boot as bootmod
    boots = []

    def boot_and_test(t, br, res, stop_at=None):
        boots.append(stop_at)
        suite = failing_suite if stop_at is not None else "suite_a"
        br.suites = [R.SuiteResult(suite, R.CRASH, [R.CaseResult("case_f", R.FAIL)])]
        br.stages.append(R.StageResult("test", R.FAIL, 0.0, "1 failed"))
        return bootmod.BootResult("stopped" if stop_at else "done", 1.0, tmp_path / "c", "q")
    runner, t, m, _ = one_mutant(tmp_path, monkeypatch, boot_and_test)
    failing_suite = "suite_a"
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert r.status == R.CAUGHT and r.named_failed and len(boots) == 1, (r, boots)
    assert boots[0].search(b"    not ok 1 case_f")
    failing_suite = "suite_b"
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert boots[1:] == [boots[0], None], boots
    assert r.status == R.CAUGHT and r.named_failed, r


def test_mutants_in_the_report(tmp_path):
    ms = [R.MutantResult("a", "0001-c", "breaks c", "s.c", R.CAUGHT, "failed_case: s.c"),
          R.MutantResult("a", "0002-s", "breaks s", "s.d", R.SURVIVED, "every test passed"),
          R.MutantResult("b", "0001-i", "breaks i", "t", R.INVALID, "does not apply")]
    r = R.Report(base_version="6.1.192", mutants=ms)
    assert not r.ok
    rep.write_all(r, tmp_path)
    again = R.Report.from_json((tmp_path / "report.json").read_text())
    assert again.mutants == ms
    assert rep.mutation_scores(ms) == {"a": (1, 2), "b": (0, 1)}
    lines = rep.mutation_lines(r)
    assert lines[:2] == ["mutation score a: 1/2 caught", "mutation score b: 0/1 caught"]
    assert "a: mutant 0002-s SURVIVED: every test passed" in lines
    xml = (tmp_path / "mutants" / "junit.xml").read_text()
    assert 'name="mutate.a"' in xml and 'failures="1"' in xml and 'errors="1"' in xml
    html = (tmp_path / "index.html").read_text()
    assert "Mutation gate" in html and "1/2" in html and "0002-s" in html
    assert R.Report(base_version="x", mutants=ms[:1]).ok


def test_mutate_bad_input_is_one_line_exit_2_nothing_moves(generated, ktopic):
    p = generated
    bad = write(p.root / "qemu" / "mutants" / "counters" / "0001-x.patch",
                "Breaks: x\nCaught: y\n\ndiff --git a/f b/f\n")
    before = p.refs()
    r = ktopic(*p.args("mutate", "counters"))
    assert r.status == 2
    assert r.err.strip() == f"ktopic: {bad}:2: line 2 must be 'Caught-by: ...'"
    assert p.refs() == before
    r = ktopic(*p.args("mutate", "nosuch"))
    assert r.status == 2 and "no topic 'nosuch'" in r.err


def test_mutate_that_would_run_nothing_is_refused(generated, ktopic, tmp_path):
    """A topic named without mutants, or a --mutants directory without its
    <topic>/ level, is a one-line error: never a green gate that ran nothing."""
    p = generated
    r = ktopic(*p.args("mutate", "counters"))
    mdir = p.root / "qemu" / "mutants"
    assert (r.status, r.err.strip()) == (
        2, f"ktopic: {mdir}: no mutants for topic 'counters' (no counters/*.patch here)"), r
    flat = tmp_path / "flat"
    write(flat / "0001-x.patch", "Breaks: x\nCaught-by: s.c\n\ndiff --git a/f b/f\n")
    r = ktopic(*p.args("mutate", "--mutants", str(flat)))
    assert (r.status, r.err.strip()) == (
        2, f"ktopic: {flat}: no <topic>/*.patch in this directory"), r
    r = ktopic(*p.args("mutate", "--mutants", str(tmp_path / "nosuch")))
    assert (r.status, r.err.strip()) == (2, f"ktopic: {tmp_path / 'nosuch'}: no such directory")
    r = ktopic(*p.args("mutate"))
    assert (r.status, r.out.strip()) == (0, f"no mutants under {mdir}"), r


def test_mutate_takes_a_topic_by_any_of_its_names(generated, ktopic):
    """A topic's branch names it as the topic does; the integration branch,
    by either name, is refused in one line: mutants belong to topics."""
    p = generated
    bad = write(p.root / "qemu" / "mutants" / "counters" / "0001-x.patch",
                "Breaks: x\nCaught: y\n\ndiff --git a/f b/f\n")
    r = ktopic(*p.args("mutate", "topic/counters"))
    assert (r.status, r.err.strip()) == (2, f"ktopic: {bad}:2: line 2 must be 'Caught-by: ...'")
    for name in ("for-next", "integration"):
        r = ktopic(*p.args("mutate", name))
        assert (r.status, r.err.strip()) == (
            2, f"ktopic: '{name}' is the integration branch; this command takes a topic"), r


@pytest.mark.parametrize("flag,variant", [([], ""), (["--kasan"], "kasan"), (["--kcsan"], "kcsan")])
def test_mutate_runs_the_topic_in_the_variant_asked_for(generated, ktopic, monkeypatch,
                                                         flag, variant):
    """--kasan/--kcsan mutate the topic's kernel of that variant (every
    target of such a run has it); a plain run never takes a sanitizer row."""
    from ktopic.commands import cmd_mutate
    write(generated.root / "qemu" / "mutants" / "counters" / "0001-x.patch",
          "Breaks: x\nCaught-by: s.c\n\ndiff --git a/f b/f\n")
    seen = []
    monkeypatch.setattr(cmd_mutate.mut, "mutate", lambda runner, base, t, ms, **kw:
                        seen.append((base.variant, t.topic, t.variant)) or [])
    r = ktopic(*generated.args("mutate", *flag, "counters"))
    assert r.status == 0, r
    assert seen == [(variant, "counters", variant)]


@pytest.mark.parametrize("flag,variant,base", [([], "", ""), (["--kcsan"], "kcsan", None)])
def test_mutate_on_the_integration_branch(generated, ktopic, monkeypatch, flag, variant, base):
    """--on integration (or its branch name): the topic's mutants on the
    integration target of the run's variant; under a sanitizer no base
    (the main job builds none under it).  Only the integration branch."""
    from ktopic.commands import cmd_mutate
    write(generated.root / "qemu" / "mutants" / "counters" / "0001-x.patch",
          "Breaks: x\nCaught-by: s.c\n\ndiff --git a/f b/f\n")
    seen = []
    monkeypatch.setattr(cmd_mutate.mut, "mutate", lambda runner, b, t, ms, **kw: seen.append(
        (b and b.variant, t.topic, t.variant, [m.topic for m in ms])) or [])
    for on in ("integration", "for-next"):
        r = ktopic(*generated.args("mutate", *flag, "--on", on, "counters"))
        assert r.status == 0 and f"counters: 1 mutant(s) on for-next{'+' * bool(variant)}" \
            f"{variant}" in r.out, r
    assert seen == [(base, "integration", variant, ["counters"])] * 2
    r = ktopic(*generated.args("mutate", "--on", "counters", "counters"))
    assert (r.status, r.err.strip()) == (
        2, "ktopic: 'counters' is the topic branch; this command takes integration"), r


def test_mutate_merges_into_the_ci_report(tmp_path):
    from ktopic.commands import cmd_mutate
    ci = R.Report(base_version="6.1.192", branches=[R.BranchResult("topic/a", "a")],
                  mutants=[R.MutantResult("a", "0001-old", "b", "c", R.SURVIVED),
                           R.MutantResult("b", "0001-keep", "b", "c", R.CAUGHT)])
    ci.write(tmp_path / "report.json")
    new = [R.MutantResult("a", "0001-new", "b", "c", R.CAUGHT)]
    got = cmd_mutate._merge(tmp_path, "6.1.192", new, ["a"])
    assert [b.branch for b in got.branches] == ["topic/a"]
    assert [m.name for m in got.mutants] == ["0001-keep", "0001-new"]
    assert cmd_mutate._merge(tmp_path / "none", "6.1.192", new, ["a"]).mutants == new


# ------------------------------------------------------------------ through the real Runner

from test_ci import console, world  # noqa: E402,F401  (fixtures)
from test_ktap import parser  # noqa: E402,F401  (fixture)
from ktopic.kernel import boot as bootmod  # noqa: E402


F_MUTANT = """Breaks: f holds 3
Caught-by: suite_a.c

diff --git a/f b/f
--- a/f
+++ b/f
@@ -1 +1 @@
-2
+3
"""


def test_mutate_with_the_runner(world, monkeypatch, tmp_path):  # noqa: F811
    """Runner.run for the base and the branch, the mutant commit built in
    the branch's build directory, booted, KTAP parsed; the failing case is
    the Caught-by one."""
    w = world
    fake_build = buildmod.build
    built = {}

    def build(root, git_dir, req):
        built[req.name] = req.commit
        return fake_build(root, git_dir, req)
    monkeypatch.setattr(buildmod, "build", build)
    plain_boot = bootmod.boot
    bad = console().replace("    ok 1 c", "    not ok 1 c").replace("ok 1 suite_a",
                                                                   "not ok 1 suite_a")

    def boot(req):
        name = req.kernel.parent.name
        f = subprocess.run(["git", f"--git-dir={w.root / 'linux.git'}", "show",
                            f"{built.get(name, name)}:f"], capture_output=True,
                           text=True).stdout if name != "base" else "1\n"
        if f == "3\n":
            req.console.write_text(bad)
            return bootmod.BootResult("done", 1.0, req.console, "qemu ...")
        return plain_boot(req)
    monkeypatch.setattr(bootmod, "boot", boot)
    w.consoles.update({"base": console(), "topic_a": console()})
    ts = w.targets("a")
    base, a = ts[0], ts[1]
    caught = M.parse_mutant(write(tmp_path / "m" / "a" / "0001-three.patch", F_MUTANT), "a")
    surv = M.parse_mutant(write(tmp_path / "m" / "a" / "0002-two.patch",
                                F_MUTANT.replace("+3", "+2 ")), "a")
    runner = w.runner()
    ref = subprocess.run(["git", f"--git-dir={w.root / 'linux.git'}", "rev-parse", "topic/a"],
                         capture_output=True, text=True).stdout
    res = M.mutate(runner, base, a, [caught, surv])
    assert [(r.name, r.status) for r in res] == [("0001-three", R.CAUGHT),
                                                 ("0002-two", R.SURVIVED)]
    assert res[0].named_failed, res[0]
    assert "suite_a.c" in res[0].summary and "(not by" not in res[0].summary, res[0].summary
    assert "suite_a.c should have failed" in res[1].summary
    assert built["topic_a"] != a.commit                     # the last build was a mutant's
    assert subprocess.run(["git", f"--git-dir={w.root / 'linux.git'}", "rev-parse", "topic/a"],
                          capture_output=True, text=True).stdout == ref
    assert (w.out / "a_0001-three" / "console.log").read_text() == bad
    # A new run takes the base and the branch from the result cache (no
    # build of them in this process) and still boots the mutants.
    again = M.mutate(w.runner(), base, a, [caught], use_cache=False)
    assert [(r.name, r.status) for r in again] == [("0001-three", R.CAUGHT)], again
    # A branch that fails on its own: its mutants prove nothing.
    w.consoles["topic_a"] = bad
    runner = w.runner(use_cache=False, base_cache=False)
    res = M.mutate(runner, base, a, [surv], use_cache=False)
    assert res[0].status == R.INVALID and "fails without the mutant" in res[0].summary


def test_a_mutant_caught_beside_a_time_out_is_kept_one_caught_by_it_alone_is_not(
        tmp_path, monkeypatch):
    """A mutant that hangs the guest after a WARNING is caught whatever the
    machine's load: kept.  One whose only failures are the time-out (and
    the suites it cut short) may be the load's: run again next time."""
    findings = []
    runner, t, m, built = one_mutant(
        tmp_path, monkeypatch, lambda t, br, res, stop_at=None: br.findings.extend(
            R.Finding(k, k) for k in findings))
    findings[:] = ["silence", "missing_suite", "incomplete"]
    for _ in range(2):
        assert M.run_mutant(runner, t, m, tmp_path / "cache", True).status == R.CAUGHT
    assert len(built) == 2                      # not kept: built and booted again
    findings[:] = ["warning", "silence", "missing_suite"]
    first = M.run_mutant(runner, t, m, tmp_path / "cache", True)
    again = M.run_mutant(runner, t, m, tmp_path / "cache", True)
    assert first.status == again.status == R.CAUGHT and again.cached and len(built) == 3


def test_the_cases_a_time_out_cut_off_are_no_other_failure(tmp_path, monkeypatch,
                                                           kernel_files):
    """A guest that goes silent inside a suite (recorded: fs's mutant 0002
    when its case still livelocked) leaves that suite's later cases
    unreported.  The time-out did that: the result is not kept."""
    from ktopic.kernel import ktap
    parser = ktap.load_parser(kernel_files / "tools/testing/kunit")
    text = (REPO / "tests/data/consoles/real-fs-livelock.log").read_text()
    found = [R.Finding("silence", "no console output for 30s")] + ktap.check(
        ktap.parse_console(text, parser), text, ["insert_inode_locked2", "d_mark_tmpfile"],
        ["fs_tmpfile"])
    assert "unreported_case" in {f.kind for f in found}, found
    runner, t, m, built = one_mutant(
        tmp_path, monkeypatch, lambda t, br, res, stop_at=None: br.findings.extend(found))
    for _ in range(2):
        assert M.run_mutant(runner, t, m, tmp_path / "cache", True).status == R.CAUGHT
    assert len(built) == 2


def test_a_mutant_caught_by_an_expectation_boots_it_alone_first(tmp_path, monkeypatch):
    """A mutant whose Caught-by names an expected report boots that
    expectation alone: when the report is missing, that decides it, with
    no test boot and no other expectation.  When the report is there, the
    tests and every expectation decide, as for any other mutant."""
    from ktopic.model.manifest import Expect
    boots, expects, missing = [], [], []

    def boot_and_test(t, br, res, stop_at=None):
        boots.append(stop_at)
        br.stages.append(R.StageResult("test", R.PASS, 0.0, "ok"))

    def expectations(t, br, res):
        expects.append([e.name for e in t.expect])
        bad = [e.name for e in t.expect if e.name in missing]
        br.findings += [R.Finding("expect", f"{n}: expected a lockdep report") for n in bad]
        br.stages.append(R.StageResult("expect", R.FAIL if bad else R.PASS, 0.0, ""))
    runner, t, _, built = one_mutant(tmp_path, monkeypatch, boot_and_test)
    runner.expectations = expectations
    t.spec.expect = [Expect(n, "mod", "", "lockdep", "x", 1) for n in ("read-read", "abba")]
    m = M.parse_mutant(write(tmp_path / "m" / "a" / "0002-e.patch",
                             MUTANT.replace("suite_a.case_f", "read-read")), "a")
    missing[:] = ["read-read"]
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert r.status == R.CAUGHT and r.named_failed, r
    assert (boots, expects) == ([], [["read-read"]])
    missing[:] = []
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert r.status == R.SURVIVED and len(boots) == 1, r
    assert expects[1:] == [["read-read"], ["read-read", "abba"]]
    # Caught by another expectation than its own: still caught, and said so.
    missing[:] = ["abba"]
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert r.status == R.CAUGHT and not r.named_failed and "(not by read-read)" in r.summary
    assert t.expect == t.spec.expect and len(t.spec.expect) == 2    # the spec is left whole


def test_a_mutant_caught_by_a_case_boots_that_case_alone_first(tmp_path, monkeypatch):
    """A mutant whose Caught-by is a case of the branch's KUnit suites boots
    that case alone (kunit.filter_glob, that suite expected, no programs):
    its failure decides the mutant in one boot.  When it passes, the whole
    run decides, where another test's failure still catches it; a Caught-by
    that is no case of the branch's suites boots the whole run only."""
    boots, failing = [], []

    def boot_and_test(t, br, res, stop_at=None, cmdline=""):
        boots.append((cmdline, list(t.kunit), list(t.programs)))
        bad = [("suite_a", "case_f")] if "named" in failing else []
        if not cmdline and "other" in failing:
            bad.append(("suite_b", "case_x"))
        br.suites = [R.SuiteResult(s, R.FAIL, [R.CaseResult(c, R.FAIL)]) for s, c in bad]
        br.stages.append(R.StageResult("test", R.FAIL if bad else R.PASS, 0.0, ""))
    runner, t, m, _ = one_mutant(tmp_path, monkeypatch, boot_and_test)
    t.spec.kunit, t.spec.programs = ["suite_a", "suite_b"], ["prog"]
    alone = ("kunit.filter_glob=suite_a.case_f", ["suite_a"], [])
    whole = ("", ["suite_a", "suite_b"], ["prog"])

    failing[:] = ["named"]
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert r.status == R.CAUGHT and r.named_failed and boots == [alone], (r, boots)
    failing[:] = ["other"]
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert r.status == R.CAUGHT and not r.named_failed and boots[1:] == [alone, whole]
    failing[:] = []
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert r.status == R.SURVIVED and boots[3:] == [alone, whole]

    t.spec.kunit = ["suite_b"]
    boots.clear()
    failing[:] = ["named"]
    r = M.run_mutant(runner, t, m, tmp_path / "cache", False)
    assert r.status == R.CAUGHT and boots == [("", ["suite_b"], ["prog"])]
