"""ktopic import-mbox: add a posted series (mbox or directory of mails) to a topic.

Takes an mbox or a directory and a topic (by any of its names), and the
work directory, where the series is applied on the topic first; gives the
patch files written, listed, and the mails passed over (replies, cover
letters, mails without a diff), one line each on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ktopic.model import branchspec
from ktopic.plumbing import manifests
from ktopic.branches import mbox
from ktopic.model.workdir import Workdir


def register(sub) -> None:
    p = sub.add_parser("import-mbox", help="add a posted series to a topic", description=__doc__)
    p.add_argument("source", type=Path, metavar="PATH", help="an mbox file or a directory of patch mails")
    p.add_argument("--topic", required=True, metavar="T")
    p.set_defaults(func=run)


def run(args) -> int:
    # The lock: an export or another import may be rewriting the manifest.
    wd = Workdir(args.workdir)
    with wd.lock():
        m = manifests.load(args.manifest, workdir=args.workdir)
        args.topic = branchspec.resolve_one(m, args.topic, ("topic",)).name
        _, written, skipped = mbox.import_mbox(m, args.source, args.topic, wd)
    for what in skipped:
        print(f"ktopic: skipped: {what}", file=sys.stderr)
    for name in written:
        print(f"patches/{args.topic}/{name}")
    print(f"{len(written)} patches added to topic {args.topic} in {m.display()}")
    return 0
