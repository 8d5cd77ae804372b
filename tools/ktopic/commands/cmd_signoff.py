"""ktopic signoff [TOPIC...]: the sender's identity in the patch files.

The patch files carry the manifest's placeholder identity
(series.placeholder) until the maintainer who sends puts theirs in: their
Signed-off-by last, as `git am -s` adds it (the placeholder's sign-off
dropped), and their name as author where the placeholder was the author;
an original author stays.  The identity is git's sendemail.from, else
user.name and user.email.  Then the branches are regenerated.

Takes topic names (default: every topic); gives the edited patch files."""

from __future__ import annotations

from ktopic.branches.generate import Generator
from ktopic.commands import common
from ktopic.errors import Failure
from ktopic.send import signoffs
from ktopic.send.sender import identity


def register(sub) -> None:
    p = sub.add_parser("signoff", help="your Signed-off-by (and authorship of the port) in "
                       "place of the placeholder identity", description=__doc__)
    p.add_argument("names", nargs="*", metavar="TOPIC",
                   help="topics or branch names, or 'integration' (default: every topic)")
    p.add_argument("--dry-run", action="store_true", help="say which files would change")
    p.set_defaults(func=run)


def run(args) -> int:
    m = common.load_manifest(args)
    sender = identity(m)
    specs = m.resolve(args.names) if args.names else [m.series_branch("integration")]
    changed = []
    for spec in specs:
        changed += [f for f in signoffs.sign(m, spec, sender, args.dry_run) if f not in changed]
    for f in changed:
        print(f"{'would sign' if args.dry_run else 'signed'}: {f}")
    print(f"{len(changed)} patch file(s) {'to sign' if args.dry_run else 'signed'} off by "
          f"{sender}")
    if args.dry_run or not changed:
        return 0
    wd = common.workdir_of(args)
    with wd.lock():
        r = Generator(common.load_manifest(args), wd).run()
    for o in r.outcomes:
        if o.error:
            print(f"ktopic: {o.error}", flush=True)
    if not r.ok:
        raise Failure("the patch files are signed off, but not every branch was regenerated "
                      "(above); fix that and run `ktopic generate`")
    print("branches regenerated; commit the patch files, then mail the series")
    return 0
