"""ktopic generate (all topics) against the loop a maintainer would script

The loop is `git checkout -B topic start && git am patches/topic/*` per
topic (and for the integration branch) in an existing checkout of the
tree; the checkout itself is not counted.  ktopic is measured with every
patch applied again (empty stack cache; the base index kept, as the loop
keeps its checkout), with no cache at all, and as a no-op.
Targets: at least 10x faster than checkout+am; a no-op under 1 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchlib import KTOPIC, REPO, scratch_workdir, sh, table, timed, verdict

sys.path.insert(0, str(REPO / "tools"))
from ktopic import manifest  # noqa: E402


def run(repeat: int) -> bool:
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
    npatches = sum(len(t.patches) for t in m.topics.values())
    table([("topics / patches", f"{len(m.topics)} / {npatches} (+ integration)"),
           ("checkout+am loop", f"{am:.2f} s (plus {checkout_s:.1f} s for the first checkout)"),
           ("ktopic generate, every patch applied", f"{cold:.2f} s"),
           ("  the same with no index cache either", f"{first:.2f} s"),
           ("ktopic generate, no-op", f"{noop:.2f} s"),
           ("ratio loop / generate", f"{am / cold:.1f}x")])
    ok = verdict("generate vs checkout+am", am / cold >= 10, f"{am / cold:.1f}x (target >= 10x)")
    return verdict("no-op", noop < 1.0, f"{noop:.2f} s (target < 1 s)") and ok
