"""tools/bench/guestbench.py and the in-guest benches: parsing and the
figures they derive (no kernel, no QEMU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools" / "bench"))

import bench_closures  # noqa: E402
import bench_pagecache  # noqa: E402
import bench_six  # noqa: E402
import guestbench as gb  # noqa: E402

# As the serial console gives them: printk timestamps, CRLF, a KUnit suite
# from a module (no top-level header), a program's KTAP without timestamps.
CONSOLE = (
    "[    0.000000] Linux version 6.1.192 (ktopic@ktopic) #1 SMP\r\n"
    "ktopic-init: insmod six_bench.ko\r\n"
    "[    5.101000]     # Subtest: six_bench\r\n"
    "[    5.102000]     1..2\r\n"
    "[    5.200000] # bench: six_read_six: 53.30 ns/op\r\n"
    "[    5.200100] # bench: six_read_rwsem: 40.10 ns/op\r\n"
    "[    5.200200] # bench-ratio: six_read six/rwsem: 1.33\r\n"
    "[    5.300000]     ok 1 six_bench_uncontended\r\n"
    "[    5.400000]     ok 2 six_bench_contended # SKIP needs two CPUs\r\n"
    "[    5.400100] ok 1 six_bench\r\n"
    "# bench: pagecache_fill: 1287.2 MiB/s\n"
    "# bench: pagecache_fill_page_ns: 3035 ns\n"
    "# bench-ratio: closure_call_wq old/new paired: 1.02\n"
    "# bench-ratio: closure_call_wq_noise old_a/old_b paired: 0.97\n"
    "ok 1 pagecache_fill\n"
    "ktopic-init: done\r\n")


def test_parse_bench_strips_timestamps_and_units():
    f = gb.parse_bench(CONSOLE)
    assert f["six_read_six"] == (53.30, "ns/op")
    assert f["six_read_rwsem"] == (40.10, "ns/op")
    assert f["pagecache_fill"] == (1287.2, "MiB/s")
    assert f["pagecache_fill_page_ns"] == (3035.0, "ns")
    assert "six_read" not in f          # the ratio line is not a figure


def test_parse_bench_last_value_wins_and_no_unit():
    f = gb.parse_bench("# bench: x: 1\n[ 1.0] # bench: x: 2.5 us\n# bench: y: 7\n")
    assert f == {"x": (2.5, "us"), "y": (7.0, "")}


def test_parse_bench_ignores_other_lines():
    assert gb.parse_bench("bench: x: 1\n# benchmark: y: 2\n# bench: z: n/a\n") == {}


def test_parse_ratios():
    r = gb.parse_ratios(CONSOLE)
    assert r == {"six_read six/rwsem": 1.33, "closure_call_wq old/new paired": 1.02,
                 "closure_call_wq_noise old_a/old_b paired": 0.97}


def test_ktap_status():
    assert gb.ktap_status(CONSOLE, "six_bench") == "ok"
    assert gb.ktap_status(CONSOLE, "six_bench_contended") == "skip"
    assert gb.ktap_status(CONSOLE, "pagecache_fill") == "ok"
    assert gb.ktap_status(CONSOLE, "closure_bench") is None
    assert gb.ktap_status("[ 9.1] not ok 1 closure_bench\n", "closure_bench") == "not ok"
    # a name that only starts the same does not count
    assert gb.ktap_status("ok 1 six_bench_uncontended\n", "six_bench") is None


def test_debug_summary():
    assert gb.debug_summary({"CONFIG_LOCKDEP_SUPPORT": "y"}) == "lockdep and debug checks off"
    s = gb.debug_summary({"CONFIG_LOCKDEP": "y", "CONFIG_PROVE_LOCKING": "y",
                          "CONFIG_DEBUG_LIST": "y"})
    assert s == "DEBUG: LOCKDEP, PROVE_LOCKING, DEBUG_LIST on"


def test_nodebug_fragment_turns_base_debug_options_off():
    from ktopic.kernel import kconfig
    frags = [gb.BASE_CONFIG, REPO / "qemu/configs/closures.config", gb.NODEBUG]
    v = kconfig.requested_values(frags)
    for name in ("CONFIG_PROVE_LOCKING", "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_PREEMPT",
                 "CONFIG_DEBUG_LIST",
                 "CONFIG_DEBUG_OBJECTS", "CONFIG_DEBUG_OBJECTS_WORK",
                 "CONFIG_DEBUG_OBJECTS_TIMERS", "CONFIG_DEBUG_CLOSURES"):
        assert v[name] == "n", name
    assert v["CONFIG_CLOSURES"] == "y"


def _six_figs(**over):
    base = {"six_read_six": 44, "six_read_rwsem": 40, "six_write_six": 200,
            "six_write_mutex": 60, "six_intent_six": 48, "six_intent_mutex": 40,
            "six_write_heavy_2cpu_six": 330, "six_write_heavy_2cpu_rwsem": 300,
            "six_read_only_2cpu_six_pcpu": 600,
            "six_read_only_2cpu_rwsem": 700, "six_read_heavy_2cpu_six_pcpu": 560,
            "six_read_heavy_2cpu_rwsem": 540}
    base.update(over)
    return {k: (float(v), "ns/op") for k, v in base.items()}


def test_six_verdicts():
    v = {name: (ok, detail) for name, ok, detail in bench_six.verdicts(_six_figs())}
    assert v["uncontended read vs rwsem"] == (True, "1.10x (target <= 1.1x)")
    assert v["uncontended intent vs mutex"] == (True, "1.20x (target <= 1.2x)")
    assert v["intent+write vs mutex"][0] is False
    assert v["intent+write vs mutex"][1].startswith("3.33x")
    assert v["write_heavy, 2 CPUs, vs rwsem"] == (False, "1.10x (target <= 1x)")
    # read_only is faster, read_heavy is not: both are needed
    assert v["percpu readers vs rwsem, 2-CPU read contention"][0] is False
    v = {name: ok for name, ok, _ in bench_six.verdicts(
        _six_figs(six_read_heavy_2cpu_six_pcpu=500, six_write_six=120,
                  six_write_heavy_2cpu_six=300, six_read_six=45))}
    assert v == {"uncontended read vs rwsem": False, "uncontended intent vs mutex": True,
                 "intent+write vs mutex": True, "write_heavy, 2 CPUs, vs rwsem": True,
                 "percpu readers vs rwsem, 2-CPU read contention": True}


def test_six_table_leaves_blank_cells():
    rows = bench_six.table_rows(_six_figs())
    assert rows[0] == ["read, uncontended", "44.0", "", "40.0", "", ""]
    assert len(rows) == len(bench_six.ROWS)


def _closure_ratios(paired=1.0, noise=1.0):
    r = {}
    for _, c in bench_closures.CASES:
        r[f"{c} old/new paired"] = paired
        r[f"{c}_noise old_a/old_b paired"] = noise
    return r


def test_closures_noise_band():
    assert bench_closures.gains_beyond_noise(_closure_ratios(1.04, 1.0)) == []
    assert len(bench_closures.gains_beyond_noise(_closure_ratios(1.06, 1.0))) == 4
    # a noisy control widens the band
    assert bench_closures.gains_beyond_noise(_closure_ratios(1.09, 0.90)) == []
    assert bench_closures.gains_beyond_noise(_closure_ratios(0.80, 1.0)) == []


def test_pagecache_overhead():
    assert bench_pagecache.overhead(1287.2, 1266.9) == pytest.approx(1.577, abs=0.001)
    assert bench_pagecache.overhead(100.0, 101.0) == pytest.approx(-1.0)


def test_grid_aligns(capsys):
    gb.grid(["case", "a"], [["x", "1.0"], ["longer", "10.25"]])
    out = capsys.readouterr().out.splitlines()
    assert out == ["  case        a", "  x         1.0", "  longer  10.25"]


def test_up_to_date_needs_the_same_stamp_and_a_kernel(tmp_path):
    frags = [gb.BASE_CONFIG, gb.NODEBUG]
    stamp = gb.build_stamp("t" * 40, frags)
    assert stamp.startswith("t" * 40 + " ")
    assert gb.build_stamp("u" * 40, frags) != stamp
    assert gb.build_stamp("t" * 40, frags[:1]) != stamp
    out = tmp_path / "bench-x"
    assert gb.up_to_date(out, "bench-x", stamp, frags) is None
    (out / "arch/x86/boot").mkdir(parents=True)
    (out / gb.STAMP).write_text(stamp + "\n")
    assert gb.up_to_date(out, "bench-x", stamp, frags) is None      # no bzImage yet
    (out / "arch/x86/boot/bzImage").write_bytes(b"k")
    (out / ".config").write_text("CONFIG_64BIT=y\n")
    res = gb.up_to_date(out, "bench-x", stamp, frags)
    assert res.ok and res.bzimage == out / "arch/x86/boot/bzImage"
    assert res.config.config == out / ".config" and not res.config.missing
    assert gb.up_to_date(out, "bench-x", gb.build_stamp("u" * 40, frags), frags) is None


def test_describe_says_kernel_guest_suite_and_findings(capsys):
    class K:
        config_line = "topic/locking at abc, fragments base + locking"

    class F:
        kind, message, line = "warning", "WARNING: at kernel/x.c:1", 7
    g = gb.Guest(text=CONSOLE, console=Path("/w/out/six.log"), status="pass", seconds=41.6,
                 command="qemu-system-x86_64 -accel tcg", findings=[F()])
    gb.describe(K(), g, "six_bench", "six", vcpus=2)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "  kernel: topic/locking at abc, fragments base + locking",
        "  guest: tcg, 2 vCPUs, 42s; six_bench suite: ok; console /w/out/six.log",
        "  note: six: console finding warning: WARNING: at kernel/x.c:1 (/w/out/six.log:7)"]


def test_host_measures_once_and_honours_a_forced_accelerator(monkeypatch, tmp_path):
    from ktopic.kernel import boot, qkvm
    calls = []
    monkeypatch.setattr(boot, "speed_factor", lambda: calls.append("f") or 2.5)
    monkeypatch.setattr(qkvm, "probe", lambda root: calls.append("p") or
                        type("P", (), {"accel": "tcg", "reason": "kvm hangs"})())
    h = boot.Host(tmp_path)
    assert h.accel() == ("tcg", "kvm hangs") and h.accel() == ("tcg", "kvm hangs")
    assert h.factor() == 2.5 and h.factor() == 2.5
    assert calls == ["p", "f"]
    assert boot.Host(tmp_path, "kvm").accel() == ("kvm", "kvm (forced)") and calls == ["p", "f"]
