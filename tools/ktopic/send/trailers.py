"""Review trailers from the list's replies, written into the patch files.

Takes a label's last sent revision (mail/<label>.yaml) and an mbox file or
maildir of replies; gives a Plan (the trailers to add per patch file and
what was passed over, with why) and writes it, each patch file edited as
bytes and checked with git mailinfo.  docs/mail.md, "Review trailers from
the replies".
"""

from __future__ import annotations

import codecs
import email.parser
import email.policy
import email.utils
import logging
import mailbox
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.errors import KtopicError
from ktopic.fileio import replace_together
from ktopic.model.manifest import Manifest
from ktopic.plumbing.patchfile import parse
from ktopic.send import revisions
from ktopic.send.sender import identity

ADDR = re.compile(r"[^@\s<>\"(),;:]+@[^@\s<>\"(),;:]+\.[^@\s<>\"(),;:.]+")
# What b4's follow-up parser treats as a trailer line (b4 0.12, find_trailers).
TRAILER_LINE = re.compile(r"^\s*(\w\S+):\s+(\S.*)")
PERSON_TAG = re.compile(r"^[A-Za-z][\w-]*-by$")
# The longest line b4 is given that it would read as a trailer: RFC 5322's
# limit for a line of a mail (git send-email refuses longer ones too).  b4
# 0.12's trailer parsing takes time that grows with the cube of such a
# line's length (998 characters: seconds at worst; 1 MB: it never ends).
MAX_TRAILER_LINE = 998


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
    data: bytes = b""       # the new file, once planned
    old: bytes = b""        # the file as it was read


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


def _maildir(path: Path) -> list[tuple[Path, object]]:
    """The messages of a maildir with their files, in the order Python's
    mailbox.Maildir gives them (cur/, then new/; a file per unique name)."""
    files: dict[str, Path] = {}
    for sub in ("cur", "new"):
        for entry in os.listdir(path / sub):
            if not (path / sub / entry).is_dir():
                files[entry.split(":")[0]] = path / sub / entry
    out = []
    for f in files.values():
        with open(f, "rb") as fh:
            out.append((f, mailbox.MaildirMessage(fh)))
    return out


def read_mailbox(path: Path) -> list[tuple[object, str, int | None]]:
    """The messages of an mbox file or a maildir (as b4 reads them), each
    with the file it is in and the line it starts on (None in a maildir,
    where it is a file of its own)."""
    path = Path(path)
    if not path.exists():
        raise KtopicError(f"{path}: no such mbox file or maildir")
    try:
        if path.is_dir():
            out = [(msg, str(f), None) for f, msg in _maildir(path)]
        else:
            box = mailbox.mbox(str(path), create=False)
            msgs = list(box)
            # Python's mbox starts a message at every line that starts with "From ".
            starts = []
            with open(path, "rb") as f:
                for n, line in enumerate(f, 1):
                    if line.startswith(b"From "):
                        starts.append(n)
            if len(starts) != len(msgs):
                starts = [None] * len(msgs)
            out = [(msg, str(path), n) for msg, n in zip(msgs, starts)]
    except (OSError, mailbox.Error) as e:
        raise KtopicError(f"{path}: not a readable mbox file or maildir ({e})") from None
    if path.is_dir() and not out and not (path / "cur").is_dir():
        raise KtopicError(f"{path}: a directory that is not a maildir (no cur/, new/)")
    return out


def _texts(msg) -> list[str]:
    """The text parts of a mail, decoded as b4 decodes them."""
    out = []
    try:
        parts = list(msg.walk())
        mcharset = msg.get_content_charset() or "utf-8"
    except Exception:           # noqa: BLE001  (a mail the email package cannot read)
        return [str(msg.get_payload())]
    for part in parts:
        try:
            ctype = part.get_content_type()
            if "/plain" not in ctype and "/x-patch" not in ctype:
                continue
            payload = part.get_payload(decode=True)
            charset = part.get_content_charset() or mcharset
        except Exception:       # noqa: BLE001  (b4 will fail on it too, and say why)
            continue
        if not isinstance(payload, bytes):
            continue
        try:
            out.append(payload.decode(charset, errors="replace"))
        except LookupError:
            out.append(payload.decode("utf-8", errors="replace"))
    return out


def _trailer_lines(texts: list[str]) -> bool:
    """Whether b4 could take a line of these texts for a trailer."""
    return any(TRAILER_LINE.match(line.strip("\r")) for t in texts for line in t.split("\n"))


def _unreadable(msg, texts: list[str]) -> str:
    """Why the message is not given to b4 (b4 0.12 fails on it, or would
    take hours over it), or ""."""
    if not msg.get_all("From"):
        return "it has no From: header"
    date = msg.get("Date")
    if date is not None:
        try:
            email.utils.parsedate_to_datetime(str(date))
        except (TypeError, ValueError, IndexError, OverflowError):
            return f"its Date: {_short(str(date))!r} is not a date"
    for t in texts:
        for n, line in enumerate(t.split("\n"), 1):
            if len(line) > MAX_TRAILER_LINE and TRAILER_LINE.match(line.strip("\r")):
                return (f"line {n} of its text reads as a trailer and has {len(line)} "
                        f"characters, {_TOO_LONG}")
    return ""


_TOO_LONG = f"more than the {MAX_TRAILER_LINE} b4 is given (RFC 5322's limit for a line)"


def _short(s: str, most: int = 80) -> str:
    s = " ".join(s.split())
    return s if len(s) <= most else s[:most - 3] + "..."


def _named(msg) -> str:
    """A message, for a report: its Message-Id, else its subject."""
    mid = _clean(str(msg.get("Message-Id") or ""))
    if mid:
        return f"<{_short(mid)}>"
    subject = msg.get("Subject")
    return repr(_short(str(subject))) if subject is not None else "no Message-Id, no Subject"


def _ids(header: str | None) -> list[str]:
    return re.findall(r"<([^<>\s]+)>", str(header or ""))


def _clean(mid: str) -> str:
    return mid.strip().strip("<>")


def _existing(data: bytes, display: str) -> list[tuple[str, str, str]]:
    """(lname, address, line) of the trailers of the patch's message, as
    b4 parses them (a `# note` after the address is not part of it)."""
    import b4
    lay = layout(data, display)
    for i in lay.block:
        if len(lay.text(i)) > MAX_TRAILER_LINE and TRAILER_LINE.match(lay.text(i)):
            raise KtopicError(f"a trailer line of {len(lay.text(i))} characters, {_TOO_LONG}",
                              display, i + 1)
    found, _ = b4.LoreMessage.find_trailers("\n".join(lay.text(i) for i in lay.block))
    return [(t.lname, t.addr[1].lower() if t.type == "person" and t.addr else "",
             t.as_string(omit_extinfo=True)) for t in found]


_SPACE = b" \t\n\v\f\r"            # C's isspace()


def _header_line(line: bytes) -> bool:
    """git mailinfo's is_rfc2822_header(): a line of the mail's header."""
    if line.startswith((b"From ", b">From ")):
        return True
    for c in line:
        if c == 58:                     # ':'
            return True
        if not (33 <= c <= 126):
            return False
    return False


def _patchbreak(line: bytes) -> bool:
    """git mailinfo's patchbreak(): the line (with its newline) that ends
    the commit message: `diff -`, `Index: `, `--- <name>` or `---` and
    white space only."""
    if line.startswith((b"diff -", b"Index: ")):
        return True
    if len(line) < 4 or not line.startswith(b"---"):
        return False
    if line[3] == 32 and (len(line) < 5 or line[4] not in _SPACE):
        return True
    for c in line[3:]:
        if c == 10:
            return True
        if c not in _SPACE:
            return False
    return False


def line_end(line: bytes) -> bytes:
    return b"\r\n" if line.endswith(b"\r\n") else b"\n" if line.endswith(b"\n") else b""


@dataclass
class Layout:
    """Where things are in a patch file's bytes."""
    lines: list[bytes]      # each with its line end
    codec: str              # Python's name of the body's charset
    charset: str            # as the mail declares it, "" when it does not
    body: int               # index of the first line after the header
    end: int                # index of the message's last line that is not blank
    block: list[int]        # indexes of its trailer block, [] when it has none

    def text(self, i: int) -> str:
        return self.lines[i].rstrip(b"\r\n").decode(self.codec, errors="replace")


def layout(data: bytes, display: str) -> Layout:
    """The patch file's lines, header, message and trailer block, found as
    git mailinfo finds them; a mail whose body cannot be edited in place
    is refused."""
    lines = [x for x in re.split(rb"(?<=\n)", data) if x]     # at LF only, as git reads
    body = 0
    while body < len(lines) and (_header_line(lines[body].rstrip(b"\r\n")) or
                                 (body and lines[body][:1] in (b" ", b"\t"))):
        body += 1
    head = b"".join(x for x in lines[:body] if not x.startswith((b"From ", b">From ")))
    msg = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(head)

    def line_of(name: str) -> int:
        return next((i + 1 for i, x in enumerate(lines[:body])
                     if x.lower().startswith(name.lower().encode() + b":")), 1)
    cte = str(msg.get("Content-Transfer-Encoding", "")).strip().lower()
    if cte in ("base64", "quoted-printable"):
        raise KtopicError(f"the message is {cte} encoded; trailers cannot be added to it in "
                          f"place", display, line_of("Content-Transfer-Encoding"))
    if msg.get_content_maintype() == "multipart":
        raise KtopicError("a multipart mail; trailers cannot be added to it in place",
                          display, line_of("Content-Type"))
    charset = msg.get_content_charset() or "" if msg.get("Content-Type") else ""
    try:
        codec = codecs.lookup(charset or "utf-8").name
        ascii_safe = "Ab-: <@>\n".encode(codec) == b"Ab-: <@>\n"
    except (LookupError, UnicodeError):
        codec, ascii_safe = "", False
    if not ascii_safe:
        raise KtopicError(f"the mail's charset {charset!r} is not one trailers can be added in",
                          display, line_of("Content-Type"))
    brk = next((i for i in range(body, len(lines)) if _patchbreak(lines[i])), None)
    if brk is None:
        raise KtopicError("no line ends the commit message (`---`, `diff -`, `Index: `, as for "
                          "git mailinfo): not a git format-patch file", display)
    end = brk - 1
    while end >= body and not lines[end].strip(_SPACE):
        end -= 1
    lay = Layout(lines, codec, charset, body, end, [])
    if end >= body:
        first = end
        while first > body and lines[first - 1].strip(_SPACE):
            first -= 1
        block = list(range(first, end + 1))
        if all(TRAILER_LINE.match(lay.text(i)) or lay.text(i)[:1] in (" ", "\t", "[")
               for i in block):
            lay.block = block
    return lay


def insert(data: bytes, new: list[str], applier: str, display: str) -> bytes:
    """The patch file with new trailer lines in its trailer block: before
    the last Signed-off-by of the applier, else after the last trailer (a
    message without trailers gets a new paragraph).  Every other byte of
    the file stays as it was; the new lines are in the mail's charset, with
    the line end of the message's last line."""
    lay = layout(data, display)
    lines, end = lay.lines, lay.end
    eol = line_end(lines[end]) or b"\n"
    if not lay.charset and any(not x.isascii() for x in new):
        try:
            b"".join(lines[lay.body:end + 1]).decode("utf-8")
        except UnicodeDecodeError:
            raise KtopicError("the message is not UTF-8 and the mail names no charset: a "
                              "trailer that is not ASCII cannot be added to it", display,
                              end + 1) from None
    enc = []
    for x in new:
        try:
            enc.append(x.encode(lay.codec) + eol)
        except UnicodeEncodeError:
            raise KtopicError(f"the mail's charset {lay.charset} cannot hold '{x}'; nothing "
                              f"was written (a patch file in UTF-8 could take it)", display,
                              end + 1) from None
    if not lay.block:
        at, enc = end + 1, [eol, *enc]
    else:
        at = end + 1
        for i in reversed(lay.block):
            m = TRAILER_LINE.match(lay.text(i))
            if m and m.group(1).lower() == "signed-off-by" and \
                    email.utils.parseaddr(m.group(2))[1].lower() == applier.lower():
                at = i
                break
    return b"".join(lines[:at] + enc + lines[at:])


def _control(s: str) -> str:
    """The first control character of s (C0, C1, a line or paragraph
    separator; a tab is white space), as U+XXXX, or ""."""
    for c in s:
        if c != "\t" and unicodedata.category(c) in ("Cc", "Zl", "Zp"):
            return f"U+{ord(c):04X}"
    return ""


def _shown(s: str) -> str:
    """s with its control characters written as escapes, for one line of
    a report."""
    return "".join((f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
                   if _control(c) else c for c in s)


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


def _sent_revision(m: Manifest, label: str, branch: str):
    """The state and last sent revision of label, with its patch files
    (relative to the checkout) and their Message-Ids; refused when nothing
    was sent or a recorded file lies outside patches/."""
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
                          f"replies cannot be matched to patch files", rel,
                          state.line("revisions", rev.number))
    first = len(rev.stack) - rev.own
    files = [e["file"] for e in rev.stack[first:]]
    patches_dir = (m.root / "patches").resolve()
    for i, f in enumerate(files):
        # The state file is the project's, as untrusted as the manifest:
        # a path in it must not lead trailers to a file outside patches/.
        if not Path(m.root, f).resolve().is_relative_to(patches_dir):
            raise KtopicError(f"patch {i + 1} of v{rev.number} is recorded as {f!r}, which "
                              f"is not a file under patches/", rel,
                              state.line("revisions", rev.number, "stack", first + i, "file"))
    return state, rev, files, cover_id, patch_ids


def _series_ids(state, rev, cover_id, patch_ids) -> tuple[dict[str, int], dict[str, int]]:
    """The revision's own Message-Ids (patch index, -1 for the cover
    letter) and those of the older revisions (their number)."""
    ours = {_clean(x): i for i, x in enumerate(patch_ids) if x}
    if cover_id:
        ours[_clean(cover_id)] = -1
    older = {}
    for n, r in state.revisions.items():
        if r is not rev:
            for x in r.delivered + ([r.message_id] if r.message_id else []):
                older[_clean(x)] = n
    return ours, older


def _loose(lmsg, body: str) -> list[str]:
    """Person trailer lines of a reply that b4 did not take (no address)."""
    took = [(t.lname, t.value) for t in lmsg.trailers]
    loose = []
    if (lmsg.reply or lmsg.in_reply_to) and not lmsg.has_diff:
        for line in body.split("\n"):        # as b4 and git split lines
            lm = TRAILER_LINE.match(line.strip("\r"))
            if lm and PERSON_TAG.match(lm.group(1)) and not any(
                    lm.group(1).lower() == n and lm.group(2).startswith(v) for n, v in took):
                loose.append(line.strip())
    return loose


def _trailer_problem(t, line: str, mismatches) -> str:
    """Why a trailer b4 took is not written, or ""."""
    bad = _control(line)
    if bad:
        # A form feed, U+2028, ... : a reader that splits lines
        # there would see another trailer in the commit message.
        return f"it holds a control character ({bad})"
    if t.type == "person":
        why = _address_problem(t.value)
        if why:
            return why
        if t in mismatches:
            return ("it names someone other than the reply's sender (b4 takes a person's "
                    "own trailers only)")
    return ""


@dataclass
class _Collect:
    """One run of plan: the revision's patch files, read once each, and
    the plan being filled."""
    m: Manifest
    branch: str
    rev: object
    files: list[str]
    ours: dict[str, int]
    older: dict[str, int]
    out: Plan
    patches: dict[int, tuple[str, object]] = field(default_factory=dict)
    existings: dict[str, list] = field(default_factory=dict)

    def patch(self, i: int):
        if i not in self.patches:
            f = self.files[i]
            p = Path(self.m.root, f)
            self.patches[i] = (f, parse(p, f) if p.exists() else None)
        return self.patches[i]

    def read(self, msg, number: int, where: str, at, target):
        """b4's reading of msg and its trailers that name someone else, or
        None when b4 cannot read it (passed over, or refused when it is a
        reply to the revision with trailer lines)."""
        import b4
        # A mail b4 cannot read (or would take hours over) is not given to
        # it.  One the run needs, a reply to the revision with trailer
        # lines, is refused: its trailers would be lost.
        texts = _texts(msg)
        why = _unreadable(msg, texts)
        if not why:
            try:
                lmsg = b4.LoreMessage(msg)
                _, mismatches = lmsg.get_trailers(sloppy=False)
                return lmsg, mismatches
            except Exception as e:          # noqa: BLE001  (b4 on a mail it chokes on)
                why = f"b4 cannot read it ({type(e).__name__}: {_short(str(e))})"
        rev, branch = self.rev.number, self.branch
        named = f"message {number} ({_named(msg)})"
        if target is not None and _trailer_lines(texts):
            raise KtopicError(_shown(f"{named}: a reply to v{rev} of {branch} with "
                                     f"trailers, but {why}: mend or remove it (nothing was "
                                     f"written)"), where, at)
        self.out.skipped.append(f"{where}{f':{at}' if at else ''}: {named}: {why}: passed over (" +
                                (f"a reply to v{rev} of {branch} without trailers)"
                                 if target is not None else
                                 f"not a reply to v{rev} of {branch})"))
        return None

    def not_ours(self, what: str, chain: list[str], n: int) -> None:
        """Say why a reply with n trailers that answers no message of the
        revision is passed over."""
        rev, branch = self.rev.number, self.branch
        old = next((self.older[c] for c in chain if c in self.older), None)
        if old is not None:
            why = f"a reply to v{old} of {branch}, but v{rev} is the last sent revision"
        else:
            why = f"a reply to another series, not to v{rev} of {branch}"
        self.out.skipped.append(f"{what}: {why}: its {n} trailer{'s' if n != 1 else ''} not taken")

    def take(self, t, line: str, i: int, what: str, mid: str, sender: str) -> None:
        """Add trailer t to patch i unless it is there already."""
        out = self.out
        addr = t.addr[1].lower() if t.type == "person" and t.addr else ""
        f, pf = self.patch(i)
        if pf is None:
            out.skipped.append(f"{what}: '{line}': {f} (patch {i + 1} of v{self.rev.number}) "
                               f"is no longer in the checkout")
            return
        ed = out.edits.setdefault(f, PatchEdit(f, Path(self.m.root, f)))
        if f not in self.existings:
            ed.old = pf.path.read_bytes()
            self.existings[f] = _existing(ed.old, f)
        existing = self.existings[f]
        if addr and addr == pf.email.lower() and any(
                n == "signed-off-by" and a == addr for n, a, _ in existing):
            out.skipped.append(f"{what}: '{line}': from the author of {f}, whose "
                               f"Signed-off-by it carries already")
            return
        bare = t.as_string(omit_extinfo=True).lower()
        same = [x for n, a, x in existing if n == t.lname and
                (a == addr if addr else x.lower() == bare)]
        if same:
            out.skipped.append(f"{what}: '{line}': already in {f}")
            return
        if any(a.lname == t.lname and (a.addr == addr if addr else a.bare == bare)
               for a in ed.add):
            out.skipped.append(f"{what}: '{line}': taken for {f} from an earlier reply")
            return
        ed.add.append(Taken(line, t.lname, addr, mid, sender, bare))

    def message(self, msg, number: int, where: str, at, mbox: Path) -> None:
        """Take the trailers of one message of the mailbox."""
        mid = _clean(str(msg.get("Message-Id") or ""))
        if mid in self.ours or mid in self.older:
            return              # the series' own messages, in a thread's mbox
        chain = _ids(msg.get("In-Reply-To")) + list(reversed(_ids(msg.get("References"))))
        target = next((self.ours[c] for c in chain if c in self.ours), None)
        read = self.read(msg, number, where, at, target)
        if read is None:
            return
        lmsg, mismatches = read
        loose = _loose(lmsg, (lmsg.body or "").split("\n-- \n", 1)[0])
        if not lmsg.trailers and not loose:
            return
        sender = f"{lmsg.fromname} <{lmsg.fromemail}>"
        named = _named(msg) if mid else f"message {number} ({_named(msg)})"
        what = f"{mbox}: {named} from {sender}"
        if target is None:
            self.not_ours(what, chain, len(lmsg.trailers) + len(loose))
            return
        self.out.replies += 1
        for line in loose:
            bad = _control(line)
            self.out.skipped.append(f"{what}: '{line}': " + (
                f"it holds a control character ({bad})" if bad else "its address does not parse"))
        targets = range(len(self.files)) if target == -1 else [target]
        for t in lmsg.trailers:
            line = t.as_string()
            why = _trailer_problem(t, line, mismatches)
            if why:
                self.out.skipped.append(f"{what}: '{line}': {why}")
                continue
            for i in targets:
                self.take(t, line, i, what, mid, sender)


def plan(m: Manifest, label: str, branch: str, mbox: Path) -> Plan:
    import b4
    b4.logger.setLevel(logging.CRITICAL)
    msgs = read_mailbox(mbox)
    state, rev, files, cover_id, patch_ids = _sent_revision(m, label, branch)
    ours, older = _series_ids(state, rev, cover_id, patch_ids)
    out = Plan(label, branch, rev.number)
    applier = email.utils.parseaddr(identity(m))[1]
    run = _Collect(m, branch, rev, files, ours, older, out)
    for number, (msg, where, at) in enumerate(msgs, 1):
        run.message(msg, number, where, at, mbox)
    for f, ed in list(out.edits.items()):
        if not ed.add:
            del out.edits[f]
            continue
        ed.data = insert(ed.old, [a.line for a in ed.add], applier, f)
    out.skipped = [_shown(x) for x in out.skipped]
    return out


def _check(ed: PatchEdit, tmp: Path) -> None:
    """The file written to tmp gives, read by git mailinfo as git am reads
    it, the same author, subject, diff and message as the patch file, the
    message with the new trailers in it."""
    old, new = parse(ed.path, ed.file), parse(tmp, ed.file)
    if (new.author, new.email, new.date, new.subject, new.diff) != \
            (old.author, old.email, old.date, old.subject, old.diff):
        raise KtopicError("adding the trailers would change more than the commit message "
                          "git am reads; nothing was written", ed.file)
    lines = [x.rstrip() for x in new.body.split("\n") if x.strip()]
    for a in ed.add:
        if a.line not in lines:
            raise KtopicError(f"'{a.line}' would not be in the commit message git am reads; "
                              f"nothing was written", ed.file)
        lines.remove(a.line)
    if lines != [x.rstrip() for x in old.body.split("\n") if x.strip()]:
        raise KtopicError("adding the trailers would change the rest of the commit message "
                          "git am reads; nothing was written", ed.file)


def write(p: Plan) -> None:
    """Every edited patch file, or none: each is written beside itself
    first, checked, then all are renamed into place."""
    edits = {ed.path: ed for ed in p.edits.values()}

    def check(path: Path, tmp: Path) -> None:
        ed = edits[path]
        if path.read_bytes() != ed.old:
            raise KtopicError("changed while the replies were read; nothing was written",
                              ed.file)
        _check(ed, tmp)                 # the same patch to git am, the trailers added
    replace_together([(ed.path, ed.data) for ed in p.edits.values()], check)
