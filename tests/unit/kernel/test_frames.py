"""The functions and files a console's sanitizer report names
(kernel/frames.py), from the console scan's findings."""

from __future__ import annotations

from conftest import REPO  # noqa: E402

from ktopic.kernel import console_scan, frames  # noqa: E402
from ktopic.model import results as R  # noqa: E402

DATA = REPO / "tests" / "data" / "consoles"


def test_the_functions_and_files_a_report_names():
    found = console_scan.scan_text((DATA / "synth-kcsan.log").read_text())
    assert frames.of(found[0]).functions == ["six_lock_ip_read", "six_unlock_ip_write",
                                             "six_kunit_writer", "kthread", "ret_from_fork"]
    assert frames.of(found[1]).functions == ["tick_nohz_next_event", "tick_nohz_stop_tick"]
    f = R.Finding("ubsan", "UBSAN: shift-out-of-bounds in lib/closure.c:12:3", 1,
                  ["UBSAN: shift-out-of-bounds in lib/closure.c:12:3",
                   " closure_put.constprop.0+0x1/0x2 [closure_test]"])
    assert (frames.of(f).functions, frames.of(f).paths) == (["closure_put"], ["lib/closure.c"])
