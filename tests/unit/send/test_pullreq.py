"""send/pullreq: what a pull request is refused for before any tag is
made: a revision the list did not see whole, a branch never mailed, one
with nothing to pull, a series without a public URL."""

from __future__ import annotations

import pytest

from ktopic.errors import KtopicError
from ktopic.model import manifest
from ktopic.model.workdir import Workdir
from ktopic.send import pullreq
from ktopic.send.revisions import Revision, State


def _state(*revs: Revision) -> State:
    return State("counters", None, "cid", revs[-1].number, {r.number: r for r in revs})


def test_a_sent_revision_may_be_pulled():
    pullreq.check_sent(_state(Revision(1, "h", "s", "t", "b", own=2, sent="2026-12-01")),
                       "topic/counters", "counters", "mail/counters.yaml")


def test_a_revision_never_sent_is_refused_naming_the_last_sent_one():
    st = _state(Revision(1, "h", "s", "t", "b", own=2, sent="2026-12-01"),
                Revision(2, "h", "s", "t", "b", own=2))
    with pytest.raises(KtopicError, match=r"v2 of topic/counters was never sent \(the last sent "
                                          r"revision is v1\): `ktopic mail counters --send` "
                                          r"first, or pass --unsent") as e:
        pullreq.check_sent(st, "topic/counters", "counters", "mail/counters.yaml")
    assert "mail/counters.yaml" in str(e.value)


def test_a_revision_partly_sent_is_refused_with_how_much_went_out():
    st = _state(Revision(1, "h", "s", "t", "b", own=2, messages=3, delivered=["<c>"]))
    with pytest.raises(KtopicError, match=r"v1 of topic/counters was only partly sent \(1 of 3 "
                                          r"messages\) \(no revision was sent\)"):
        pullreq.check_sent(st, "topic/counters", "counters", "mail/counters.yaml")


def test_a_branch_never_mailed_or_with_nothing_to_pull_is_refused(project):
    m = manifest.load(project.manifest)
    wd = Workdir(project.workdir)
    with pytest.raises(KtopicError, match=r"topic/counters is not enrolled: no revision of it "
                                          r"was mailed \(run `ktopic mail counters` first\)"):
        pullreq.run(m, wd, "counters")
    with pytest.raises(KtopicError, match="topic/compiler carries no patches of its own"):
        pullreq.run(m, wd, "compiler")
    assert not (project.root / "out").exists()


def test_a_series_without_a_public_url_has_nowhere_to_pull_from(project):
    text = project.manifest.read_text()
    project.manifest.write_text(text.replace('  public-url: "https://git.example.org/test.git"\n',
                                             ""))
    m = manifest.load(project.manifest)
    with pytest.raises(KtopicError, match="series.public-url is not set"):
        pullreq.run(m, Workdir(project.workdir), "counters")
