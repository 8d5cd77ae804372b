"""A patch whose manifest entry names the mainline commit that carries it
(upstream: commit, subject, release, checks) is dropped by that id on a
new base from that release on, even where upstream's form of the change
is not ours; a check that fails there stops the rebase at the patch."""

import yaml

from conftest import TREE, make_tarball
from rebase_support import outcomes

NEW_DV = "6.1.193-1"
P3 = "0001-lib-names-rename.patch"
OURS = 'const char *name_7 = "n7";\n'
THEIRS = 'const char *name_7 = "SEVEN";\n'     # upstream's own form: ours conflicts


def _name_upstream(project, release="v6.1", contains='name_7 = "SEVEN"'):
    text = project.manifest.read_text()
    entry = (f"      - file: {P3}\n"
             f"        upstream:\n"
             f"          commit: 0123456789ab\n"
             f"          subject: \"lib/names: rename name_7\"\n"
             f"          release: {release}\n"
             f"          checks:\n"
             f"            - file: lib/names.c\n"
             f"              contains: '{contains}'\n")
    assert f"      - {P3}\n" in text
    project.manifest.write_text(text.replace(f"      - {P3}\n", entry))


def _newer(tmp_path):
    files = dict(TREE)
    files["Makefile"] = files["Makefile"].replace("SUBLEVEL = 192", "SUBLEVEL = 193")
    files["lib/names.c"] = files["lib/names.c"].replace(OURS, THEIRS)
    return make_tarball(tmp_path / "newer.tar.xz", files, mtime=1_700_100_000)


def _rebase(ktopic, project, tarball):
    return ktopic(*project.args("rebase", "--tarball", str(tarball), "--debian-version", NEW_DV))


def test_dropped_by_the_named_commit(generated, ktopic, tmp_path):
    _name_upstream(generated)
    r = _rebase(ktopic, generated, _newer(tmp_path))
    assert r.status == 0, r
    assert outcomes(r.out)[("names", P3)] == "upstream"
    assert "0123456789ab" in r.out
    names = yaml.safe_load(generated.manifest.read_text())["topics"]["names"]
    assert names["patches"] == []
    (entry,) = names["upstream"]
    assert entry["upstream-in"] == 'v6.1: 0123456789ab ("lib/names: rename name_7")'
    assert entry["checks"] == [{"file": "lib/names.c", "contains": 'name_7 = "SEVEN"'}]
    assert not (generated.root / "patches/names" / P3).exists()


def test_a_failing_check_stops_at_the_patch(generated, ktopic, tmp_path):
    _name_upstream(generated, contains='name_7 = "EIGHT"')
    r = _rebase(ktopic, generated, _newer(tmp_path))
    assert r.status != 0
    said = r.out + r.err
    assert "0123456789ab" in said and "does not hold" in said
    assert (generated.root / "patches/names" / P3).exists()


def test_a_later_release_is_not_used(generated, ktopic, tmp_path):
    """v6.2 is not in 6.1.193: the patch goes the usual way (here it
    conflicts with upstream's form)."""
    _name_upstream(generated, release="v6.2")
    r = _rebase(ktopic, generated, _newer(tmp_path))
    assert r.status != 0
    assert "0123456789ab" not in r.out + r.err


def test_the_entry_survives_a_rewrite_of_the_list(generated):
    """export, import-mbox and rebase rewrite a topic's list from the
    loaded entries (Patch.entry()): the upstream: key must come through."""
    from ktopic.model import manifest, manifest_edit
    _name_upstream(generated, release="v6.2")
    d = generated.root / "patches/names"
    (d / "0002-lib-names-again.patch").write_text((d / P3).read_text())
    m = manifest.load(generated.manifest, workdir=generated.workdir)
    m = manifest_edit.set_patches(m, "names", [p.entry() for p in m.topics["names"].patches]
                                  + ["0002-lib-names-again.patch"])
    first, second = m.topics["names"].patches
    assert first.upstream.commit == "0123456789ab" and first.upstream.release == "v6.2"
    assert first.upstream.checks[0].pattern == 'name_7 = "SEVEN"'
    assert second.upstream is None and second.entry() == "0002-lib-names-again.patch"


def test_a_bad_commit_id_is_refused(generated, ktopic):
    text = generated.manifest.read_text()
    _name_upstream(generated)
    generated.manifest.write_text(generated.manifest.read_text().replace("0123456789ab", "v6.1"))
    r = ktopic(*generated.args("status"))
    assert r.status == 2
    assert "branches.yaml" in r.err and len(r.err.strip().splitlines()) == 1
    generated.manifest.write_text(text)
