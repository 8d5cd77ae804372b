"""ktopic boot: build if needed, boot in QEMU, scan the console, parse KTAP.

Takes branch names and the run options; gives out/report.json and the boot
stages' results.
"""

from __future__ import annotations

from pathlib import Path

from ktopic.commands import common
from ktopic.model import results as R
from ktopic.model.targets import select, targets_from_manifest
from ktopic.report import report as rep
from ktopic.runner.runner import Runner


def run_boot(args) -> int:
    """ktopic boot BRANCH|--all: build if needed, boot, scan, parse (no result cache)."""
    names = common.branch_names(args)
    args.no_cache = False
    args.out = None
    m = common.load_manifest(args)
    wd = common.workdir_of(args)
    opts = common.options_from_args(args)
    opts.use_cache = False
    out_dir = Path(m.root) / "out"
    targets = select(targets_from_manifest(m, Path(m.root) / "qemu", opts.variant),
                     names)
    report = R.Report(base_version=m.base.version)
    with wd.lock():
        runner = Runner(wd, m, out_dir, opts)
        for t in targets:
            br = runner.run(t)
            report.branches.append(br)
            st = br.stage("boot")
            print(f"{t.branch}: boot {st.status if st else 'not run'}"
                  f"{' (' + st.summary + ')' if st and st.summary else ''}; "
                  f"console: {out_dir / rep.branch_dir(t.branch) / 'console.log'}")
    rep.print_report(report)
    return 0 if report.ok else 1


def register(sub) -> None:
    p = sub.add_parser("boot", help="build if needed, boot in QEMU, scan the console, parse KTAP",
                       description="Boot each named branch (or --all) in QEMU with its "
                       "initramfs; the console goes to out/<branch>/console.log.  The base "
                       "is booted too (cached) to tell the base's findings from the branch's.")
    common.add_branch_args(p)
    common.add_common(p)
    p.set_defaults(func=run_boot)
