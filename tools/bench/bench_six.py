"""SIX locks against rw_semaphore, mutex and percpu_rw_semaphore, in one guest

The bench kernel of topic/locking (base.config + locking.config +
qemu/bench/nodebug.config: no lockdep, no debug checks) boots under QEMU
with 2 vCPUs and loads qemu/bench/six_bench, whose KUnit suite measures
every lock kind side by side, alternating round by round: uncontended
lock+unlock (best of 15 rounds of 5,000), and two kthreads bound to the
two CPUs for 150 ms (CPU time per op, best of 3 rounds) with reads only,
one write in 64, and three in four.  A six "write" is intent + write.
Targets: uncontended read <= 1.1x rwsem, intent <= 1.2x mutex,
intent+write <= 2.0x mutex (four serialising atomics against the mutex's
two: about 1.8x is this API's floor); write_heavy on 2 CPUs no slower than
rwsem; and, from the first round of targets, the percpu reader mode faster
than rwsem under 2-CPU read contention (read_only and read_heavy).
Under TCG absolute figures mean little; the
ratios come from one boot.
"""

from __future__ import annotations

import guestbench as gb
from benchlib import verdict

BRANCH = "topic/locking"
TOPIC = "locking"
LOCKS = ["six", "six_pcpu", "rwsem", "percpu_rwsem", "mutex"]
# (row label, figure name prefix)
ROWS = [("read, uncontended", "six_read"),
        ("intent, uncontended", "six_intent"),
        ("intent+write, uncontended", "six_write"),
        ("read_only, 2 CPUs", "six_read_only_2cpu"),
        ("read_heavy (1/64 writes), 2 CPUs", "six_read_heavy_2cpu"),
        ("write_heavy (3/4 writes), 2 CPUs", "six_write_heavy_2cpu")]
REQUIRED = ["six_read_six", "six_read_rwsem", "six_write_six", "six_write_mutex",
            "six_intent_six", "six_intent_mutex",
            "six_write_heavy_2cpu_six", "six_write_heavy_2cpu_rwsem",
            "six_read_only_2cpu_six_pcpu", "six_read_only_2cpu_rwsem",
            "six_read_heavy_2cpu_six_pcpu", "six_read_heavy_2cpu_rwsem"]


def table_rows(figs: dict[str, tuple[float, str]]) -> list[list[str]]:
    rows = []
    for label, prefix in ROWS:
        rows.append([label] + [gb.fmt(figs[f"{prefix}_{lk}"][0]) if f"{prefix}_{lk}" in figs
                               else "" for lk in LOCKS])
    return rows


def ratio(figs, a: str, b: str) -> float:
    return figs[a][0] / figs[b][0] if figs[b][0] else float("inf")


def verdicts(figs: dict[str, tuple[float, str]]) -> list[tuple[str, bool, str]]:
    """(name, ok, detail) per target (module docstring)."""
    read = ratio(figs, "six_read_six", "six_read_rwsem")
    intent = ratio(figs, "six_intent_six", "six_intent_mutex")
    write = ratio(figs, "six_write_six", "six_write_mutex")
    wh = ratio(figs, "six_write_heavy_2cpu_six", "six_write_heavy_2cpu_rwsem")
    ro = ratio(figs, "six_read_only_2cpu_six_pcpu", "six_read_only_2cpu_rwsem")
    rh = ratio(figs, "six_read_heavy_2cpu_six_pcpu", "six_read_heavy_2cpu_rwsem")
    return [
        ("uncontended read vs rwsem", read <= 1.1, f"{read:.2f}x (target <= 1.1x)"),
        ("uncontended intent vs mutex", intent <= 1.2, f"{intent:.2f}x (target <= 1.2x)"),
        ("intent+write vs mutex", write <= 2.0, f"{write:.2f}x (target <= 2.0x)"),
        ("write_heavy, 2 CPUs, vs rwsem", wh <= 1.0, f"{wh:.2f}x (target <= 1x)"),
        ("percpu readers vs rwsem, 2-CPU read contention", ro < 1.0 and rh < 1.0,
         f"six_pcpu/rwsem read_only {ro:.2f}x, read_heavy {rh:.2f}x (target < 1x, both)"),
    ]


def _body(s: gb.Session) -> bool:
    k = s.kernel(BRANCH, s.fragments(TOPIC))
    ko = s.module(k, gb.BENCH_DIR / "six_bench")
    g = s.boot("six", k, modules=[ko], smp=2)
    figs = gb.parse_bench(g.text)
    gb.require(figs, REQUIRED, f"six_bench ({g.console})")
    gb.describe(k, g, "six_bench", "six")
    print("  ns/op (lower is better):")
    gb.grid(["case", *LOCKS], table_rows(figs))
    ok = True
    for name, good, detail in verdicts(figs):
        ok = verdict(name, good, detail) and ok
    return ok


def run(repeat: int) -> bool:
    # One boot: the ratios are measured side by side in it; --repeat is for
    # the host-side benchmarks.
    return gb.run_bench("six", _body)
