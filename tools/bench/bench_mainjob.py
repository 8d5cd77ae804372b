#!/usr/bin/python3
"""the main job (make's): cold, then warm, against its floor

What `make` runs after installing packages: `ktopic import-base`,
`generate`, `status`, then one `ktopic ci --main-job` (--bisect
--warnings --mutate: every topic's gates, build, boot, tests, expectation
boots and mutants, the integration branch last, then for-next+kcsan, the
one kernel the main job builds under KCSAN).  It runs in a scratch work
directory (benchlib.scratch_workdir: a shared clone of the repository of
$KTOPIC_WORKDIR, or ~/.cache/ktopic; no build directory, no result or
gate cache, an EMPTY ccache), once cold and once warm (nothing changed).

Printed: the total and each part's wall and CPU time beside the load
average; each stage's wall and CPU seconds (report.json "timing", summed
over branches: bisect builds, warnings, build, boot+tests, mutants, ...),
the KCSAN branches' own; and the FLOOR, the job's new compiles: every
compile of an object whose inputs no earlier build in the job had.  The
job starts with an empty ccache, so those are exactly its ccache misses
(out/steps.json has each build's), and a hit is a rebuild of what was
built before; relinks and kbuild's walks are not in it.  Each miss is
priced at its variant's cost of a compile: the wall time over the misses
of the build with the most misses under that variant (the base's, or
for-next+kcsan's).  So fs's header commits count, whatever their share
of the tree, and for-next's build counts only for what no topic compiled.

Two verdicts against it: the first verdict (tier 1: the wall time to
ci's "first verdict" mark in steps.json) against the new compiles before
it, target <= 1.15x; the whole job against all of them, <= 1.3x.

Beside them, last round's floor: the builds that compiled nearly
everything and had to:

    the base                                 (a new configuration)
    a bisect build of a commit that changes a widely included header
    the integration branch, and its variants (the topics' headers together;
                                              for-next+kcsan: KCSAN's one)
    a build that attributes a variant's report of the integration branch
      (topic/mm+kcsan, base+kcsan: only when for-next+kcsan reported a race)
    a subset's (a topic's own run, where no for-next+kcsan covers it):
      each variant's base, and the variant build of a topic that changes
      a widely included header (new content, new config)

"Nearly everything": at least half the kbuild steps of the base's build
under the same variant, or of the plain base's when the base was not
built under it (the main job, green).  "Widely included": a header that
at least half of the base build's objects depend on (their .cmd files).
Every other build that compiled nearly everything is listed as
AVOIDABLE: that is time a better order or seed would save.  Targets: cold <= 45 min wall
(set before the KCSAN builds and the mutants joined the job); warm <= 15 s.

The whole cold job takes an hour or more on a shared 2-core machine.
A subset tries it in minutes:

    tools/bench/bench_mainjob.py --topics locking --ci-options=--no-sanitizers -j 1

(environment for `make bench`: KTOPIC_BENCH_MAINJOB_TOPICS=locking,
KTOPIC_BENCH_MAINJOB_CI_OPTIONS=--no-sanitizers, KTOPIC_BENCH_MAINJOB_JOBS=1).
Topic names go to `ktopic ci` (the base always runs; "integration" names
the integration branch); the floor and the targets are then the subset's.

A newcomer's first `make` is itself a cold run, in the real work
directory.  Its floor, from what it left:

    tools/bench/bench_mainjob.py --analyse out --wall SECONDS [--tier1 SECONDS]

(--tier1, the wall time to the log's "first verdict" line, only for a
steps.json from before its mark.)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ci import _git, _run, fmt_s, meter  # noqa: E402
from benchlib import REPO, scratch_workdir, table, verdict  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))
from ktopic.kernel.seeds import object_dependencies  # noqa: E402
from ktopic.runner.tiers import FIRST_VERDICT  # noqa: E402  (its mark in steps.json)

COLD_TARGET = 45 * 60
FLOOR_RATIO = 1.3
TIER1_RATIO = 1.15
TIER1_STAGES = ("build", "boot+tests", "expect", "check")
WARM_TARGET = 15.0
NEARLY_ALL = 0.5          # of the base's kbuild steps
WIDE = 0.5                # of the base's objects depending on a header


# ------------------------------------------------------------ pure helpers

def stage_totals(timing: list[dict]) -> list[tuple[str, float, float, int]]:
    """(stage, wall, cpu, kbuild) summed over branches, in first-seen order
    (report.json "timing"; the run's other and total rows left out)."""
    acc: dict[str, list] = {}
    for r in timing:
        if not r.get("branch"):
            continue
        a = acc.setdefault(r["stage"], [0.0, 0.0, 0])
        a[0] += r.get("seconds", 0.0)
        a[1] += r.get("cpu", 0.0)
        a[2] += r.get("kbuild", 0)
    return [(k, v[0], v[1], v[2]) for k, v in acc.items()]


def variant_of(branch: str) -> str:
    """"topic/mm+kcsan" -> "kcsan"; a plain branch -> ""."""
    return branch.rpartition("+")[2] if "+" in branch else ""


def wide_headers(build_dir: Path, src: Path, share: float = WIDE) -> set[str]:
    """Paths in the tree (include/linux/fs.h) of the headers that at least
    `share` of the build's objects depend on (kbuild's .<obj>.o.cmd files
    name them as src/<path>)."""
    counts: dict[str, int] = defaultdict(int)
    objs = 0
    for deps in object_dependencies(build_dir, src):
        objs += 1
        for h in deps:
            if h.endswith(".h"):
                counts[h] += 1
    return {h for h, n in counts.items() if objs and n >= share * objs}


def floor_steps(steps: list[dict], changes_wide) -> tuple[list[dict], list[dict]]:
    """(floor, avoidable): the builds that compiled nearly everything and
    had to (see the module's doc), and the others that compiled nearly
    everything.  changes_wide(step) says whether the step's commit (a
    bisect build) or tree (a variant's build) changes a wide header."""
    full: dict[str, int] = {}
    for s in steps:   # the base under each variant it was built with
        if s["stage"] == "build" and s["branch"].split("+")[0] == "base":
            full.setdefault(variant_of(s["branch"]), s["kbuild"])
    floor, avoidable = [], []
    for s in steps:
        if s["stage"] not in ("build", "bisect builds", "head build", "mutants"):
            continue
        ref = full.get(variant_of(s["branch"])) or max(full.values(), default=0)
        if not ref or s["kbuild"] < NEARLY_ALL * ref:
            continue
        base = s["branch"].split("+")[0] == "base"
        integration = s.get("integration", False)
        had_to = base or integration or s.get("follows", False) or \
            (s["stage"] == "bisect builds" and changes_wide(s)) or \
            (s["stage"] == "build" and variant_of(s["branch"]) and changes_wide(s))
        (floor if had_to else avoidable).append(s)
    return floor, avoidable


def tier1_count(steps: list[dict]) -> int:
    """How many of steps.json's records (in the order they ended) are tier
    1's: those before the "first verdict" mark; in a steps.json without
    marks (before 7 December 2026), those before the first record of a
    kind only tier 2 makes (a gate's, a mutant's, a variant's)."""
    for i, s in enumerate(steps):
        if s["stage"] == "mark" and s["what"] == FIRST_VERDICT:
            return i
    for i, s in enumerate(steps):
        if s["stage"] not in TIER1_STAGES or variant_of(s["branch"]):
            return i
    return len(steps)


def compile_price(steps: list[dict]) -> dict[str, float]:
    """Wall seconds per new compile, per variant ("" for the plain
    kernels): the build under that variant with the most ccache misses,
    its wall over its misses (the base's, or for-next+kcsan's in the main
    job, which builds no base+kcsan): what one more object compiled from
    nothing cost the job, make -j on this machine."""
    best: dict[str, dict] = {}
    for s in steps:
        if s["stage"] in ("build", "bisect builds") and s.get("ccache_misses"):
            v = variant_of(s["branch"])
            if s["ccache_misses"] > best.get(v, {}).get("ccache_misses", 0):
                best[v] = s
    return {v: s["seconds"] / s["ccache_misses"] for v, s in best.items()}


def new_compiles(steps: list[dict]) -> list[tuple[dict, float]]:
    """(step, its share of the floor in seconds) for every step that
    compiled what no earlier build of the job had: its ccache misses (the
    job starts with an empty ccache, so a miss is a compile of new inputs
    and a hit a rebuild of something built before; relinks, kbuild's walk
    and hits cost nothing here), each at its variant's compile_price()."""
    price = compile_price(steps)
    plain = price.get("", 0.0)
    return [(s, s["ccache_misses"] * price.get(variant_of(s["branch"]), plain))
            for s in steps if s.get("ccache_misses")]


def tier1_wall(steps: list[dict], timing: list[dict], wall: float) -> float | None:
    """The job's wall time to its first verdict: the whole wall less what
    `ktopic ci` ran after its "first verdict" mark (None without one)."""
    mark = next((s for s in steps if s["stage"] == "mark" and s["what"] == FIRST_VERDICT
                 and "end" in s), None)
    total = next((r["seconds"] for r in timing if r.get("stage") == "total"), None)
    if mark is None or total is None:
        return None
    return wall - (total - mark["end"])


def variant_seconds(timing: list[dict], variant: str) -> tuple[float, float]:
    """(wall, cpu) of every stage of the branches built under variant."""
    rows = [r for r in timing if r.get("branch") and variant_of(r["branch"]) == variant]
    return sum(r.get("seconds", 0.0) for r in rows), sum(r.get("cpu", 0.0) for r in rows)


# -------------------------------------------------------------- analysis

def floor_of(report: dict, steps: list[dict], wd: Path):
    """(wide headers, floor, avoidable) of a main job's report.json and
    steps.json, with the work directory wd it ran in (its repository, its
    base build, its worktree)."""
    git_dir = wd / "linux.git"
    wide = wide_headers(wd / "build" / "base", wd / "src")
    integ = {b["branch"] for b in report["branches"] if b.get("topic") == "integration"}
    follows = {b["branch"] for b in report["branches"] if b.get("follows")}

    def changes_wide(s: dict) -> bool:
        if s["stage"] == "bisect builds" and s.get("commit"):
            files = _git(git_dir, "diff-tree", "-r", "--no-commit-id", "--name-only",
                         "--root", s["commit"]).split()
        else:
            head = next((b["head"] for b in report["branches"]
                         if b["branch"] == s["branch"]), "")
            files = _git(git_dir, "diff", "--name-only", "refs/heads/base", head).split() \
                if head else []
        return bool(wide & set(files))
    for s in steps:
        s["integration"] = s["branch"] in integ
        s["follows"] = s["branch"] in follows
    floor, avoidable = floor_steps(steps, changes_wide)
    return wide, floor, avoidable


@dataclass
class Floors:
    """A cold job's figures against its floors (floor_rows())."""
    wall: float
    floor: float                  # new compiles, the whole job
    tier1: float | None           # wall to the first verdict
    tier1_floor: float            # new compiles before it
    old_floor: float              # last round's: builds that compiled nearly everything

    @staticmethod
    def ratio(a, b) -> float:
        return a / b if a is not None and b else float("inf")

    def verdicts(self) -> bool:
        ok = True
        if self.tier1 is not None:
            ok &= verdict("first verdict / its floor",
                          self.ratio(self.tier1, self.tier1_floor) <= TIER1_RATIO,
                          f"{self.ratio(self.tier1, self.tier1_floor):.2f} (target <= "
                          f"{TIER1_RATIO}; {fmt_s(self.tier1)} against {fmt_s(self.tier1_floor)})")
        ok &= verdict("main job / its floor", self.ratio(self.wall, self.floor) <= FLOOR_RATIO,
                      f"{self.ratio(self.wall, self.floor):.2f} (target <= {FLOOR_RATIO}; "
                      f"{fmt_s(self.wall)} against {fmt_s(self.floor)})")
        return ok


def floor_rows(report: dict, steps: list[dict], wide: set[str], floor: list[dict],
               avoidable: list[dict], wall: float, tier1: float | None = None):
    """(table rows, Floors) of a cold run that took `wall` (`tier1` to its
    first verdict, when known otherwise than by a mark in steps.json): the
    stage totals, the floor of new compiles (new_compiles()) for tier 1
    and the whole job, the mutant and KCSAN stages, and last round's floor
    (the builds that compiled nearly everything, floor_steps()) with the
    avoidable builds."""
    timing = report.get("timing", [])
    rows = [(f"  stage {st}", f"{fmt_s(w)} wall, CPU {fmt_s(c)}, {k} kbuild steps")
            for st, w, c, k in stage_totals(timing)]
    kw, kc = variant_seconds(timing, "kcsan")
    rows.append(("  KCSAN (every stage of the +kcsan branches)",
                 f"{fmt_s(kw)} wall, CPU {fmt_s(kc)}"))
    price = compile_price(steps)
    rows.append(("price of a new compile (the build with most misses)",
                 ", ".join(f"{v or 'plain'} {p:.3f} s" for v, p in sorted(price.items()))))
    n1 = tier1_count(steps)
    paid = new_compiles(steps)
    first = {id(s) for s in steps[:n1]}
    f1 = sum(sec for s, sec in paid if id(s) in first)
    fall = sum(sec for _, sec in paid)
    for s, sec in paid:
        if sec >= 30:
            rows.append((f"  {'tier 1' if id(s) in first else 'tier 2'} {s['branch']} "
                         f"{s['what']} {s.get('commit', '')[:12]}".rstrip(),
                         f"{s['ccache_misses']} new compiles, {fmt_s(sec)} "
                         f"(step {fmt_s(s['seconds'])})"))
    small = [(s, sec) for s, sec in paid if sec < 30]
    if small:
        rows.append((f"  {len(small)} other steps (each under 30 s of new compiles)",
                     fmt_s(sum(sec for _, sec in small))))
    t1 = tier1_wall(steps, timing, wall)
    t1 = t1 if t1 is not None else tier1
    rows.append(("first verdict (tier 1): wall / floor of its new compiles",
                 f"{fmt_s(t1) if t1 is not None else 'not known'} / {fmt_s(f1)}"
                 + (f" = {t1 / f1:.2f}" if t1 is not None and f1 else "")))
    rows.append(("whole job: wall / floor of its new compiles",
                 f"{fmt_s(wall)} / {fmt_s(fall)}" + (f" = {wall / fall:.2f}" if fall else "")))
    rows.append(("wide headers (>= half of base's objects)",
                 f"{len(wide)}: {', '.join(sorted(wide)[:6])}{' ...' if len(wide) > 6 else ''}"))
    for s in floor:
        rows.append((f"  nearly-all build {s['branch']} {s['what']}",
                     f"{fmt_s(s['seconds'])}, {s['kbuild']} kbuild steps "
                     f"{s['commit'][:12]}".rstrip()))
    for s in avoidable:
        rows.append((f"  AVOIDABLE {s['branch']} {s['what']}",
                     f"{fmt_s(s['seconds'])}, {s['kbuild']} kbuild steps "
                     f"{s['commit'][:12]}".rstrip()))
    old = sum(s["seconds"] for s in floor)
    rows.append(("last round's floor: builds that had to compile nearly everything",
                 f"{fmt_s(old)} ({len(floor)} build(s)); total / it = "
                 + (f"{wall / old:.2f}" if old else "-")))
    failed = [b["branch"] for b in report["branches"]
              if any(s["status"] == "fail" for s in b["stages"])]
    if failed:
        rows.append(("branches that failed", ", ".join(failed)))
    return rows, Floors(wall, fall, t1, f1, old)


def analyse(out: Path, wall: float, tier1: float | None = None) -> bool:
    """--analyse: the floor of a main job that already ran in the work
    directory ($KTOPIC_WORKDIR or ~/.cache/ktopic), e.g. a newcomer's
    first `make`, its out/ given, and its wall time (and, for a run whose
    steps.json has no first-verdict mark, the time to it) measured outside."""
    from ktopic.model.workdir import Workdir
    report = json.loads((out / "report.json").read_text())
    steps = json.loads((out / "steps.json").read_text())
    wide, floor, avoidable = floor_of(report, steps, Workdir().root)
    rows, floors = floor_rows(report, steps, wide, floor, avoidable, wall, tier1)
    table([("main job (measured outside)", fmt_s(wall)), *rows])
    ok = verdict("main job", wall <= COLD_TARGET, f"{fmt_s(wall)} (target <= 45 min)")
    return floors.verdicts() and ok


# ------------------------------------------------------------------- run

def _opts(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    env = os.environ.get
    p.add_argument("--topics", default=env("KTOPIC_BENCH_MAINJOB_TOPICS", ""),
                   help="comma-separated topics for `ktopic ci` (default: every branch)")
    p.add_argument("--ci-options", default=env("KTOPIC_BENCH_MAINJOB_CI_OPTIONS", ""),
                   help="more `ktopic ci` options (e.g. --no-sanitizers)")
    p.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="copy the cold run's out/ and the log to DIR")
    p.add_argument("--analyse", type=Path, default=None, metavar="OUT",
                   help="only the floor of a main job already run in the work directory "
                        "(its out/ directory; with --wall)")
    p.add_argument("--wall", type=float, default=0.0, metavar="SECONDS",
                   help="with --analyse: the job's wall time, measured outside")
    p.add_argument("--tier1", type=float, default=None, metavar="SECONDS",
                   help="with --analyse: the wall time to the first verdict, measured "
                        "outside (for a steps.json without its mark)")
    p.add_argument("-j", "--jobs", type=int, default=int(env("KTOPIC_BENCH_MAINJOB_JOBS", "0")),
                   help="make -j (default: nproc)")
    return p.parse_args(argv or [])


def main_job(ktopic: list[str], ci_args: list[str], out: Path, log: Path):
    """import-base, generate, status, ci: (Measure of the whole, {part: Measure})."""
    parts = {}
    with meter() as whole:
        rc = 0
        for name, cmd in (("import-base", ["import-base"]), ("generate", ["generate"]),
                          ("status", ["status"]),
                          ("ci", ["ci", "--main-job", "-o", str(out),
                                  *ci_args])):
            with meter() as m:
                rc = _run([*ktopic, *cmd], log)
            m.ok = rc == 0
            parts[name] = m
            if rc not in (0, 1) or (rc and name != "ci"):
                raise SystemExit(f"ktopic {name} failed (exit {rc}); see {log}:\n"
                                 + "".join(log.read_text().splitlines(True)[-25:]))
    whole.ok = all(m.ok for m in parts.values())
    return whole, parts


def run(repeat: int = 1, argv: list[str] | None = None) -> bool:
    o = _opts(argv)
    if o.analyse:
        return analyse(o.analyse, o.wall, o.tier1)
    names = [n.strip() for n in o.topics.split(",") if n.strip()]
    ci_args = [*names, *shlex.split(o.ci_options)] + (["-j", str(o.jobs)] if o.jobs else [])
    cores = os.cpu_count() or 1
    print(f"  branches: {', '.join(names) or 'every topic and the integration branch'}"
          f"; ci options: {' '.join(ci_args) or '(none)'}; {cores} cores", flush=True)
    with scratch_workdir("ktopic-bench-mainjob-") as (tmp, wd):
        log = tmp / "bench.log"
        print(f"  scratch work directory {wd}; log {log} (removed at the end)", flush=True)
        ktopic = ["/usr/bin/python3", str(REPO / "tools/bin/ktopic"), "-w", str(wd)]
        assert not (wd / "ccache").exists() and not (wd / "build").exists()
        cold, cold_parts = main_job(ktopic, ci_args, tmp / "out", log)
        print(f"  [cold] {cold.text()}", flush=True)
        if o.keep:
            shutil.copytree(tmp / "out", o.keep / "out", dirs_exist_ok=True)
            shutil.copyfile(log, o.keep / "bench.log")
        report = json.loads((tmp / "out" / "report.json").read_text())
        steps = json.loads((tmp / "out" / "steps.json").read_text())
        wide, floor, avoidable = floor_of(report, steps, wd)

        warm_runs = []
        for i in range(max(1, repeat)):
            warm_runs.append(main_job(ktopic, ci_args, tmp / f"out-warm{i}", log) +
                             (json.loads((tmp / f"out-warm{i}" / "report.json").read_text()),))
        warm, warm_parts, warm_report = sorted(warm_runs, key=lambda x: x[0].wall)[
            len(warm_runs) // 2]
        print(f"  [warm] {warm.text()}", flush=True)
        if o.keep:
            for i in range(len(warm_runs)):
                shutil.copytree(tmp / f"out-warm{i}", o.keep / f"out-warm{i}",
                                dirs_exist_ok=True)
            shutil.copyfile(log, o.keep / "bench.log")

    rows = [("cold: the main job, empty caches", cold.text())]
    rows += [(f"  cold {k}", m.text()) for k, m in cold_parts.items()]
    rows += [(f"warm: nothing changed (median of {len(warm_runs)})", warm.text())]
    rows += [(f"  warm {k}", m.text()) for k, m in warm_parts.items()]
    rows += [(f"  warm stage {st}", f"{fmt_s(w)} wall, CPU {fmt_s(c)}, {k} kbuild steps")
             for st, w, c, k in stage_totals(warm_report.get("timing", []))]
    frows, floors = floor_rows(report, steps, wide, floor, avoidable, cold.wall)
    table(rows + frows)
    ok = verdict("cold main job", cold.wall <= COLD_TARGET,
                 f"{fmt_s(cold.wall)} (target <= 45 min; CPU / {cores} = "
                 f"{fmt_s(cold.cpu / cores)}; load {cold.loadtext()})")
    ok &= floors.verdicts()
    ok &= verdict("warm main job", warm.wall <= WARM_TARGET,
                  f"{fmt_s(warm.wall)} (target <= 15 s; load {warm.loadtext()})")
    return ok


if __name__ == "__main__":
    sys.exit(0 if run(1, sys.argv[1:]) else 1)
