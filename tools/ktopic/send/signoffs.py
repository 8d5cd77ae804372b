"""The sign-off chain of the patch files: it ends with whoever sends.

Takes the manifest, a series and the sender's identity; gives the
problems, or the edited patch files.  docs/mail.md, "The sign-off chain".
"""

from __future__ import annotations

import email.parser
import email.policy
import email.utils
from dataclasses import dataclass
from pathlib import Path

from ktopic.errors import KtopicError
from ktopic.fileio import replace_together
from ktopic.plumbing.patchfile import parse
from ktopic.send.sender import address
from ktopic.send.trailers import TRAILER_LINE, line_end, layout


_addr = address


@dataclass
class Problem:
    file: str            # patches/<topic>/<name>
    line: int
    text: str
    placeholder: bool    # the placeholder identity (else: the chain's end)


def _files(spec) -> list[tuple[Path, str]]:
    return [(p.path, f"patches/{tn}/{p.rel}") for tn, p in spec.patches]


def _author(lay) -> tuple[int, str]:
    """(index of the From: header line, its address) of a patch file."""
    for i in range(lay.body):
        if lay.lines[i][:5].lower() == b"from:":
            head = b"".join(lay.lines[i:lay.body])
            msg = email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(head)
            return i, _addr(str(msg.get("From", "")))
    return -1, ""


def check_file(m, path: Path, rel: str, sender: str = "") -> list[Problem]:
    """The placeholder in a patch file, and (with sender) a last
    Signed-off-by that is not the sender's."""
    ph = _addr(m.series.placeholder)
    out = []
    lay = layout(path.read_bytes(), rel)
    at, author = _author(lay)
    if ph and author == ph:
        out.append(Problem(rel, at + 1, f"its author is the placeholder "
                           f"{m.series.placeholder}", True))
    sobs = []
    for i in lay.block:
        t = TRAILER_LINE.match(lay.text(i))
        if ph and ph in lay.text(i).lower():
            out.append(Problem(rel, i + 1, f"a trailer names the placeholder: "
                               f"{lay.text(i).strip()}", True))
        if t and t.group(1).lower() == "signed-off-by":
            sobs.append((i, t.group(2).strip()))
    if sender and (not sobs or _addr(sobs[-1][1]) != _addr(sender)):
        i, who = sobs[-1] if sobs else (lay.end, "missing")
        out.append(Problem(rel, i + 1, f"its last Signed-off-by is {who}, not the "
                           f"sender's {sender}", False))
    return out


def check(m, spec, sender: str = "") -> list[Problem]:
    return [x for path, rel in _files(spec) for x in check_file(m, path, rel, sender)]


def refuse(m, spec, sender: str, what: str) -> None:
    """A KtopicError naming the first problem, for `what` (a command)."""
    ph = _addr(m.series.placeholder)
    if ph and _addr(sender) == ph:
        raise KtopicError(f"{what}: the sender would be the placeholder {m.series.placeholder}: "
                          f"set your identity (git config sendemail.from, or user.name and "
                          f"user.email), then `ktopic signoff {spec.name}`")
    probs = check(m, spec, sender)
    if probs:
        p = probs[0]
        more = f" (and {len(probs) - 1} more)" if len(probs) > 1 else ""
        raise KtopicError(f"{what}: {p.text}{more}: `ktopic signoff {spec.name}` puts "
                          f"{sender} in (docs/mail.md, \"The sign-off chain\")", p.file, p.line)


# --- the step: the sender's identity in place of the placeholder -----------------

def _encode(lay, rel: str, text: str, eol: bytes) -> bytes:
    try:
        if not lay.charset and not text.isascii():
            b"".join(lay.lines[lay.body:lay.end + 1]).decode("utf-8")
        return text.encode(lay.codec) + eol
    except (UnicodeDecodeError, UnicodeEncodeError):
        raise KtopicError(f"the mail's charset cannot hold '{text}'; nothing was written",
                          rel, lay.end + 1) from None


def signed(m, data: bytes, rel: str, sender: str) -> bytes:
    """The patch file signed off by sender as `git am -s` signs: the
    placeholder's Signed-off-by dropped, any other trailer naming it
    given the sender, the sender's Signed-off-by last; the From: line the
    sender's where the placeholder was the author."""
    ph, ph_ident = _addr(m.series.placeholder), m.series.placeholder
    lay = layout(data, rel)
    lines = list(lay.lines)
    eol = line_end(lines[lay.end]) or b"\n"
    sob = f"Signed-off-by: {sender}"
    block = []
    for i in lay.block:
        text = lay.text(i)
        t = TRAILER_LINE.match(text)
        if ph and ph in text.lower():
            if t and t.group(1).lower() == "signed-off-by":
                continue
            text = text.replace(ph_ident, sender) if ph_ident in text else \
                f"{t.group(1)}: {sender}" if t else text
            block.append(_encode(lay, rel, text, line_end(lines[i]) or eol))
        else:
            block.append(lines[i])
    if not block or block[-1].rstrip(b"\r\n").decode(lay.codec, "replace") != sob:
        block.append(_encode(lay, rel, sob, eol))
    start, stop = (lay.block[0], lay.block[-1] + 1) if lay.block else (lay.end + 1, lay.end + 1)
    if not lay.block:
        block.insert(0, eol)
    lines[start:stop] = block
    at, author = _author(lay)
    if ph and author == ph:
        end = at + 1
        while end < lay.body and lines[end][:1] in (b" ", b"\t"):
            end += 1
        name, addr = email.utils.parseaddr(sender)
        lines[at:end] = [b"From: " + email.utils.formataddr((name, addr), "utf-8").encode()
                         + line_end(lines[at])]
    return b"".join(lines)


def _same_patch(old: Path, new: Path, rel: str, sender: str) -> None:
    a, b = parse(old, rel), parse(new, rel)
    if (a.date, a.subject, a.diff) != (b.date, b.subject, b.diff) or \
            f"Signed-off-by: {sender}" not in b.body:
        raise KtopicError("signing off would change more than the author and the trailers "
                          "git am reads; nothing was written", rel)


def sign(m, spec, sender: str, dry_run: bool = False) -> list[str]:
    """Every patch file of spec signed off by sender (all written or
    none); the files that changed."""
    if _addr(sender) == _addr(m.series.placeholder) or not _addr(sender):
        raise KtopicError(f"no identity of yours to sign off with (it would be "
                          f"{sender or 'nobody'}): set git config user.name and user.email "
                          f"(or sendemail.from)")
    edits = []
    for path, rel in _files(spec):
        old = path.read_bytes()
        new = signed(m, old, rel, sender)
        if new != old:
            edits.append((path, rel, old, new))
    rels = {path: rel for path, rel, _, _ in edits}
    if not dry_run:
        replace_together([(path, new) for path, _, _, new in edits],
                         lambda path, tmp: _same_patch(path, tmp, rels[path], sender))
    return [rel for _, rel, _, _ in edits]
