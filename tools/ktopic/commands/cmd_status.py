"""ktopic status: where each topic branch stands against the manifest.

Takes the manifest and the work directory; gives a table of every branch's
state.
"""

from __future__ import annotations

import contextlib
import shutil
import sys

from rich.console import Console
from rich.table import Table

from ktopic.model import manifest
from ktopic.plumbing import manifests
from ktopic.branches.generate import MADE, Generator, base_mismatch
from ktopic.plumbing.gitutil import Git, scratch_objects
from ktopic.plumbing.stack import ApplyError
from ktopic.model.workdir import Workdir


def register(sub) -> None:
    p = sub.add_parser("status", help="a table of the topic branches", description=__doc__)
    p.set_defaults(func=run)


def rows(m: manifest.Manifest, wd: Workdir) -> list[dict]:
    git = Git(wd.git_dir)
    base = git.rev_parse("refs/heads/base") if wd.git_dir.exists() else None
    other_base = base and base_mismatch(m, git, base)
    if other_base:
        base = None
    gen = Generator(m, wd) if base else None
    out = []
    for t in m.resolve([]):
        name = t.name
        head = git.ref(t.ref) if base else None
        expected, state = None, ""
        if other_base:
            state = "base differs: run `ktopic import-base`"
        elif not base:
            state = "no base imported"
        else:
            try:
                expected = gen.integration_head(base) if name == "integration" \
                    else gen.head_of(base, name)
            except ApplyError as e:
                state = f"patches do not apply ({e.patch.display})"
        if not state:
            if head is None:
                state = "not generated"
            elif head == expected:
                state = "in sync"
            elif head == git.ref(MADE + t.branch):
                state = "behind the manifest"
            else:
                state = "has commits ktopic did not make"
        applied = len(t.patches)
        up = sum(c.kind == "upstream" for c in t.carried)
        sup = sum(c.kind == "superseded" for c in t.carried)
        out.append(dict(topic=name, branch=t.branch, head=(head or "")[:12],
                        applied=applied, upstream=up, superseded=sup,
                        base=m.base.debian_version, state=state,
                        equals_base=bool(head and head == base)))
    if gen and wd.writable():
        gen.cache.save()
    return out


def run(args) -> int:
    m = manifests.load(args.manifest, workdir=args.workdir)
    wd = Workdir(args.workdir)
    table = Table(title=f"{m.series.name} on {m.base.package} {m.base.debian_version}")
    for col in ("topic", "branch", "head", "patches", "upstream", "superseded", "base", "state"):
        table.add_column(col, justify="right" if col in ("patches", "upstream", "superseded") else "left")
    ok = True
    behind = []
    with contextlib.ExitStack() as stack:
        if not wd.writable():       # compare with commits made aside, written nowhere
            stack.enter_context(scratch_objects(wd.git_dir))
        found = rows(m, wd)
    for r in found:
        state = r["state"] + (" (= base)" if r["equals_base"] else "")
        colour = "green" if r["state"] == "in sync" else "yellow"
        ok &= r["state"] == "in sync"
        if r["state"] != "in sync":
            behind.append(r["branch"])
        table.add_row(r["topic"], r["branch"], r["head"] or "-", str(r["applied"]),
                      str(r["upstream"]), str(r["superseded"]), r["base"],
                      f"[{colour}]{state}[/]")
    # As wide as the terminal; in a log (no terminal) wide enough for the table.
    width = shutil.get_terminal_size((140, 24)).columns if sys.stdout.isatty() else 140
    Console(width=width).print(table)
    from ktopic.branches import rebase
    if rebase.in_progress(wd):
        print(f"a rebase is in progress ({wd.path('rebase', 'state.json')}): "
              f"`ktopic rebase --continue` or `ktopic rebase --abort`")
    if ok:
        return 0
    git = Git(wd.git_dir)
    base = git.rev_parse("refs/heads/base") if wd.git_dir.exists() else None
    why = base and base_mismatch(m, git, base)
    print(f"ktopic: {why}" if why else
          f"ktopic: not in sync with {m.display()}: {', '.join(behind)}", file=sys.stderr)
    return 1
