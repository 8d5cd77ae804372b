"""ktopic trailers: review trailers from the list's replies into the patch files.

Reads the replies (an mbox file or a maildir, e.g. `b4 mbox` of the thread)
to the last sent revision of TOPIC, takes their Reviewed-by, Acked-by,
Tested-by, Reported-by (... ) trailers with b4's parsing, writes them into
patches/<topic>/*.patch and regenerates the branches.  A reply to the cover
letter counts for every patch.  docs/mail.md describes the rules.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from ktopic.branches.generate import Generator
from ktopic.commands import common
from ktopic.errors import Failure, KtopicError
from ktopic.model.workdir import Workdir
from ktopic.send import trailers


def register(sub) -> None:
    p = sub.add_parser("trailers", help="review trailers from replies into the patch files",
                       description=__doc__)
    p.add_argument("name", metavar="TOPIC|integration")
    p.add_argument("--mbox", type=Path, required=True, metavar="FILE|MAILDIR",
                   help="the replies: an mbox file or a maildir")
    p.add_argument("--dry-run", "-n", action="store_true",
                   help="say what would be added; write nothing")
    p.set_defaults(func=run)


# More than any thread's replies: a larger file is refused unread.
MAX_MBOX = 256 << 20


def _check_replies(path: Path) -> None:
    """Refuse, before reading a byte, replies that are neither a maildir
    nor a regular file of a thread's size: a device such as /dev/zero or
    a FIFO would be read without end."""
    try:
        st = os.stat(path)
    except OSError:
        return                  # trailers.plan names a missing file
    if stat.S_ISDIR(st.st_mode):
        return
    if not stat.S_ISREG(st.st_mode):
        raise KtopicError("not a regular file nor a maildir: the replies are read from an "
                          "mbox file or a maildir", path)
    if st.st_size > MAX_MBOX:
        raise KtopicError(f"{st.st_size} bytes, larger than {MAX_MBOX >> 20} MiB: more than "
                          "the replies of a thread", path)


def run(args) -> int:
    _check_replies(args.mbox)
    m = common.load_manifest(args)
    t = m.series_branch(args.name)
    p = trailers.plan(m, t.name, t.branch, args.mbox)
    for why in p.skipped:
        print(f"ktopic: skipped: {why}", file=sys.stderr)
    verb = "would add" if args.dry_run else "added"
    for ed in p.edits.values():
        print(ed.file)
        for a in ed.add:
            print(f"  + {a.line}")
    print(f"{p.replies} replies to v{p.revision} of {p.branch}: {verb} {p.added} trailers to "
          f"{len(p.edits)} patch files, {len(p.skipped)} skipped")
    if args.dry_run or not p.edits:
        return 0
    wd = Workdir(args.workdir)
    with wd.lock():
        trailers.write(p)
        m = common.load_manifest(args)
        r = Generator(m, wd).run()
    for o in r.outcomes:
        if o.error:
            print(f"ktopic: {o.error}", file=sys.stderr)
        elif o.moved:
            print(f"{o.branch:<18} {o.head[:12]}  regenerated")
    if not r.ok:
        raise Failure("the patch files hold the trailers, but not every branch was "
                      "regenerated (above); fix that and run `ktopic generate`")
    print("commit the patch files; `ktopic mail " + t.name + " --reroll` mails them")
    return 0
