"""ktopic mail: a topic or the integration branch as a patch series, with b4.

Without --send the messages are written to out/mail/<branch>/v<N>/ (or
--output DIR); with --send b4 sends them over the SMTP server git's
sendemail.* configuration names.  The revision (and b4's change-id) is kept
in mail/<topic>.yaml: commit it.  docs/mail.md has the whole workflow.

Takes a topic or the integration branch (by any of their names); gives the
series under out/mail/ (sent with --send).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ktopic.commands import common
from ktopic.send import mail


def register(sub) -> None:
    p = sub.add_parser("mail", help="mail a topic (or the integration branch) with b4",
                       description=__doc__)
    p.add_argument("name", metavar="TOPIC|integration")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--output", "-o", type=Path, metavar="DIR",
                     help="write the messages here (default: out/mail/<branch>/v<N>/)")
    how.add_argument("--send", action="store_true",
                     help="send them (SMTP server from git config sendemail.smtpserver)")
    p.add_argument("--reroll", action="store_true",
                   help="start the next revision (v<N+1>, with changelog and range-diff)")
    p.add_argument("--changes", action="append", default=[], metavar="TEXT",
                   help="a line for this revision's changelog (repeatable)")
    p.add_argument("--uncertain", choices=("sent", "resend"),
                   help="with --send after a run that stopped while a message was being sent: "
                        "record it as sent (it is on the list) or send it again")
    p.add_argument("--force", action="store_true",
                   help="replace the branch b4/<topic> even if it holds commits ktopic did not "
                        "make (its old head is kept under refs/ktopic/backup/)")
    p.set_defaults(func=run)


def run(args) -> int:
    m, wd, args.name = common.series(args)
    with wd.lock():
        r = mail.run(m, wd, args.name, output=args.output, send=args.send,
                     reroll=args.reroll, notes=args.changes, force=args.force,
                     uncertain=args.uncertain or "")
    p = r.plan
    for note in p.notes:
        print(f"ktopic: note: {note}", file=sys.stderr)
    print(f"{p.t.branch} v{p.revision}: {p.count} patches, change-id {p.state.change_id}")
    print("To: " + ", ".join(p.to))
    if p.cc:
        print("Cc: " + ", ".join(p.cc))
    if p.finish:
        print(f"sent the other {r.sent} messages of v{p.revision}; all "
              f"{len(r.files)} are out, as in {r.outdir}")
    elif args.send:
        print(f"sent {r.sent} messages (written to {r.outdir})")
    else:
        for f in r.files:
            print(f"  {f.name}")
        print(f"messages written to {r.outdir}")
    print(f"revision state: {p.state.path} (commit it)")
    print("took " + ", ".join(f"{k} {v:.1f} s" for k, v in r.seconds.items()))
    return 0
