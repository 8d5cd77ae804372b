"""A manifest branch git cannot make next to a ref the work repository
already has: one would be a directory of the other (`topic/names` there,
`topic/names/v2` in the manifest, as a rename gives).  git cannot delete
the one and create the other in one transaction, so generate (and
rebase) refuse it before any work, in one line naming branches.yaml's
line and the refs in the way, exit 2, no ref moved.  ktopic does not
delete a branch the manifest no longer names; once it is deleted, the
branch is made."""

from __future__ import annotations

import pytest

from conftest import TREE, make_tarball

NAMES = "    branch: topic/names\n"


@pytest.mark.parametrize("new, line, clash", [
    ("    branch: topic/names/v2\n", "    branch: topic/names/v2",
     "refs/heads/topic/names, refs/ktopic/made/topic/names"),
    ("    branch: topic/counters/x\n", "    branch: topic/counters/x", None),
])
def test_generate_refuses_a_branch_under_an_existing_one(generated, ktopic, new, line, clash):
    text = generated.manifest.read_text().replace(NAMES, new)
    generated.manifest.write_text(text)
    before = generated.refs()
    r = ktopic(*generated.args("generate"))
    if clash is None:       # topic/counters is the manifest's: load refuses it already
        assert r.status == 2 and "clashes with 'topic/counters'" in r.err, r
        return
    assert r.status == 2, r
    assert r.err.count("\n") == 1, r
    n = text[:text.index(line)].count("\n") + 1
    assert r.err.startswith(f"ktopic: branches.yaml:{n}: branch 'topic/names/v2' "), r
    assert clash in r.err, r
    assert generated.refs() == before


def test_a_branch_over_a_directory_of_refs_is_refused(generated, ktopic):
    text = generated.manifest.read_text()
    generated.manifest.write_text(text.replace(NAMES, "    branch: topic/n/v1\n"))
    assert ktopic(*generated.args("generate")).status == 0
    text = text.replace(NAMES, "    branch: topic/n\n")
    generated.manifest.write_text(text)
    before = generated.refs()
    r = ktopic(*generated.args("generate", "names"))
    assert r.status == 2 and r.err.count("\n") == 1, r
    assert "refs/heads/topic/n/v1" in r.err, r
    assert generated.refs() == before


def test_integration_branch_under_an_existing_one(generated, ktopic):
    text = generated.manifest.read_text().replace("  branch: for-next\n", "  branch: for-next/all\n")
    generated.manifest.write_text(text)
    before = generated.refs()
    r = ktopic(*generated.args("generate"))
    assert r.status == 2 and r.err.count("\n") == 1, r
    n = text[:text.index("  branch: for-next/all")].count("\n") + 1
    assert r.err.startswith(f"ktopic: branches.yaml:{n}: branch 'for-next/all' "), r
    assert generated.refs() == before


def test_once_the_old_refs_are_deleted_the_branch_is_made(generated, ktopic):
    generated.manifest.write_text(generated.manifest.read_text().replace(
        NAMES, "    branch: topic/names/v2\n"))
    for ref in ("refs/heads/topic/names", "refs/ktopic/made/topic/names"):
        generated.git("update-ref", "-d", ref)
    r = ktopic(*generated.args("generate"))
    assert r.status == 0, r
    assert "refs/heads/topic/names/v2" in generated.refs()


def test_rebase_refuses_it_before_importing(generated, ktopic, tmp_path):
    generated.manifest.write_text(generated.manifest.read_text().replace(
        NAMES, "    branch: topic/names/v2\n"))
    files = dict(TREE)
    files["Makefile"] = files["Makefile"].replace("SUBLEVEL = 192", "SUBLEVEL = 193")
    tb = make_tarball(tmp_path / "newer.tar.xz", files, mtime=1_700_100_000)
    before = generated.refs()
    r = ktopic(*generated.args("rebase", "--tarball", str(tb), "--debian-version", "6.1.193-1"))
    assert r.status == 2 and r.err.count("\n") == 1, r
    assert "branch 'topic/names/v2'" in r.err and "refs/heads/topic/names" in r.err, r
    assert generated.refs() == before
    assert not (generated.workdir / "rebase").exists()
