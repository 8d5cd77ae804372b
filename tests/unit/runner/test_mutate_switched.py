"""A topic's mutants in one kernel, without a kernel: which mutants go
into the switched build and which get their own, the commit built (no
ref moves, the switch only there), the build directory and its seed, the
kernel arguments each boot gets, a switched build that does not compile,
the boot with no mutant on, and the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO  # noqa: E402
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.model import results as R  # noqa: E402
from ktopic.model import targets as T  # noqa: E402
from ktopic.runner import mutate as M  # noqa: E402
from ktopic.runner import mutswitch as S  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402
from ktopic.kernel.steplog import StepLog  # noqa: E402
from test_mutate import FakeRunner as PlainFakeRunner  # noqa: E402

ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
           GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent")

F_C = "#include <linux/x.h>\n\nint f(int x)\n{\n\tx += 1;\n\tx *= 2;\n\treturn x;\n}\n"


def git(repo, *args, input=None):
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, text=True,
                          capture_output=True, input=input).stdout.strip()


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def mutant_file(tmp: Path, name: str, path: str, old: str, new: str,
                caught_by: str = "suite_a.case_f") -> M.Mutant:
    import difflib
    a = (F_C if path == "lib/f.c" else "obj-y += f.o\n")
    b = a.replace(old, new)
    body = "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                        f"a/{path}", f"b/{path}"))
    p = write(tmp / "m" / "a" / f"{name}.patch",
              f"Breaks: {name}\nCaught-by: {caught_by}\n\ndiff --git a/{path} b/{path}\n{body}")
    return M.parse_mutant(p, "a")


class FakeRunner(PlainFakeRunner):
    """Build and boot replaced.  A boot 'fails' when lib/f.c, as the
    compiler sees it with the boot's ktopic_mutant=N, doubles before it
    adds (mutant 0001) or adds 5 (0003); the rest survive."""

    def __init__(self, root, repo):
        super().__init__(root, repo, fail_on="")
        self.steps = StepLog()
        self.boots: list[tuple[str, str]] = []      # (commit, cmdline)
        self.fail_off = False

    def boot_and_test(self, t, br, res, stop_at=None, cmdline=""):
        self.boots.append((t.commit, cmdline))
        text = git(self.git_dir.parent, "show", f"{t.commit}:lib/f.c") + "\n"
        n = int(cmdline.split("=")[1]) if cmdline else 0
        text = S.resolve(text, n)
        bad = text.index("x *= 2") < text.index("x += ") or "x += 5" in text or \
            (self.fail_off and cmdline == "ktopic_mutant=0")
        if bad:
            br.suites = [R.SuiteResult("suite_a", R.FAIL, [R.CaseResult("case_f", R.FAIL)])]
            br.stages.append(R.StageResult("test", R.FAIL, 0.0, "1 failed"))
        else:
            br.stages.append(R.StageResult("test", R.PASS, 0.0, "ok"))

    def expectations(self, t, br, res, cmdline=""):
        pass


def topic_a(tmp_path, monkeypatch, fail_compile=None):
    """topic/a (lib/f.c, lib/Makefile), its four mutants, a FakeRunner, and
    the builds made (each a BuildRequest); fail_compile: a text whose
    switched line the first switched build's log names as an error."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "topic/a")
    write(repo / "lib" / "f.c", F_C)
    write(repo / "lib" / "Makefile", "obj-y += f.o\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "f")
    head = git(repo, "rev-parse", "HEAD")
    ms = [mutant_file(tmp_path, "0001-moved", "lib/f.c", "\tx += 1;\n\tx *= 2;\n",
                      "\tx *= 2;\n\tx += 1;\n"),
          mutant_file(tmp_path, "0002-survives", "lib/f.c", "return x;", "return x + 0;"),
          mutant_file(tmp_path, "0003-adds-five", "lib/f.c", "x += 1;", "x += 5;"),
          mutant_file(tmp_path, "0004-makefile", "lib/Makefile", "obj-y += f.o", "obj-y +=")]
    builds: list[buildmod.BuildRequest] = []

    def fake_build(root, git_dir, req):
        builds.append(req)
        out = root / "build" / req.name
        out.mkdir(parents=True, exist_ok=True)
        log = out / "ktopic-build.log"
        if fail_compile and req.name.endswith("-mutants") and len(builds) == 1:
            text = git(repo, "show", f"{req.commit}:lib/f.c").splitlines()
            line = next(i for i, x in enumerate(text, 1) if fail_compile in x)
            log.write_text(f"  CC      lib/f.o\n/src/lib/f.c:{line}:9: error: 'y' undeclared\n")
            return buildmod.BuildResult(name=req.name, ok=False, out=out, log=log,
                                        error="kernel build failed (make exit 2)")
        log.write_text("ok\n")
        return buildmod.BuildResult(name=req.name, ok=True, out=out, log=log)
    monkeypatch.setattr(buildmod, "build", fake_build)
    runner = FakeRunner(tmp_path, repo)
    t = T.Target(T.BranchSpec("topic", "a", "topic/a"), [], commit=head,
                 tree=git(repo, "rev-parse", "HEAD^{tree}"), key="k1")
    plain = R.BranchResult(branch="topic/a", topic="a")
    plain.stages.append(R.StageResult("test", R.PASS, 0.0, "ok"))
    return runner, t, plain, ms, builds, repo, head


def test_one_kernel_for_the_switchable_mutants(tmp_path, monkeypatch):
    runner, t, plain, ms, builds, repo, head = topic_a(tmp_path, monkeypatch)
    refs = git(repo, "for-each-ref")
    res = M.run_mutants(runner, t, plain, ms)
    assert [(r.name, r.status) for r in res] == [
        ("0001-moved", R.CAUGHT), ("0002-survives", R.SURVIVED),
        ("0003-adds-five", R.CAUGHT), ("0004-makefile", R.SURVIVED)], res
    # One switched build in a directory of its own, seeded from the
    # branch's; the Makefile mutant alone has its own build, and says why.
    assert [b.name for b in builds] == ["topic_a-mutants", "topic_a"]
    sw = builds[0]
    assert sw.seed == tmp_path / "build" / "topic_a" and sw.commit != head
    assert "(own build: lib/Makefile: not C)" in res[3].summary
    assert not any("own build" in r.summary for r in res[:3])
    # The switched commit: the head plus the switch, never a ref.
    assert git(repo, "rev-parse", f"{sw.commit}^") == head
    assert git(repo, "for-each-ref") == refs
    assert "core_param(ktopic_mutant" in git(repo, "show", f"{sw.commit}:lib/ktopic_mutant.c")
    assert git(repo, "show", f"{sw.commit}:lib/Makefile").endswith("obj-y += ktopic_mutant.o")
    switched = git(repo, "show", f"{sw.commit}:lib/f.c") + "\n"
    assert S.resolve(switched, 0) == F_C
    assert "extern int ktopic_mutant;" in switched and "ktopic_mutant == 3" in switched
    # Booted once with none on, then once per switched mutant with its number.
    assert runner.boots == [(sw.commit, "ktopic_mutant=0"), (sw.commit, "ktopic_mutant=1"),
                            (sw.commit, "ktopic_mutant=2"), (sw.commit, "ktopic_mutant=3"),
                            (builds[1].commit, "")]
    # Cached by content: nothing builds or boots again.
    again = M.run_mutants(runner, t, plain, ms)
    assert [r.status for r in again] == [r.status for r in res]
    assert all(r.cached for r in again) and len(builds) == 2 and len(runner.boots) == 5


def test_a_switched_mutant_that_does_not_compile_gets_its_own_build(tmp_path, monkeypatch):
    """The compiler's error names a line of mutant 3's switched region: 3
    moves to its own build, the others build switched again."""
    runner, t, plain, ms, builds, repo, head = topic_a(tmp_path, monkeypatch,
                                                     fail_compile="x += 5;")
    res = M.run_mutants(runner, t, plain, ms[:3])
    assert [r.status for r in res] == [R.CAUGHT, R.SURVIVED, R.CAUGHT], res
    assert [b.name for b in builds] == ["topic_a-mutants", "topic_a-mutants", "topic_a"]
    second = git(repo, "show", f"{builds[1].commit}:lib/f.c")
    assert "ktopic_mutant == 3" not in second and "ktopic_mutant == 1" in second
    assert res[2].summary.endswith("(own build: does not compile switched: "
                                   "lib/f.c:9: error: 'y' undeclared)"), res[2].summary
    assert [c for _, c in runner.boots] == ["ktopic_mutant=0", "ktopic_mutant=1",
                                            "ktopic_mutant=2", ""]


def test_a_switched_kernel_that_fails_with_none_on_switches_nothing(tmp_path, monkeypatch):
    """A fault of the transform must not pass for a catch: when the
    switched kernel fails with ktopic_mutant=0, every mutant has its own
    build, and its own result."""
    runner, t, plain, ms, builds, repo, head = topic_a(tmp_path, monkeypatch)
    runner.fail_off = True
    res = M.run_mutants(runner, t, plain, ms[:3])
    assert [r.status for r in res] == [R.CAUGHT, R.SURVIVED, R.CAUGHT], res
    assert [b.name for b in builds] == ["topic_a-mutants"] + ["topic_a"] * 3
    assert all("(own build: the switched kernel fails with no mutant on: " in r.summary
               for r in res), res
    assert [c for _, c in runner.boots] == ["ktopic_mutant=0", "", "", ""]


def test_a_change_that_builds_the_same_objects_boots_no_mutant_again(tmp_path, monkeypatch):
    """Switched mutants are kept by what their boots run too: after a
    change that builds the same objects (a comment) the switched kernel
    is built to see that, and none of them boots again; the mutant with
    its own build, kept by its tree alone, does.  A change of the objects
    boots them all again."""
    import re
    runner, t, plain, ms, builds, repo, head = topic_a(tmp_path, monkeypatch)
    fake_build = buildmod.build

    def build_with_image(root, git_dir, req):    # the "object code": f.c's tokens
        b = fake_build(root, git_dir, req)
        b.bzimage = b.out / "bzImage"
        code = re.sub(r"/\*.*?\*/", " ", git(repo, "show", f"{req.commit}:lib/f.c"))
        b.bzimage.write_text(" ".join(code.split()))
        return b
    monkeypatch.setattr(buildmod, "build", build_with_image)

    def head_with(text):
        write(repo / "lib" / "f.c", text)
        git(repo, "commit", "-qam", "edit")
        return T.Target(t.spec, [], commit=git(repo, "rev-parse", "HEAD"),
                        tree=git(repo, "rev-parse", "HEAD^{tree}"), key=f"k{len(builds)}",
                        boot_key="b1")
    t.boot_key = "b1"
    first = M.run_mutants(runner, t, plain, ms)
    assert len(runner.boots) == 5 and len(builds) == 2
    again = M.run_mutants(runner, head_with(F_C + "/* adds, then doubles */\n"), plain, ms)
    assert [r.status for r in again] == [r.status for r in first]
    assert [r.cached for r in again] == [True, True, True, False]
    assert [b.name for b in builds[2:]] == ["topic_a-mutants", "topic_a"]
    assert [c for _, c in runner.boots[5:]] == [""]           # 0004's own build alone
    M.run_mutants(runner, head_with(F_C.replace("x.h", "y.h")), plain, ms)
    assert [c for _, c in runner.boots[6:]] == [
        "ktopic_mutant=0", "ktopic_mutant=1", "ktopic_mutant=2", "ktopic_mutant=3", ""]


def test_modules_are_built_against_the_tree_of_the_kernel_booted(tmp_path, monkeypatch):
    """A mutant with its own build moves the worktree; the switched
    mutants booted after it build their expectation modules (at boot
    time, against src/) from the switched tree again, not from that
    mutant's, whose headers have no switch."""
    from ktopic.model.manifest import Expect
    runner, t, plain, ms, builds, repo, head = topic_a(tmp_path, monkeypatch)
    fake_build = buildmod.build

    def build_in_src(root, git_dir, req):      # as build() does: src/ at the commit built
        buildmod.Worktree(git_dir, root / "src").checkout(req.commit)
        return fake_build(root, git_dir, req)
    monkeypatch.setattr(buildmod, "build", build_in_src)
    monkeypatch.setattr(buildmod, "build_modules", lambda root, res, mods, jobs: ([], None, None))
    at_expect = []
    runner.expectations = lambda t, br, res, cmdline="": at_expect.append(
        (cmdline, git(tmp_path / "src", "rev-parse", "HEAD"), t.commit))
    t.spec.expect = [Expect("e", "mod", "", "lockdep", "x", 1)]
    M.run_mutants(runner, t, plain, [ms[3], ms[1], ms[0]])     # its own build first
    assert [c for c, _, _ in at_expect] == ["", "ktopic_mutant=2"], at_expect
    assert all(src == commit for _, src, commit in at_expect), at_expect
    assert at_expect[1][1] == builds[0].commit        # the switched tree


def test_one_mutant_to_run_builds_its_own(tmp_path, monkeypatch):
    """One mutant left to run (the rest cached) costs one build either
    way, and its own needs no boot with none on: no switched kernel."""
    runner, t, plain, ms, builds, repo, head = topic_a(tmp_path, monkeypatch)
    M.run_mutants(runner, t, plain, ms[:2])
    del builds[:], runner.boots[:]
    res = M.run_mutants(runner, t, plain, ms[:3])
    assert [r.cached for r in res] == [True, True, False]
    assert [b.name for b in builds] == ["topic_a"] and runner.boots[0][1] == ""
    assert "own build" not in res[2].summary


def test_a_failing_branch_builds_nothing(tmp_path, monkeypatch):
    runner, t, plain, ms, builds, repo, head = topic_a(tmp_path, monkeypatch)
    plain.stages[0].status = R.FAIL
    res = M.run_mutants(runner, t, plain, ms)
    assert all(r.status == R.INVALID for r in res) and builds == [] and runner.boots == []


def test_culprits_are_named_by_the_compiler_errors():
    text = F_C
    p = S.plan([(1, "diff --git a/lib/f.c b/lib/f.c\n--- a/lib/f.c\n+++ b/lib/f.c\n"
                    "@@ -5 +5 @@\n-\tx += 1;\n+\tx += 2;\n")], {"lib/f.c": text})
    f = p.files["lib/f.c"]
    line = f.text.splitlines().index("\tx += 2;") + 1
    log = f"In file included from x.c:1:\n/abs/src/lib/f.c:{line}:3: error: boom\n" \
          "/abs/src/lib/f.c:1:1: error: not in a region\nlib/g.c:5:1: error: other file\n"
    assert M.culprits(p, log, []) == {1: "lib/f.c:3: error: boom"}
    assert M.culprits(p, "", ["lib/f.c: no lib/f.o was built"]) == \
        {1: "lib/f.c: no lib/f.o was built"}
    assert M.culprits(p, "ld: undefined reference to `x'\n", []) == {}


def test_the_runner_passes_the_kernel_arguments_on(tmp_path, monkeypatch):
    """Runner.boot_and_test and expectations put cmdline after the
    target's own arguments."""
    from ktopic.kernel import boot as bootmod, initramfs, ktap
    from ktopic.runner.runner import Runner
    from types import SimpleNamespace
    seen = []

    def boot(req):
        seen.append(req.cmdline)
        req.console.write_text("ktopic-init: done\n")
        return bootmod.BootResult("done", 1.0, req.console, "qemu")
    monkeypatch.setattr(bootmod, "boot", boot)
    monkeypatch.setattr(bootmod, "speed_factor", lambda: 1.0)
    monkeypatch.setattr(initramfs, "build_initramfs", lambda req: initramfs.InitramfsResult(
        tmp_path / "initrd", "0" * 64, []))
    monkeypatch.setattr(ktap, "parser_dir", lambda *a: None)
    monkeypatch.setattr(ktap, "load_parser", lambda d: None)
    monkeypatch.setattr(ktap, "parse_console", lambda text, parser: SimpleNamespace(suites=[]))
    monkeypatch.setattr(ktap, "check", lambda *a, **k: [])
    r = Runner.__new__(Runner)
    r.out_dir, r.qemu_dir, r.opts = tmp_path / "out", tmp_path / "qemu", Options(accel="tcg")
    r.wd = SimpleNamespace(cache=tmp_path / "cache")
    r.git_dir, r.live, r.allow = tmp_path, None, console_allow()
    r.host = bootmod.Host(tmp_path, "tcg")
    spec = T.BranchSpec("topic", "a", "topic/a")
    spec.cmdline = "six.x=1"
    t = T.Target(spec, [], commit="c", base_commit="b")
    res = buildmod.BuildResult(name="a", ok=True, out=tmp_path, bzimage=tmp_path / "bz")
    r.boot_and_test(t, R.BranchResult(branch="topic/a", topic="a"), res,
                    cmdline="ktopic_mutant=7")
    r.boot_and_test(t, R.BranchResult(branch="topic/a", topic="a"), res)
    assert seen == ["six.x=1 ktopic_mutant=7", "six.x=1"]


def console_allow():
    from ktopic.kernel import console_scan
    return console_scan.load_allowlist(REPO / "qemu" / "allowlist.yaml")


def test_the_switched_commit_keeps_bytes_that_are_not_utf8(tmp_path):
    """A Latin-1 comment (old kernel files have some) is written back as it
    was, not as a replacement character."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "topic/a")
    (repo / "lib").mkdir()
    (repo / "lib" / "f.c").write_bytes(b"/* Fran\xe7ois */\n" + F_C.encode())
    write(repo / "lib" / "Makefile", "obj-y += f.o\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "f")
    head = git(repo, "rev-parse", "HEAD")
    m = mutant_file(tmp_path, "0001-x", "lib/f.c", "x *= 2;", "x *= 3;")
    texts, headers = M.head_texts(repo / ".git", head, "", [m])
    p = S.plan([(1, M._text(m))], texts, headers)
    c = M.switched_commit(repo / ".git", head, p, "a")
    got = subprocess.run(["git", "cat-file", "blob", f"{c}:lib/f.c"], cwd=repo,
                         capture_output=True).stdout
    assert got.startswith(b"/* Fran\xe7ois */\n") and b"ktopic_mutant == 1" in got


def on_for_next(tmp_path, monkeypatch, for_next_f_c: str,
                makefile: str = "obj-y += f.o\n"):
    """topic_a's world plus for-next: topic/a with lib/f.c and lib/Makefile
    as given and a file of another topic; its target under KCSAN, with the
    same result key as the topic's (the keys must still keep the two
    apart)."""
    runner, t, plain, ms, builds, repo, head = topic_a(tmp_path, monkeypatch)
    git(repo, "checkout", "-q", "-b", "for-next")
    write(repo / "lib" / "f.c", for_next_f_c)
    write(repo / "lib" / "Makefile", makefile)
    write(repo / "lib" / "g.c", "int g(void)\n{\n\treturn 0;\n}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "b")
    fn = T.Target(T.BranchSpec("integration", "integration", "for-next", topics=["a", "b"]),
                  [], variant="kcsan", commit=git(repo, "rev-parse", "HEAD"),
                  tree=git(repo, "rev-parse", "HEAD^{tree}"), key=t.key)
    return runner, t, fn, plain, ms, builds, repo


def test_a_topics_mutants_on_the_integration_branch(tmp_path, monkeypatch):
    """`ktopic mutate --on integration --kcsan a`: a's mutants applied to
    for-next's head (another topic's file there, a's lines moved by a
    comment), one switched kernel in for-next-kcsan-mutants seeded from
    for-next-kcsan, each judged as on the topic, every result named "on
    for-next+kcsan" and kept apart from the topic's own."""
    runner, t, fn, plain, ms, builds, repo = on_for_next(
        tmp_path, monkeypatch, "/* for-next moved this */\n" + F_C)
    refs = git(repo, "for-each-ref")
    res = M.run_mutants(runner, fn, plain, ms)
    assert [(r.name, r.status, r.on) for r in res] == [
        ("0001-moved", R.CAUGHT, "for-next+kcsan"), ("0002-survives", R.SURVIVED, "for-next+kcsan"),
        ("0003-adds-five", R.CAUGHT, "for-next+kcsan"),
        ("0004-makefile", R.SURVIVED, "for-next+kcsan")], res
    assert res[0].named_failed and res[2].named_failed
    assert [r.group for r in res] == ["a on for-next+kcsan"] * 4
    assert [(b.name, b.seed) for b in builds] == [
        ("for-next-kcsan-mutants", tmp_path / "build" / "for-next-kcsan"),
        ("for-next-kcsan", None)]
    sw = builds[0].commit
    assert git(repo, "rev-parse", f"{sw}^") == fn.commit and git(repo, "for-each-ref") == refs
    assert git(repo, "show", f"{sw}:lib/g.c") and "on for-next+kcsan" in git(
        repo, "log", "-1", "--format=%s", sw)
    assert S.resolve(git(repo, "show", f"{sw}:lib/f.c") + "\n", 0).startswith("/* for-next")
    # The mutant's own build: for-next's head with the mutant, in for-next's directory.
    assert git(repo, "rev-parse", f"{builds[1].commit}^") == fn.commit
    # Logs under names of their own, never the topic's mutants' directories.
    assert res[0].log == "for-next+kcsan_a_0001-moved/console.log", res[0].log
    # The topic's own run, with the same result key, runs its mutants
    # again: nothing cached on for-next stands for it, nor the other way.
    del builds[:], runner.boots[:]
    own = M.run_mutants(runner, t, plain, ms)
    assert not any(r.cached or r.on for r in own) and builds[0].name == "topic_a-mutants"
    again = M.run_mutants(runner, fn, plain, ms)
    assert all(r.cached and r.on == "for-next+kcsan" for r in again), again


def test_a_mutant_that_does_not_apply_on_the_integration_branch_says_so(tmp_path,
                                                                        monkeypatch):
    """for-next changed the line mutant 0004 changes: invalid, and the
    result names the branch and its head; the other runs."""
    runner, t, fn, plain, ms, builds, repo = on_for_next(
        tmp_path, monkeypatch, F_C, makefile="obj-y += f.o g.o\n")
    res = M.run_mutants(runner, fn, plain, [ms[0], ms[3]])
    assert [r.status for r in res] == [R.CAUGHT, R.INVALID], res
    assert res[1].summary.startswith(
        f"does not apply on for-next+kcsan ({fn.commit[:12]}): "), res[1].summary
    assert not res[1].ok


def test_mutants_on_a_failing_integration_branch_are_invalid(tmp_path, monkeypatch):
    runner, t, fn, plain, ms, builds, repo = on_for_next(tmp_path, monkeypatch, F_C)
    plain.stages[0].status = R.FAIL
    res = M.run_mutants(runner, fn, plain, ms[:1])
    assert res[0].status == R.INVALID and res[0].on == "for-next+kcsan"
    assert res[0].summary.startswith("for-next+kcsan fails without the mutant")


def test_mutants_on_another_branch_count_apart_in_the_report(tmp_path):
    from ktopic.report import report as rep
    ms = [R.MutantResult("a", "0001-c", "b", "s.c", R.CAUGHT),
          R.MutantResult("a", "0001-c", "b", "s.c", R.SURVIVED, "every test passed",
                         on="for-next+kcsan")]
    r = R.Report(base_version="6.1", mutants=ms)
    assert rep.mutation_scores(ms) == {"a": (1, 1), "a on for-next+kcsan": (0, 1)}
    assert "a on for-next+kcsan: mutant 0001-c SURVIVED: every test passed" in \
        rep.mutation_lines(r)
    rep.write_all(r, tmp_path)
    xml = (tmp_path / "mutants" / "junit.xml").read_text()
    assert 'name="mutate.a on for-next+kcsan"' in xml and 'name="mutate.a"' in xml
    assert "a/0001-c on for-next+kcsan" in (tmp_path / "index.html").read_text()
    assert R.Report.from_json((tmp_path / "report.json").read_text()).mutants == ms
    # ktopic mutate --on replaces its own results and keeps the topic's.
    from ktopic.commands import cmd_mutate
    new = [R.MutantResult("a", "0001-c", "b", "s.c", R.CAUGHT, on="for-next+kcsan")]
    got = cmd_mutate._merge(tmp_path, "6.1", new, ["a"], "for-next+kcsan")
    assert got.mutants == ms[:1] + new
