"""A manifest written with CRLF line ends (an editor on another system)
keeps them through every edit ktopic makes: import-mbox's and export's
patches: list, rebase's base: keys and upstream: entries, and a rebase
that is aborted.  The lines an edit does not touch keep their bytes, and
the lines it writes end as the file's do."""

from __future__ import annotations

import shutil

import pytest

from conftest import TREE, make_patch, make_tarball
from ktopic.model import manifest, manifest_edit

NEW = "0002-lib-names-two.patch"


def _twin(project, tmp_path, text: str):
    """The LF manifest and a CRLF copy of it, each in a checkout of its own
    (with a patch for topic compiler, which has none)."""
    lf = project.root
    shutil.copy(lf / "patches/names/0001-lib-names-rename.patch", tmp_path / "c.patch")
    (lf / "patches/compiler").mkdir()
    shutil.copy(tmp_path / "c.patch", lf / "patches/compiler/0001-c.patch")
    crlf = tmp_path / "crlf-repo"
    shutil.copytree(lf, crlf)
    (lf / "branches.yaml").write_bytes(text.encode())
    (crlf / "branches.yaml").write_bytes(text.replace("\n", "\r\n").encode())
    return lf / "branches.yaml", crlf / "branches.yaml"


EDITS = {
    "set_patches_reorder": lambda m: manifest_edit.set_patches(
        m, "counters", ["0002-lib-counter-return-even-more.patch",
                        "0001-lib-counter-return-more.patch"]),
    "set_patches_empty": lambda m: manifest_edit.set_patches(m, "names", []),
    "set_patches_new_list": lambda m: manifest_edit.set_patches(
        m, "compiler", [{"file": "0001-c.patch",
                         "waivers": [{"type": "FILE_PATH_CHANGES", "reason": "a reason long enough"}]}]),
    "set_base": lambda m: manifest_edit.set_base(m, debian_version="6.1.192-4"),
    "add_upstream": lambda m: manifest_edit.add_upstream(
        m, "names", {"subject": "lib: x", "upstream-in": "v6.2",
                     "checks": [{"file": "lib/names.c", "contains": "name_1 ="}]}),
    "add_dropped": lambda m: manifest_edit.add_upstream(
        m, "counters", {"subject": "lib: y", "reason": "not needed any more, see the figures"},
        kind="dropped"),
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edit_keeps_crlf_line_ends(project, tmp_path, edit):
    text = project.manifest.read_text()
    lf, crlf = _twin(project, tmp_path, text)
    EDITS[edit](manifest.load(lf))
    EDITS[edit](manifest.load(crlf))
    want = lf.read_bytes()
    assert want != text.encode(), "the edit changed nothing"
    assert crlf.read_bytes() == want.replace(b"\n", b"\r\n")


def test_lines_not_edited_keep_their_bytes_in_a_mixed_file(project):
    """Only some lines end in CRLF: each keeps its end, the one edited too."""
    lines = project.manifest.read_text().splitlines(keepends=True)
    lines = [ln.replace("\n", "\r\n") if i % 2 == 0 else ln for i, ln in enumerate(lines)]
    project.manifest.write_bytes("".join(lines).encode())
    before = project.manifest.read_bytes().split(b"\n")
    manifest_edit.set_base(manifest.load(project.manifest), debian_version="6.1.192-4")
    after = project.manifest.read_bytes().split(b"\n")
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert len(after) == len(before) and len(changed) == 1, changed
    old, new = before[changed[0]], after[changed[0]]
    assert new.rstrip(b"\r") == b"  debian-version: 6.1.192-4"
    assert new.endswith(b"\r") == old.endswith(b"\r")


def test_import_mbox_keeps_crlf_line_ends(generated, ktopic, tmp_path):
    tree = dict(TREE, **{"lib/names.c": TREE["lib/names.c"].replace('"n7"', '"seven"')})
    mail = make_patch(tmp_path, tree, [("lib/names.c", '"n2"', '"two"')], "lib/names: two",
                      "Thu, 3 Dec 2026 07:01:00 +0000")
    (tmp_path / "one.mbox").write_text(mail)
    text = generated.manifest.read_text()
    generated.manifest.write_bytes(text.replace("\n", "\r\n").encode())
    r = ktopic(*generated.args("import-mbox", str(tmp_path / "one.mbox"), "--topic", "names"))
    assert r.status == 0, r
    want = text.replace("      - 0001-lib-names-rename.patch\n",
                        f"      - 0001-lib-names-rename.patch\n      - {NEW}\n")
    assert generated.manifest.read_bytes() == want.replace("\n", "\r\n").encode()


def _newer(tmp_path, edits=()):
    files = dict(TREE)
    files["Makefile"] = files["Makefile"].replace("SUBLEVEL = 192", "SUBLEVEL = 193")
    for f, old, new in edits:
        files[f] = files[f].replace(old, new, 1)
    return make_tarball(tmp_path / "newer.tar.xz", files, mtime=1_700_100_000)


def test_rebase_keeps_crlf_line_ends_and_abort_puts_the_bytes_back(generated, ktopic, tmp_path):
    text = generated.manifest.read_text()
    data = text.replace("\n", "\r\n").encode()
    generated.manifest.write_bytes(data)
    # A patch file sent with CRLF line ends is put back byte for byte too.
    p = generated.root / "patches/counters/0002-lib-counter-return-even-more.patch"
    patch = p.read_bytes().replace(b"\n", b"\r\n")
    p.write_bytes(patch)
    tb = _newer(tmp_path, [("lib/counter.c", "return 30;", "return 31;")])
    r = ktopic(*generated.args("rebase", "--tarball", str(tb), "--debian-version", "6.1.193-1"))
    assert r.status == 1, r                 # a conflict; the base: keys are written
    assert generated.manifest.read_bytes() == \
        text.replace("6.1.192-3", "6.1.193-1").replace("6.1.192\n", "6.1.193\n").replace(
            "\n", "\r\n").encode().replace(str(generated.tarball).encode(), str(tb).encode())
    a = ktopic(*generated.args("rebase", "--abort"))
    assert a.status == 0, a
    assert generated.manifest.read_bytes() == data
    assert p.read_bytes() == patch
