"""A git diff applied to file contents in Python, when it applies exactly.

Takes a patch's bytes and a file's bytes; gives the patched file, or
Unusual where `git apply` must decide.  docs/design.md, "Generation".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MODES = (b"100644", b"100755", b"120000")
NAME = rb"[\x21\x23-\x7e]+"     # printable ASCII but a quote: names git writes unquoted
HEADER = re.compile(rb"diff --git a/(%s) b/(%s)\n" % (NAME, NAME))
HUNK = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
INDEX = re.compile(rb"index [0-9a-f]+\.\.[0-9a-f]+(?: ([0-7]+))?\n")
# Header lines git reads that are not applied here (copies, rewrites).
OTHER_HEADERS = (b"copy from ", b"copy to ", b"rename old ", b"rename new ", b"dissimilarity index ",
                 b"similarity index ", b"rename from ", b"rename to ", b"index ")
# Lines that make git read what follows as a diff of another kind.
DIFF_LIKE = (b"@@ -", b"--- ", b"+++ ", b"GIT binary patch", b"Binary files ")
MODE_LINES = {b"old mode ": "old_mode", b"new mode ": "new_mode",
              b"deleted file mode ": "old_mode", b"new file mode ": "new_mode"}


def plain_path(path: str) -> bool:
    """Whether git takes path as it is, on any system: no empty component,
    none that starts with a dot (".", "..", ".git" in any case, and every
    name git reserves starts with one) and nothing git's NTFS and HFS
    protections look at (a tilde, a backslash, a colon, a trailing dot or
    space, non-ASCII).  Any other path is left to `git apply`, which
    refuses exactly the paths git refuses (verify_path)."""
    return path.isascii() and all(
        c and c[0] != "." and c[-1] not in ". " and not any(x in c for x in "~\\:")
        for c in path.split("/"))


class Unusual(Exception):
    """The patch is not of the kind applied here; let git apply it."""


@dataclass
class Hunk:
    old_start: int
    new_start: int
    pre: list[bytes] = field(default_factory=list)     # lines it expects
    post: list[bytes] = field(default_factory=list)    # lines it leaves
    leading: int = 0        # context lines before the first change
    trailing: int = 0       # context lines after the last change


@dataclass
class FileDiff:
    old: str | None                 # path before (None: a new file)
    new: str | None                 # path after (None: deleted)
    old_mode: bytes | None = None   # the mode the patch expects, if it says
    new_mode: bytes | None = None   # the mode it sets, if it says
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return [p for p in dict.fromkeys((self.old, self.new)) if p is not None]


def lines_of(data: bytes) -> list[bytes]:
    """Lines as git apply cuts them: at newlines only, each keeping its
    newline; the last one may have none."""
    if b"\r" not in data:
        return data.splitlines(keepends=True)     # the same, without \r
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def parse(data: bytes) -> list[FileDiff]:
    """Every file of the git diff in a patch mail, or Unusual."""
    if b"\r" in data:
        raise Unusual("carriage returns")
    lines = lines_of(data)
    i = _skip(lines, 0)
    files: list[FileDiff] = []
    while i < len(lines):
        fd, i = _file(lines, i)
        files.append(fd)
        i = _skip(lines, i)
    if not files:
        raise Unusual("no git diff")
    return files


def _skip(lines: list[bytes], i: int) -> int:
    """The next "diff --git" line from i.  The text skipped (the message,
    the diffstat, the signature) must not hold what git apply would read
    as a diff of another kind or a stray hunk."""
    while i < len(lines) and not lines[i].startswith(b"diff --git "):
        if lines[i].startswith(DIFF_LIKE):
            raise Unusual(f"diff-like line outside a git diff: {lines[i][:40]!r}")
        i += 1
    return i


def _file(lines: list[bytes], i: int) -> tuple[FileDiff, int]:
    m = HEADER.fullmatch(lines[i])
    if not m:
        raise Unusual("a diff --git line with unusual names")
    a, b = (g.decode() for g in m.groups())
    if not (plain_path(a) and plain_path(b)):
        raise Unusual("a path git may refuse")
    fd = FileDiff(a, b)
    renamed: dict[str, str] = {}
    new = deleted = False
    i += 1
    while i < len(lines) and not lines[i].startswith((b"--- ", b"@@ ", b"diff --git ")):
        line = lines[i]
        key = next((k for k in MODE_LINES if line.startswith(k)), None)
        if key:
            mode = line[len(key):].rstrip(b"\n")
            if mode not in MODES:
                raise Unusual(f"mode {mode!r}")
            setattr(fd, MODE_LINES[key], mode)
            new |= key == b"new file mode "
            deleted |= key == b"deleted file mode "
        elif line.startswith(b"index "):
            im = INDEX.fullmatch(line)
            if not im:
                raise Unusual("an index line git reads otherwise")
            if im.group(1):
                if im.group(1) not in MODES:
                    raise Unusual(f"mode {im.group(1)!r}")
                fd.old_mode = fd.old_mode or im.group(1)
        elif line.startswith((b"rename from ", b"rename to ")):
            k, _, v = line.rstrip(b"\n").partition(b" ")[2].partition(b" ")
            renamed[k.decode()] = v.decode("utf-8", "replace")
        elif re.fullmatch(rb"similarity index \d+%\n", line):
            pass
        elif line.startswith(OTHER_HEADERS):
            raise Unusual(f"header line {line[:40]!r}")
        else:
            break               # not a header line: git ends the header here too
        i += 1
    if new and deleted:
        raise Unusual("new and deleted")
    if renamed:
        if renamed != {"from": a, "to": b} or new or deleted or a == b:
            raise Unusual("a rename git reads otherwise")
    elif a != b:
        raise Unusual("two names without a rename")
    if new:
        fd.old = None
        if fd.new_mode is None:
            raise Unusual("a new file without a mode")
    if deleted:
        fd.new = None
    i = _names(lines, i, fd)
    while i < len(lines) and lines[i].startswith(b"@@ -"):
        h, i = _hunk(lines, i)
        fd.hunks.append(h)
    if new and any(h.pre for h in fd.hunks) or deleted and any(h.post for h in fd.hunks):
        raise Unusual("a new file with old lines, or a deleted one with new lines")
    return fd, i


def _names(lines: list[bytes], i: int, fd: FileDiff) -> int:
    """The ---/+++ lines, when there are hunks: they must name what the
    diff --git line (and the rename or new/deleted lines) named."""
    if i < len(lines) and lines[i].startswith(b"--- "):
        want = [b"--- " + (b"a/" + fd.old.encode()
                          if fd.old else b"/dev/null") + b"\n",
                b"+++ " + (b"b/" + fd.new.encode()
                          if fd.new else b"/dev/null") + b"\n"]
        if lines[i:i + 2] != want:
            raise Unusual("---/+++ lines git reads otherwise")
        i += 2
    elif i < len(lines) and lines[i].startswith(b"@@ "):
        raise Unusual("hunks without ---/+++ lines")
    return i


def _hunk(lines: list[bytes], i: int) -> tuple[Hunk, int]:
    m = HUNK.match(lines[i])
    if not m:
        raise Unusual("a hunk header git reads otherwise")
    old_n = int(m.group(2)) if m.group(2) is not None else 1
    new_n = int(m.group(4)) if m.group(4) is not None else 1
    h = Hunk(int(m.group(1)), int(m.group(3)))
    i += 1
    kinds: list[bytes] = []       # per line: b" ", b"-" or b"+"
    while old_n or new_n:
        if i >= len(lines) or not lines[i].endswith(b"\n"):
            raise Unusual("a hunk shorter than its header says")
        line, kind = lines[i], lines[i][:1]
        if kind == b"\n":
            kind, line = b" ", b" \n"       # an empty context line
        if kind == b" ":
            h.pre.append(line[1:])
            h.post.append(line[1:])
            old_n, new_n = old_n - 1, new_n - 1
        elif kind == b"-":
            h.pre.append(line[1:])
            old_n -= 1
        elif kind == b"+":
            h.post.append(line[1:])
            new_n -= 1
        elif kind == b"\\":
            _no_newline(h, kinds, line, lines[i - 1])
            i += 1
            continue
        else:
            raise Unusual(f"a hunk line {line[:20]!r}")
        if old_n < 0 or new_n < 0:
            raise Unusual("a hunk longer than its header says")
        kinds.append(kind)
        i += 1
    if i < len(lines) and lines[i].startswith(b"\\"):
        _no_newline(h, kinds, lines[i], lines[i - 1])
        i += 1
    changes = [n for n, k in enumerate(kinds) if k != b" "]
    if not changes:
        raise Unusual("a hunk without changes")
    h.leading, h.trailing = changes[0], len(kinds) - 1 - changes[-1]
    return h, i


def _no_newline(h: Hunk, kinds: list[bytes], line: bytes, before: bytes) -> None:
    """"\\ No newline at end of file": the line before has none."""
    if len(line) < 12 or not line.startswith(b"\\ ") or not kinds or before.startswith(b"\\") \
            or before[:1] not in (b" ", b"-", b"+"):
        raise Unusual("a no-newline marker git reads otherwise")
    kind = kinds[-1]
    for image, used in ((h.pre, kind != b"+"), (h.post, kind != b"-")):
        if used:
            if image[-1] in (b"\n", b""):
                raise Unusual("no newline after an empty line")
            image[-1] = image[-1][:-1]


def apply(old: bytes, hunks: list[Hunk], search: bool = True) -> bytes:
    """old with every hunk applied where git apply puts it, or Unusual.

    Each hunk goes where its old lines match exactly, trying the lines in
    git's order (from where the header says, then one line further, one
    line back, two lines further, ...), never over lines an earlier hunk
    wrote.  search=False tries the first line only: with
    apply.ignoreWhitespace set, git accepts inexact matches further on."""
    img = lines_of(old)
    patched = [False] * len(img)        # written by a hunk before this one
    for h in hunks:
        match_beginning = h.old_start in (0, 1)
        match_end = h.trailing == 0
        if match_beginning:
            start = 0
        elif match_end:
            start = len(img) - len(h.pre)
            if start < 0:
                start = len(img)
        else:
            start = min(h.new_start - 1 if h.new_start else 0, len(img))
        at = _find(img, patched, h.pre, start, match_beginning, match_end,
                   search and not match_beginning and not match_end)
        end = at + len(h.pre)
        img[at:end] = h.post
        patched[at:end] = [True] * len(h.post)
    return b"".join(img)


def _find(img: list[bytes], patched: list[bool], pre: list[bytes], start: int,
          match_beginning: bool, match_end: bool, search: bool) -> int:
    n, size = len(img), len(pre)

    def fits(at: int) -> bool:
        end = at + size
        return end <= n and not (match_end and end != n) and not (match_beginning and at) \
            and img[at:end] == pre and not any(patched[at:end])
    if fits(start):
        return start
    # Further on, git compares bytes (a last line without a newline would
    # match a longer one) and line hashes: the same as lines only when
    # every line of the hunk ends with a newline.
    if not search or any(not line.endswith(b"\n") for line in pre):
        raise Unusual("a hunk that does not match where git tries first")
    back = fwd = cur = start
    i = 0
    while True:
        while True:
            if back == 0 and fwd == n:
                raise Unusual("a hunk that matches nowhere")
            if i & 1:
                if back == 0:
                    i += 1
                    continue
                back -= 1
                cur = back
            else:
                if fwd == n:
                    i += 1
                    continue
                fwd += 1
                cur = fwd
            break
        if fits(cur):
            return cur
        i += 1
