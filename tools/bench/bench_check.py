"""ktopic check (checkpatch + hygiene + recipients, every topic): cold and cached

Cold: nothing cached (the minimal tree is extracted from the base commit,
every patch goes through checkpatch.pl with codespell and get_maintainer.pl);
cold verdicts: the extracted tree kept, every verdict made again; cached: a
second run with nothing changed.  The work directory is a shared clone of
the default one, so its caches start empty.  Target: cached under 2 s.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from benchlib import KTOPIC, REPO, scratch_workdir, table, timed, verdict

sys.path.insert(0, str(REPO / "tools"))
from ktopic import manifest  # noqa: E402


def run(repeat: int) -> bool:
    m = manifest.load(REPO / "branches.yaml")
    with scratch_workdir("ktopic-bench-check-") as (tmp, wd):
        cmd = [*KTOPIC, "-w", str(wd), "check"]

        def check():
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if p.returncode not in (0, 1):           # 1: a gate failed, still measured
                raise SystemExit(f"ktopic check failed: {p.stderr}")

        def forget_all():
            shutil.rmtree(wd / "cache" / "check", ignore_errors=True)

        def forget_verdicts():
            for sub in ("checkpatch", "maintainers"):
                shutil.rmtree(wd / "cache" / "check" / sub, ignore_errors=True)
        # Cold runs cost seconds of CPU per patch: once each.
        cold = timed(check, 1, before=forget_all)
        cold_verdicts = timed(check, 1, before=forget_verdicts)
        cached = timed(check, repeat)
    npatches = sum(len(t.patches) for t in m.topics.values())
    table([("topics / patches", f"{len(m.topics)} / {npatches}"),
           ("cold (tree extracted, every verdict made)", f"{cold:.2f} s"),
           ("cold verdicts (tree kept)", f"{cold_verdicts:.2f} s"),
           ("cached (nothing changed)", f"{cached:.2f} s"),
           ("ratio cold / cached", f"{cold / cached:.1f}x")])
    return verdict("cached check", cached < 2.0, f"{cached:.2f} s (target < 2 s)")
