"""ktopic.kernel.ktap: several KTAP documents in one console, parsed by the kernel's
own kunit_parser (from the packaged tarball, or $KTOPIC_KUNIT_DIR)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import ktap  # noqa: E402

DATA = REPO / "tests" / "data" / "consoles"


@pytest.fixture(scope="module")
def parser(request):
    """kunit_parser from $KTOPIC_KUNIT_DIR, else from the packaged tarball
    (conftest's kernel_files)."""
    if os.environ.get("KTOPIC_KUNIT_DIR"):
        return ktap.load_parser(Path(os.environ["KTOPIC_KUNIT_DIR"]))
    return ktap.load_parser(request.getfixturevalue("kernel_files") / "tools/testing/kunit")


def parse(parser, name):
    text = (DATA / name).read_text()
    return ktap.parse_console(text, parser), text


def test_every_document_is_parsed(parser):
    r, _ = parse(parser, "synth-ktap-documents.log")
    got = {s.name: (s.status, [(c.name, c.status) for c in s.cases]) for s in r.suites}
    assert got == {
        "alpha": ("fail", [("a_one", "pass"), ("a_two", "fail")]),     # built-in, at boot
        "beta": ("pass", [("b_one", "pass")]),
        "mymod_suite": ("pass", [("m_one", "pass")]),                  # at insmod, numbered 3
        "mymod_suite2": ("pass", [("m_two", "pass")]),
        "tmpfile": ("fail", [("create", "pass"), ("link", "fail")]),   # a test program
    }
    assert r.programs_seen == ["tmpfile"] and r.modules_seen == ["mymod.ko"]


def test_checks(parser):
    r, text = parse(parser, "synth-ktap-documents.log")
    fs = ktap.check(r, text, ["alpha", "beta", "gamma"], ["tmpfile", "silent", "absent"])
    msgs = [(f.kind, f.message) for f in fs]
    assert msgs == [
        ("missing_suite", "KUnit suite gamma did not run (the manifest expects it)"),
        ("missing_suite", "test program silent printed no KTAP"),
        ("missing_suite", "test program absent did not run"),
        ("failed_case", "alpha.a_two failed"),
        ("failed_case", "tmpfile.link failed"),
    ]
    a_two = fs[3]
    assert a_two.line == 11
    assert "    # a_two: EXPECTATION FAILED at lib/x.c:12" in a_two.lines
    assert a_two.lines[-1].strip() == "not ok 2 a_two"


def test_crash_mid_suite_and_cut_program(parser):
    r, text = parse(parser, "synth-ktap-crash.log")
    suites = {s.name: s for s in r.suites}
    assert [(c.name, c.status) for c in suites["six_lock"].cases] == [
        ("six_lock_basic", "pass"), ("six_lock_race", "fail"), ("six_lock_counts", "pass")]
    # The program died after its first case: the missing ones are crashed.
    prog = suites["interrupted"]
    assert prog.status == "crash"
    assert [(c.name, c.status) for c in prog.cases] == [
        ("one", "pass"), ("<missing #2>", "crash"), ("<missing #3>", "crash")]
    fs = ktap.check(r, text, ["six_lock"], ["interrupted"])
    assert [(f.kind, f.message) for f in fs] == [
        ("failed_case", "six_lock.six_lock_race failed"),
        ("unreported_case", "interrupted: 2 case(s) never reported (crashed or cut short)")]
    # The crashed case quotes the Oops that the kernel printed inside it.
    assert any(l.startswith("Oops: 0002") for l in fs[0].lines)
    assert fs[0].lines[-1].strip() == "not ok 2 six_lock_race"


def test_real_console_boot_module_and_program(parser):
    """A real boot: a built-in suite, a module's suite at insmod (numbered 2
    by the kernel), and a program's document."""
    r, text = parse(parser, "real-clean-module-program.log")
    got = {s.name: (s.status, [c.name for c in s.cases]) for s in r.suites}
    assert got == {
        "ktopic_e2e": ("pass", ["ktopic_e2e_passes", "ktopic_e2e_fails_on_request"]),
        "ktopic_e2e_module": ("pass", ["ktopic_e2e_module_case"]),
        "e2e_ktap": ("pass", ["first", "second"]),
    }
    assert ktap.check(r, text, ["ktopic_e2e", "ktopic_e2e_module"], ["e2e_ktap"]) == []


def test_real_console_failed_case(parser):
    r, text = parse(parser, "real-kunit-fail.log")
    fs = ktap.check(r, text, ["ktopic_e2e"], [])
    assert [(f.kind, f.message) for f in fs] == [
        ("failed_case", "ktopic_e2e.ktopic_e2e_fails_on_request failed")]
    f = fs[0]
    assert text.splitlines()[f.line - 1].endswith("not ok 2 ktopic_e2e_fails_on_request")
    assert any("deliberate KUnit failure" in l for l in f.lines)
    assert any("EXPECTATION FAILED at init/main.c" in l for l in f.lines)


def test_console_without_markers_is_one_document(parser):
    text = ("[    1.0] KTAP version 1\n[    1.0] 1..1\n[    1.0]     KTAP version 1\n"
            "[    1.0]     # Subtest: s\n[    1.0]     1..1\n[    1.0]     ok 1 c\n"
            "[    1.0] ok 1 s\n")
    r = ktap.parse_console(text, parser)
    assert [(s.name, s.status) for s in r.suites] == [("s", "pass")]


def test_no_ktap_at_all(parser):
    r = ktap.parse_console("Linux version 6.1\nktopic-init: start\nktopic-init: done\n", parser)
    assert r.suites == [] and r.programs_seen == []


def test_parser_output_is_silent(parser, capsys):
    parse(parser, "synth-ktap-documents.log")
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_a_boot_cut_at_its_deciding_line(parser):
    """A mutant's boot ends at its Caught-by case's "not ok" line (here
    six_lock.six_test_trylock, whose first parameter failed).  Cut short,
    that case is the one finding: not the suite it interrupted, nor the
    cases and the test program it never reached."""
    r, text = parse(parser, "real-six-cut-at-caught-by.log")
    full = [(f.kind, f.message) for f in ktap.check(r, text, ["six_lock"], ["locktorture_six"])]
    cut = [(f.kind, f.message) for f in ktap.check(r, text, ["six_lock"], ["locktorture_six"],
                                                   cut_short=True)]
    assert cut == [("failed_case", "six_lock.six_test_trylock failed")], cut
    assert ("missing_suite", "test program locktorture_six did not run") in full, full
    assert len(full) > len(cut), full


def test_init_line_split_by_a_printk(parser):
    """A real for-next console in which the kernel's "loading out-of-tree
    module taints kernel" came out in the middle of init's "insmod" line:
    the module's suite is its own and passes, as every other one."""
    r, text = parse(parser, "real-for-next-split-init-line.log")
    assert "ktopic-init: ins[" in text
    assert "fs_block_exports.ko" in r.modules_seen
    got = {s.name: s.status for s in r.suites}
    assert got["fs_block_exports"] == "pass", got
    suites = ["six_lock", "pagecache_lock", "insert_inode_locked2", "closures",
              "fs_block_exports", "mm_folios_export", "mm_vmalloc_nofs"]
    assert ktap.check(r, text, [s for s in suites if s in got], []) == []
