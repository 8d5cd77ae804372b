"""One git format-patch file, read as git am reads it.

Takes a patch file; gives a PatchFile (author, date, message, the diff git
mailinfo extracts, hunks).  docs/design.md, "Generation".
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ktopic.errors import KtopicError
from ktopic.plumbing import gitutil
from ktopic.plumbing.commitobj import git_utf8

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    number: int           # 1-based within its file
    old_start: int
    header: str


@dataclass
class PatchFile:
    path: Path
    display: str
    author: str
    email: str
    date: str
    subject: str
    body: str
    diff: str                 # patch, decoded for reading (names, hunks)
    hunks: dict[str, list[Hunk]] = field(default_factory=dict)   # by old path
    # The diff git mailinfo extracts from the mail: what git am applies.
    patch: bytes = b""
    # The number of lines of the file before patch, when patch is the
    # file's end as it is (a mail that is not encoded); None when git
    # mailinfo decoded it.  git apply's "line N" is then N + patch_line.
    patch_line: int | None = 0

    @property
    def message(self) -> str:
        text = stripspace(self.subject + "\n\n" + self.body)      # as git am makes it
        return text + ("---\n" + self.notes if self.notes else "")

    @cached_property
    def notes(self) -> str:
        """The lines between the `---` that ends the message and a second
        `---` before the diff (git format-patch writes its own `---` after a
        message that holds one), or "" when there are none."""
        lines = git_utf8(self.patch).split("\n") if self.patch else self.diff.split("\n")
        lines = [ln + "\n" for ln in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        if not lines or lines[0].rstrip("\n") != "---":
            return ""
        for i, line in enumerate(lines[1:], 1):
            if line.startswith("diff --git "):
                return ""
            if line.rstrip("\n") == "---":
                return "".join(lines[1:i])
        return ""

    @cached_property
    def data(self) -> bytes:
        """The patch file as it is on disk (its hash keys the stack cache)."""
        return self.path.read_bytes()

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def files(self) -> list[str]:
        return list(self.hunks)

    @cached_property
    def paths(self) -> list[str]:
        """Every path the patch names, old and new sides, in order: those
        of the diff --git lines, then any other a ---/+++, rename or copy
        line names (see names_agree)."""
        return _names(self.diff)[0]

    @cached_property
    def names_agree(self) -> bool:
        """Whether git apply reads the files the diff --git lines name:
        each is `a/X b/Y` (no quotes, no spaces), its ---/+++ lines name
        a/X and b/Y (or /dev/null), its rename and copy lines X and Y,
        and there is no ---/+++ pair outside a git diff's header.  Where
        they disagree (a hand-edited diff), git am applies to the names
        those other lines give: only an index of the whole tree is sure
        to hold them."""
        return _names(self.diff)[1]

    def ident_env(self) -> dict[str, str]:
        """Author and committer are both the patch's author at the patch's
        date: the same patch on the same parent is the same commit anywhere."""
        return {"GIT_AUTHOR_NAME": self.author, "GIT_AUTHOR_EMAIL": self.email,
                "GIT_AUTHOR_DATE": self.date, "GIT_COMMITTER_NAME": self.author,
                "GIT_COMMITTER_EMAIL": self.email, "GIT_COMMITTER_DATE": self.date}

    def hunk_at(self, file: str, line: int) -> Hunk | None:
        """The hunk of file whose old side starts at line (git apply's
        'patch failed: FILE:LINE' names it this way)."""
        for h in self.hunks.get(file, []):
            if h.old_start == line:
                return h
        hs = self.hunks.get(file, [])
        return hs[0] if len(hs) == 1 else None


class Mailinfo:
    """One `git mailinfo` run on a patch file, started now, read later."""

    def __init__(self, path: Path, display: str):
        self.path, self.display = Path(path), display
        self.data = self.path.read_bytes()
        self.mail, self.skipped = as_mailsplit(self.data)
        self.tmp = tempfile.TemporaryDirectory(prefix="ktopic-mailinfo-")
        self.msg, self.patch = Path(self.tmp.name, "msg"), Path(self.tmp.name, "patch")
        self.done = False
        try:
            source = path
            if self.mail is not self.data:
                source = Path(self.tmp.name, "mail")
                source.write_bytes(self.mail)
            with open(source, "rb") as f:
                self.p = subprocess.Popen(["git", "mailinfo", "-u", str(self.msg), str(self.patch)],
                                          stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          env=gitutil.env())
        except BaseException:
            self.tmp.cleanup()
            raise

    def result(self) -> PatchFile:
        self.done = True
        try:
            out, err = self.p.communicate()
            if self.p.returncode != 0:
                raise KtopicError(f"not a patch mail: {err.decode(errors='replace').strip()}",
                                  self.display, 1)
            msg = self.msg.read_bytes()
            patch = self.patch.read_bytes()
        finally:
            self.tmp.cleanup()
        info: dict[str, str] = {}
        for line in out.split(b"\n"):
            k, _, v = line.partition(b": ")
            info[k.decode("ascii", "replace")] = git_utf8(v)
        body = stripspace(git_utf8(msg)).rstrip("\n")
        pf = _patch(self.path, self.display, info, body, patch)
        pf.data = self.data
        if patch and self.mail.endswith(patch):
            pf.patch_line = self.skipped + self.mail[:len(self.mail) - len(patch)].count(b"\n")
        else:
            pf.patch_line = None
        return pf

    def stop(self) -> None:
        """End the run if its result was not taken."""
        if self.done:
            return
        self.done = True
        if self.p.poll() is None:
            self.p.kill()
        self.p.communicate()
        self.tmp.cleanup()


# git's isspace(): space, tab, newline, carriage return (not \v or \f).
GIT_SPACE = b" \t\n\r"


def as_mailsplit(data: bytes) -> tuple[bytes, int]:
    """The mail git am gives git mailinfo from a patch file, and the number
    of lines skipped before it: git mailsplit skips the whitespace before
    the first line and, in a mail whose every line ends in CRLF (one that
    went through a CRLF transport), drops the CR of each.  Where only some
    lines end so (a diff of a file that has CRLF lines, in a mail that
    went through unchanged), the CRs are the file's and are kept, as
    `git am --keep-cr` keeps them: plain git am would drop them, and the
    tree would lose them or the hunks would not fit.  data itself when
    nothing changes."""
    mail = data.lstrip(GIT_SPACE)
    skipped = data[:len(data) - len(mail)].count(b"\n")
    if crlf_throughout(mail):
        mail = mail.replace(b"\r\n", b"\n")
    return (data if mail == data else mail), skipped


def crlf_throughout(mail: bytes) -> bool:
    """Every line of the mail ends in CRLF."""
    return b"\r\n" in mail and mail.count(b"\n") == mail.count(b"\r\n")


def stripspace(text: str) -> str:
    """git's strbuf_stripspace(), which git am runs on the message: trailing
    whitespace (git's: space, tab, CR) of each line dropped, runs of empty
    lines made one, none at the start or the end, every line ended by a
    newline."""
    out: list[str] = []
    empties = False
    for line in text.split("\n"):
        line = line.rstrip(" \t\r")
        if not line:
            empties = True
            continue
        if empties and out:
            out.append("")
        empties = False
        out.append(line)
    return "".join(ln + "\n" for ln in out)


def parse(path: Path, display: str | None = None) -> PatchFile:
    return Mailinfo(path, display or str(path)).result()


def parse_many(items: list[tuple[Path, str]], jobs: int = 8) -> list[PatchFile]:
    """parse() of each (path, display), up to jobs git processes at once:
    on a loaded machine a dozen mails cost the time of a few.  The first
    bad mail in the list is the error raised, as with parse() in a loop."""
    out: list[PatchFile] = []
    running: list[Mailinfo] = []
    todo = list(items)
    try:
        while todo or running:
            while todo and len(running) < jobs:
                running.append(Mailinfo(*todo.pop(0)))
            out.append(running.pop(0).result())
    finally:
        for m in running:
            m.stop()
    return out


def _patch(path: Path, display: str, info: dict[str, str], body: str, patch: bytes) -> PatchFile:
    for key in ("Author", "Email", "Subject", "Date"):
        if not info.get(key):
            raise KtopicError(f"patch mail has no {key}", display, 1)
    diff = patch.decode(errors="replace")
    pf = PatchFile(path=Path(path), display=display, author=info["Author"],
                   email=info["Email"], date=info["Date"], subject=info["Subject"],
                   body=body, diff=diff, patch=patch)
    pf.hunks = _hunks(diff)
    if not pf.hunks and "\nGIT binary patch" not in diff and "rename from" not in diff \
            and not re.search(r"^(new|deleted) file mode", diff, re.M):
        raise KtopicError("patch has no hunks", display, 1)
    return pf


GIT_HEADER = re.compile(r"diff --git a/(\S+) b/(\S+)")
# The header lines that name a file again: (prefix, side, the prefix git
# strips from the name).
NAME_LINES = (("--- ", 0, "a/"), ("+++ ", 1, "b/"), ("rename from ", 0, ""),
              ("rename to ", 1, ""), ("copy from ", 0, ""), ("copy to ", 1, ""))


def _names(diff: str) -> tuple[list[str], bool]:
    """(PatchFile.paths, PatchFile.names_agree) of a diff."""
    out: list[str] = []
    agree = True
    sides: tuple[str, str] | None = None
    header = False              # between a diff --git line and its first hunk
    previous = ""
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            m = GIT_HEADER.fullmatch(line)
            sides, header = (m.groups() if m else None), True
            agree = agree and m is not None
            out += [f for f in (sides or ()) if f not in out]
        elif header and line.startswith(("@@ ", "GIT binary patch", "Binary files ")):
            header = False
        elif header:
            for prefix, side, strip in NAME_LINES:
                if not line.startswith(prefix):
                    continue
                name = line[len(prefix):]
                if (sides and name == strip + sides[side]) or (strip and name == "/dev/null"):
                    break
                agree = False
                if strip and "/" in name:         # what git apply -p1 reads, roughly
                    name = name.split("\t")[0].split("/", 1)[1]
                if name and name != "/dev/null" and name not in out:
                    out.append(name)
                break
        elif line.startswith("+++ ") and previous.startswith("--- "):
            agree = False                         # a diff of another kind after a git diff
        previous = line
    return out, agree


def _hunks(diff: str) -> dict[str, list[Hunk]]:
    out: dict[str, list[Hunk]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            m = re.match(r"diff --git a/(\S+) b/(\S+)", line)
            current = m.group(1) if m else None
            if current:
                out.setdefault(current, [])
        elif line.startswith("@@ ") and current:
            m = HUNK.match(line)
            if m:
                hs = out[current]
                hs.append(Hunk(len(hs) + 1, int(m.group(1)), line.split(" @@")[0] + " @@"))
    return out
