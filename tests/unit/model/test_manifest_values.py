"""Manifest values that Python cannot take as they are: a lone surrogate
("\\ud800", which no file name or ref can hold), an integer of thousands
of digits, a timestamp that is no date, a regular expression whose
repeat count overflows or whose nesting exhausts the stack.  Each is
refused when the manifest is loaded, in one line naming branches.yaml and
the line, exit status 2, before anything runs."""

from __future__ import annotations

import pytest

NAMES = "    branch: topic/names\n"
COUNTERS = "    description: counter changes\n"
CHECK = "            contains: '^# define __flatten'\n"

CASES = {
    "branch-surrogate": ((NAMES, '    branch: "topic/\\ud800"\n'), "    branch: \"topic",
                         "topics.names.branch: 'topic/\\ud800' holds a lone surrogate "
                         "(\\ud800), which is not a character"),
    "patch-surrogate": (("      - 0001-lib-names-rename.patch\n", '      - "x\\ud800.patch"\n'),
                        '      - "x', None),
    "config-surrogate": ((COUNTERS, COUNTERS + '    config: "\\ud800"\n'), "    config:", None),
    "check-file-surrogate": (("          - file: include/linux/compiler_attributes.h\n",
                              '          - file: "\\ud800"\n'), '          - file: "', None),
    "key-surrogate": ((COUNTERS, COUNTERS + '    "\\ud800": 1\n'), '    "\\ud800', None),
    "smp-5000-digits": ((COUNTERS, COUNTERS + "    smp: " + "9" * 5000 + "\n"), "    smp:",
                        "an integer of 5000 digits: too large to be read"),
    "version-5000-digits": (("version: 1\n", "version: " + "9" * 5000 + "\n"), "version:",
                            "an integer of 5000 digits: too large to be read"),
    "hex-5000-digits": ((COUNTERS, COUNTERS + "    smp: 0x" + "f" * 5000 + "\n"), "    smp:",
                        "an integer of 5000 digits: too large to be read"),
    "timestamp-no-date": ((COUNTERS, COUNTERS + "    cmdline: 2026-13-45\n"), "    cmdline:",
                          "'2026-13-45' is not a date (month must be in 1..12): quote it to make it "
                          "text"),
    "int-tag-not-a-number": ((COUNTERS, COUNTERS + "    smp: !!int 12a\n"), "    smp:",
                             "'12a' is not an integer (invalid literal for int() with base 10: "
                             "'12a'): quote it to make it text"),
    "bool-tag-not-a-boolean": ((COUNTERS, COUNTERS + "    tested: !!bool x\n"), "    tested:",
                               "'x' is not a boolean: quote it to make it text"),
    "contains-repeat-overflow": ((CHECK, "            contains: 'a{4294967296}'\n"),
                                 "            contains: 'a{",
                                 "check /a{4294967296}/ is not a valid regular expression: "
                                 "the repetition number is too large"),
    "lacks-deep-nesting": ((CHECK, "            lacks: '" + "(" * 2000 + ")" * 2000 + "'\n"),
                           "            lacks:", None),
}


@pytest.mark.parametrize("case", CASES)
def test_value_python_cannot_take_is_refused_at_its_line(project, ktopic, case):
    (old, new), marker, problem = CASES[case]
    text = project.manifest.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    project.manifest.write_text(text)
    r = ktopic(*project.args("status"))
    line = text[:text.index(marker)].count("\n") + 1
    assert r.status == 2, r
    assert r.err.count("\n") == 1, r
    assert r.err.startswith(f"ktopic: branches.yaml:{line}: "), r
    if problem:
        assert r.err == f"ktopic: branches.yaml:{line}: {problem}\n", r
    if "surrogate" in case:
        assert "lone surrogate" in r.err, r
    if "nesting" in case:
        assert "nested" in r.err, r


def test_expect_match_that_overflows_is_refused(project, ktopic):
    (project.root / "qemu/modules/probe").mkdir(parents=True)
    text = project.manifest.read_text().replace(COUNTERS, COUNTERS + (
        "    expect:\n      - name: probe\n        module: probe\n        report: warning\n"
        "        match: 'a{4294967296}'\n"), 1)
    project.manifest.write_text(text)
    r = ktopic(*project.args("status"))
    line = text[:text.index("        match:")].count("\n") + 1
    assert r.status == 2, r
    assert r.err == (f"ktopic: branches.yaml:{line}: expect match is not a regular expression: "
                     f"the repetition number is too large\n"), r
