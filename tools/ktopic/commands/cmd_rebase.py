"""ktopic rebase: move every topic onto a newer packaged tree.

The new tarball is imported as a child of the current base; each topic is
stacked again on it in dependency order.  Each patch gets one outcome:
applied, 3-way (rewritten), upstream (moved to the manifest's upstream
list with a check), or conflict (the topic stops in a worktree; resolve,
`git add`, `ktopic rebase --continue`, or `ktopic rebase --abort`).

Takes a newer tarball (or --continue/--abort); gives the rebased branches
and a table of what happened."""

from __future__ import annotations

import sys
from pathlib import Path

from ktopic.plumbing import manifests
from ktopic.errors import KtopicError
from ktopic.model.workdir import Workdir
from ktopic.branches.rebase import Rebase, conflict_help

COLOURS = {"applied": "green", "3-way": "cyan", "upstream": "blue", "resolved": "cyan",
           "conflict": "red", "dropped": "magenta", "pending": "yellow", "waiting": "yellow", "failed": "red", "done": "green"}


def register(sub) -> None:
    p = sub.add_parser("rebase", help="rebase every topic onto a newer packaged tree",
                       description=__doc__)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--tarball", type=Path,
                   help="the newer tree (default: the manifest's tarball path, whose installed "
                        "package is newer than the manifest's base)")
    g.add_argument("--continue", dest="cont", action="store_true",
                   help="go on after resolving a conflict (and `git add`)")
    g.add_argument("--abort", action="store_true",
                   help="put manifest, patches and refs back as they were before the rebase")
    p.add_argument("--drop", metavar="REASON",
                   help="with --continue: a conflict resolved to no change drops its patch; "
                        "say why (recorded under the topic's `dropped:`)")
    p.add_argument("--version", dest="kversion", metavar="X.Y.Z", help="kernel version of the new tree (X.Y.Z)")
    p.add_argument("--debian-version", metavar="X.Y.Z-N",
                   help="package version of the new tree (X.Y.Z-N; default: from dpkg)")
    p.set_defaults(func=run)


def run(args) -> int:
    wd = Workdir(args.workdir)
    with wd.lock():
        m = manifests.load(args.manifest, workdir=args.workdir)
        rb = Rebase(m, wd)
        if args.abort:
            if args.kversion or args.debian_version:
                raise KtopicError("--abort takes no version")
            refs = rb.abort()
            print(f"rebase aborted: manifest, patches and {len(refs)} ref(s) put back")
            return 0
        if args.drop is not None and not args.cont:
            raise KtopicError("--drop goes with --continue")
        if args.drop is not None and len(args.drop.strip()) < 10:
            raise KtopicError(f"--drop: the reason {args.drop!r} is too short to tell a reader "
                              f"why the patch is dropped (10 characters or more)")
        if args.cont:
            report = rb.cont(drop=args.drop.strip() if args.drop else None)
        else:
            report = rb.start(args.tarball or m.base.tarball, args.kversion, args.debian_version)
    show(report)
    for note in report.notes:
        print(f"ktopic: {note}", file=sys.stderr)
    for c in report.conflicts:
        for line in conflict_help(c):
            print(line)
    return 0 if report.complete else 1


def show(report) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"rebase {report.old} -> {report.new}")
    for col in ("topic", "patch", "outcome", "detail"):
        table.add_column(col, overflow="fold")
    counts: dict[str, int] = {}
    for r in report.rows:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
        table.add_row(r.topic, r.patch or "-", f"[{COLOURS.get(r.outcome, 'white')}]{r.outcome}[/]",
                      r.detail)
    Console(width=160 if not sys.stdout.isatty() else None).print(table)
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    state = "complete" if report.complete else "in progress (see below)"
    print(f"{summary or 'nothing to do'}; rebase {state}; {report.seconds:.2f} s")
