"""Add a posted series to a topic (`ktopic import-mbox`).

Takes an mbox file or a directory of mails, a topic and the work
directory; gives the patch files written under patches/<topic>/, the mails
passed over and the edited manifest, or a refusal that names the mails,
with nothing written.  docs/design.md (import-mbox).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from email.header import Header, decode_header, make_header
from email.utils import formataddr
from pathlib import Path

from ktopic import errors
from ktopic.branches import applycheck
from ktopic.model import manifest_edit
from ktopic.errors import KtopicError
from ktopic.model.manifest import Manifest
from ktopic.model.workdir import Workdir
from ktopic.plumbing import gitutil
from ktopic.plumbing.patchfile import PatchFile, parse, parse_many

# The largest part, total and revision of [PATCH vR n/N] taken: git
# format-patch numbers the files of a series with four digits
# (0001-...patch), and neither it nor b4 bounds the numbers; a series of
# more parts, or a revision beyond v9999, is a mistake or an attack, and
# counting its parts would take the memory or the time of the number.
MOST = 9999

# Leading "Re:" and the like: a follow-up, as b4 tells one.
REPLY = re.compile(r"\s*(?:re|aw|sv|fwd?)\s*:\s*", re.I)
PREFIX = re.compile(r"\s*\[([^\]]*)\]")


def _raw_subject(path: Path) -> str:
    """The Subject: of a patch file, RFC 2047 words decoded, as a mail's."""
    m = re.search(r"^Subject: (.*(?:\n[ \t].*)*)", path.read_text(errors="replace"), re.M)
    if not m:
        return ""
    try:
        subject = str(make_header(decode_header(m.group(1))))
    except (ValueError, LookupError, UnicodeError):
        subject = m.group(1)
    return re.sub(r"\s+", " ", subject).strip()


def _first_line(err: str) -> str:
    """git's first complaint, for a one-line error."""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    return re.sub(r"^(error|fatal): ", "", lines[0]) if lines else "git failed"


def _mailsplit(path: Path, out: Path, shown: Path) -> list[Path]:
    out.mkdir()
    r = subprocess.run(["git", "mailsplit", "-b", f"-o{out}", str(path)],
                       capture_output=True, text=True, env=gitutil.env())
    if r.returncode != 0:
        raise KtopicError(f"not an mbox: {_first_line(r.stderr)}", shown)
    return sorted(out.iterdir())


def split(source: Path, tmp: Path) -> list[tuple[Path, str, str]]:
    """Each mail of source, split as git am splits it: (its file in tmp,
    where it is for an error about it alone, its name next to another's)."""
    if source.is_dir():
        out = []
        files = sorted(p for p in source.iterdir() if p.is_file())
        for k, f in enumerate(files):
            paths = _mailsplit(f, tmp / f"{k:06d}", f)
            for j, p in enumerate(paths):
                label = f.name if len(paths) == 1 else f"{f.name}: mail {j + 1}"
                out.append((p, str(f) if len(paths) == 1 else f"{f}: mail {j + 1}", label))
        return out
    if not source.is_file():
        raise KtopicError("no such mbox file or directory", source)
    return [(p, f"{source}: mail {i + 1}", f"mail {i + 1}")
            for i, p in enumerate(_mailsplit(source, tmp / "mbox", source))]


# A mail header block after a diff: mails pasted together without the
# "From " line that separates mails in an mbox.
GLUED = re.compile(r"^diff --git .*?^\n?(?:From|Date): [^\n]*\n(?:[\w-]+: [^\n]*\n)*?Subject: ",
                   re.M | re.S)


def _plain(subject: str) -> str:
    """A subject without its [PATCH ...] prefix, spaces folded."""
    return re.sub(r"\s+", " ", re.sub(r"^(\[[^\]]*\]\s*)+", "", subject)).strip()


@dataclass
class Mail:
    path: Path
    where: str                  # the input and the mail, for an error about it alone
    label: str                  # "mail 3" (or a file name), next to another mail's
    info: dict[str, str]        # git mailinfo -k: Author, Email, Subject (as posted), Date
    msg: bytes
    patch: bytes                # what git am would apply: from the first diff line (or ---)
    reply: bool = False
    counter: int | None = None  # n of [PATCH n/N]
    total: int | None = None
    revision: int = 1
    bad_number: str = ""        # why a number of the prefix is refused

    @property
    def subject(self) -> str:
        return self.info.get("Subject", "")

    @property
    def has_diff(self) -> bool:
        return re.search(rb"^(?:diff |@@ -|GIT binary patch)", self.patch, re.M) is not None

    def named(self) -> str:
        return f"{self.label} ({self.subject!r})"


# Bytes no text holds (a form feed and the line ends apart): a message
# with them took in a binary part, as git mailinfo does when a multipart
# mail's parts never close.
BINARY = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def _binary_message(mail: Mail) -> None:
    b = BINARY.search(mail.msg)
    if b:
        line = mail.msg[:b.start()].count(b"\n") + 1
        raise KtopicError(f"its message holds a byte that is not text ({b.group()!r} in line "
                          f"{line} of it): git am takes a binary attachment into the message "
                          f"when a multipart mail never closes; re-send it as plain text",
                          mail.where)


def _read(path: Path, where: str, label: str, tmp: Path) -> Mail:
    """The mail as git mailinfo reads it, with its subject kept (-k)."""
    msg, patch = tmp / "msg", tmp / "patch"
    with open(path, "rb") as f:
        r = subprocess.run(["git", "mailinfo", "-k", "-u", str(msg), str(patch)], stdin=f,
                           capture_output=True, env=gitutil.env())
    if r.returncode != 0:
        why = _first_line(r.stderr.decode(errors="replace"))
        raise KtopicError(f"not a mail git am reads: {why}", where)
    info: dict[str, str] = {}
    for line in r.stdout.decode("utf-8", errors="replace").splitlines():
        k, _, v = line.partition(": ")
        info[k] = v
    mail = Mail(path, where, label, info, msg.read_bytes(), patch.read_bytes())
    if mail.has_diff:
        _binary_message(mail)
    s = mail.subject
    while (m := REPLY.match(s)):
        mail.reply, s = True, s[m.end():]
    while (m := PREFIX.match(s)):
        for word in m.group(1).split():
            if (n := re.fullmatch(r"(\d+)/(\d+)", word, re.A)):
                mail.counter, mail.total = _number(n.group(1)), _number(n.group(2))
                if mail.counter is None or mail.total is None:
                    mail.bad_number = (f"patch {_shown(n.group(1))} of {_shown(n.group(2))}: "
                                       f"out of range (at most {MOST} patches)")
            elif (v := re.fullmatch(r"[vV](\d+)", word, re.A)):
                revision = _number(v.group(1))
                mail.revision = revision if revision is not None else 0
                if revision is None:
                    mail.bad_number = (f"revision v{_shown(v.group(1))}: out of range "
                                       f"(at most v{MOST})")
        s = s[m.end():]
    return mail


def _number(digits: str) -> int | None:
    """The number, if it is at most MOST (never int() of a long string)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= len(str(MOST)) and int(digits) <= MOST else None


def _shown(digits: str) -> str:
    return digits if len(digits) <= 40 else f"<{len(digits)} digits>"


def _patches(mails: list[Mail], skipped: list[str]) -> list[Mail]:
    """The mails that are patches, refusing a mail git am would stop at;
    the others are said in skipped."""
    out = []
    for mail in mails:
        if mail.bad_number and not mail.reply:
            raise KtopicError(mail.bad_number, mail.where)
        if mail.reply or mail.counter == 0:
            what = "a reply" if mail.reply else "a cover letter"
            skipped.append(f"{mail.where}: {what} ({mail.subject!r})")
            continue
        if not mail.has_diff:
            if mail.counter is not None:
                raise KtopicError(f"{mail.subject!r} has no diff: git am would stop at it "
                                  f"(\"Patch is empty\")", mail.where)
            skipped.append(f"{mail.where}: no diff ({mail.subject!r})")
            continue                    # an article, a note
        if GLUED.search(mail.patch.decode(errors="replace")):
            raise KtopicError("holds more than one mail (headers after a diff, with no "
                              "'From ' line between them): make it an mbox, or a "
                              "directory with one mail per file", mail.where)
        if not mail.subject.strip():
            first = mail.msg.decode(errors="replace").strip().split("\n")[0]
            raise KtopicError(f"a patch with no Subject: (git am would make {first!r} its "
                              f"subject): add the Subject: line", mail.where)
        out.append(mail)
    return out


def _one_series(patches: list[Mail], source: Path) -> list[Mail]:
    """patches in the order git am applies the series, or refused when they
    are not one series."""
    first = patches[0]
    for mail in patches[1:]:
        if (mail.counter is None) != (first.counter is None):
            one, other = (mail, first) if mail.counter is None else (first, mail)
            raise KtopicError(f"{one.named()} has no [PATCH n/N] number, {other.named()} has: "
                              f"they are not one series; import them one at a time", source)
        if (mail.revision, mail.total) != (first.revision, first.total):
            raise KtopicError(f"{first.named()} and {mail.named()} are of different series or "
                              f"revisions: import one at a time (b4 am -v N picks a revision)",
                              source)
    if first.counter is None:
        seen: dict[str, Mail] = {}
        for mail in patches:
            key = _plain(mail.subject)
            if key in seen:
                raise KtopicError(f"{seen[key].named()} and {mail.named()} have the same "
                                  f"subject: two revisions of one patch? import one", source)
            seen[key] = mail
        return patches
    by_n: dict[int, Mail] = {}
    for mail in patches:
        if mail.counter in by_n:
            raise KtopicError(f"{by_n[mail.counter].named()} and {mail.named()} are both patch "
                              f"{mail.counter}/{mail.total}: two series in one mbox? import "
                              f"one at a time", source)
        if mail.counter > mail.total:
            raise KtopicError(f"{mail.subject!r} is patch {mail.counter} of {mail.total}",
                              mail.where)
        by_n[mail.counter] = mail
    if len(by_n) < first.total:
        # Every part is 1..total and none twice: one of 1..len+1 is missing.
        missing = 1
        while missing in by_n:
            missing += 1
        have = ", ".join(f"{m.counter}/{m.total} in {m.label}" for m in
                         sorted(patches, key=lambda m: m.counter))
        raise KtopicError(f"patch {missing}/{first.total} of the series is missing "
                          f"(there are {have}): a series is imported whole", source)
    return [by_n[n] for n in sorted(by_n)]


def _header(value: str) -> str:
    return value if value.isascii() else Header(value, "utf-8").encode()


def _content(mail: Mail, pf: PatchFile, tmp: Path) -> bytes:
    """The patch file for mail: the mail as posted when git apply reads
    the same diff from it, else a plain-text mail that git mailinfo reads
    as it read the posted one."""
    raw = mail.path.read_bytes()
    if mail.patch in raw:
        return raw
    who = formataddr((mail.info.get("Author", ""), mail.info.get("Email", "")), charset="utf-8")
    head = (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: {who}\nDate: {mail.info.get('Date', '')}\n"
            f"Subject: {_header(mail.subject)}\nMIME-Version: 1.0\n"
            f"Content-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: 8bit\n\n")
    data = head.encode() + mail.msg + (b"" if mail.msg.endswith(b"\n") or not mail.msg else b"\n") \
        + mail.patch
    check = tmp / "plain"
    check.write_bytes(data)
    again = parse(check, mail.where)
    if (again.author, again.email, again.date, again.subject, again.body, again.diff) != \
            (pf.author, pf.email, pf.date, pf.subject, pf.body, pf.diff) or mail.patch not in data:
        raise KtopicError("its encoded body cannot be written as a plain-text patch that "
                          "reads the same: re-send it unencoded", mail.where)
    return data


def import_mbox(m: Manifest, source: Path, topic: str,
                wd: Workdir) -> tuple[Manifest, list[str], list[str]]:
    """The manifest with the series in source appended to topic, the patch
    files written, and the mails passed over (where, and what they are).
    The series must apply on the topic, in wd's work repository, as git
    am would apply it (applycheck)."""
    t = m.topic(topic)
    have = {_plain(_raw_subject(p.path)): p.rel for p in t.patches}
    with tempfile.TemporaryDirectory(prefix="ktopic-mbox-") as tmp:
        tmp = Path(tmp)
        (tmp / "mail").mkdir()
        (tmp / "split").mkdir()
        mails = [_read(path, where, label, tmp / "mail") for path, where, label in
                 split(source, tmp / "split")]
        skipped: list[str] = []
        patches = _patches(mails, skipped)
        if not patches:
            raise KtopicError("no patch mails found (a patch mail has a Subject: and a diff)",
                              source)
        patches = _one_series(patches, source)
        for mail in patches:
            if _plain(mail.subject) in have:
                raise KtopicError(f"{_plain(mail.subject)!r} is already in topic {topic} as "
                                  f"patches/{topic}/{have[_plain(mail.subject)]}", mail.where)
        files: list[tuple[str, bytes]] = []
        series: list[PatchFile] = []            # the patch files as they will be written
        (tmp / "check").mkdir()
        try:
            pfs = parse_many([(mail.path, mail.where) for mail in patches])
            n = len(t.patches)
            for mail, pf in zip(patches, pfs):
                n += 1
                name = f"{n:04d}-{manifest_edit.slug(pf.subject)}.patch"
                files.append((name, _content(mail, pf, tmp)))
                (tmp / "check" / name).write_bytes(files[-1][1])
                series.append(dataclasses.replace(pf, path=tmp / "check" / name))
        except KtopicError as e:
            raise KtopicError(e.message, e.file) from None      # the mail, not its line 1
        applycheck.check(m, wd, topic, series)
        m2, written = _write(m, t, topic, source, files)
        return m2, written, skipped


def _write(m: Manifest, t, topic: str, source: Path,
           files: list[tuple[str, bytes]]) -> tuple[Manifest, list[str]]:
    """files into patches/<topic>/ and the manifest: all of them or, on
    any error or interrupt, none (nor a directory made for them)."""
    made: list[Path] = []               # directories made here, removed on failure
    outdir = m.root / "patches" / topic
    linked: list[str] = []
    try:
        for d in (outdir.parent, outdir):
            shown = d.relative_to(m.root)
            if d.is_symlink():
                raise KtopicError(f"{shown} is a symbolic link: import-mbox writes no patch "
                                  f"through one", source)
            if not d.exists():
                try:
                    d.mkdir()
                except OSError as e:
                    raise KtopicError(f"{shown} cannot be made: {e.strerror}", source) from None
                made.append(d)
            elif not d.is_dir():
                raise KtopicError(f"{shown} is not a directory", source)
        for name, _ in files:
            if os.path.lexists(outdir / name):
                what = " (a symbolic link)" if (outdir / name).is_symlink() else ""
                raise KtopicError(f"patches/{topic}/{name} already exists{what}", source)
        try:
            with tempfile.TemporaryDirectory(prefix="ktopic-mbox-", dir=outdir.parent) as stage:
                for name, data in files:
                    Path(stage, name).write_bytes(data)
                for name, _ in files:
                    errors.check_interrupted()
                    _link(Path(stage, name), outdir / name, f"patches/{topic}/{name}", source)
                    linked.append(name)
        except OSError as e:
            raise KtopicError(f"patches/{topic}: cannot write the patches: {e.strerror}",
                              source) from None
        errors.check_interrupted()
        m2 = manifest_edit.set_patches(m, topic, [p.entry() for p in t.patches] +
                                       [name for name, _ in files])
    except BaseException:
        for name in linked:
            (outdir / name).unlink(missing_ok=True)
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    return m2, [name for name, _ in files]


def _link(src: Path, dst: Path, shown: str, source: Path) -> None:
    """src made dst, never over an existing file or through a symbolic link."""
    try:
        os.link(src, dst, follow_symlinks=False)
        return
    except FileExistsError:
        raise KtopicError(f"{shown} already exists", source) from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK):
            raise KtopicError(f"{shown} cannot be written: {e.strerror}", source) from None
    # A file system without hard links: create it, refusing what is there.
    try:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except FileExistsError:
        raise KtopicError(f"{shown} already exists", source) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(src.read_bytes())
    except BaseException:
        dst.unlink(missing_ok=True)
        raise
