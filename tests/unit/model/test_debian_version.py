"""Debian versions and the refs they name.  A version Debian policy allows
but git refuses in a ref (`6.1.192-3~bpo12+1`, an epoch's colon, `..`)
is kept under its DEP-14 name (`~` -> `_`, `:` -> `%`, a `#` after a dot
git would refuse); a string that is not a Debian version, from the
manifest or `rebase --debian-version`, is refused in one line, exit
status 2, before the tarball is read and before any ref moves."""

from __future__ import annotations

import subprocess

import pytest

from conftest import TREE, make_tarball
from ktopic.model import debversion

DV = "  debian-version: 6.1.192-3\n"


@pytest.mark.parametrize("version, name", [
    ("6.1.192-3", "6.1.192-3"), ("6.1.192-3~bpo12+1", "6.1.192-3_bpo12+1"),
    ("1:6.1.192-3", "1%6.1.192-3"), ("6.1.192-3..4", "6.1.192-3.#.4"),
    ("6.1.192-3...4", "6.1.192-3.#.#.4"), ("6.1.192-3.", "6.1.192-3.#"),
    ("6.1.192-3.lock", "6.1.192-3.#lock"), ("0.0~0", "0.0_0"), ("0....0", "0.#.#.#.0")])
def test_dep14_names_git_takes(version, name):
    assert debversion.problem(version) is None
    assert debversion.mangle(version) == name
    assert debversion.unmangle(name) == version
    assert debversion.ref_problem(debversion.base_ref(version)) is None
    assert subprocess.run(["git", "check-ref-format", debversion.base_ref(version)]).returncode == 0


@pytest.mark.parametrize("version", ["", "6.1.193-1 x", "6.1.193-1\nx", "x6.1-1", "a:6.1-1",
                                     "6.1.193-", "6.1.193-1/2", "6.1.193-1@{0}", "6.1_1-1",
                                     "6.1.193-1:2", "-1", "６.1-1"])
def test_not_a_debian_version(version):
    assert debversion.problem(version), version


def test_a_backport_base_is_imported_and_generated(project, ktopic, tmp_path):
    """6.1.192-3~bpo12+1, a backport's version: refs/ktopic/bases/6.1.192-3_bpo12+1."""
    project.manifest.write_text(project.manifest.read_text().replace(
        DV, "  debian-version: 6.1.192-3~bpo12+1\n"))
    r = ktopic(*project.args("import-base"))
    assert r.status == 0, r
    refs = project.refs()
    assert refs["refs/ktopic/bases/6.1.192-3_bpo12+1"] == refs["refs/heads/base"]
    r = ktopic(*project.args("generate"))
    assert r.status == 0, r
    r = ktopic(*project.args("status"))
    assert r.status == 0, r


def test_a_ref_too_long_is_refused_at_the_manifests_line(project, ktopic):
    text = project.manifest.read_text().replace(DV, "  debian-version: 6.1.192-" + "3" * 300 + "\n")
    project.manifest.write_text(text)
    r = ktopic(*project.args("import-base"))
    assert r.status == 2, r
    line = text[:text.index("  debian-version:")].count("\n") + 1
    assert r.err.startswith(f"ktopic: branches.yaml:{line}: debian-version "), r
    assert r.err.count("\n") == 1 and "at most 255 bytes" in r.err, r
    assert not project.workdir.exists() or "refs/heads/base" not in project.refs()


def _newer(tmp_path):
    files = dict(TREE)
    files["Makefile"] = files["Makefile"].replace("SUBLEVEL = 192", "SUBLEVEL = 193")
    files["README"] = "Linux kernel, newer\n"
    return make_tarball(tmp_path / "newer.tar.xz", files, mtime=1_700_100_000)


@pytest.mark.parametrize("bad", ["6.1.193-1 x", "6.1.193-1\nupdate refs/heads/base 0", "6.1.193-",
                                 "6.1.193-1@{0}", "6.1.193-1/x"])
def test_rebase_refuses_what_is_not_a_debian_version(generated, ktopic, tmp_path, bad):
    tb = _newer(tmp_path)
    before = generated.refs()
    r = ktopic(*generated.args("rebase", "--tarball", str(tb), "--debian-version", bad))
    assert r.status == 2, r
    assert r.err.count("\n") == 1 and "is not a Debian version" in r.err, r
    assert generated.refs() == before
    assert not (generated.workdir / "rebase").exists()


def test_rebase_from_and_to_a_backport(project, ktopic, tmp_path):
    project.manifest.write_text(project.manifest.read_text().replace(
        DV, "  debian-version: 6.1.192-3~bpo12+1\n"))
    assert ktopic(*project.args("import-base")).status == 0
    assert ktopic(*project.args("generate")).status == 0
    r = ktopic(*project.args("rebase", "--tarball", str(_newer(tmp_path)),
                             "--debian-version", "6.1.193-1~bpo12+1"))
    assert r.status == 0, r
    refs = project.refs()
    assert refs["refs/ktopic/bases/6.1.193-1_bpo12+1"] == refs["refs/heads/base"]
    assert "refs/ktopic/old/6.1.192-3_bpo12+1/topic/counters" in refs
    assert "  debian-version: 6.1.193-1~bpo12+1\n" in project.manifest.read_text()
    for old in ([], ["6.1.192-3~bpo12+1"]):
        r = ktopic(*project.args("range-diff", "counters", *old))
        assert r.status == 0, r
    r = ktopic(*project.args("range-diff", "counters", "6.1.192-3"))
    assert r.status == 2 and "kept: 6.1.192-3~bpo12+1" in r.err, r
