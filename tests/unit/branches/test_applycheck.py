"""branches/applycheck: a series is tried on the topic as git am would
apply it, before import-mbox writes anything; no ref moves either way."""

from __future__ import annotations

import pytest

from conftest import TREE, make_patch
from ktopic.branches import applycheck
from ktopic.errors import KtopicError
from ktopic.model import manifest
from ktopic.model.workdir import Workdir
from ktopic.plumbing.patchfile import parse

# lib/counter.c as topic/counters leaves it.
COUNTERS = TREE["lib/counter.c"].replace("return 3;", "return 33;").replace("return 30;",
                                                                             "return 300;")


def _series(tmp_path, *edits):
    """One patch file per (old, new) edit of lib/counter.c, each made on
    the one before, starting from the topic's file."""
    tree = dict(TREE, **{"lib/counter.c": COUNTERS})
    out = []
    for i, (old, new) in enumerate(edits, 1):
        text = make_patch(tmp_path, tree, [("lib/counter.c", old, new)], f"lib/counter: step {i}")
        path = tmp_path / f"{i:04d}-step.patch"
        path.write_text(text)
        out.append(parse(path, path.name))
        tree = dict(tree, **{"lib/counter.c": tree["lib/counter.c"].replace(old, new)})
    return out


def test_a_series_that_applies_passes_and_moves_no_ref(generated, tmp_path):
    m = manifest.load(generated.manifest)
    before = generated.refs()
    series = _series(tmp_path, ("return 5;", "return 55;"), ("return 55;", "return 555;"))
    assert applycheck.check(m, Workdir(generated.workdir), "counters", series) is None
    assert generated.refs() == before


def test_the_first_patch_git_am_would_stop_at_is_named(generated, tmp_path):
    m = manifest.load(generated.manifest)
    before = generated.refs()
    series = _series(tmp_path, ("return 5;", "return 55;"))
    # Made on the base, where f3 returns 3: on the topic it returns 33.
    bad = make_patch(tmp_path, dict(TREE), [("lib/counter.c", "return 3;", "return 4;")],
                     "lib/counter: from the base")
    (tmp_path / "0002-bad.patch").write_text(bad)
    series.append(parse(tmp_path / "0002-bad.patch", "0002-bad.patch"))
    with pytest.raises(KtopicError, match="git am would stop at it on top of topic counters") as e:
        applycheck.check(m, Workdir(generated.workdir), "counters", series)
    assert "0002-bad.patch" in str(e.value)
    assert generated.refs() == before


def test_a_patch_that_fits_the_base_but_not_the_topic_is_refused(generated, tmp_path):
    m = manifest.load(generated.manifest)
    on_base = make_patch(tmp_path, dict(TREE), [("lib/counter.c", "return 30;", "return 31;")],
                         "lib/counter: on the base")
    (tmp_path / "0001-base.patch").write_text(on_base)
    with pytest.raises(KtopicError, match="topic counters"):
        applycheck.check(m, Workdir(generated.workdir), "counters",
                         [parse(tmp_path / "0001-base.patch", "0001-base.patch")])
    # The same patch fits the topic that does not carry counters' change.
    assert applycheck.check(m, Workdir(generated.workdir), "compiler",
                            [parse(tmp_path / "0001-base.patch", "0001-base.patch")]) is None
