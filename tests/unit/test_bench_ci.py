"""The pure parts of tools/bench/bench_ci.py: the naive loop's kunitconfigs
and branch selection, kunit.py's summary, report.json stage times, the
one-line edit, and the meter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools" / "bench"))

import bench_ci  # noqa: E402
from ktopic.model import manifest  # noqa: E402


def test_kunitconfig_keeps_y_lines_once_and_drops_modules(tmp_path):
    a = tmp_path / "a.config"
    a.write_text("# comment\nCONFIG_SIXLOCKS=y\nCONFIG_LOCK_TORTURE_TEST=m\n"
                 "# CONFIG_FOO is not set\nCONFIG_KUNIT=y\n  CONFIG_BAR=y  \n")
    b = tmp_path / "b.config"
    b.write_text("CONFIG_SIXLOCKS=y\nCONFIG_NR=8\nCONFIG_BAZ=y\n")
    assert bench_ci.kunitconfig_lines([a, b]) == [
        "CONFIG_KUNIT=y", "CONFIG_SIXLOCKS=y", "CONFIG_BAR=y", "CONFIG_BAZ=y"]


def test_kunitconfig_without_fragment_is_a_smoke_test():
    assert bench_ci.kunitconfig_lines([]) == ["CONFIG_KUNIT=y", "CONFIG_KUNIT_EXAMPLE_TEST=y"]


def test_branches_of_the_real_manifest():
    m = manifest.load(REPO / "branches.yaml")
    bs = bench_ci.branches_of(m)
    assert [b.name for b in bs] == [*m.order, "integration"]
    by = {b.name: b for b in bs}
    assert "CONFIG_SIXLOCKS_KUNIT_TEST=y" in by["locking"].kunitconfig
    assert "CONFIG_LOCK_TORTURE_TEST=m" not in by["locking"].kunitconfig
    integ = by["integration"].kunitconfig
    for name in m.integration.topics:
        assert set(by[name].kunitconfig) - {"CONFIG_KUNIT_EXAMPLE_TEST=y"} <= set(integ)


def test_naive_selection():
    bs = [bench_ci.Branch("locking", "topic/locking"), bench_ci.Branch("closures", "topic/closures"),
          bench_ci.Branch("integration", "for-next")]
    assert bench_ci.naive_selection(None, bs) == bs
    assert bench_ci.naive_selection("", bs) == bs
    assert bench_ci.naive_selection("all", bs) == bs
    assert bench_ci.naive_selection("none", bs) == []
    # Manifest order, whatever order the variable names them in; branch names too.
    assert [b.name for b in bench_ci.naive_selection("for-next, locking", bs)] == \
        ["locking", "integration"]
    with pytest.raises(SystemExit, match="no topic or branch 'nope'"):
        bench_ci.naive_selection("locking,nope", bs)


def test_parse_kunit_output():
    text = ("[09:40:01] Configuring KUnit Kernel ...\n"
            "[09:52:10] \x1b[32m[PASSED]\x1b[0m closures\n"
            "[09:52:10] Testing complete. Ran 14 tests: passed: 13, skipped: 1\n"
            "[09:52:10] Elapsed time: 729.100s total, 10.040s configuring, "
            "700.500s building, 18.560s running\n")
    assert bench_ci.parse_kunit_output(text) == {
        "total": 729.1, "configure": 10.04, "build": 700.5, "run": 18.56,
        "tests": 14, "summary": "passed: 13, skipped: 1"}
    assert bench_ci.parse_kunit_output("make: *** error") == {}


def _stage(name, status, seconds):
    return {"stage": name, "status": status, "seconds": seconds}


def test_boot_test_times_only_real_boots():
    report = {"branches": [
        {"branch": "base", "stages": [_stage("build", "pass", 400), _stage("boot", "pass", 5.5),
                                      _stage("test", "pass", 0.25)]},
        {"branch": "topic/compiler", "same_as": "base",
         "stages": [_stage("boot", "pass", 5.5), _stage("test", "pass", 0.25)]},
        {"branch": "topic/mm", "stages": [_stage("boot", "cached", 7.0)]},
        {"branch": "topic/fs", "stages": [_stage("build", "fail", 3), _stage("boot", "skip", 0)]},
        {"branch": "topic/locking", "stages": [_stage("boot", "fail", 26.0),
                                               _stage("test", "pass", 0.5)]},
    ]}
    assert bench_ci.boot_test_times(report) == [("base", 5.5, 0.25, "pass"),
                                                ("topic/locking", 26.0, 0.5, "fail")]


def test_add_comment_line_shifts_the_rest():
    assert bench_ci.add_comment_line("// SPDX\n#include <x>\n", "/* c */") == \
        "// SPDX\n/* c */\n#include <x>\n"
    assert bench_ci.add_comment_line("one", "/* c */") == "one\n/* c */\n"


def test_meter_counts_children_cpu_and_load():
    import subprocess
    with bench_ci.meter() as m:
        subprocess.run([sys.executable, "-c", "sum(i for i in range(3_000_000))"], check=True)
    assert m.wall > 0 and m.cpu > 0
    start, mean, top = m.load
    assert 0 <= start <= top and mean <= top
    assert "wall, CPU" in m.text() and "load" in m.text()


def test_fmt_s():
    assert bench_ci.fmt_s(12.34) == "12.3 s"
    assert bench_ci.fmt_s(125) == "2 min 05 s"


def test_a_ctrl_c_lets_the_command_clean_up_first(tmp_path, monkeypatch):
    """Ctrl-C in the bench: the command it waits for stops on its own
    SIGINT (here sent by _run, as no terminal sent one), cleans up and is
    waited for, and the KeyboardInterrupt goes on to the bench's cleanup."""
    import signal
    import threading
    monkeypatch.setattr(bench_ci, "INTERRUPT_GRACE", 0.2)
    log = tmp_path / "log"
    ready = tmp_path / "ready"
    script = f"trap 'kill $!; echo cleaned up; exit 130' INT; touch {ready}; sleep 20 & wait"

    def interrupt():
        while not ready.exists():
            threading.Event().wait(0.02)
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        bench_ci._run(["sh", "-c", script], log)
    assert log.read_text().splitlines()[-1] == "cleaned up"
