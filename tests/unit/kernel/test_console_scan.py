"""ktopic.kernel.console_scan: recorded consoles replayed (tests/data/consoles/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import console_scan  # noqa: E402
from ktopic.errors import KtopicError  # noqa: E402
from ktopic.model.results import Finding  # noqa: E402

DATA = REPO / "tests" / "data" / "consoles"
ALLOW = console_scan.load_allowlist(REPO / "qemu" / "allowlist.yaml")

# file -> the findings' kinds, in log order (allowlist applied, -smp 2 expected)
EXPECTED = {
    "real-base-clean.log": [],
    "real-panic.log": ["panic"],
    "real-oops.log": ["bug", "oops", "panic"],
    "real-warn.log": ["warning"],
    "real-lockdep.log": ["lockdep"],
    "real-many.log": ["warning", "refcount", "list_corruption", "bug", "warning"],
    "real-kunit-fail.log": [],        # a failed case is ktap's, not the scan's
    "real-clean-module-program.log": [],
    "real-hang.log": [],
    "real-kasan.log": ["kasan"],              # the hang itself is silence: boot.py's job
    "synth-kasan-ubsan.log": ["kasan", "ubsan"],
    "synth-lockups-stalls.log": ["lockup", "rcu_stall", "hung_task", "lockup"],
    "synth-reboot-odebug.log": ["debug_objects", "list_corruption", "reboot", "smp"],
    "synth-kcsan.log": ["kcsan", "kcsan"],
}


def scan(name: str) -> list[Finding]:
    return console_scan.scan_text(console_scan.read(DATA / name), ALLOW, expect_cpus=2)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_console(name):
    assert [f.kind for f in scan(name)] == EXPECTED[name]


def test_findings_quote_their_lines():
    f = scan("synth-kasan-ubsan.log")[0]
    assert f.message == "BUG: KASAN: slab-out-of-bounds in ktopic_demo_oob+0x3c/0x60"
    assert f.line == 3
    assert f.lines[0] == f.message and "Write of size 1" in f.lines[1]
    assert any("kasan_report" in l for l in f.lines)


def test_cut_here_block_is_one_finding_named_by_its_specific_line():
    fs = scan("synth-reboot-odebug.log")
    odebug, lst = fs[0], fs[1]
    assert odebug.message.startswith("ODEBUG: free active") and "WARNING: CPU: 0" in odebug.message
    assert lst.message.startswith("list_add corruption.")
    assert lst.lines[0].endswith("[ cut here ]------------")
    assert lst.lines[-1].startswith("---[ end trace")
    # Mid-line "WARNING:" of a mitigation notice is not a kernel warning.
    assert not any("RETBleed" in f.message for f in fs)


def test_real_reports_quote_the_right_lines():
    lockdep = scan("real-lockdep.log")[0]
    assert lockdep.message == "WARNING: possible circular locking dependency detected"
    assert any("ktopic_e2e_a" in l for l in lockdep.lines)
    warn = scan("real-warn.log")[0]
    assert any("ktopic-e2e: deliberate warning" in l for l in warn.lines)
    assert warn.lines[-1].startswith("---[ end trace")
    refcount = scan("real-many.log")[1]
    assert refcount.message.startswith("refcount_t: decrement hit 0; leaking memory. / WARNING:")
    panic = scan("real-oops.log")[-1]
    assert "Attempted to kill init" in panic.message


def test_real_kasan_report_is_quoted_to_its_closing_rule():
    f = scan("real-kasan.log")[0]
    assert f.message.startswith("BUG: KASAN: slab-out-of-bounds in ktopic_e2e_run")
    assert f.lines[1].startswith("Write of size 1 at addr")
    assert set(f.lines[-1]) == {"="}


def test_whole_log_is_scanned():
    text = "\n".join(["Linux version 6.1.192 x"] + [
        f"[    {i}.000000] ------------[ cut here ]------------\n"
        f"[    {i}.000001] WARNING: CPU: 0 PID: 1 at lib/x{i}.c:1 f{i}+0x0/0x1\n"
        f"[    {i}.000002] ---[ end trace 0000000000000000 ]---" for i in range(1, 6)] +
        ["[    9.0] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009"])
    fs = console_scan.scan_text(text)
    assert [f.kind for f in fs] == ["warning"] * 5 + ["panic"]
    assert [f.line for f in fs] == [3, 6, 9, 12, 15, 17]


def test_lockdep_titles():
    for title in ("possible circular locking dependency detected",
                  "possible recursive locking detected", "inconsistent lock state",
                  "bad unlock balance detected!", "held lock freed!",
                  "suspicious RCU usage"):
        text = f"[    1.0] ======\n[    1.1] WARNING: {title}\n[    1.2] 6.1.192 #1 Not tainted\n"
        fs = console_scan.scan_text(text)
        assert [f.kind for f in fs] == ["lockdep"], title
        assert fs[0].message == f"WARNING: {title}"


def test_other_kinds():
    cases = {
        "BUG: sleeping function called from invalid context at kernel/x.c:1": "bug",
        "kernel BUG at mm/slub.c:100!": "bug",
        "Oops: 0002 [#1] PREEMPT SMP NOPTI": "oops",
        "general protection fault, probably for non-canonical address 0xdead": "oops",
        "refcount_t: underflow; use-after-free.": "refcount",
        "list_del corruption, ffff888003a4c0d0->next is LIST_POISON1 (dead000000000100)":
            "list_corruption",
        "ktopic-init: insmod foo.ko failed: Unknown symbol in module": "init",
        "ktopic-init: fs_tmpfile killed by signal 11": "init",
        "ktopic-init: fs_tmpfile exited with status 1": None,
        "random: crng init done": None,
    }
    for line, kind in cases.items():
        fs = console_scan.scan_text(f"[    1.000000] {line}\n")
        assert [f.kind for f in fs] == ([kind] if kind else []), line


def test_second_banner_and_cpus():
    text = "Linux version 6.1 a\nsmp: Brought up 1 node, 2 CPUs\nLinux version 6.1 a\n"
    assert [f.kind for f in console_scan.scan_text(text, expect_cpus=2)] == ["reboot"]
    text = "Linux version 6.1 a\nsmp: Brought up 1 node, 1 CPU\n"
    assert [f.kind for f in console_scan.scan_text(text, expect_cpus=2)] == ["smp"]


def test_allowlist_drops_matching_findings(tmp_path):
    allow = tmp_path / "allow.yaml"
    allow.write_text("- pattern: 'ktopic_demo_oob'\n  kind: kasan\n  reason: demo\n")
    entries = console_scan.load_allowlist(allow)
    fs = console_scan.scan_text(console_scan.read(DATA / "synth-kasan-ubsan.log"), entries)
    assert [f.kind for f in fs] == ["ubsan"]


@pytest.mark.parametrize("text,line,what", [
    ("- pattern: 'x'\n", 1, "reason"),
    ("- pattern: 'x'\n  reason: ok\n- pattern: 'y'\n  reason: '  '\n", 3, "reason"),
    ("- reason: r\n", 1, "pattern"),
    ("- pattern: '('\n  reason: r\n", 1, "bad pattern"),
    ("- pattern: x\n  reason: r\n  colour: red\n", 1, "keys"),
    ("pattern: x\n", 1, "list"),
    ("- [unclosed\n", 2, "YAML"),
])
def test_allowlist_errors_name_file_and_line(tmp_path, text, line, what):
    allow = tmp_path / "allow.yaml"
    allow.write_text(text)
    with pytest.raises(KtopicError) as e:
        console_scan.load_allowlist(allow)
    assert e.value.line == line and what in str(e.value) and "allow.yaml" in str(e.value)


def test_repository_allowlist_has_reasons():
    for entry in ALLOW:
        assert len(entry.reason) > 10


def test_signature_ignores_numbers_cpus_and_offsets():
    a = Finding("warning", "WARNING: CPU: 0 PID: 1 at lib/foo.c:12 foo_fn+0x1c/0x40")
    b = Finding("warning", "WARNING: CPU: 1 PID: 57 at lib/foo.c:14 foo_fn+0x2c/0x48")
    c = Finding("warning", "WARNING: CPU: 1 PID: 57 at lib/bar.c:14 bar_fn+0x2c/0x48")
    assert console_scan.signature(a) == console_scan.signature(b)
    assert console_scan.signature(a) != console_scan.signature(c)
