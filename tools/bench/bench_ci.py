"""ktopic ci (every topic + integration) against a naive kunit.py loop

Both sides test the same branches: every topic and the integration branch
(`ktopic generate` makes them; generating is timed on the ktopic side only).

ktopic side: what the main job runs, `ktopic generate` then `ktopic ci`
(patch gates, builds with ccache in O= directories seeded from the base's,
QEMU boots under TCG, KUnit suites, test modules and programs, the result
cache).  It runs in a scratch work directory (benchlib.scratch_workdir: a
shared clone of the repository of $KTOPIC_WORKDIR, or ~/.cache/ktopic),
so the user's build directories, ccache and results are never touched and
the cold case really starts EMPTY: no ccache (CCACHE_DIR is the scratch
directory's), no build directory, no cached result, no KVM probe answer.

Naive side: the loop a maintainer would script without ktopic.  One
checkout of the tree (made before timing, as in bench_generate); per
branch `git checkout` of it, then

    tools/testing/kunit/kunit.py run --arch=x86_64 --jobs=NPROC \
        --build_dir=<a fresh, empty directory> --kunitconfig=<branch's>

kunit.py builds an x86_64 kernel from olddefconfig and boots it in
qemu-system-x86_64 (TCG: KVM does not work on the project machine, and
kunit.py does not ask for it), and parses the KTAP.  No ccache (kunit.py
does not use one unless told with --make_options).  The kunitconfig is
what a maintainer would write for the topic: CONFIG_KUNIT=y plus every
`=y` line of the topic's fragment and of its dependencies' (the options
that turn its KUnit suites on); for the integration branch, every topic's;
a topic without a fragment gets CONFIG_KUNIT_EXAMPLE_TEST=y (a smoke
test).  That covers fewer tests than ktopic: kunit.py runs only built-in
suites, not the out-of-tree test modules (mm, fs) nor the test programs
(locktorture_six, fs_tmpfile), and its kernel has no SMP nor lockdep.

The naive loop keeps no state between runs (fresh build directory, no
ccache), so its warm and one-patch costs are the same work as its cold
loop: they are taken from the cold loop's per-branch figures (warm: every
branch again; one patch: the changed topic and the integration branch),
not measured a second time.

Cases: cold (both sides), warm (nothing changed), one patch changed (a
comment line added near the top of lib/closure.c in the last closures
patch, in a scratch COPY of this repository, exported with `ktopic
export`; then generate + ci), and boot + tests per branch (the boot and
test stage seconds of the cold run's report.json).
Targets: cold ktopic ci <= 35 min on 2 cores; warm <= 15 s; one patch
<= 4 min; boot + tests <= 20 s per branch.

A complete cold naive loop builds 6 kernels from scratch (hours of wall
time on a loaded 2-core machine).  KTOPIC_BENCH_CI_NAIVE=closures,for-next
(topic or branch names, or "integration") runs the naive loop on those
branches only; the table then says which were measured and gives the full
loop as an ESTIMATE (measured mean per branch x number of branches; the
kernels are of similar size).  KTOPIC_BENCH_CI_NAIVE=none skips it.  The
default is the complete loop.

Every figure comes with its wall time, the CPU time (user+sys of all
child processes) and the 1-minute load average (start / mean / max during
the measurement): the machine is shared, and CPU / cores is an estimate of
the wall time on an idle machine.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import REPO, scratch_checkout, scratch_workdir, table, verdict

sys.path.insert(0, str(REPO / "tools"))
from ktopic.model import manifest  # noqa: E402

ENV_NAIVE = "KTOPIC_BENCH_CI_NAIVE"
COLD_TARGET = 35 * 60
WARM_TARGET = 15.0
PATCH_TARGET = 4 * 60
BOOT_TARGET = 20.0
PATCH_TOPIC = "closures"
PATCH_FILE = "lib/closure.c"
PATCH_LINE = "/* bench_ci: one comment line, to change one patch of the topic */"
INTERRUPT_GRACE = 30.0      # seconds a command may take to stop after Ctrl-C


# ------------------------------------------------------------ pure helpers

@dataclass
class Branch:
    """One branch as both sides see it."""
    name: str                         # topic name or "integration"
    branch: str                       # git branch
    kunitconfig: list[str] = field(default_factory=list)


def kunitconfig_lines(fragments: list[Path | str]) -> list[str]:
    """CONFIG_KUNIT=y plus each fragment's `=y` lines, in order, once each.
    `=m` lines are dropped (kunit.py runs only built-in suites), and so are
    comments and `is not set` lines."""
    out = ["CONFIG_KUNIT=y"]
    for f in fragments:
        for line in Path(f).read_text().splitlines():
            line = line.strip()
            if re.fullmatch(r"CONFIG_[A-Za-z0-9_]+=y", line) and line not in out:
                out.append(line)
    if len(out) == 1:
        out.append("CONFIG_KUNIT_EXAMPLE_TEST=y")
    return out


def branches_of(m) -> list[Branch]:
    """Every topic in dependency order, then the integration branch."""
    out = []
    for name in m.order:
        t = m.topics[name]
        chain = [m.topics[d] for d in m.closure(name)] + [t]
        out.append(Branch(name, t.branch, kunitconfig_lines([c.config for c in chain if c.config])))
    ts = [m.topics[n] for n in m.integration.topics]
    out.append(Branch("integration", m.integration.branch,
                      kunitconfig_lines([t.config for t in ts if t.config])))
    return out


def naive_selection(value: str | None, branches: list[Branch]) -> list[Branch]:
    """The branches the naive loop runs: all of them unless the environment
    names some (topic or branch names, "integration"; "none": no loop)."""
    if value is None or not value.strip() or value.strip() == "all":
        return list(branches)
    if value.strip() == "none":
        return []
    want = [w.strip() for w in value.split(",") if w.strip()]
    out = []
    for w in want:
        hit = [b for b in branches if w in (b.name, b.branch)]
        if not hit:
            raise SystemExit(f"{ENV_NAIVE}: no topic or branch {w!r} "
                             f"(known: {', '.join(b.name for b in branches)})")
        out.extend(h for h in hit if h not in out)
    return [b for b in branches if b in out]


_ELAPSED = re.compile(r"Elapsed time: ([\d.]+)s total, ([\d.]+)s configuring, "
                      r"([\d.]+)s building, ([\d.]+)s running")
_RAN = re.compile(r"Testing complete\. Ran (\d+) tests?: (.*)")


def parse_kunit_output(text: str) -> dict:
    """kunit.py run's summary: phase seconds and the test count line."""
    out: dict = {}
    m = _ELAPSED.search(text)
    if m:
        out.update(total=float(m[1]), configure=float(m[2]), build=float(m[3]),
                   run=float(m[4]))
    m = _RAN.search(re.sub(r"\x1b\[[0-9;]*m", "", text))
    if m:
        out.update(tests=int(m[1]), summary=m[2].strip())
    return out


def boot_test_times(report: dict) -> list[tuple[str, float, float, str]]:
    """(branch, boot s, test s, note) for every branch the run really booted:
    not the ones that share another branch's result (same_as) or came from
    the cache."""
    out = []
    for b in report.get("branches", []):
        st = {s["stage"]: s for s in b.get("stages", [])}
        boot, test = st.get("boot"), st.get("test")
        if b.get("same_as") or not boot or boot["status"] in ("skip", "cached"):
            continue
        out.append((b["branch"], float(boot["seconds"]), float(test["seconds"]) if test else 0.0,
                    boot["status"]))
    return out


def add_comment_line(text: str, line: str = PATCH_LINE) -> str:
    """The file with `line` inserted after its first line (a comment that
    shifts every later line, so the object changes too: __LINE__ in WARN)."""
    first, nl, rest = text.partition("\n")
    return f"{first}\n{line}\n{rest}" if nl else f"{text}\n{line}\n"


def fmt_s(s: float) -> str:
    if s >= 120:
        return f"{int(s // 60)} min {s % 60:02.0f} s"
    return f"{s:.1f} s"


# ------------------------------------------------------------- measuring

@dataclass
class Measure:
    wall: float = 0.0
    cpu: float = 0.0                  # user+sys of the children, seconds
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)   # 1-min load: start, mean, max
    ok: bool = True
    note: str = ""

    def text(self) -> str:
        cores = os.cpu_count() or 1
        return (f"{fmt_s(self.wall)} wall, CPU {fmt_s(self.cpu)} "
                f"(/ {cores} cores = {fmt_s(self.cpu / cores)}), load {self.loadtext()}"
                + ("" if self.ok else " FAILED") + (f"; {self.note}" if self.note else ""))

    def loadtext(self) -> str:
        return f"{self.load[0]:.1f}/{self.load[1]:.1f}/{self.load[2]:.1f}"


class meter:
    """with meter() as m: ...  wall, children's CPU and the load during it."""

    def __enter__(self) -> Measure:
        self.m = Measure()
        self.samples = [os.getloadavg()[0]]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu0 = r.ru_utime + r.ru_stime
        self.t0 = time.perf_counter()
        return self.m

    def _sample(self) -> None:
        while not self.stop.wait(5.0):
            self.samples.append(os.getloadavg()[0])

    def __exit__(self, *exc) -> bool:
        self.m.wall = time.perf_counter() - self.t0
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.m.cpu = r.ru_utime + r.ru_stime - self.cpu0
        self.stop.set()
        self.thread.join()
        self.samples.append(os.getloadavg()[0])
        self.m.load = (self.samples[0], statistics.mean(self.samples), max(self.samples))
        return False


def _run(cmd: list[str], log: Path, **kw) -> int:
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, **kw)
        try:
            return p.wait()
        except KeyboardInterrupt:
            # Ctrl-C reached the command too (one process group): let it
            # stop its QEMU and drop its temporary refs before the bench
            # cleans up (subprocess.run would kill it after 0.25 s).
            for sig in (None, signal.SIGINT, signal.SIGKILL):
                if sig:
                    p.send_signal(sig)
                try:
                    p.wait(timeout=INTERRUPT_GRACE)
                    break
                except subprocess.TimeoutExpired:
                    pass
            raise


def _git(git_dir: Path, *args: str, **kw) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True, text=True, **kw).stdout


# ------------------------------------------------------------- the sides

def ktopic_run(ktopic: list[str], out: Path, log: Path) -> Measure:
    """generate + ci, timed together (what the main job runs after import-base)."""
    with meter() as m:
        rc = _run([*ktopic, "generate"], log)
        if rc == 0:
            rc = _run([*ktopic, "ci", "-o", str(out)], log)
    m.ok = rc == 0
    if rc not in (0, 1):
        raise SystemExit(f"ktopic failed (exit {rc}); see {log}:\n"
                         + "".join(log.read_text().splitlines(True)[-20:]))
    return m


def naive_loop(branches: list[Branch], git_dir: Path, tmp: Path, log: Path) -> dict[str, Measure]:
    checkout = tmp / "naive-src"
    _git(git_dir, "worktree", "add", "-q", "--detach", str(checkout), "base")
    jobs = os.cpu_count() or 1
    out = {}
    for b in branches:
        kc = tmp / f"naive-{b.name}.kunitconfig"
        kc.write_text("\n".join(b.kunitconfig) + "\n")
        bdir = tmp / "naive-build"
        shutil.rmtree(bdir, ignore_errors=True)
        start = log.stat().st_size if log.exists() else 0
        with meter() as m:
            rc = _run(["git", "-C", str(checkout), "checkout", "-q", "--detach", b.branch], log)
            if rc == 0:
                rc = _run(["/usr/bin/python3", "tools/testing/kunit/kunit.py", "run",
                           "--arch=x86_64", f"--jobs={jobs}", f"--build_dir={bdir}",
                           f"--kunitconfig={kc}"], log, cwd=checkout)
        with open(log, errors="replace") as f:
            f.seek(start)
            text = f.read()
        k = parse_kunit_output(text)
        if rc:
            print("".join(f"    | {x}\n" for x in text.splitlines()[-15:]), end="")
        m.ok = rc == 0
        m.note = (f"kunit.py: {k.get('tests', '?')} tests ({k.get('summary', 'no summary')}); "
                  f"configure {k.get('configure', 0):.0f} s, build {k.get('build', 0):.0f} s, "
                  f"run {k.get('run', 0):.1f} s")
        out[b.name] = m
        shutil.rmtree(bdir, ignore_errors=True)
        print(f"  [naive {b.name}] {m.text()}", flush=True)
    _git(git_dir, "worktree", "remove", "--force", str(checkout))
    return out


def change_one_patch(ktopic: list[str], git_dir: Path, topic_branch: str, log: Path) -> None:
    """Amend the topic's last commit with one comment line and export it
    (in the scratch copy's patches/): a maintainer's edit, untimed."""
    tip = _git(git_dir, "rev-parse", topic_branch).strip()
    text = _git(git_dir, "show", f"{tip}:{PATCH_FILE}")
    blob = _git(git_dir, "hash-object", "-w", "--stdin", input=add_comment_line(text)).strip()
    idx = git_dir / "bench-ci-index"
    env = dict(os.environ, GIT_INDEX_FILE=str(idx))
    try:
        _git(git_dir, "read-tree", tip, env=env)
        _git(git_dir, "update-index", "--cacheinfo", f"100644,{blob},{PATCH_FILE}", env=env)
        tree = _git(git_dir, "write-tree", env=env).strip()
    finally:
        idx.unlink(missing_ok=True)
    an, ae, ad, cn, ce, cd = _git(git_dir, "log", "-1", "--format=%an%n%ae%n%ad%n%cn%n%ce%n%cd",
                                  tip).splitlines()
    msg = _git(git_dir, "log", "-1", "--format=%B", tip)
    env = dict(os.environ, GIT_AUTHOR_NAME=an, GIT_AUTHOR_EMAIL=ae, GIT_AUTHOR_DATE=ad,
               GIT_COMMITTER_NAME=cn, GIT_COMMITTER_EMAIL=ce, GIT_COMMITTER_DATE=cd)
    new = _git(git_dir, "commit-tree", tree, "-p", f"{tip}^", input=msg, env=env).strip()
    _git(git_dir, "update-ref", f"refs/heads/{topic_branch}", new, tip)
    if _run([*ktopic, "export", PATCH_TOPIC], log):
        raise SystemExit(f"ktopic export {PATCH_TOPIC} failed; see {log}")


# ------------------------------------------------------------------- run

def run(repeat: int) -> bool:
    m = manifest.load(REPO / "branches.yaml")
    branches = branches_of(m)
    naive = naive_selection(os.environ.get(ENV_NAIVE), branches)
    subset = len(naive) != len(branches)
    print(f"  naive loop over: {', '.join(b.name for b in naive) or 'nothing'}"
          + (f" (subset, from {ENV_NAIVE})" if subset else " (complete)"), flush=True)
    with scratch_workdir("ktopic-bench-ci-") as (tmp, wd):
        log = tmp / "bench.log"
        print(f"  scratch work directory {wd}; log {log} (removed at the end)", flush=True)
        ktopic = ["/usr/bin/python3", str(REPO / "tools/bin/ktopic"), "-w", str(wd)]
        # Cold: nothing in the scratch directory but the repository.
        assert not (wd / "ccache").exists() and not (wd / "build").exists()
        cold = ktopic_run(ktopic, tmp / "out", log)
        print(f"  [ktopic cold] {cold.text()}", flush=True)
        report = json.loads((tmp / "out" / "report.json").read_text())
        boots = boot_test_times(report)
        failed = [b["branch"] for b in report["branches"]
                  if any(s["status"] == "fail" for s in b["stages"])]
        warm_runs = []
        for _ in range(max(1, repeat)):
            warm_runs.append(ktopic_run(ktopic, tmp / "out", log))
        warm = sorted(warm_runs, key=lambda x: x.wall)[len(warm_runs) // 2]
        print(f"  [ktopic warm] {warm.text()}", flush=True)

        # One patch changed, in a copy of this repository.
        repo2 = tmp / "repo"
        scratch_checkout(repo2)
        ktopic2 = ["/usr/bin/python3", str(repo2 / "tools/bin/ktopic"), "-w", str(wd),
                   "-m", str(repo2 / "branches.yaml")]
        change_one_patch(ktopic2, wd / "linux.git", m.topics[PATCH_TOPIC].branch, log)
        patch = ktopic_run(ktopic2, tmp / "out2", log)
        report2 = json.loads((tmp / "out2" / "report.json").read_text())
        rebuilt = [b["branch"] for b in report2["branches"]
                   if any(s["stage"] == "build" and s["status"] not in ("cached",)
                          for s in b["stages"]) and not b.get("same_as")]
        patch.note = f"rebuilt and booted: {', '.join(rebuilt) or 'nothing'}"
        print(f"  [ktopic one patch] {patch.text()}", flush=True)

        # ktopic's figures and verdicts first: the naive loop takes long.
        cores = os.cpu_count() or 1
        rows = [("branches", f"{len(branches)}: {', '.join(b.name for b in branches)} "
                             f"(ktopic also boots the base, for reference)"),
                ("cores", str(cores)),
                ("ktopic cold: generate + ci, empty ccache and caches", cold.text()),
                (f"ktopic warm: nothing changed (median of {len(warm_runs)})", warm.text()),
                (f"ktopic one {PATCH_TOPIC} patch changed", patch.text())]
        for br, bs, ts, st in boots:
            rows.append((f"ktopic boot + tests {br}", f"{bs + ts:.1f} s (boot {bs:.1f}, "
                                                      f"KTAP {ts:.2f}) {st}"))
        if failed:
            rows.append(("ktopic branches that failed (cold run)", ", ".join(failed)))
        table(rows)
        ok = verdict("cold ktopic ci", cold.wall <= COLD_TARGET,
                     f"{fmt_s(cold.wall)} (target <= 35 min; CPU / {cores} = "
                     f"{fmt_s(cold.cpu / cores)}; load {cold.loadtext()})")
        ok &= verdict("warm ktopic ci", warm.wall <= WARM_TARGET,
                      f"{fmt_s(warm.wall)} (target <= 15 s; load {warm.loadtext()})")
        ok &= verdict("one patch changed", patch.wall <= PATCH_TARGET,
                      f"{fmt_s(patch.wall)} (target <= 4 min; load {patch.loadtext()})")
        for br, bs, ts, _ in boots:
            ok &= verdict(f"boot + tests {br}", bs + ts <= BOOT_TARGET,
                          f"{bs + ts:.1f} s (target <= 20 s, TCG)")
        ok &= verdict("every ktopic branch passed", not failed and cold.ok,
                      ", ".join(failed) or "all passed")
        sys.stdout.flush()

        naive_m = naive_loop(naive, wd / "linux.git", tmp, log) if naive else {}
    if not naive_m:
        return ok

    # ------------------------------------------------- naive side, compared
    wall = sum(x.wall for x in naive_m.values())
    cpu = sum(x.cpu for x in naive_m.values())
    loads = [x.load for x in naive_m.values()]
    lt = f"load {min(x[0] for x in loads):.1f}..{max(x[2] for x in loads):.1f}"
    rows = [(f"naive kunit.py {name}", nm.text()) for name, nm in naive_m.items()]
    if subset:
        k = len(branches) / len(naive_m)
        est = wall * k
        rows.append(("naive loop, measured subset",
                     f"{fmt_s(wall)} wall, CPU {fmt_s(cpu)}, {lt} "
                     f"({len(naive_m)} of {len(branches)} branches)"))
        rows.append(("naive loop, all branches: ESTIMATE",
                     f"{fmt_s(est)} wall, CPU {fmt_s(cpu * k)} (mean per branch x "
                     f"{len(branches)})"))
    else:
        est = wall
        rows.append(("naive loop, all branches", f"{fmt_s(wall)} wall, CPU {fmt_s(cpu)}, {lt}"))
    rows.append(("naive warm (no state kept: the whole loop again)",
                 f"{fmt_s(est)}{' (estimate)' if subset else ''}"))
    pt = [n for n in (PATCH_TOPIC, "integration") if n in naive_m]
    if pt:
        rows.append((f"naive one patch ({' + '.join(pt)} again)",
                     fmt_s(sum(naive_m[n].wall for n in pt))
                     + ("" if len(pt) == 2 else " (integration not measured)")))
    rows.append(("ratio naive / ktopic, cold", f"{est / cold.wall:.1f}x"
                 + (" (estimated naive)" if subset else "")))
    rows.append(("ratio naive / ktopic, cold, CPU time",
                 f"{cpu * len(branches) / len(naive_m) / cold.cpu:.1f}x"
                 + (" (estimated naive)" if subset else "")))
    rows.append(("ratio naive / ktopic, warm", f"{est / warm.wall:.0f}x"))
    if len(pt) == 2:
        rows.append(("ratio naive / ktopic, one patch",
                     f"{sum(naive_m[n].wall for n in pt) / patch.wall:.1f}x"))
    table(rows)
    verdict("naive kunit.py runs passed", all(x.ok for x in naive_m.values()),
            ", ".join(n for n, x in naive_m.items() if not x.ok) or "all passed")
    return ok
