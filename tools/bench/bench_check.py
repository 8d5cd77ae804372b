"""ktopic check, every topic: the style gate, and the whole gate with --bisect --warnings, cold and cached

The style gate (checkpatch + hygiene + recipients).  Cold: nothing cached
(the minimal tree is extracted from the base commit, every patch goes
through checkpatch.pl with codespell and get_maintainer.pl); cold
verdicts: the extracted tree kept, every verdict made again; cached: a
second run with nothing changed.

The whole gate, `check --bisect --warnings` (what `make` runs before
`ktopic ci`).  Cold: nothing cached, every topic walked (each commit built,
W=1 + sparse at its start and head) in build directories seeded from the
base's build (built once in the scratch directory first, untimed), through
the shared ccache: minutes per topic on a loaded machine.  Cached: a second run with nothing changed (the gate cache
answers every topic).  Skipped, saying so, without a base build in the
work directory (`ktopic build base`).

The work directory is a shared clone of the default one ($KTOPIC_WORKDIR
or ~/.cache/ktopic), so its caches start empty; its branches are generated
from the manifest first.  Targets: both cached runs under 2 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from benchlib import KTOPIC, REPO, scratch_workdir, table, timed, verdict

sys.path.insert(0, str(REPO / "tools"))
from ktopic.model import manifest  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def run(repeat: int) -> bool:
    m = manifest.load(REPO / "branches.yaml")
    main_wd = Workdir()
    with scratch_workdir("ktopic-bench-check-") as (tmp, wd):
        base_cmd = [*KTOPIC, "-w", str(wd), "check"]

        def runner(*extra: str):
            def go():
                p = subprocess.run([*base_cmd, *extra], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
                if p.returncode not in (0, 1):       # 1: a gate failed, still measured
                    raise SystemExit(f"ktopic check {' '.join(extra)} failed: {p.stderr}")
            return go
        check = runner()
        gate = runner("--bisect", "--warnings")

        def forget_all():
            shutil.rmtree(wd / "cache" / "check", ignore_errors=True)

        def forget_verdicts():
            for sub in ("checkpatch", "maintainers"):
                shutil.rmtree(wd / "cache" / "check" / sub, ignore_errors=True)

        def forget_builds():
            forget_all()
            for d in (wd / "build").glob("*"):
                if d.name != "base":
                    shutil.rmtree(d)
        # Cold runs cost seconds of CPU per patch: once each.
        loads = {}
        cold = timed(check, 1, before=forget_all)
        loads["cold"] = _load()
        cold_verdicts = timed(check, 1, before=forget_verdicts)
        loads["cold_verdicts"] = _load()
        cached = timed(check, repeat)
        loads["cached"] = _load()

        seed = main_wd.root / "build" / "base"
        gates = (seed / "arch/x86/boot/bzImage").is_file()
        if gates:
            subprocess.run([*KTOPIC, "-w", str(wd), "generate"], check=True,
                           stdout=subprocess.DEVNULL)
            (wd / "build").mkdir(exist_ok=True)
            subprocess.run(["cp", "-a", str(seed), str(wd / "build" / "base")], check=True)
            if (main_wd.root / "ccache").exists():
                os.symlink((main_wd.root / "ccache").resolve(), wd / "ccache")
            # The new worktree's files are newer than the copied objects: one
            # build of the base (from ccache, untimed) makes them older, as in
            # a work directory that has run `ktopic ci` once, so that a topic's
            # build directory seeded from it recompiles only what it changes.
            subprocess.run([*KTOPIC, "-w", str(wd), "build", "base"], check=True,
                           stdout=subprocess.DEVNULL)
            # Walks cost minutes per topic: once.
            gate_cold = timed(gate, 1, before=forget_builds)
            loads["gate_cold"] = _load()
            gate_cached = timed(gate, repeat)
            loads["gate_cached"] = _load()
    npatches = sum(len(t.patches) for t in m.topics.values())

    def side(c: float, k: float, lc: str, lk: str) -> str:
        return f"cold {c:8.2f} s ({lc})  |  cached {k:5.2f} s ({lk})  |  {c / k:.0f}x"
    rows = [("topics / patches", f"{len(m.topics)} / {npatches}"),
            ("check (style)",
             side(cold, cached, loads["cold"], loads["cached"])),
            ("check (style), cold verdicts, tree kept", f"{cold_verdicts:.2f} s "
             f"({loads['cold_verdicts']})")]
    if gates:
        rows.append(("check --bisect --warnings (whole gate)",
                     side(gate_cold, gate_cached, loads["gate_cold"], loads["gate_cached"])))
    else:
        rows.append(("check --bisect --warnings (whole gate)",
                     f"skipped: no base build at {seed} (ktopic build base)"))
    table(rows)
    ok = verdict("cached check", cached < 2.0, f"{cached:.2f} s (target < 2 s)")
    if gates:
        ok = verdict("cached check --bisect --warnings", gate_cached < 2.0,
                     f"{gate_cached:.2f} s (target < 2 s)") and ok
    return ok
