"""A ref of the work repository that points at an object the repository
does not have (a pack lost, a ref file edited): generate, with or without
--force, and status name the ref and the missing object in one line
instead of passing git's error on."""

from __future__ import annotations

import pytest

MISSING = "1234567890abcdef1234567890abcdef12345678"


@pytest.mark.parametrize("ref", ["refs/heads/topic/names", "refs/ktopic/made/topic/names"])
@pytest.mark.parametrize("cmd", [["generate"], ["generate", "--force"], ["status"]])
def test_a_ref_to_a_missing_object_is_named(generated, ktopic, ref, cmd):
    p = generated.root / "patches/names/0001-lib-names-rename.patch"
    p.write_text(p.read_text().replace("Why", "Because", 1))
    (generated.workdir / "linux.git" / ref).write_text(MISSING + "\n")
    r = ktopic(*generated.args(*cmd))
    assert r.status in (1, 2), r
    lines = [ln for ln in r.err.splitlines() if MISSING[:12] in ln]
    assert len(lines) == 1, r
    assert ref in lines[0] and "missing" in lines[0], r
    assert "fatal:" not in r.err, r
