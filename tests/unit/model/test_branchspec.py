"""model/branchspec: the branches a manifest makes, and the names a user
types resolved to them, on a manifest made of plain objects."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ktopic.errors import KtopicError
from ktopic.model import branchspec
from ktopic.model.branchspec import BASE, INTEGRATION


def _topic(name, depends=(), config=None, to=(), cc=(), smp=2, tested=True, kunit=(),
           sanitizers=()):
    return SimpleNamespace(
        name=name, branch=f"topic/{name}", depends=list(depends), patches=[f"{name}.patch"],
        config=Path(config) if config else None, kunit=list(kunit), modules=[], programs=[],
        cmdline="", smp=smp, sanitizers=list(sanitizers), expect=[], to=list(to), cc=list(cc),
        upstream=[], superseded=[], dropped=[], description=f"the {name} topic",
        tested=tested, line=1)


def _manifest(topics, to=(), cc=()):
    ts = {t.name: t for t in topics}

    def closure(name):
        out = []
        for d in ts[name].depends:
            out += [x for x in closure(d) + [d] if x not in out]
        return out
    return SimpleNamespace(
        order=list(ts), topics=ts, closure=closure,
        integration=SimpleNamespace(branch="for-next", topics=list(ts), to=list(to),
                                    cc=list(cc), description="all of it", line=9))


def test_the_base_first_the_topics_in_order_the_integration_branch_last():
    m = _manifest([_topic("locking"), _topic("mm", depends=["locking"])])
    specs = branchspec.branches(m)
    assert [(s.kind, s.name, s.branch) for s in specs] == [
        (BASE, BASE, BASE), ("topic", "locking", "topic/locking"), ("topic", "mm", "topic/mm"),
        (INTEGRATION, INTEGRATION, "for-next")]
    assert specs[2].depends == ["locking"] and specs[2].topics == ["mm"]
    assert specs[2].patches == [("mm", "mm.patch")]
    assert specs[3].patches == [("locking", "locking.patch"), ("mm", "mm.patch")]
    assert specs[2].ref == "refs/heads/topic/mm"


def test_a_topic_is_configured_with_its_dependencies_fragments_each_once():
    m = _manifest([_topic("a", config="qemu/configs/a.config"),
                   _topic("b", depends=["a"], config="qemu/configs/a.config"),
                   _topic("c", depends=["b"], config="qemu/configs/c.config")])
    c = branchspec.branches(m)[3]
    assert c.fragments == [Path("qemu/configs/a.config"), Path("qemu/configs/c.config")]


def test_the_integration_branch_takes_every_topics_recipients_when_it_names_none():
    m = _manifest([_topic("a", to=["x@example.org"], cc=["l@example.org"]),
                   _topic("b", to=["x@example.org", "y@example.org"])])
    i = branchspec.branches(m)[-1]
    assert i.to == ["x@example.org", "y@example.org"] and i.cc == ["l@example.org"]
    named = _manifest([_topic("a", to=["x@example.org"])], cc=["list@example.org"])
    i = branchspec.branches(named)[-1]
    assert i.to == [] and i.cc == ["list@example.org"]


def test_the_integration_branch_is_as_demanding_as_its_topics():
    m = _manifest([_topic("a", smp=2, kunit=["s1"], sanitizers=["kasan"]),
                   _topic("b", smp=4, kunit=["s1", "s2"], tested=False)])
    i = branchspec.branches(m)[-1]
    assert i.smp == 4 and i.kunit == ["s1", "s2"] and i.sanitizers == ["kasan"]
    assert i.tested is False
    assert branchspec.branches(_manifest([_topic("a")]))[-1].tested is True


def test_names_resolve_by_topic_or_branch_in_manifest_order_each_once():
    m = _manifest([_topic("locking"), _topic("mm")])
    got = branchspec.resolve(m, ["for-next", "topic/mm", "mm", "locking"])
    assert [s.name for s in got] == ["locking", "mm", INTEGRATION]
    assert [s.name for s in branchspec.resolve(m, [])] == ["locking", "mm", INTEGRATION]
    assert [s.name for s in branchspec.resolve(m, [], base=True)][0] == BASE
    assert [s.name for s in branchspec.resolve(m, ["base"], base=True)] == [BASE]


def test_an_unknown_name_is_refused_with_the_topics():
    m = _manifest([_topic("locking"), _topic("mm")])
    with pytest.raises(KtopicError, match=r"no topic 'fs' \(topics: locking, mm\)"):
        branchspec.resolve(m, ["mm", "fs"])
    with pytest.raises(KtopicError, match="no topic 'base'"):
        branchspec.resolve(m, ["base"])             # only where a command takes the base
