"""branches/rangediff: the old heads `ktopic rebase` kept, and the two
ranges `ktopic range-diff` compares (a topic's own patches on either
base), on a small repository with the refs a rebase leaves."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conftest import git_in
from ktopic.branches import rangediff
from ktopic.errors import Failure, KtopicError
from ktopic.model import debversion
from ktopic.plumbing.gitutil import Git

OLD_BASE = "6.1.10-1"


def _commit(work, name: str, parent: str | None) -> str:
    (work / "f").write_text(name + "\n")
    git_in(work, "add", "f")
    tree = git_in(work, "write-tree").strip()
    args = ["commit-tree", tree, "-m", name] + (["-p", parent] if parent else [])
    return git_in(work, *args).strip()


@pytest.fixture
def repo(tmp_path):
    """Old base -> dep -> t; the new base (on the old one) -> dep -> t."""
    work = tmp_path / "w"
    work.mkdir()
    git_in(work, "init", "-q")
    c = {}
    c["old"] = _commit(work, "old base", None)
    c["old dep"] = _commit(work, "old dep", c["old"])
    c["old t"] = _commit(work, "old t", c["old dep"])
    c["new"] = _commit(work, "new base", c["old"])
    c["new dep"] = _commit(work, "new dep", c["new"])
    c["new t"] = _commit(work, "new t", c["new dep"])
    refs = {debversion.base_ref(OLD_BASE): c["old"],
            debversion.old_ref(OLD_BASE, "topic/dep"): c["old dep"],
            debversion.old_ref(OLD_BASE, "topic/t"): c["old t"],
            "refs/heads/base": c["new"], "refs/heads/topic/dep": c["new dep"],
            "refs/heads/topic/t": c["new t"]}
    for ref, sha in refs.items():
        git_in(work, "update-ref", ref, sha)
    topics = {n: SimpleNamespace(name=n, branch=f"topic/{n}", ref=f"refs/heads/topic/{n}")
              for n in ("dep", "t")}
    m = SimpleNamespace(topics=topics, topic=lambda n: topics[n],
                        closure=lambda n: ["dep"] if n == "t" else [])
    return m, Git(work / ".git"), c, work


def test_old_bases_are_the_versions_kept_oldest_first(repo):
    m, git, c, work = repo
    for v in ("6.1.9-2", "6.1.10-1~bpo12+1"):
        git_in(work, "update-ref", debversion.old_ref(v, "topic/t"), c["old t"])
    git_in(work, "update-ref", debversion.old_ref("6.1.8-1", "topic/other"), c["old t"])
    assert rangediff.old_bases(git, "topic/t") == ["6.1.9-2", "6.1.10-1", "6.1.10-1~bpo12+1"]
    assert rangediff.old_bases(git, "topic/none") == []


def test_each_side_starts_after_the_last_dependency(repo):
    m, git, c, _ = repo
    assert rangediff.ranges(m, git, "t", None) == (f"{c['old dep']}..{c['old t']}",
                                                   f"{c['new dep']}..{c['new t']}")


def test_a_topic_without_dependencies_starts_at_each_base(repo):
    m, git, c, _ = repo
    assert rangediff.ranges(m, git, "dep", OLD_BASE) == (f"{c['old']}..{c['old dep']}",
                                                         f"{c['new']}..{c['new dep']}")


def test_a_dependency_that_is_not_below_the_topic_is_not_a_start(repo):
    m, git, c, work = repo
    git_in(work, "update-ref", "refs/heads/topic/dep", c["old dep"])    # not under new t
    assert rangediff.ranges(m, git, "t", None)[1] == f"{c['new']}..{c['new t']}"


def test_what_cannot_be_compared_is_said(repo):
    m, git, c, work = repo
    with pytest.raises(KtopicError, match=r"no old head of topic/t for base '6.1.9-1' "
                                          r"\(kept: 6.1.10-1\)"):
        rangediff.ranges(m, git, "t", "6.1.9-1")
    git_in(work, "update-ref", "-d", "refs/heads/topic/t")
    with pytest.raises(Failure, match="branch topic/t does not exist"):
        rangediff.ranges(m, git, "t", None)
    git_in(work, "update-ref", "-d", debversion.old_ref(OLD_BASE, "topic/dep"))
    with pytest.raises(Failure, match="no old head of topic/dep is kept"):
        rangediff.ranges(m, git, "dep", None)
