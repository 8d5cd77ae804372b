#!/usr/bin/python3
"""the maintainer's edit loop: one line changed, to the main job's verdict

What a maintainer waits for after a one-line edit of a patch: `make`'s
main job (`ktopic import-base`, `generate`, `status`, then `ktopic ci
--main-job`: the gates, builds, boots, tests, expectation boots, mutants
and the one KCSAN build, every verdict complete), from the edit to the
end, wall and CPU time, side by side for these edits, each of one added
line of the patch in patches/<topic>/ that carries the file (found by its
text, EDITS below; the line is replaced, so the diff's hunks keep their
line counts and the patch still applies):

    six-comment  kernel/locking/six.c: words of a comment line (no line moves)
    six-code     kernel/locking/six.c: a branch hint in six_relock_ip()
                 (same behaviour, other object code)
    filemap      mm/filemap.c, mm's hunk: a branch hint in
                 __pagecache_lock_get()
    fs-h         include/linux/fs.h, mm's hunk: pagecache_lock_set_class()
                 made __always_inline (same behaviour; every object that
                 includes fs.h compiles again, as after any real edit there)

First a warm run (nothing changed) gives the baseline (the median of
`-r` runs; a first run that had anything to build or boot is reported as
a catch-up and left out).  Then per edit: the patch is edited, the main
job runs (the figure), the edit is reverted and the main job runs again
(printed, not counted: the next edit starts from an unmodified state;
its results come from the result cache, but the build directories keep
the edited objects, so the next edit's builds also compile the reverted
file again, from ccache).

It is a warm loop, so it runs in the maintainer's own work directory
($KTOPIC_WORKDIR or ~/.cache/ktopic: its build directories, result and
gate caches, ccache); an empty one would measure the wrong thing.  The
user's checkout is not modified: the patches are edited in a scratch copy
of it (benchlib.scratch_checkout), whose ktopic runs against the work
directory.  At the end, also after an error or Ctrl-C, `ktopic generate`
from the unmodified checkout puts every branch back; the branch refs
(refs/heads/, refs/ktopic/made/) are compared with what they were before
the bench, and a difference is printed as an ERROR.  ktopic waits for the
work directory's lock when another run holds it; so does the bench
before each run, saying so, and a run that still had to wait is marked.

Printed per run: wall, CPU and load (bench_ci.Measure), the ratio to the
baseline and to the target, and what ran (out/report.json and
out/steps.json): kernel builds, bisect and head builds, kbuild steps,
boots, mutants run and from the cache, the KCSAN build or none.
Targets: six-code <= 8 min, six-comment <= 3 min (2 idle cores);
filemap and fs-h have none (fs-h rebuilds nearly every kernel: most of
an hour).

    tools/bench/bench_editloop.py --edits six-comment,six-code
    tools/bench/bench_editloop.py --dry-run          # the plan, nothing run

(`make bench`: KTOPIC_BENCH_EDITLOOP_EDITS=six-comment,six-code).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ci import _git, _run, fmt_s  # noqa: E402
from bench_mainjob import main_job  # noqa: E402
from benchlib import REPO, scratch_checkout, table, verdict  # noqa: E402

ENV_EDITS = "KTOPIC_BENCH_EDITLOOP_EDITS"
BRANCH_REFS = ("refs/heads/", "refs/ktopic/made/")
LOCK_WAIT = "waiting for another run to finish"     # ktopic's line (model/workdir.py)


@dataclass(frozen=True)
class Edit:
    """One added line of a topic's patch, found by its whole text (without
    the diff's "+"), and what it becomes."""
    name: str
    topic: str                 # patches/<topic>/
    path: str                  # the file in the kernel tree
    before: str
    after: str
    what: str
    target: float | None       # seconds, or None: no target


EDITS = (
    Edit("six-comment", "locking", "kernel/locking/six.c",
         " * What they are for: a reader/writer lock whose writer side is split in two.",
         " * What they are for: a reader/writer lock whose write side is split in two.",
         "comment only, in the file's head comment (no line moves)", 3 * 60),
    Edit("six-code", "locking", "kernel/locking/six.c",
         "\tif (six_lock_seq(lock) != seq)",
         "\tif (unlikely(six_lock_seq(lock) != seq))",
         "code: a branch hint in six_relock_ip() (same behaviour, other object code)", 8 * 60),
    Edit("filemap", "mm", "mm/filemap.c",
         "\tif (!__pagecache_lock_tryget(lock, add))",
         "\tif (unlikely(!__pagecache_lock_tryget(lock, add)))",
         "code: a branch hint in __pagecache_lock_get() (same behaviour)", None),
    Edit("fs-h", "mm", "include/linux/fs.h",
         "static inline void pagecache_lock_set_class(struct pagecache_lock *lock,",
         "static __always_inline void pagecache_lock_set_class(struct pagecache_lock *lock,",
         "code: a static inline made __always_inline (same behaviour; every includer "
         "compiles again)", None),
)
BY_NAME = {e.name: e for e in EDITS}


# ------------------------------------------------------------ the patches

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    path: str                  # the b/ side
    header: str                # its @@ line
    start: int                 # index of its first body line in the patch's lines
    end: int                   # index past its last body line
    new_start: int             # the +c of its header


def hunks(text: str) -> list[Hunk]:
    """The hunks of a patch (a mail of git format-patch), each body read by
    its header's line counts; ValueError where a body does not match them."""
    lines = text.split("\n")
    out: list[Hunk] = []
    path = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            path = line.split(" b/", 1)[1] if " b/" in line else ""
        m = _HUNK.match(line) if path else None
        if not m:
            i += 1
            continue
        old = int(m[2]) if m[2] is not None else 1
        new = int(m[4]) if m[4] is not None else 1
        j = i + 1
        while old > 0 or new > 0:
            body = lines[j] if j < len(lines) else None
            if body is None or body[:1] not in (" ", "-", "+", "\\"):
                raise ValueError(f"{path}: hunk {line!r} ends after {j - i - 1} lines, "
                                 f"short of its counts")
            if body[:1] in (" ", "-"):
                old -= 1
            if body[:1] in (" ", "+"):
                new -= 1
            j += 1
        if j < len(lines) and lines[j].startswith("\\"):
            j += 1
        nxt = lines[j] if j < len(lines) else ""
        if not (nxt == "" or nxt.startswith(("@@ ", "diff --git ", "-- "))) or \
                (old, new) != (0, 0):
            raise ValueError(f"{path}: hunk {line!r} does not end where its counts say")
        out.append(Hunk(path, line, i + 1, j, int(m[3])))
        i = j
    return out


@dataclass
class Placed:
    """An edit found in a patch: the patch, the line's index in it (0-based)
    and its line number in the file after the patch."""
    edit: Edit
    patch: Path
    index: int
    line: int
    text: str = field(repr=False, default="")


def find(root: Path, e: Edit) -> Placed:
    """The one added line e.before of e.path among patches/<e.topic>/*.patch
    under root; SystemExit with one line when it is not there once."""
    hits = []
    for p in sorted((root / "patches" / e.topic).glob("*.patch")):
        text = p.read_text()
        lines = text.split("\n")
        for h in hunks(text):
            if h.path != e.path:
                continue
            n = h.new_start
            for k in range(h.start, h.end):
                if lines[k] == "+" + e.before:
                    hits.append(Placed(e, p, k, n, text))
                if lines[k][:1] in (" ", "+"):
                    n += 1
    if len(hits) != 1:
        where = f"patches/{e.topic}/*.patch"
        raise SystemExit(f"bench_editloop: edit {e.name}: the line {e.before.strip()!r} is "
                         + ("not" if not hits else f"{len(hits)} times") +
                         f" among the lines {where} adds to {e.path}; the patch changed "
                         f"since the bench was written: update EDITS in "
                         f"tools/bench/bench_editloop.py")
    return hits[0]


def edited(pl: Placed) -> str:
    """The patch's text with the edit made: that one line replaced."""
    lines = pl.text.split("\n")
    assert lines[pl.index] == "+" + pl.edit.before
    lines[pl.index] = "+" + pl.edit.after
    return "\n".join(lines)


def conflicts(root: Path, pl: Placed) -> list[str]:
    """The other patches (patches/, qemu/mutants/) that read the edited line
    of the file as context or remove it: they would no longer apply."""
    out = []
    for p in sorted([*(root / "patches").glob("*/*.patch"),
                     *(root / "qemu" / "mutants").glob("*/*.patch")]):
        if p == pl.patch:
            continue
        text = p.read_text()
        lines = text.split("\n")
        for h in hunks(text):
            if h.path == pl.edit.path and any(lines[k] in (" " + pl.edit.before,
                                                           "-" + pl.edit.before)
                                              for k in range(h.start, h.end)):
                out.append(str(p.relative_to(root)))
                break
    return out


def place_all(root: Path, edits: list[Edit]) -> list[Placed]:
    """Every edit found, checked: the edited patch parses into the same
    hunks, and no other patch or mutant reads the line.  SystemExit with
    one line otherwise, before anything runs."""
    out = []
    for e in edits:
        pl = find(root, e)
        before = [(h.path, h.header, h.end - h.start) for h in hunks(pl.text)]
        if [(h.path, h.header, h.end - h.start) for h in hunks(edited(pl))] != before:
            raise SystemExit(f"bench_editloop: edit {e.name}: the edited patch's hunks differ")
        clash = conflicts(root, pl)
        if clash:
            raise SystemExit(f"bench_editloop: edit {e.name}: {', '.join(clash)} read(s) the "
                             f"line {e.before.strip()!r} of {e.path}; choose another line")
        out.append(pl)
    return out


def selection(value: str) -> list[Edit]:
    """The edits named (comma-separated, "all"), in EDITS' order."""
    want = [w.strip() for w in (value or "all").split(",") if w.strip()]
    if want in ([], ["all"]):
        return list(EDITS)
    bad = [w for w in want if w not in BY_NAME]
    if bad:
        raise SystemExit(f"bench_editloop: no edit {', '.join(bad)} "
                         f"(known: {', '.join(BY_NAME)}, all)")
    return [e for e in EDITS if e.name in want]


# --------------------------------------------------------- what a run ran

def what_ran(report: dict, steps: list[dict]) -> dict:
    """From a main job's out/report.json and out/steps.json: how many
    kernels it built (and which), bisect and head builds, W=1/sparse
    passes, kbuild steps, boots, expectation boots, mutants run and from
    the cache, its KCSAN builds, and the branches or mutants that failed."""
    built = [s["branch"] for s in steps if s["stage"] == "build" and s.get("what") == "build"]
    expect = sum(int(m[1]) for s in steps if s["stage"] == "expect"
                 for m in [re.match(r"(\d+) expectation", s.get("what", ""))] if m)
    mutants = report.get("mutants", [])
    return {
        "builds": built,
        "bisect": sum(s["stage"] in ("bisect builds", "head build") for s in steps),
        "warnings": sum(s["stage"] == "warnings" for s in steps),
        "kbuild": sum(s.get("kbuild", 0) or 0 for s in steps),
        "boots": sum(s["stage"] == "boot+tests" for s in steps),
        "expect": expect,
        "mutants_run": sum(not m.get("cached") for m in mutants),
        "mutants_cached": sum(bool(m.get("cached")) for m in mutants),
        "kcsan": [b for b in built if b.endswith("+kcsan")],
        "failed": [b["branch"] for b in report.get("branches", [])
                   if any(s["status"] in ("fail", "crash") for s in b.get("stages", []))]
                  + [f"mutant {m['topic']}/{m['name']}" for m in mutants
                     if m.get("status") != "caught"],
    }


def warm(ran: dict) -> bool:
    """Nothing was built, booted or mutated: everything came from caches."""
    return not (ran["builds"] or ran["bisect"] or ran["warnings"] or ran["kbuild"]
                or ran["boots"] or ran["expect"] or ran["mutants_run"])


def ran_text(ran: dict) -> str:
    if warm(ran):
        text = f"nothing built or booted ({ran['mutants_cached']} mutants from the cache)"
    else:
        text = (f"{len(ran['builds'])} kernel build(s)"
                + (f" ({', '.join(ran['builds'])})" if ran["builds"] else "")
                + f", {ran['bisect']} bisect/head build(s), {ran['warnings']} W=1/sparse, "
                f"{ran['kbuild']} kbuild steps; {ran['boots']} boot(s) + {ran['expect']} "
                f"expectation; mutants {ran['mutants_run']} run, {ran['mutants_cached']} "
                f"from the cache; KCSAN build: {', '.join(ran['kcsan']) or 'none'}")
    if ran["failed"]:
        text += f"; FAILED: {', '.join(ran['failed'])}"
    return text


@dataclass
class Run:
    """One main job: its Measure, what it ran, whether it had to wait."""
    label: str
    m: object                          # bench_ci.Measure
    ran: dict
    waited: bool = False


def rows(baseline: Run, edits: list[tuple[Placed, Run, Run]], catch_up: Run | None = None):
    """The table: the baseline, then per edit its run (ratios to the
    baseline and to its target) and its revert (not counted)."""
    out = []
    if catch_up:
        out.append(("catch-up (the first run was not warm; not counted)",
                    f"{catch_up.m.text()}; ran: {ran_text(catch_up.ran)}"))
    out.append((f"warm baseline: nothing changed ({baseline.label})",
                f"{baseline.m.text()}; ran: {ran_text(baseline.ran)}"
                + ("; WAITED for the lock" if baseline.waited else "")))
    for pl, r, rev in edits:
        e = pl.edit
        ratio = f"{r.m.wall / baseline.m.wall:.1f}x the baseline" if baseline.m.wall else ""
        tgt = (f"{r.m.wall / e.target:.2f} of the target ({fmt_s(e.target)})"
               if e.target else "no target")
        out.append((f"{e.name}: {e.path} line {pl.line}",
                    f"{r.m.text()}; {ratio}; {tgt}; ran: {ran_text(r.ran)}"
                    + ("; WAITED for the lock: not a figure" if r.waited else "")))
        if rev is not None:
            out.append((f"  {e.name} reverted (not counted)",
                        f"{rev.m.text()}; ran: {ran_text(rev.ran)}"))
    return out


# ------------------------------------------------------------ the plan

def plan_text(placed: list[Placed], wd: Path, root: Path) -> list[str]:
    """--dry-run: what would be edited and run."""
    out = [f"work directory {wd} (the maintainer's: warm caches, ccache)",
           f"scratch copy of {REPO} (benchlib.scratch_checkout); ktopic runs from it",
           "each run: ktopic -w WD import-base; generate; status; ci --main-job -o OUT",
           "warm baseline: nothing changed (the median of -r runs; a first run that "
           "builds or boots anything is a catch-up, left out)"]
    for pl in placed:
        e = pl.edit
        out += [f"edit {e.name}: {e.what}",
                f"  {pl.patch.relative_to(root)} line {pl.index + 1}, "
                f"{e.path} line {pl.line}",
                f"  before: {e.before.expandtabs(8).strip()}",
                f"  after:  {e.after.expandtabs(8).strip()}",
                f"  target: {fmt_s(e.target) if e.target else 'none'}",
                "  run (the figure); revert the patch; run again (not counted)"]
    out.append(f"at the end, and on error: {REPO}/tools/bin/ktopic -w WD generate "
               f"(the unmodified checkout); refs {', '.join(BRANCH_REFS)} compared with before")
    return out


# ------------------------------------------------------------ running

def branch_refs(git_dir: Path) -> dict[str, str]:
    out = {}
    for line in _git(git_dir, "for-each-ref", "--format=%(refname) %(objectname)",
                     *BRANCH_REFS).splitlines():
        name, _, oid = line.partition(" ")
        out[name] = oid
    return out


def ref_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [f"{r}: {before.get(r, '(none)')[:12]} -> {after.get(r, '(none)')[:12]}"
            for r in sorted(set(before) | set(after)) if before.get(r) != after.get(r)]


def wait_for_lock(wd: Path) -> None:
    """Return when no ktopic run holds wd's lock, waiting as ktopic does
    (saying so): a run's figure must not include a wait."""
    from ktopic.model.workdir import Workdir
    with Workdir(wd).lock():
        pass                   # released: the run takes it


class Loop:
    """The runs of one bench, against work directory wd: ktopic (a command
    prefix) runs from the scratch copy, restore from the unmodified
    checkout; each run's out/ in tmp, the log in log."""

    def __init__(self, ktopic: list[str], restore: list[str], wd: Path, tmp: Path,
                 keep: Path | None = None):
        self.ktopic, self.restore, self.wd, self.tmp, self.keep = ktopic, restore, wd, tmp, keep
        self.log = tmp / "bench.log"
        self.n = 0

    def main_job(self, label: str) -> Run:
        self.n += 1
        out = self.tmp / f"out-{self.n:02d}-{label}"
        wait_for_lock(self.wd)
        start = self.log.stat().st_size if self.log.exists() else 0
        whole, _ = main_job(self.ktopic, [], out, self.log)
        with open(self.log, errors="replace") as f:
            f.seek(start)
            waited = LOCK_WAIT in f.read()
        ran = what_ran(json.loads((out / "report.json").read_text()),
                       json.loads((out / "steps.json").read_text()))
        if self.keep:
            shutil.copytree(out, self.keep / out.name, dirs_exist_ok=True)
            shutil.copyfile(self.log, self.keep / "bench.log")
        r = Run(label, whole, ran, waited)
        print(f"  [{label}] {whole.text()}; ran: {ran_text(ran)}", flush=True)
        return r

    def baseline(self, repeat: int) -> tuple[Run, Run | None]:
        """The median of `repeat` warm runs; a first run that was not warm
        is the catch-up, returned apart."""
        first = self.main_job("warm")
        catch_up = None if warm(first.ran) else first
        runs = [first] if catch_up is None else []
        if catch_up:
            print("  the first run was not warm (a catch-up); running it again", flush=True)
        while len(runs) < max(1, repeat):
            runs.append(self.main_job("warm"))
        runs.sort(key=lambda r: r.m.wall)
        base = runs[len(runs) // 2]
        base.label = f"median of {len(runs)}" if len(runs) > 1 else "one run"
        return base, catch_up

    def edit(self, pl: Placed) -> tuple[Run, Run]:
        """The edit made, the main job (the figure), the edit undone, the
        main job again (not counted)."""
        try:
            pl.patch.write_text(edited(pl))
            r = self.main_job(pl.edit.name)
        finally:
            pl.patch.write_text(pl.text)
        return r, self.main_job(f"{pl.edit.name}-reverted")

    def put_back(self, before: dict[str, str]) -> bool:
        """`ktopic generate` from the unmodified checkout; the branch refs
        compared with before: True when they are all back."""
        git_dir = self.wd / "linux.git"
        cmd = [*self.restore, "generate"]
        try:
            rc = _run(cmd, self.log)
        except KeyboardInterrupt:
            rc = 130
        changed = ref_changes(before, branch_refs(git_dir))
        if rc == 0 and not changed:
            print(f"  branches restored: {len(before)} refs as before the bench", flush=True)
            return True
        print("  " + "!" * 72, flush=True)
        print(f"  ERROR: the branches are NOT as before the bench (ktopic generate from "
              f"the checkout: exit {rc}; log {self.log})", flush=True)
        for c in changed:
            print(f"  ERROR:   {c}", flush=True)
        print(f"  ERROR: run `{' '.join(cmd)}` by hand; a ref above that generate does "
              f"not give back was not made from this checkout's patches", flush=True)
        print("  " + "!" * 72, flush=True)
        return False


def measure(loop: Loop, placed: list[Placed], repeat: int):
    """The baseline, then every edit, the branches put back in any case:
    (baseline, catch-up, [(placed, run, revert)], restored)."""
    git_dir = loop.wd / "linux.git"
    before = branch_refs(git_dir)
    results = []
    baseline = catch_up = None
    restored = False
    try:
        baseline, catch_up = loop.baseline(repeat)
        moved = ref_changes(before, branch_refs(git_dir))
        if moved:
            print(f"  note: the baseline's generate moved {len(moved)} ref(s): the branches "
                  f"were not generated from this checkout's patches", flush=True)
        for pl in placed:
            r, rev = loop.edit(pl)
            results.append((pl, r, rev))
    finally:
        restored = loop.put_back(before)
    return baseline, catch_up, results, restored


def _opts(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--edits", default=os.environ.get(ENV_EDITS, "all"),
                   help=f"comma-separated, of {', '.join(BY_NAME)} (default: all; "
                        f"make bench: ${ENV_EDITS})")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (edits, files, lines, commands); run nothing")
    p.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="copy every run's out/ and the log to DIR")
    p.add_argument("-r", "--repeat", type=int, default=None,
                   help="warm runs for the baseline (median)")
    return p.parse_args(argv or [])


def run(repeat: int = 1, argv: list[str] | None = None) -> bool:
    o = _opts(argv)
    from ktopic.model.workdir import Workdir
    wd = Workdir().root
    edits = selection(o.edits)
    if o.dry_run:
        for line in plan_text(place_all(REPO, edits), wd, REPO):
            print(f"  {line}")
        return True
    if not (wd / "linux.git").is_dir():
        raise SystemExit(f"bench_editloop: no work repository in {wd}: the edit loop is "
                         f"a warm loop, run `make` there first")
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="ktopic-bench-editloop-") as t:
        tmp = Path(t)
        root = scratch_checkout(tmp / "repo")
        placed = place_all(root, edits)
        print(f"  work directory {wd}; scratch copy {root}; log {tmp / 'bench.log'} "
              f"(removed at the end); {cores} cores; edits: "
              f"{', '.join(e.name for e in edits)}", flush=True)
        if o.keep:
            o.keep.mkdir(parents=True, exist_ok=True)
        loop = Loop(["/usr/bin/python3", str(root / "tools/bin/ktopic"), "-w", str(wd),
                     "-m", str(root / "branches.yaml")],
                    ["/usr/bin/python3", str(REPO / "tools/bin/ktopic"), "-w", str(wd)],
                    wd, tmp, o.keep)
        t0 = time.monotonic()
        baseline, catch_up, results, restored = measure(
            loop, placed, o.repeat if o.repeat is not None else repeat)
    table(rows(baseline, results, catch_up))
    ok = True
    for pl, r, _ in results:
        e = pl.edit
        if e.target:
            ok &= verdict(e.name, r.m.wall <= e.target and not r.waited,
                          f"{fmt_s(r.m.wall)} (target <= {fmt_s(e.target)}; CPU / {cores} = "
                          f"{fmt_s(r.m.cpu / cores)}; load {r.m.loadtext()})")
        ok &= verdict(f"{e.name} passes", r.m.ok and not r.ran["failed"],
                      "every branch and mutant" if r.m.ok and not r.ran["failed"] else
                      f"the edit is not behaviour-neutral: {', '.join(r.ran['failed'])}")
    ok &= verdict("branches restored", restored, "as before the bench" if restored
                  else "NOT as before: see the ERROR lines above")
    print(f"  the whole bench: {fmt_s(time.monotonic() - t0)}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if run(1, sys.argv[1:]) else 1)
