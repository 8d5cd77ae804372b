"""ktopic generate: build the topic branches and the integration branch.

Takes branch names (topics, their branches, integration, for-next); gives
the branches and a line per branch.
"""

from __future__ import annotations

import sys

from ktopic.errors import KtopicError
from ktopic.plumbing import manifests
from ktopic.branches.generate import Generator
from ktopic.model.workdir import Workdir


def register(sub) -> None:
    p = sub.add_parser("generate", help="generate topic branches from the manifest",
                       description=__doc__)
    p.add_argument("topics", nargs="*", metavar="TOPIC",
                   help="only these topics or branches, 'integration' too (default: all, and the "
                        "integration branch)")
    p.add_argument("--force", action="store_true",
                   help="replace branches that hold commits ktopic did not make "
                        "(their old heads are kept under refs/ktopic/backup/)")
    p.set_defaults(func=run)


def run(args) -> int:
    wd = Workdir(args.workdir)
    with wd.lock():
        from ktopic.branches import rebase
        if rebase.in_progress(wd):
            raise KtopicError("a rebase is in progress (the manifest, patches and branches are "
                              "half moved): finish it with `ktopic rebase --continue` or undo "
                              "it with `ktopic rebase --abort` before generating",
                              wd.path("rebase", "state.json"))
        # Read under the lock: an export that held it may have rewritten it.
        m = manifests.load(args.manifest, workdir=args.workdir)
        specs = m.resolve(args.topics)
        topics = [s.name for s in specs if s.kind == "topic"]
        integration = not args.topics or any(s.kind == "integration" for s in specs)
        r = Generator(m, wd).run(topics if args.topics else None, force=args.force,
                                 integration=integration)
    for o in r.outcomes:
        if o.error:
            print(f"ktopic: {o.error}", file=sys.stderr)
            continue
        what = "created" if o.moved and not o.old else "updated" if o.moved else "unchanged"
        line = f"{o.branch:<18} {o.head[:12]}  {what}  ({o.patches} patches)"
        if o.backup:
            line += f"; old head {o.old[:12]} kept as {o.backup}"
        print(line)
    print(f"{r.applied} patches applied in {r.seconds:.2f} s")
    return 0 if r.ok else 1
