"""A file name the manifest gives (a patch, a config fragment, a check's
file) that holds a control character (a newline, a tab, an escape) is
refused when the manifest is loaded, in one line naming its line: printed
as it is, its second line could pass for another message of the tool.
A name that comes from elsewhere (a patch file ktopic is given) is shown
with such characters escaped."""

from __future__ import annotations

import pytest

from ktopic.plumbing import stack
from ktopic.plumbing.patchfile import PatchFile

NAMES = "      - 0001-lib-names-rename.patch\n"
COUNTERS = "    description: counter changes\n"
FAKE = "x.patch\nktopic: all good"


@pytest.mark.parametrize("kind", ["patch", "config", "check-file"])
@pytest.mark.parametrize("char", ["\n", "\t", "\x1b", "\x7f", "\x85", "\r"])
def test_a_name_with_a_control_character_is_refused(project, ktopic, kind, char):
    name = FAKE.replace("\n", char)
    quoted = '"' + name.encode("unicode_escape").decode() + '"'
    if kind == "patch":
        (project.root / "patches/names" / name).write_text(
            (project.root / "patches/names/0001-lib-names-rename.patch").read_text())
        old, new, marker = NAMES, f"      - {quoted}\n", "      - \"x"
    elif kind == "config":
        (project.root / name).write_text("CONFIG_X=y\n")
        old, new, marker = COUNTERS, COUNTERS + f"    config: {quoted}\n", "    config:"
    else:
        old = "          - file: include/linux/compiler_attributes.h\n"
        new, marker = f"          - file: {quoted}\n", "          - file: \"x"
    text = project.manifest.read_text()
    text = text.replace(old, new, 1)
    project.manifest.write_text(text)
    r = ktopic(*project.args("status"))
    assert r.status == 2, r
    assert r.err.count("\n") == 1, r
    line = text[:text.index(marker)].count("\n") + 1
    assert r.err.startswith(f"ktopic: branches.yaml:{line}: "), r
    assert "control character" in r.err, r


def test_an_apply_error_shows_control_characters_escaped(tmp_path):
    p = PatchFile(path=tmp_path / "p", display=f"patches/names/{FAKE}", author="a", email="b",
                  date="d", subject="s", body="", diff="")
    e = stack.Stacker._explain(p, "error: patch failed: lib/a\tb.c:3\n")
    assert "\n" not in str(e) and "\t" not in str(e), str(e)
    assert "x.patch\\nktopic: all good" in str(e), str(e)
