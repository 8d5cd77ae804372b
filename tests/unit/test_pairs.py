"""The pair of topics that breaks the integration branch (runner/pairs.py):
topic a lowers a limit (file limit_low), topic b's second commit adds a
test that relies on it (needs_limit); each passes alone, for-next fails
suite_a.c, and c is unrelated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import boot as bootmod  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402
from ktopic.report import report as rep  # noqa: E402
from ktopic.runner import runner as runmod  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402

from test_attribute import console  # noqa: E402
from test_ci import ENV, fake_kernel, manifest, topic  # noqa: E402
from test_ktap import parser  # noqa: E402,F401  (fixture)

TOPICS = {"a": [{"limit_low": "1\n"}], "b": [{"g": "1\n"}, {"needs_limit": "1\n"}],
          "c": [{"h": "1\n"}]}


def stacked(tmp_path, monkeypatch, parser, topics=TOPICS):  # noqa: F811
    src, repo = tmp_path / "seed", tmp_path / "repo"
    src.mkdir()

    def git(*a):
        return subprocess.run(["git", *a], cwd=src, env=ENV, check=True, capture_output=True,
                              text=True).stdout.strip()

    def commits(name, prefix):
        out = []
        for i, files in enumerate(topics[name], 1):
            for k, v in files.items():
                (src / k).write_text(v)
                git("add", k)
            git("commit", "-q", "-m", f"{name}: change {i}")
            if prefix:
                p = repo / "patches" / name / f"{i:04d}-{name}-change-{i}.patch"
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(f"From x\nSubject: [PATCH {i}/{len(topics[name])}] "
                             f"{name}: change {i}\n\nbody\n")
                out.append(SimpleNamespace(path=p, rel=p.name))
        return out
    git("init", "-q", "-b", "base")
    (src / "f").write_text("0\n")
    git("add", "f")
    git("commit", "-q", "-m", "base")
    patches = {}
    for name in topics:
        git("checkout", "-q", "-b", f"topic/{name}", "base")
        patches[name] = commits(name, True)
    git("checkout", "-q", "-b", "for-next", "base")
    for name in topics:
        commits(name, False)
    root = tmp_path / "work"
    root.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(root / "linux.git")],
                   env=ENV, check=True)
    bare = root / "linux.git"
    for d in ("configs", "init", "tests"):
        (repo / "qemu" / d).mkdir(parents=True)
    (repo / "qemu/configs/base.config").write_text("CONFIG_A=y\n")
    (repo / "qemu/init/init.c").write_text("int main(){}\n")
    m = manifest(tmp_path, [topic(n, kunit=["suite_a"], patches=patches[n]) for n in topics])
    booted: list[str] = []

    def has(commit, name):
        return subprocess.run(["git", "cat-file", "-e", f"{commit}:{name}"], cwd=bare,
                              capture_output=True).returncode == 0

    def fake_build(root_, git_dir, req):
        out = root_ / "build" / req.name
        (out / "arch/x86/boot").mkdir(parents=True, exist_ok=True)
        (out / "arch/x86/boot/bzImage").write_text(req.commit)
        (out / "ktopic-build.log").write_text("built\n")
        return buildmod.BuildResult(name=req.name, ok=True, out=out, seconds=1.0,
                                    bzimage=out / "arch/x86/boot/bzImage",
                                    log=out / "ktopic-build.log", toolchain={"gcc": "gcc 12"})

    def fake_boot(req):
        commit = req.kernel.read_text()
        booted.append(commit)
        bad = has(commit, "limit_low") and has(commit, "needs_limit")
        req.console.write_text(console({"c"} if bad else set()))
        return bootmod.BootResult("done", 1.0, req.console, "qemu-system-x86_64 ...")

    fake_kernel(monkeypatch, tmp_path, fake_build, fake_boot, parser)
    wd = Workdir(root)

    def run(**kw):
        return runmod.run_targets(m, wd, Options(accel="tcg", **kw), [], tmp_path / "out",
                                  write_report=True, use_live=False)
    b_own = subprocess.run(["git", "rev-list", "--reverse", "base..topic/b"], cwd=bare,
                           capture_output=True, text=True).stdout.split()
    return SimpleNamespace(run=run, booted=booted, bare=bare, b=b_own, out=tmp_path / "out")


def test_the_pair_and_the_commit_in_the_later_topic_are_named(tmp_path, monkeypatch, parser):  # noqa: F811,E501
    s = stacked(tmp_path, monkeypatch, parser)
    report = s.run()
    by = {b.branch: b for b in report.branches}
    assert [by[f"topic/{n}"].ok for n in "abc"] == [True, True, True]
    a = by["for-next"].attribution
    assert a["topics"] == ["a", "b"]
    assert (a["commit"], a["subject"], a["patch"]) == (
        s.b[1], "b: change 2", "patches/b/0002-b-change-2.patch")
    assert a["boots"] == 2                       # the pair's head, then b's first commit on a
    line = rep.attribution_line(by["for-next"])
    assert line.startswith("for-next: fails with a and b stacked alone; first bad commit "
                           f'{s.b[1][:12]} ("b: change 2", patches/b/0002-b-change-2.patch)')
    # The probe branches are gone.
    refs = subprocess.run(["git", "for-each-ref", "refs/ktopic/probe/"], cwd=s.bare,
                          capture_output=True, text=True).stdout
    assert refs == ""
    html = (s.out / "index.html").read_text()
    assert "first bad: patches/b/0002-b-change-2.patch" in html


def test_pairs_that_share_a_config_symbol_go_first(tmp_path, monkeypatch, parser):  # noqa: F811
    """c comes between a and b, but touches nothing they touch: (a, c) is
    never tried."""
    topics = {"a": [{"limit_low": "CONFIG_LIMIT=1\n"}], "c": [{"h": "1\n"}],
              "b": [{"g": "1\n"}, {"needs_limit": "depends on CONFIG_LIMIT\n"}]}
    s = stacked(tmp_path, monkeypatch, parser, topics)
    report = s.run()
    a = next(b for b in report.branches if b.branch == "for-next").attribution
    assert a["topics"] == ["a", "b"] and a["boots"] == 2
