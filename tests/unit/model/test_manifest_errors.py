"""Malformed manifests: each gets one line naming branches.yaml:line and the
problem, exit status 2, and no ref moves."""

import re

import pytest

# (id, text to replace, replacement, a line of the result the error must name
#  (its first occurrence), a piece of the message)
CASES = [
    ("yaml-syntax", "    branch: topic/compiler\n", "    branch: [topic/compiler\n",
     "    upstream:", "YAML syntax error: expected ',' or ']', but got ':'"),
    ("unknown-key", "    depends: [counters]\n", "    depends: [counters]\n    pathces: []\n",
     "    pathces: []", "unknown key 'pathces' in topics.names"),
    ("wrong-type", "    depends: [counters]\n", "    depends: counters\n",
     "    depends: counters", "topics.names.depends: expected array, got str 'counters'"),
    ("missing-key", "    branch: topic/names\n", "",
     "  names:", "topics.names: 'branch' is a required property"),
    ("missing-patch-file", "      - 0001-lib-names-rename.patch\n",
     "      - 0001-lib-names-rename.patch\n      - 0002-missing.patch\n",
     "      - 0002-missing.patch", "patch file patches/names/0002-missing.patch does not exist"),
    ("patch-outside-repo", "      - 0001-lib-names-rename.patch\n", "      - ../../../etc/passwd\n",
     "      - ../../../etc/passwd", "is outside the repository's patches/ directory"),
    ("patch-listed-twice", "      - 0002-lib-counter-return-even-more.patch\n",
     "      - 0002-lib-counter-return-even-more.patch\n      - 0001-lib-counter-return-more.patch\n",
     "      - 0001-lib-counter-return-more.patch\n    to:", "is listed twice"),
    ("duplicate-topic", "  names:\n", "  counters:\n    description: again\n    branch: topic/again\n  names:\n",
     "  counters:\n    description: again", "duplicate key 'counters'"),
    ("unknown-dependency", "    depends: [counters]\n", "    depends: [counterz]\n",
     "    depends: [counterz]", "topic names depends on unknown topic 'counterz'"),
    ("dependency-cycle", "    branch: topic/counters\n", "    branch: topic/counters\n    depends: [names]\n",
     "    depends: [counters]", "dependency cycle: counters -> names -> counters"),
    ("self-dependency", "    depends: [counters]\n", "    depends: [names]\n",
     "    depends: [names]", "topic names depends on itself"),
    ("invalid-branch", "    branch: topic/names\n", "    branch: topic/bad..name\n",
     "    branch: topic/bad..name", "invalid branch name 'topic/bad..name'"),
    # A ref is a file: a component over NAME_MAX bytes (with ".lock") cannot be made.
    ("branch-component-too-long", "    branch: topic/names\n", f"    branch: topic/{'n' * 251}\n",
     "    branch: topic/nnn", "a component of 251 bytes; git keeps a branch in a file"),
    ("duplicate-branch", "    branch: topic/names\n", "    branch: topic/counters\n",
     "    branch: topic/counters\n    depends", "branch 'topic/counters' is already used by topic counters"),
    ("bad-version", "  version: 6.1.192\n", "  version: 6.1\n",
     "  version: 6.1\n", "base.version: expected string, got float 6.1"),
    ("debian-version-mismatch", "  debian-version: 6.1.192-3\n", "  debian-version: 6.1.191-1\n",
     "  debian-version:", "debian-version 6.1.191-1 is not a packaging of version 6.1.192"),
    ("integration-unknown-topic", "  topics: [compiler, counters, names]\n",
     "  topics: [compiler, counters, names, extra]\n", "  topics: [compiler",
     "integration stacks unknown topic 'extra'"),
    ("integration-missing-topic", "  topics: [compiler, counters, names]\n",
     "  topics: [compiler, counters]\n", "  topics: [compiler", "does not stack topic(s) names"),
    ("integration-order", "  topics: [compiler, counters, names]\n",
     "  topics: [compiler, names, counters]\n", "  topics: [compiler",
     "integration stacks names before its dependency counters"),
    ("bad-address", '    to: ["A Maintainer <a@example.org>"]\n', '    to: ["A Maintainer"]\n',
     '    to: ["A Maintainer"]', "topics.counters.to.0: 'A Maintainer' is not valid here"),
    ("missing-config", "    description: counter changes\n",
     "    description: counter changes\n    config: qemu/configs/nope.config\n",
     "    config: qemu/configs/nope.config", "config fragment qemu/configs/nope.config does not exist"),
    ("wrong-format-version", "version: 1\n", "version: 2\n", "version: 2", "version: 1 was expected"),
    ("bad-check", "            contains: '^# define __flatten'\n", "            lacks: 'x'\n            contains: 'y'\n",
     "          - file: include", "checks.0: {"),
    ("waiver-without-reason", "      - 0001-lib-names-rename.patch\n",
     "      - file: 0001-lib-names-rename.patch\n        waivers:\n          - {type: LONG_LINE}\n",
     "          - {type: LONG_LINE}", "topics.names.patches.0.waivers.0: 'reason' is a required property"),
    ("waiver-empty-reason", "      - 0001-lib-names-rename.patch\n",
     "      - file: 0001-lib-names-rename.patch\n        waivers:\n          - {type: LONG_LINE, reason: ''}\n",
     "          - {type: LONG_LINE", "topics.names.patches.0.waivers.0.reason: '' is too short"),
    ("waiver-blank-reason", "      - 0001-lib-names-rename.patch\n",
     "      - file: 0001-lib-names-rename.patch\n        waivers:\n          - {type: LONG_LINE, reason: '            '}\n",
     "          - {type: LONG_LINE", "waiver LONG_LINE of 0001-lib-names-rename.patch needs a reason"),
    # An alias inside the value its anchor names never ends expanding.
    ("recursive-alias", "version: 1\n", "version: 1\nx: &a [*a]\n",
     "x: &a", "alias *a is inside the value &a names (a recursive alias)"),
    ("recursive-alias-mapping", "version: 1\n", "version: 1\nx: &a {k: *a}\n",
     "x: &a", "(a recursive alias)"),
    # A NUL (YAML's "\0") in a path: no file can be named so.
    ("nul-in-patch", "      - 0001-lib-names-rename.patch\n", '      - "0001\\0.patch"\n',
     '      - "0001', "topics.names.patches.0: '0001\\0.patch' holds a NUL character"),
    ("nul-in-config", "    description: counter changes\n",
     '    description: counter changes\n    config: "qemu/x\\0y"\n',
     "    config:", "topics.counters.config: 'qemu/x\\0y' holds a NUL character"),
    # A pattern's $ must not let a final newline through (Python's re lets
    # $ match before one), nor may a name in an address hold one: it would
    # become a header line of its own in the mail.
    ("newline-after-debian-version", "  debian-version: 6.1.192-3\n",
     '  debian-version: "6.1.192-3\\n"\n', "  debian-version:", "is not valid here"),
    ("newline-in-address", '    to: ["A Maintainer <a@example.org>"]\n',
     '    to: ["A Maintainer\\nX-Injected: yes <a@example.org>"]\n', "    to: [",
     "is not valid here"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_manifest(generated, ktopic, case):
    _, old, new, marker, message = case
    before = generated.refs()
    text = generated.manifest.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    generated.manifest.write_text(text)
    line = text[:text.index(marker)].count("\n") + 1 + (1 if marker.startswith("\n") else 0)
    r = ktopic(*generated.args("generate"))
    assert r.status == 2, r
    assert r.out == ""
    err = r.err.strip()
    assert "\n" not in err, err
    assert err.startswith(f"ktopic: branches.yaml:{line}: "), err
    assert message in err
    assert generated.refs() == before


@pytest.mark.parametrize("content,message", [
    ("", "empty patch file"),
    ("Just some notes about a change.\n",
     "not a patch mail (no Subject: header; make it with git format-patch)"),
    ("From: a <a@example.org>\nSubject: [PATCH] words\n\nno diff here\n", "not a patch (no 'diff --git' section)"),
])
def test_bad_patch_file(generated, ktopic, content, message):
    before = generated.refs()
    (generated.root / "patches/names/0001-lib-names-rename.patch").write_text(content)
    r = ktopic(*generated.args("generate"))
    text = generated.manifest.read_text()
    line = text[:text.index("      - 0001-lib-names-rename.patch")].count("\n") + 1
    assert r.status == 2
    assert r.err == f"ktopic: branches.yaml:{line}: patches/names/0001-lib-names-rename.patch: {message}\n"
    assert generated.refs() == before


def test_manifest_that_is_not_a_mapping(generated, ktopic):
    generated.manifest.write_text("- version: 1\n- topics: []\n")
    r = ktopic(*generated.args("status"))
    assert r.status == 2
    assert r.err.startswith("ktopic: branches.yaml:1: the manifest must be a mapping")


def test_missing_manifest(ktopic, tmp_path):
    r = ktopic("-m", str(tmp_path / "branches.yaml"), "-w", str(tmp_path / "w"), "status")
    assert r.status == 2 and r.err.strip() == "ktopic: branches.yaml: manifest not found"


def test_a_bad_manifest_fails_every_time(generated, ktopic):
    """Manifests that passed are remembered by content; one that failed a
    check after the schema (a bad branch name) must not be."""
    text = generated.manifest.read_text().replace(
        "    branch: topic/names\n", "    branch: topic/again..bad\n", 1)
    generated.manifest.write_text(text)
    for _ in range(2):
        r = ktopic(*generated.args("generate"))
        assert r.status == 2 and "invalid branch name 'topic/again..bad'" in r.err, r


@pytest.mark.parametrize("waiver", ["{type: LONG_LINE}", "{type: LONG_LINE, reason: ''}",
                                    "{type: LONG_LINE, reason: null}"])
def test_waiver_needs_a_reason_past_the_schema(generated, ktopic, monkeypatch, waiver):
    """The rule holds in the code too: with the schema not checked (as when its
    required/minLength is weakened), one line naming the waiver, not a KeyError."""
    from ktopic.model import manifest
    monkeypatch.setattr(manifest, "validate", lambda data, name, **kw: None)
    before = generated.refs()
    text = generated.manifest.read_text().replace(
        "      - 0001-lib-names-rename.patch\n",
        f"      - file: 0001-lib-names-rename.patch\n        waivers:\n          - {waiver}\n", 1)
    generated.manifest.write_text(text)
    line = text[:text.index("          - {type: LONG_LINE")].count("\n") + 1
    r = ktopic(*generated.args("generate"))
    assert (r.status, r.err) == (2, f"ktopic: branches.yaml:{line}: waiver LONG_LINE of "
                                    "0001-lib-names-rename.patch needs a reason\n"), r
    assert generated.refs() == before


@pytest.mark.parametrize("edit,why", [
    (lambda t: re.sub(r"(?m)^Date: .*$", "Date: not a date at all", t, count=1),
     "invalid date format: not a date at all"),
    (lambda t: t.replace("\n\n", "\n\nA NUL \0 here.\n\n", 1),
     "a NUL byte in commit log message not allowed"),
], ids=["bad-date", "nul-in-message"])
def test_patch_git_will_not_commit(generated, ktopic, edit, why):
    """A patch whose commit git refuses to make (git am refuses it too):
    one line naming the patch file, in git's words, exit 2, no ref moves."""
    before = generated.refs()
    f = generated.root / "patches/names/0001-lib-names-rename.patch"
    f.write_text(edit(f.read_text()))
    r = ktopic(*generated.args("generate"))
    assert r.status == 2, r
    assert r.err.count("\n") == 1 and why in r.err and \
        r.err.startswith("ktopic: patches/names/0001-lib-names-rename.patch: "), r.err
    assert generated.refs() == before
