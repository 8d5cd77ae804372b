"""The pure parts of tools/bench/bench_mainjob.py: stage totals, wide
headers from kbuild's .cmd files, and which builds make the floor."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools" / "bench"))

import bench_mainjob as bm  # noqa: E402


def test_stage_totals_sum_branches_and_leave_out_the_run_rows():
    timing = [{"branch": "base", "stage": "build", "seconds": 10.0, "cpu": 18.0, "kbuild": 900},
              {"branch": "topic/a", "stage": "bisect builds", "seconds": 5.0, "cpu": 6.0,
               "kbuild": 40},
              {"branch": "topic/a", "stage": "build", "seconds": 1.0, "cpu": 1.0, "kbuild": 3},
              {"branch": "", "stage": "total", "seconds": 20.0, "cpu": 30.0}]
    assert bm.stage_totals(timing) == [("build", 11.0, 19.0, 903),
                                       ("bisect builds", 5.0, 6.0, 40)]


def test_wide_headers(tmp_path):
    src, out = tmp_path / "src", tmp_path / "build"
    (out / "fs").mkdir(parents=True)
    for i in range(4):
        deps = [f"{src}/include/linux/types.h"] + ([f"{src}/include/linux/fs.h"] if i < 2 else [])
        (out / "fs" / f".o{i}.o.cmd").write_text(
            f"cmd_fs/o{i}.o := gcc -c\ndeps_fs/o{i}.o := \\\n" +
            "".join(f"  {d} \\\n" for d in deps) + f"  $(wildcard include/config/X) \\\n")
    assert bm.wide_headers(out, src) == {"include/linux/types.h", "include/linux/fs.h"}
    assert bm.wide_headers(out, src, share=0.75) == {"include/linux/types.h"}


def test_floor_and_avoidable_builds():
    def step(branch, stage, kbuild, commit="", seconds=1.0):
        return {"branch": branch, "stage": stage, "what": stage, "commit": commit,
                "kbuild": kbuild, "seconds": seconds, "integration": branch == "for-next"}
    steps = [step("base", "build", 1000), step("base+kcsan", "build", 1100),
             step("topic/mm", "bisect builds", 990, "wide"),      # changes fs.h: floor
             step("topic/fs", "bisect builds", 980, "narrow"),    # a switch's rewrite: avoidable
             step("topic/fs", "bisect builds", 20, "narrow2"),    # small: neither
             step("topic/mm", "build", 3),                        # the no-op after the walk
             step("topic/mm+kcsan", "build", 1050),               # new content, new config
             step("topic/six+kcsan", "build", 1050),              # nothing wide: avoidable
             step("for-next", "build", 999)]
    floor, avoidable = bm.floor_steps(
        steps, lambda s: s["commit"] == "wide" or s["branch"] == "topic/mm+kcsan")
    assert [(s["branch"], s["commit"]) for s in floor] == [
        ("base", ""), ("base+kcsan", ""), ("topic/mm", "wide"), ("topic/mm+kcsan", ""),
        ("for-next", "")]
    assert [(s["branch"], s["commit"]) for s in avoidable] == [
        ("topic/fs", "narrow"), ("topic/six+kcsan", "")]


def test_the_main_jobs_floor_has_one_kcsan_build_and_the_follow_ups_it_made():
    """The main job builds no base+kcsan: for-next+kcsan, the one KCSAN
    build, is measured against the plain base; a build that attributes its
    report (marked `follows` in report.json) had to be made, whatever its
    tree changes."""
    def step(branch, kbuild, **kw):
        return {"branch": branch, "stage": "build", "what": "build", "commit": "",
                "kbuild": kbuild, "seconds": 1.0, "integration": branch.startswith("for-next"),
                **kw}
    green = [step("base", 1000), step("topic/six", 40), step("for-next", 999),
             step("for-next+kcsan", 1060)]
    floor, avoidable = bm.floor_steps(green, lambda s: False)
    assert [s["branch"] for s in floor] == ["base", "for-next", "for-next+kcsan"]
    assert not avoidable
    red = green + [step("topic/six+kcsan", 980, follows=True)]
    floor, avoidable = bm.floor_steps(red, lambda s: False)
    assert [s["branch"] for s in floor][-1] == "topic/six+kcsan" and not avoidable


def rec(branch, stage, seconds=1.0, misses=None, **kw):
    r = {"branch": branch, "stage": stage, "what": stage, "commit": "", "kbuild": 0,
         "seconds": seconds, "cpu": 0.0, "outcome": "", **kw}
    if misses is not None:
        r.update(ccache_hits=0, ccache_misses=misses)
    return r


def test_tier_one_ends_at_the_first_verdict_mark_or_at_the_first_tier_two_step():
    marked = [rec("base", "build"), rec("topic/a", "check"),
              rec("", "mark", what="first verdict", end=50.0),
              rec("topic/a", "check"), rec("topic/a", "mutants")]
    assert bm.tier1_count(marked) == 2
    old = [rec("base", "build"), rec("topic/a", "boot+tests"), rec("topic/a", "expect"),
           rec("topic/a", "bisect builds"), rec("topic/a", "check")]
    assert bm.tier1_count(old) == 3
    assert bm.tier1_count([rec("base", "build"), rec("for-next+kcsan", "build")]) == 1
    assert bm.tier1_count([rec("base", "build")]) == 1


def test_the_floor_is_the_new_compiles_each_at_its_variants_price():
    """A miss is a compile no earlier build had (the job starts with an
    empty ccache); its price is the wall per miss of the build with most
    misses under its variant; hits, walks and links are free."""
    steps = [rec("base", "build", 600.0, misses=1500),           # 0.4 s a compile
             rec("topic/fs", "build", 400.0, misses=500),        # fs.h: 200 s
             rec("topic/fs", "bisect builds", 40.0, misses=0),   # a relink: nothing
             rec("topic/fs", "mutants", 30.0, misses=1),         # one object: 0.4 s
             rec("for-next", "build", 300.0, misses=10),         # the topics' again: 4 s
             rec("for-next+kcsan", "build", 900.0, misses=1500)]  # 0.6 s a compile
    assert bm.compile_price(steps) == {"": 0.4, "kcsan": 0.6}
    paid = {(s["branch"], s["stage"]): round(sec, 6) for s, sec in bm.new_compiles(steps)}
    assert paid == {("base", "build"): 600.0, ("topic/fs", "build"): 200.0,
                    ("topic/fs", "mutants"): 0.4, ("for-next", "build"): 4.0,
                    ("for-next+kcsan", "build"): 900.0}


def test_the_wall_to_the_first_verdict_is_the_whole_less_what_ci_ran_after_it():
    steps = [rec("base", "build"), rec("", "mark", what="first verdict", end=1000.0)]
    timing = [{"branch": "", "stage": "total", "seconds": 3000.0}]
    assert bm.tier1_wall(steps, timing, 3020.0) == 1020.0     # 20 s before ci
    assert bm.tier1_wall(steps[:1], timing, 3020.0) is None


def test_the_report_rows_put_tier_one_and_the_whole_job_against_their_floors(capsys):
    steps = [rec("base", "build", 600.0, misses=1500), rec("topic/a", "build", 40.0, misses=100),
             rec("", "mark", what="first verdict", end=700.0),
             rec("topic/a", "mutants", 100.0, misses=10)]
    report = {"branches": [], "timing": [{"branch": "", "stage": "total", "seconds": 900.0},
                                         {"branch": "base", "stage": "build", "seconds": 600.0,
                                          "cpu": 1100.0}]}
    rows, floors = bm.floor_rows(report, steps, set(), [], [], 920.0)
    assert floors.tier1 == 720.0 and floors.tier1_floor == 640.0 and floors.floor == 644.0
    assert dict(rows)["first verdict (tier 1): wall / floor of its new compiles"].endswith(
        "= 1.12")
    assert floors.verdicts() is False       # 920 / 644 = 1.43 > 1.3
    assert "first verdict / its floor" in capsys.readouterr().out
