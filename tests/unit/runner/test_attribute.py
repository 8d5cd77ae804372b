"""A failing branch's first bad commit (runner/attribute.py), on a
synthetic repository whose commits say, by the files they hold, whether
their kernel builds and which test fails: `bug` fails suite_a.c, `other`
fails suite_a.d (another failure), `broken` does not build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import boot as bootmod  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.model import results as R  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402
from ktopic.report import report as rep  # noqa: E402
from ktopic.runner import attribute  # noqa: E402
from ktopic.runner import runner as runmod  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402

from test_ci import ENV, fake_kernel, manifest, topic  # noqa: E402
from test_ktap import parser  # noqa: E402,F401  (fixture)


def console(failing: set[str]) -> str:
    cases = "".join(f"[    1.0]     {'not ok' if c in failing else 'ok'} {i} {c}\n"
                    for i, c in enumerate(("c", "d"), 1))
    bad = "not ok" if failing else "ok"
    return ("[    0.0] Linux version 6.1.192 (ktopic@ktopic) #1 SMP\n"
            "[    0.5] smp: Brought up 1 node, 2 CPUs\n"
            "[    1.0] KTAP version 1\n[    1.0] 1..1\n[    1.0]     KTAP version 1\n"
            "[    1.0]     # Subtest: suite_a\n[    1.0]     1..2\n" + cases +
            f"[    1.0] {bad} 1 suite_a\nktopic-init: start\nktopic-init: 0 failures\n"
            "ktopic-init: done\n")


def kernel_of_files(monkeypatch, tmp_path, parser, repo, bare, failing_of):  # noqa: F811
    """repo's qemu/, and a fake build and boot whose kernel is its commit
    of the bare repository: it does not build when the commit holds a file
    `broken`; failing_of(has, commit) names the cases of suite_a that fail
    (has(commit, file): the commit holds file).  Gives the commits booted."""
    for d in ("configs", "init", "tests"):
        (repo / "qemu" / d).mkdir(parents=True)
    (repo / "qemu/configs/base.config").write_text("CONFIG_A=y\n")
    (repo / "qemu/init/init.c").write_text("int main(){}\n")
    booted: list[str] = []

    def has(commit: str, name: str) -> bool:
        return subprocess.run(["git", "cat-file", "-e", f"{commit}:{name}"], cwd=bare,
                              capture_output=True).returncode == 0

    def fake_build(root_, git_dir, req):
        out = root_ / "build" / req.name
        (out / "arch/x86/boot").mkdir(parents=True, exist_ok=True)
        (out / "arch/x86/boot/bzImage").write_text(req.commit)
        (out / "ktopic-build.log").write_text("built\n")
        ok = not has(req.commit, "broken")
        return buildmod.BuildResult(name=req.name, ok=ok, out=out, seconds=1.0,
                                    bzimage=out / "arch/x86/boot/bzImage",
                                    log=out / "ktopic-build.log", toolchain={"gcc": "gcc 12"},
                                    error="" if ok else "broken: does not compile")

    def fake_boot(req):
        commit = req.kernel.read_text()
        booted.append(commit)
        req.console.write_text(console(failing_of(has, commit)))
        return bootmod.BootResult("done", 1.0, req.console, "qemu-system-x86_64 ...")

    fake_kernel(monkeypatch, tmp_path, fake_build, fake_boot, parser)
    return booted


def make(tmp_path, monkeypatch, parser, commits):  # noqa: F811
    """topic/a on base: one commit per entry of commits, each a dict of
    files to write (None: remove); its patch files name each commit's
    subject.  Gives a run() and the list of commits booted."""
    src = tmp_path / "seed"
    src.mkdir()

    def git(*a):
        return subprocess.run(["git", *a], cwd=src, env=ENV, check=True, capture_output=True,
                              text=True).stdout.strip()
    git("init", "-q", "-b", "base")
    (src / "f").write_text("0\n")
    git("add", "f")
    git("commit", "-q", "-m", "base")
    git("checkout", "-q", "-b", "topic/a")
    repo = tmp_path / "repo"
    (repo / "patches/a").mkdir(parents=True)
    patches = []
    for i, files in enumerate(commits, 1):
        for k, v in files.items():
            if v is None:
                git("rm", "-q", k)
            else:
                (src / k).write_text(v)
                git("add", k)
        subject = f"a: change {i}"
        git("commit", "-q", "--allow-empty", "-m", subject)
        p = repo / "patches/a" / f"{i:04d}-a-change-{i}.patch"
        p.write_text(f"From x\nSubject: [PATCH {i}/{len(commits)}] {subject}\n\nbody\n")
        patches.append(SimpleNamespace(path=p, rel=p.name))
    git("branch", "for-next")
    root = tmp_path / "work"
    root.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(root / "linux.git")],
                   env=ENV, check=True)
    bare = root / "linux.git"
    m = manifest(tmp_path, [topic("a", kunit=["suite_a"], patches=patches)])
    booted = kernel_of_files(monkeypatch, tmp_path, parser, repo, bare,
                             lambda has, c: {x for x, f in (("c", "bug"), ("d", "other"))
                                             if has(c, f)})
    wd = Workdir(root)
    own = git("rev-list", "--reverse", "base..topic/a").split()

    def run(**kw):
        opts = Options(accel="tcg", **kw)
        return runmod.run_targets(m, wd, opts, ["a"], tmp_path / "out", write_report=True,
                                  use_live=False)
    return SimpleNamespace(run=run, booted=booted, commits=own, out=tmp_path / "out")


def topic_a(report: R.Report) -> R.BranchResult:
    return next(b for b in report.branches if b.topic == "a")


def test_a_bug_in_the_second_of_three_commits_is_named(tmp_path, monkeypatch, parser):  # noqa: F811
    s = make(tmp_path, monkeypatch, parser, [{"g": "1\n"}, {"bug": "1\n"}, {"h": "1\n"}])
    report = s.run()
    a = topic_a(report).attribution
    assert (a["commit"], a["subject"], a["patch"]) == (
        s.commits[1], "a: change 2", "patches/a/0002-a-change-2.patch")
    assert a["boots"] <= 3 and not a["skipped"] and not a["other"]   # ceil(log2 3) + 1
    # Where a maintainer looks: the closing lines, JUnit, the HTML cell.
    lines = rep.failure_lines(report)
    assert f'topic/a: first bad commit {s.commits[1][:12]} ("a: change 2", ' \
        f'patches/a/0002-a-change-2.patch) after {a["boots"]} boot(s)' in lines
    junit = (s.out / "topic_a" / "junit.xml").read_text()
    assert 'message="suite_a.c fail (first bad: patches/a/0002-a-change-2.patch)"' in junit
    html = (s.out / "index.html").read_text()
    assert 'href="#b-topic_a-repro">first bad: patches/a/0002-a-change-2.patch</a>' in html
    assert 'id="b-topic_a-repro"' in html


def test_a_commit_that_does_not_build_is_skipped_and_said(tmp_path, monkeypatch, parser):  # noqa: F811,E501
    s = make(tmp_path, monkeypatch, parser, [
        {"g": "1\n"}, {"broken": "1\n"}, {"broken": None}, {"bug": "1\n"}, {"h": "1\n"}])
    a = topic_a(s.run()).attribution
    assert a["commit"] == s.commits[3] and a["skipped"] == [s.commits[1]]
    assert "1 commit(s) skipped: they do not build" in rep.attribution_text("topic/a", a)


def test_a_bug_right_after_a_commit_that_does_not_build_is_a_range(tmp_path, monkeypatch,
                                                                    parser):  # noqa: F811
    """As git bisect: the commit that does not build cannot be told from
    the one after it."""
    s = make(tmp_path, monkeypatch, parser, [
        {"g": "1\n"}, {"broken": "1\n"}, {"broken": None, "bug": "1\n"}, {"h": "1\n"}])
    a = topic_a(s.run()).attribution
    assert "commit" not in a and a["range"] == s.commits[1:3]
    assert a["stopped"] == "commits that do not build" and a["skipped"] == [s.commits[1]]


def test_an_earlier_different_failure_is_reported_not_taken(tmp_path, monkeypatch, parser):  # noqa: F811,E501
    s = make(tmp_path, monkeypatch, parser, [
        {"g": "1\n"}, {"other": "1\n"}, {"other": None}, {"bug": "1\n"}, {"h": "1\n"}])
    a = topic_a(s.run()).attribution
    assert a["commit"] == s.commits[3]
    assert [(o["commit"], o["failure"]) for o in a["other"]] == [
        (s.commits[1], ["case suite_a.d"])]


def test_the_bound_says_what_it_narrowed_to(tmp_path, monkeypatch, parser):  # noqa: F811
    s = make(tmp_path, monkeypatch, parser, [{"bug": "1\n"}] + [{f"x{i}": "1\n"} for i in range(4)])
    a = topic_a(s.run(attribute=1)).attribution
    assert a["boots"] == 1 and "commit" not in a and a["stopped"] == "the bound of boots"
    assert a["range"] == s.commits[:2]
    assert "first bad commit among 2" in rep.attribution_text("topic/a", a)


def test_nothing_runs_when_the_branch_passes_or_when_asked_not_to(tmp_path, monkeypatch, parser):  # noqa: F811,E501
    s = make(tmp_path, monkeypatch, parser, [{"g": "1\n"}, {"h": "1\n"}])
    assert not topic_a(s.run()).attribution and len(s.booted) == 2     # base and head


def test_no_attribute(tmp_path, monkeypatch, parser):  # noqa: F811
    s = make(tmp_path, monkeypatch, parser, [{"g": "1\n"}, {"bug": "1\n"}])
    report = s.run(attribute=0)
    assert not topic_a(report).attribution and not topic_a(report).ok
    assert len(s.booted) == 2


def test_the_main_job_attributes_in_its_second_tier(tmp_path, monkeypatch, parser):  # noqa: F811,E501
    s = make(tmp_path, monkeypatch, parser, [{"g": "1\n"}, {"bug": "1\n"}, {"h": "1\n"}])
    a = topic_a(s.run(tiers=True, first_verdict=True)).attribution
    assert not a and len(s.booted) == 2
    assert topic_a(s.run(tiers=True)).attribution["commit"] == s.commits[1]


def test_a_probe_is_cached_by_content(tmp_path, monkeypatch, parser):  # noqa: F811
    s = make(tmp_path, monkeypatch, parser, [{"g": "1\n"}, {"bug": "1\n"}, {"h": "1\n"}])
    first = topic_a(s.run()).attribution
    s.booted.clear()
    again = topic_a(s.run()).attribution
    assert again["commit"] == first["commit"] and s.booted == []


@pytest.mark.parametrize("findings,want", [
    ([R.Finding("lockdep", "possible circular locking dependency detected at 0xffff")],
     {("lockdep", "")}),
    ([R.Finding("timeout", "no end in 120 s")], {("timeout", "")}),
    ([R.Finding("missing_suite", "suite_x did not run")], {("missing_suite", "suite_x did not run")}),
    ([R.Finding("warning", "WARNING at x", in_base=True)], set()),
    ([R.Finding("new_warning", "fs/inode.c:1814: sparse warning: context imbalance")], set()),
    ([R.Finding("checkpatch", "0001-x.patch: ERROR:SPACING: ...")], set()),
])
def test_a_failure_is_its_kind_and_test_name(findings, want):
    assert attribute.signature(R.BranchResult("b", "t", findings=findings)) == want


def test_a_gate_failure_alone_is_not_bisected():
    """A new W=1/sparse warning fails the branch, but no probe boot can
    show it: bisecting it only builds and boots commits for nothing."""
    br = R.BranchResult("topic/a", "a", findings=[R.Finding("new_warning", "x.c:1: w")],
                        stages=[R.StageResult("check", R.FAIL, 0.0, "1 new warning")])
    assert not attribute.wanted(SimpleNamespace(topic="a"), br)


def test_the_gates_finding_kinds_are_all_named():
    """Every kind of finding a gate makes is in FINDING_KINDS, so that a
    new gate's findings are not bisected by boots either."""
    import re
    from ktopic import gates
    from ktopic.gates import check
    made = set()
    for f in Path(gates.__file__).parent.glob("*.py"):
        made |= set(re.findall(r'R\.Finding\("([a-z_]+)"', f.read_text()))
    assert made and made <= check.FINDING_KINDS
