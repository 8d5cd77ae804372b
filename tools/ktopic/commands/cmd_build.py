"""ktopic build: build branches' kernels and test modules only.

Takes branch names and the build options; gives each branch's build result,
printed.
"""

from __future__ import annotations

from pathlib import Path

from ktopic.commands import common
from ktopic.model.results import PASS
from ktopic.model.targets import BASE, select, targets_from_manifest
from ktopic.runner.options import Options
from ktopic.runner.runner import Runner


def run_build(args) -> int:
    """ktopic build BRANCH|--all: build only, with a progress bar."""
    m = common.load_manifest(args)
    wd = common.workdir_of(args)
    names = common.branch_names(args)
    variant = common.variant_of(args)
    targets = targets_from_manifest(m, Path(m.root) / "qemu", variant)
    targets = [t for t in select(targets, names) if names or t.topic != BASE]
    if names and BASE not in names:
        targets = [t for t in targets if t.topic != BASE]
    opts = Options(variant=variant, jobs=args.jobs)
    bad = 0
    with wd.lock():
        runner = Runner(wd, m, Path(m.root) / "out", opts)
        for t in targets:
            br, res = runner.build_only(t)
            if br.stage("generate").status != PASS:
                print(f"{t.branch}: {br.stage('generate').summary}")
            elif res is None or not res.ok:
                print(f"{t.branch}: FAILED: {br.stages[-1].summary}")
                for f in br.findings:
                    for line in f.lines[:20]:
                        print(f"    {line}")
            else:
                print(f"{t.branch}: ok: {br.stage('build').summary} ({res.out})")
            bad += res is None or not res.ok
    return 1 if bad else 0


def register(sub) -> None:
    p = sub.add_parser("build", help="build branches' kernels and test modules",
                       description="Build each named branch (or --all) in an O= directory "
                       "of the work directory, with ccache; each distinct tree and "
                       "config once.  Fails when changed code was never compiled.")
    common.add_branch_args(p)
    common.add_common(p, boot_opts=False)
    p.set_defaults(func=run_build)
