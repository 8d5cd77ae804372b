"""closure continuations: 6.1's continue_at_nobarrier() against the optimised one

The bench kernel of topic/closures (base.config + closures.config +
closure_bench/bench.config (no bcache: only CONFIG_CLOSURES is needed) +
qemu/bench/nodebug.config: no lockdep, no DEBUG_OBJECTS, no DEBUG_CLOSURES)
boots under QEMU with 2 vCPUs and loads qemu/bench/closure_bench.  It
carries copies of both versions of continue_at_nobarrier(), so old and new
run side by side in one boot whatever the kernel carries: round trips
through closure_call() and through the bare continue_at_nobarrier(), each
ended by closure_sync() on a parent, with and without a workqueue; 41
short rounds per variant, alternating.  Figures: the fastest round, the
old/new ratio of the fastest rounds, and "paired" (the median of the
per-round old/new ratios, both variants back to back); an old-vs-old run
per case gives the noise floor.  Ratios > 1: new is faster.
"bcache: optimize continue_at_nobarrier()" was dropped from the manifest
on these figures; the verdict says whether that still holds: no case may
gain beyond its own noise (paired ratio above 1 + max(0.05, |noise - 1|)).
"""

from __future__ import annotations

import guestbench as gb
from benchlib import verdict

BRANCH = "topic/closures"
TOPIC = "closures"
BENCH_CONFIG = gb.BENCH_DIR / "closure_bench" / "bench.config"
CASES = [("closure_call, no workqueue", "closure_call_nowq"),
         ("bare continue_at, no workqueue", "closure_cont_nowq"),
         ("closure_call, workqueue", "closure_call_wq"),
         ("bare continue_at, workqueue", "closure_cont_wq")]


def required() -> tuple[list[str], list[str]]:
    figs = [f"{c}_{v}" for _, c in CASES for v in ("old", "new")]
    ratios = [f"{c} old/new paired" for _, c in CASES] + \
             [f"{c}_noise old_a/old_b paired" for _, c in CASES]
    return figs, ratios


def rows(figs, ratios) -> list[list[str]]:
    out = []
    for label, c in CASES:
        out.append([label, gb.fmt(figs[f"{c}_old"][0], 0), gb.fmt(figs[f"{c}_new"][0], 0),
                    gb.fmt(ratios.get(f"{c} old/new"), 2),
                    gb.fmt(ratios.get(f"{c} old/new paired"), 2),
                    gb.fmt(ratios.get(f"{c}_noise old_a/old_b paired"), 2)])
    return out


def gains_beyond_noise(ratios) -> list[str]:
    """The cases where new is faster than the noise floor allows."""
    out = []
    for _, c in CASES:
        r = ratios[f"{c} old/new paired"]
        band = max(0.05, abs(ratios[f"{c}_noise old_a/old_b paired"] - 1.0))
        if r > 1.0 + band:
            out.append(f"{c} {r:.2f} > {1.0 + band:.2f}")
    return out


def _body(s: gb.Session) -> bool:
    k = s.kernel(BRANCH, s.fragments(TOPIC, [BENCH_CONFIG]))
    ko = s.module(k, gb.BENCH_DIR / "closure_bench")
    g = s.boot("closures", k, modules=[ko], smp=2)
    figs, ratios = gb.parse_bench(g.text), gb.parse_ratios(g.text)
    need_f, need_r = required()
    gb.require(figs, need_f, f"closure_bench ({g.console})")
    gb.require(ratios, need_r, f"closure_bench ({g.console})")
    gb.describe(k, g, "closure_bench", "closures")
    print("  ns per round trip, fastest of 41 rounds; ratios old/new (> 1: new is faster):")
    gb.grid(["case", "old ns", "new ns", "old/new", "paired", "noise old/old paired"],
            rows(figs, ratios))
    gains = gains_beyond_noise(ratios)
    paired = ", ".join(f"{ratios[f'{c} old/new paired']:.2f}" for _, c in CASES)
    return verdict("dropping continue_at_nobarrier() (no gain beyond noise)", not gains,
                   f"paired old/new {paired}" + (f"; beyond noise: {'; '.join(gains)}"
                                                 if gains else ""))


def run(repeat: int) -> bool:
    return gb.run_bench("closures", _body)
