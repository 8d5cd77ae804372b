"""Review trailers from the list's replies back into the patch files.

After a revision went out (`ktopic mail --send`), reviewers answer with
``Reviewed-by:``, ``Acked-by:``, ``Tested-by:``, ``Reported-by:`` lines.
This reads their replies from an mbox file or a maildir, keeps those that
answer a message of the topic's last sent revision (matched by
In-Reply-To, then References, against the Message-Ids recorded in
``mail/<label>.yaml``; a reply to the cover letter counts for every patch,
as with b4), takes the trailers with b4's own follow-up parsing
(``b4.LoreMessage``), and writes them into ``patches/<topic>/*.patch``:
after the trailers already there, before the Signed-off-by of the person
applying (``series.from``), each once.

What is not taken is said, one line each: a reply to another series or to
an older revision, a trailer whose address does not parse, a trailer that
names someone other than the reply's sender (b4's rule), one from the
patch's own author that only restates the sign-off, one already there.
"""

from __future__ import annotations

import email.utils
import logging
import mailbox
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.errors import KtopicError
from ktopic.model.manifest import Manifest
from ktopic.plumbing.patchfile import parse
from ktopic.send import revisions

ADDR = re.compile(r"[^@\s<>\"(),;:]+@[^@\s<>\"(),;:]+\.[^@\s<>\"(),;:.]+")
# What b4's follow-up parser treats as a trailer line (b4 0.12, find_trailers).
TRAILER_LINE = re.compile(r"^\s*(\w\S+):\s+(\S.*)")
PERSON_TAG = re.compile(r"^[A-Za-z][\w-]*-by$")


@dataclass
class Taken:
    line: str               # as it goes into the patch: "Reviewed-by: Name <addr>"
    lname: str
    addr: str               # lower case, "" for a trailer that names no one
    msgid: str
    sender: str
    bare: str = ""          # lower case, without a `# note`: what duplicates compare


@dataclass
class PatchEdit:
    file: str               # patches/<topic>/<name>.patch, relative to the checkout
    path: Path
    add: list[Taken] = field(default_factory=list)
    text: str = ""          # the new file, once planned


@dataclass
class Plan:
    label: str
    branch: str
    revision: int
    replies: int = 0        # replies to the revision that were read
    edits: dict[str, PatchEdit] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(len(e.add) for e in self.edits.values())


def read_mailbox(path: Path) -> list:
    """The messages of an mbox file or a maildir (as b4 reads them)."""
    path = Path(path)
    if not path.exists():
        raise KtopicError(f"{path}: no such mbox file or maildir")
    try:
        box = mailbox.Maildir(str(path), factory=None, create=False) if path.is_dir() \
            else mailbox.mbox(str(path), create=False)
        msgs = list(box)
    except (OSError, mailbox.Error) as e:
        raise KtopicError(f"{path}: not a readable mbox file or maildir ({e})") from None
    if path.is_dir() and not msgs and not (path / "cur").is_dir():
        raise KtopicError(f"{path}: a directory that is not a maildir (no cur/, new/)")
    return msgs


def _ids(header: str | None) -> list[str]:
    return re.findall(r"<([^<>\s]+)>", str(header or ""))


def _clean(mid: str) -> str:
    return mid.strip().strip("<>")


def _existing(text: str) -> list[tuple[str, str, str]]:
    """(lname, address, line) of the trailers of the patch's message, as
    b4 parses them (a `# note` after the address is not part of it)."""
    import b4
    found, _ = b4.LoreMessage.find_trailers("\n".join(_message_lines(text)[2]))
    return [(t.lname, t.addr[1].lower() if t.type == "person" and t.addr else "",
             t.as_string(omit_extinfo=True)) for t in found]


def _message_lines(text: str) -> tuple[list[str], int, list[str]]:
    """(lines of the file, index of the last line of the message, its trailer
    block).  The message ends at the first `---` line after the headers, as
    for git am."""
    lines = text.split("\n")
    try:
        start = lines.index("")
        sep = lines.index("---", start)
    except ValueError:
        return lines, -1, []
    end = sep - 1
    while end > start and not lines[end].strip():
        end -= 1
    first = end
    while first > start and lines[first - 1].strip():
        first -= 1
    block = lines[first:end + 1]
    if not block or not all(TRAILER_LINE.match(b) or b[:1] in (" ", "\t", "[") for b in block):
        block = []
    return lines, end, block


def insert(text: str, new: list[str], applier: str, display: str) -> str:
    """The patch file text with new trailer lines in its trailer block:
    before the last Signed-off-by of the applier, else after the last
    trailer (a message without trailers gets a new paragraph)."""
    if re.search(r"^Content-Transfer-Encoding:\s*(base64|quoted-printable)", text.split("\n\n")[0],
                 re.M | re.I):
        raise KtopicError("the message is base64 or quoted-printable encoded; trailers cannot be "
                          "added to it in place", display)
    lines, end, block = _message_lines(text)
    if end < 0:
        raise KtopicError("no `---` line ends the commit message: not a git format-patch file",
                          display)
    if not block:
        return "\n".join(lines[:end + 1] + [""] + new + lines[end + 1:])
    at = end + 1
    for i in range(end, end - len(block), -1):
        m = TRAILER_LINE.match(lines[i])
        if m and m.group(1).lower() == "signed-off-by" and \
                email.utils.parseaddr(m.group(2))[1].lower() == applier.lower():
            at = i
            break
    return "\n".join(lines[:at] + new + lines[at:])


def _address_problem(value: str) -> str:
    """Why a person trailer's value is not `Name <address>` or `address`."""
    name, addr = email.utils.parseaddr(value)
    if not ADDR.fullmatch(addr or ""):
        return "its address does not parse"
    if "<" in value or ">" in value:
        if not re.fullmatch(r"[^<>]*<\s*" + re.escape(addr) + r"\s*>", value.strip()):
            return "its address does not parse"
    elif value.strip() != addr:
        return "its address does not parse"
    return ""


def plan(m: Manifest, label: str, branch: str, mbox: Path) -> Plan:
    import b4
    b4.logger.setLevel(logging.CRITICAL)
    msgs = read_mailbox(mbox)
    state = revisions.load(m.root, label)
    rel = f"{revisions.STATE_DIR}/{label}.yaml"
    if state is None:
        raise KtopicError(f"{branch} was never mailed: no replies to collect", rel)
    rev = revisions.last_sent(state)
    if rev is None:
        raise KtopicError(f"no revision of {branch} was sent yet: no replies to collect", rel)
    cover_id, patch_ids = rev.message_ids()
    if not patch_ids:
        raise KtopicError(f"v{rev.number} of {branch} records no patch files or Message-Ids "
                          f"(mailed from a hand-edited branch, or before ktopic recorded them): "
                          f"replies cannot be matched to patch files", rel)
    files = [e["file"] for e in rev.stack[len(rev.stack) - rev.own:]]
    ours = {_clean(x): i for i, x in enumerate(patch_ids) if x}
    if cover_id:
        ours[_clean(cover_id)] = -1
    older = {}
    for n, r in state.revisions.items():
        if r is not rev:
            for x in r.delivered + ([r.message_id] if r.message_id else []):
                older[_clean(x)] = n
    out = Plan(label, branch, rev.number)
    where = str(mbox)
    applier = email.utils.parseaddr(m.series.sender or "")[1]
    patches: dict[int, tuple[str, object]] = {}

    def patch(i: int):
        if i not in patches:
            f = files[i]
            p = Path(m.root, f)
            patches[i] = (f, parse(p, f) if p.exists() else None)
        return patches[i]

    for msg in msgs:
        mid = _clean(str(msg.get("Message-Id") or ""))
        if not mid or mid in ours or mid in older:
            continue            # the series' own messages, in a thread's mbox
        lmsg = b4.LoreMessage(msg)
        body = (lmsg.body or "").split("\n-- \n", 1)[0]
        took = [(t.lname, t.value) for t in lmsg.trailers]
        loose = []              # person trailers b4 would not take: no address
        if (lmsg.reply or lmsg.in_reply_to) and not lmsg.has_diff:
            for line in body.splitlines():
                lm = TRAILER_LINE.match(line.strip("\r"))
                if lm and PERSON_TAG.match(lm.group(1)) and not any(
                        lm.group(1).lower() == n and lm.group(2).startswith(v) for n, v in took):
                    loose.append(line.strip())
        if not lmsg.trailers and not loose:
            continue
        sender = f"{lmsg.fromname} <{lmsg.fromemail}>"
        what = f"{where}: <{mid}> from {sender}"
        chain = _ids(msg.get("In-Reply-To")) + list(reversed(_ids(msg.get("References"))))
        target = next((ours[c] for c in chain if c in ours), None)
        if target is None:
            old = next((older[c] for c in chain if c in older), None)
            if old is not None:
                why = (f"a reply to v{old} of {branch}, but v{rev.number} is the last sent "
                       f"revision")
            else:
                why = f"a reply to another series, not to v{rev.number} of {branch}"
            n = len(lmsg.trailers) + len(loose)
            out.skipped.append(f"{what}: {why}: its {n} trailer{'s' if n != 1 else ''} not taken")
            continue
        out.replies += 1
        for line in loose:
            out.skipped.append(f"{what}: '{line}': its address does not parse")
        _, mismatches = lmsg.get_trailers(sloppy=False)
        targets = range(len(files)) if target == -1 else [target]
        for t in lmsg.trailers:
            line = t.as_string()
            if t.type == "person":
                why = _address_problem(t.value)
                if why:
                    out.skipped.append(f"{what}: '{line}': {why}")
                    continue
                if t in mismatches:
                    out.skipped.append(f"{what}: '{line}': it names someone other than the "
                                       f"reply's sender (b4 takes a person's own trailers only)")
                    continue
            addr = t.addr[1].lower() if t.type == "person" and t.addr else ""
            for i in targets:
                f, pf = patch(i)
                if pf is None:
                    out.skipped.append(f"{what}: '{line}': {f} (patch {i + 1} of v{rev.number}) "
                                       f"is no longer in the checkout")
                    continue
                ed = out.edits.setdefault(f, PatchEdit(f, Path(m.root, f)))
                existing = _existing(pf.path.read_text())
                if addr and addr == pf.email.lower() and any(
                        n == "signed-off-by" and a == addr for n, a, _ in existing):
                    out.skipped.append(f"{what}: '{line}': from the author of {f}, whose "
                                       f"Signed-off-by it carries already")
                    continue
                bare = t.as_string(omit_extinfo=True).lower()
                same = [x for n, a, x in existing if n == t.lname and
                        (a == addr if addr else x.lower() == bare)]
                if same:
                    out.skipped.append(f"{what}: '{line}': already in {f}")
                    continue
                if any(a.lname == t.lname and (a.addr == addr if addr else a.bare == bare)
                       for a in ed.add):
                    out.skipped.append(f"{what}: '{line}': taken for {f} from an earlier reply")
                    continue
                ed.add.append(Taken(line, t.lname, addr, mid, sender, bare))
    for f, ed in list(out.edits.items()):
        if not ed.add:
            del out.edits[f]
            continue
        ed.text = insert(ed.path.read_text(), [a.line for a in ed.add], applier, f)
    return out


def write(p: Plan) -> None:
    """Every edited patch file, or none: each is written beside itself
    first, then all are renamed into place."""
    tmps = []
    try:
        for ed in p.edits.values():
            tmp = ed.path.with_name(f".{ed.path.name}.{os.getpid()}.tmp")
            tmp.write_text(ed.text)
            parse(tmp, ed.file)             # still a patch mail git am takes
            tmps.append((tmp, ed.path))
        for tmp, path in tmps:
            tmp.replace(path)
    finally:
        for tmp, _ in tmps:
            if tmp.exists():
                tmp.unlink()
