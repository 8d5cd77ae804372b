"""ktopic export: write a topic branch back to patches/<topic>/.

Takes a topic (by any of its names); gives its patch files, listed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ktopic.branches import export
from ktopic.model import branchspec
from ktopic.plumbing import manifests
from ktopic.model.workdir import Workdir


def register(sub) -> None:
    p = sub.add_parser("export", help="write a topic branch back as patch files",
                       description=__doc__)
    p.add_argument("topic", metavar="TOPIC")
    p.set_defaults(func=run)


def run(args) -> int:
    wd = Workdir(args.workdir)
    with wd.lock():
        for line in export.recover(Path(args.manifest).resolve()):
            print(f"ktopic: {line}", file=sys.stderr)
        # Read under the lock: a run that held it may have changed it.
        m = manifests.load(args.manifest, workdir=args.workdir)
        args.topic = branchspec.resolve_one(m, args.topic, ("topic",)).name
        _, files = export.export(m, wd, args.topic)
    for f in files:
        print(f"patches/{args.topic}/{f}")
    print(f"{len(files)} patches written; {m.display()} lists them")
    return 0
