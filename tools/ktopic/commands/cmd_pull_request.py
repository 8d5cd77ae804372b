"""ktopic pull-request: a signed tag for the mailed revision of a topic (or
the integration branch) and the text of `git request-pull` against the
manifest's series.public-url, written to out/pull/<branch>-v<N>.txt.

Takes a topic or the integration branch; gives a signed tag and
out/pull/<branch>-v<N>.txt."""

from __future__ import annotations

import sys

from ktopic.commands import common
from ktopic.send import pullreq


def register(sub) -> None:
    p = sub.add_parser("pull-request", help="tag the current revision and write a pull request",
                       description=__doc__)
    p.add_argument("name", metavar="TOPIC|integration")
    p.add_argument("--retag", action="store_true",
                   help="replace an existing tag of this revision (e.g. to sign it now); "
                        "the old one is kept under refs/ktopic/replaced-tags/")
    p.add_argument("--unsent", action="store_true",
                   help="tag a revision that was not (all) sent to the list; the pull request "
                        "says so")
    p.set_defaults(func=run)


def run(args) -> int:
    m, wd, args.name = common.series(args)
    with wd.lock():
        r = pullreq.run(m, wd, args.name, retag=args.retag, unsent=args.unsent)
    sys.stdout.write(r.text)
    for w in r.warnings:
        print(f"ktopic: note: {w}", file=sys.stderr)
    print(f"\ntag {r.tag} ({'signed' if r.signed else 'annotated, not signed'}); "
          f"written to {r.path}")
    return 0
