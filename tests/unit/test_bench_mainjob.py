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
