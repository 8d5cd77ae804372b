"""The pair of topics that breaks the integration branch (runner/pairs.py):
topic a lowers a limit (file limit_low), topic b's second commit adds a
test that relies on it (needs_limit); each passes alone, for-next fails
suite_a.c, and c is unrelated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.model.workdir import Workdir  # noqa: E402
from ktopic.report import report as rep  # noqa: E402
from ktopic.runner import runner as runmod  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402

from test_attribute import kernel_of_files  # noqa: E402
from test_ci import ENV, manifest, topic  # noqa: E402
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
    m = manifest(tmp_path, [topic(n, kunit=["suite_a"], patches=patches[n]) for n in topics])
    booted = kernel_of_files(monkeypatch, tmp_path, parser, repo, bare,
                             lambda has, c: {"c"} if has(c, "limit_low") and
                             has(c, "needs_limit") else set())
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
