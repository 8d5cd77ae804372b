"""ktopic export in a checkout whose path holds a space (or another
character a shell or a whitespace split would cut at): the patch files
are found by their names, not by splitting git's output."""

from __future__ import annotations

import shutil

import pytest

from conftest import Project


@pytest.mark.parametrize("where", ["with space", "tab\there", "new\nline"])
def test_export_in_a_checkout_with_a_space_in_its_path(generated, ktopic, tmp_path, where):
    root = tmp_path / where / "repo"
    shutil.copytree(generated.root, root)
    p = Project(root, generated.tarball)
    p.workdir = generated.workdir
    before = {f: f.read_bytes() for f in sorted((root / "patches").rglob("*.patch"))}
    manifest = p.manifest.read_bytes()
    for topic in ("counters", "names"):
        r = ktopic(*p.args("export", topic))
        assert r.status == 0, r
    assert {f: f.read_bytes() for f in sorted((root / "patches").rglob("*.patch"))} == before
    assert p.manifest.read_bytes() == manifest
