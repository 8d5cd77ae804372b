"""ktopic generate (all topics) against the loop a maintainer would script

The loop is `git checkout -B topic start && git am patches/topic/*` per
topic (and for the integration branch) in an existing checkout of the
tree; the checkout itself is not counted.  ktopic is measured with every
patch applied again (empty stack cache; the base index kept, as the loop
keeps its checkout), with no cache at all, and as a no-op.
Targets: at least 10x faster than checkout+am; a no-op under 1 s.
The machine is shared: the load average is printed, and the CPU time of
each contender (user + system, its processes included) beside its wall
time, which load distorts more.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib import KTOPIC, REPO, scratch_workdir, sh, table, verdict

sys.path.insert(0, str(REPO / "tools"))
from ktopic.model import manifest  # noqa: E402


def timed(fn, repeat: int, before=None) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of fn() over repeat runs (before()
    untimed); CPU is that of the child processes fn() ran."""
    walls, cpus = [], []
    for _ in range(repeat):
        if before:
            before()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def fmt(t: tuple[float, float]) -> str:
    return f"{t[0]:.2f} s (CPU {t[1]:.2f} s)"


def run(repeat: int) -> bool:
    load0 = os.getloadavg()
    m = manifest.load(REPO / "branches.yaml")
    with scratch_workdir("ktopic-bench-") as (tmp, wd):
        gen = [*KTOPIC, "-w", str(wd), "generate"]

        def forget_patches():
            (wd / "stack-cache.json").unlink(missing_ok=True)

        def forget_all():
            forget_patches()
            shutil.rmtree(wd / "index-cache", ignore_errors=True)
        generate = lambda: subprocess.run(gen, check=True, stdout=subprocess.DEVNULL)  # noqa: E731
        first = timed(generate, repeat, before=forget_all)
        cold = timed(generate, repeat, before=forget_patches)
        noop = timed(lambda: subprocess.run(gen, check=True, stdout=subprocess.DEVNULL), repeat)

        checkout = Path(tmp, "checkout")
        t0 = time.perf_counter()
        sh("git", "--git-dir", str(wd / "linux.git"), "worktree", "add", "-q", "--detach",
           str(checkout), "base")
        checkout_s = time.perf_counter() - t0
        env = dict(os.environ, GIT_COMMITTER_NAME="Maintainer", GIT_COMMITTER_EMAIL="m@example.org")

        def am_loop():
            for name in m.order:
                start = "base" if not m.topics[name].depends else f"bench/{m.topics[name].depends[-1]}"
                sh("git", "checkout", "-q", "-B", f"bench/{name}", start, cwd=checkout)
                files = [str(p.path) for p in m.topics[name].patches]
                if files:
                    sh("git", "am", "-q", *files, cwd=checkout, env=env)
            sh("git", "checkout", "-q", "-B", "bench/integration", "base", cwd=checkout)
            files = [str(p.path) for n in m.integration.topics for p in m.topics[n].patches]
            if files:
                sh("git", "am", "-q", *files, cwd=checkout, env=env)
        am = timed(am_loop, repeat)
    load1 = os.getloadavg()
    npatches = sum(len(t.patches) for t in m.topics.values())
    ratio, cpu_ratio = am[0] / cold[0], am[1] / cold[1]
    table([("topics / patches", f"{len(m.topics)} / {npatches} (+ integration)"),
           ("load average (1, 5, 15 min)", " -> ".join(", ".join(f"{x:.1f}" for x in la)
                                                        for la in (load0, load1))),
           ("checkout+am loop", f"{fmt(am)} (plus {checkout_s:.1f} s for the first checkout)"),
           ("ktopic generate, every patch applied", fmt(cold)),
           ("  the same with no index cache either", fmt(first)),
           ("ktopic generate, no-op", fmt(noop)),
           ("ratio loop / generate", f"{ratio:.1f}x (CPU {cpu_ratio:.1f}x)")])
    ok = verdict("generate vs checkout+am", ratio >= 10, f"{ratio:.1f}x (target >= 10x)")
    return verdict("no-op", noop[0] < 1.0, f"{noop[0]:.2f} s (target < 1 s)") and ok
