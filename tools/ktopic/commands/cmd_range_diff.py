"""ktopic range-diff: git range-diff of a topic between two base versions.

Takes a topic (by any of its names) and an old base's version; gives git
range-diff's output.
"""

from __future__ import annotations

import subprocess
import sys

from ktopic.branches.rangediff import ranges
from ktopic.model import branchspec
from ktopic.plumbing import manifests
from ktopic.model.workdir import Workdir
from ktopic.plumbing.gitutil import Git


def register(sub) -> None:
    p = sub.add_parser("range-diff", help="git range-diff of a topic between base versions",
                       description="""ktopic range-diff: how a topic changed between two base versions.

The old branch is refs/ktopic/old/<OLD_BASE>/<branch> (kept by `ktopic
rebase`), the new one the current branch.  Each side starts after the
branch of the topic's last dependency on that base (or the base itself), so
only the topic's own patches are compared.""")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("old_base", metavar="OLD_BASE", nargs="?",
                   help="debian-version of the old base (default: the newest one kept)")
    p.set_defaults(func=run)


def run(args) -> int:
    m = manifests.load(args.manifest, workdir=args.workdir)
    args.topic = branchspec.resolve_one(m, args.topic, ("topic",)).name
    git = Git(Workdir(args.workdir).git_dir)
    old, new = ranges(m, git, args.topic, args.old_base)
    counts = [int(git.run("rev-list", "--count", r).strip()) for r in (old, new)]
    if not any(counts):     # git range-diff would print its usage text
        print(f"{m.topic(args.topic).branch} carries no patches of its own on either base: "
              f"nothing to compare")
        return 0
    colour = "--color" if sys.stdout.isatty() else "--no-color"
    p = subprocess.run(["git", "range-diff", colour, old, new], env=git.process_env(),
                       stdout=sys.stdout if sys.stdout.isatty() else subprocess.PIPE, text=True)
    if p.stdout:
        sys.stdout.write(p.stdout)
    return 0 if p.returncode == 0 else 1
