"""Mutants switched at boot: one kernel carries a topic's mutants, each
turned on by the boot parameter ktopic_mutant=N.

A pure text transform (no git, no kbuild).  Takes a mutant's diff and the
texts of the files it touches on the topic's head; gives, for each file,
the regions of the head's text that the mutant changes, each grown to
whole statements of a function body:

    if (__builtin_expect(ktopic_mutant == N, 0)) {
        <the mutant's lines>
    } else {
        <the head's lines>
    }

or the one-line reason the mutant cannot be switched (it then gets a
kernel of its own, as before).  Regions are found on the head's text, so
the mutants of one file compose: plan() writes every region of every
mutant into the head's text at once, and regions of several mutants that
overlap share one run of the head's lines with a branch each.
switch_unit() is the file that defines the parameter; it and the
declaration each switched file gets exist only in the switched tree,
never in a branch.  resolve() is the inverse: what the compiler sees
with ktopic_mutant=N.

A change in the body of a do { ... } while (0) macro is switched inside
that block, each line written ending in a continuation.

What is not switched: a change outside a function body (file scope, a
struct, an initializer), a preprocessor line, a macro body outside a
do-while block (an expression macro, a statement expression), a label
that both the head and the mutant define in the region, a region that
no growth makes a run of whole statements within a bounded number of
lines, a header the base already has (an inline used all over
the tree: switching it would recompile most of the kernel), and anything
that is not C (Kconfig, Makefiles, assembly).  A header that the topic
itself adds (few includers) is switched like a .c file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

VAR = "ktopic_mutant"
SWITCH_PATH = "lib/ktopic_mutant.c"
SWITCH_MAKEFILE = "lib/Makefile"
DECL = f"extern int {VAR};"
# The markers of a switch's last two lines (resolve() reads them).
OFF, END = f"/* {VAR} off */", f"/* {VAR} */"
_IF = re.compile(r"^([ \t]*)(?:\} else )?if \(__builtin_expect\(" + VAR + r" == (\d+), 0\)\) \{$")
# How far a region may grow beyond the lines a mutant changes.
MAX_GROWTH = 160

_TYPE_WORDS = {
    "static", "const", "volatile", "unsigned", "signed", "int", "long", "short", "char",
    "bool", "_Bool", "void", "float", "double", "struct", "union", "enum", "typedef",
    "register", "auto", "extern", "size_t", "ssize_t", "u8", "u16", "u32", "u64", "s8",
    "s16", "s32", "s64", "__u8", "__u16", "__u32", "__u64", "__s32", "__s64",
}
_NOT_DECL_START = {"return", "goto", "case", "default", "else", "do", "sizeof", "if",
                   "while", "for", "switch", "break", "continue", "asm", "__asm__",
                   "typeof", "__typeof__"}
_DECL_MACRO = re.compile(r"^(?:DEFINE|DECLARE)_\w*$|^LIST_HEAD$|^HLIST_HEAD$")
_OPEN, _CLOSE = "([{", ")]}"
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\f\v\r]+)
  | (?P<nl>\n)
  | (?P<lc>//[^\n]*)
  | (?P<bc>/\*)
  | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<word>[A-Za-z_0-9]\w*)
  | (?P<punct>.)
""", re.X | re.S)


class NotSwitchable(Exception):
    """One line: why a mutant cannot be switched at boot."""


# --------------------------------------------------------------- the lexer

@dataclass
class Lexed:
    """A C text as the transform sees it: per line (0-based) its
    significant tokens, whether it is part of a preprocessor directive,
    and whether it starts inside a comment."""
    lines: list[str]
    tokens: list[list[str]]
    pp: list[bool]
    in_comment: list[bool]
    directive: list[int] = field(default_factory=list)   # its first line, -1: none


def lex(lines: list[str]) -> Lexed:
    n = len(lines)
    tokens: list[list[str]] = [[] for _ in range(n)]
    pp = [False] * n
    in_comment = [False] * n
    directive = [-1] * n
    comment = False
    cont = False            # the previous line ended a directive line with "\"
    for i, line in enumerate(lines):
        in_comment[i] = comment
        if cont or (not comment and line.lstrip().startswith("#")):
            pp[i] = True
            directive[i] = directive[i - 1] if cont else i
            cont = line.rstrip("\n").endswith("\\")
            comment = _comment_after(line, comment)
            continue
        pos = 0
        text = line if line.endswith("\n") else line + "\n"
        while pos < len(text):
            if comment:
                end = text.find("*/", pos)
                if end < 0:
                    break
                comment, pos = False, end + 2
                continue
            m = _TOKEN.match(text, pos)
            pos = m.end()
            kind = m.lastgroup
            if kind == "bc":
                comment = True
            elif kind == "str":
                tokens[i].append("STR")
            elif kind in ("word", "punct"):
                tokens[i].append(m.group())
    return Lexed(lines, tokens, pp, in_comment, directive)


_DEFINE = re.compile(r"^\s*#\s*define\s+\w+(?:\([^)]*\))?")
_CONT = re.compile(r"\s*\\$")


def _macro_at(lx: Lexed, start: int, end: int) -> tuple[int, int] | None:
    """The #define [first, end) whose body holds lines [start, end) (or
    an insertion before start), with at least one body line after them;
    None when they are no such lines."""
    if start <= 0 or start >= len(lx.lines):
        return None
    d = lx.directive[start]
    if d < 0 or d == start or not _DEFINE.match(lx.lines[d]):
        return None
    e = start
    while e < len(lx.lines) and lx.directive[e] == d:
        e += 1
    return (d, e) if end < e else None


def _macro_lex(lines: list[str], d: int, e: int) -> Lexed:
    """The body of the #define at lines [d, e) lexed as code (its name and
    parameters and the line continuations left out), line for line."""
    body = [_DEFINE.sub("", lines[d])] + lines[d + 1:e]
    return lex([_CONT.sub("", x.rstrip("\n")) + "\n" for x in body])


def _open_brackets(lx: Lexed, line: int, before: int,
                   skip_pp: bool) -> list[tuple[str, list[str]]]:
    """The brackets still open at the start of line, outermost first, each
    with the (up to) before tokens that precede it; preprocessor lines are
    left out if skip_pp."""
    stack: list[tuple[str, list[str]]] = []
    window: list[str] = []
    for i in range(line):
        if skip_pp and lx.pp[i]:
            continue
        for t in lx.tokens[i]:
            if t in _OPEN:
                stack.append((t, window[-before:]))
            elif t in _CLOSE and stack:
                stack.pop()
            window.append(t)
            if len(window) > 2 * before + 2:
                window = window[-before - 1:]
    return stack


def _macro_block(lx: Lexed, line: int) -> str:
    """"ok" when line of a macro body lies in its do { ... } while (0)
    block (or a bare block), where statements are; else why not."""
    stack = _open_brackets(lx, line, before=1, skip_pp=False)
    if not stack or any(t != "{" for t, _ in stack) or stack[0][1] not in ([], ["do"]):
        return "in a macro body, not in its do-while block"
    return "ok"


def _comment_after(line: str, comment: bool) -> bool:
    """Whether a comment is still open at the end of a directive line."""
    pos = 0
    while True:
        if comment:
            end = line.find("*/", pos)
            if end < 0:
                return True
            comment, pos = False, end + 2
        else:
            m = re.compile(r'/\*|//|"(?:\\.|[^"\\])*"').search(line, pos)
            if not m or m.group() == "//":
                return False
            if m.group() == "/*":
                comment, pos = True, m.end()
            else:
                pos = m.end()


# ------------------------------------------------------------- the diff

@dataclass
class FileChange:
    path: str
    hunks: list[list[tuple[str, str]]]     # (" "|"-"|"+", line with its "\n")
    starts: list[int]                      # each hunk's old start (1-based, as written)


def parse_diff(diff: str) -> list[FileChange]:
    """The files and hunks of a git diff; a diff that adds, deletes or
    renames a file, or is binary, is not switchable."""
    out: list[FileChange] = []
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            m = re.match(r"diff --git a/(\S+) b/(\S+)", line)
            if not m or m.group(1) != m.group(2):
                raise NotSwitchable(f"renames a file: {line.strip()}")
            out.append(FileChange(m.group(2), [], []))
            i += 1
            continue
        if line.startswith(("new file mode", "deleted file mode", "rename ", "copy ")):
            raise NotSwitchable(f"{line.split(' mode')[0].strip()}: {out[-1].path}")
        if line.startswith(("GIT binary patch", "Binary files ")):
            raise NotSwitchable(f"binary: {out[-1].path}")
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
        if m and out:
            old_n = int(m.group(2)) if m.group(2) is not None else 1
            new_n = int(m.group(4)) if m.group(4) is not None else 1
            hunk: list[tuple[str, str]] = []
            i += 1
            while (old_n or new_n) and i < len(lines):
                x = lines[i]
                if x.startswith("\\"):
                    i += 1
                    continue
                if x[:1] in (" ", "-", "+"):
                    kind, text = x[0], x[1:]
                elif not x.strip():
                    kind, text = " ", "\n"          # a blank context line, its space lost
                else:
                    break
                if not text.endswith("\n"):
                    text += "\n"
                hunk.append((kind, text))
                old_n -= kind != "+"
                new_n -= kind != "-"
                i += 1
            out[-1].hunks.append(hunk)
            out[-1].starts.append(int(m.group(1)))
            continue
        i += 1
    return out


# --------------------------------------------------------- ops and regions

@dataclass
class Op:
    """A run of one file: unchanged (old == new, one line) or a change."""
    old: list[str]
    new: list[str]
    changed: bool
    o: int = 0          # first old line index
    n: int = 0          # first new line index


def ops_of(text: str, fc: FileChange) -> tuple[list[Op], list[str], list[str]]:
    """The file as ops (one per unchanged line, one per run of changed
    lines), its old lines and its new lines; a hunk whose lines are not
    in the text makes the mutant not switchable (it does not apply)."""
    old = text.splitlines(keepends=True)
    if old and not old[-1].endswith("\n"):
        old[-1] += "\n"
    placed = []
    floor = 0
    for hunk, start in zip(fc.hunks, fc.starts):
        pre = [t for k, t in hunk if k != "+"]
        at = _find(old, pre, max(start - 1, 0), floor)
        if at is None:
            raise NotSwitchable(f"does not apply to {fc.path} (hunk at line {start})")
        placed.append((at, hunk))
        floor = at + len(pre)
    ops: list[Op] = []
    pos = 0
    for at, hunk in placed:
        ops += [Op([x], [x], False) for x in old[pos:at]]
        run: Op | None = None
        for kind, t in hunk:
            if kind == " ":
                if run:
                    ops.append(run)
                    run = None
                ops.append(Op([t], [t], False))
            else:
                run = run or Op([], [], True)
                (run.old if kind == "-" else run.new).append(t)
        if run:
            ops.append(run)
        pos = at + sum(k != "+" for k, _ in hunk)
    ops += [Op([x], [x], False) for x in old[pos:]]
    o = n = 0
    new: list[str] = []
    for op in ops:
        op.o, op.n = o, n
        o += len(op.old)
        n += len(op.new)
        new += op.new
    return ops, old, new


def _find(lines: list[str], pre: list[str], want: int, floor: int) -> int | None:
    hits = [i for i in range(floor, len(lines) - len(pre) + 1) if lines[i:i + len(pre)] == pre]
    return min(hits, key=lambda i: abs(i - want)) if hits else None


@dataclass
class Region:
    """Lines [start, end) of the head's file, replaced by new when switched on."""
    path: str
    start: int
    end: int
    old: list[str]
    new: list[str]
    macro: bool = False              # in a macro body: every line continues


def _prev_tokens(lx: Lexed, line: int, count: int = 3) -> list[str]:
    """The last `count` significant tokens before line (nearest last)."""
    out: list[str] = []
    i = line - 1
    while i >= 0 and len(out) < count:
        if not lx.pp[i]:
            out = lx.tokens[i][-(count - len(out)):] + out if lx.tokens[i] else out
        i -= 1
    return out[-count:]


def _next_token(lx: Lexed, line: int) -> str | None:
    for i in range(line, len(lx.lines)):
        if not lx.pp[i] and lx.tokens[i]:
            return lx.tokens[i][0]
    return None


def _statements(toks: list[str]) -> list[list[str]]:
    """Top-level statements of a balanced token run (their first tokens
    are what a declaration check needs)."""
    out, cur, depth = [], [], 0
    for t in toks:
        cur.append(t)
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
            if depth == 0 and t == "}":
                out.append(cur)
                cur = []
        elif t == ";" and depth == 0:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def _is_decl(stmt: list[str]) -> bool:
    if not stmt:
        return False
    a = stmt[0]
    if a in _TYPE_WORDS or _DECL_MACRO.match(a):
        return True
    if a in _NOT_DECL_START or not re.match(r"[A-Za-z_]\w*$", a) or len(stmt) < 2:
        return False
    b = stmt[1]
    if re.match(r"[A-Za-z_]\w*$", b) and b not in _NOT_DECL_START:
        return True
    return b == "*" and len(stmt) > 2 and re.match(r"[A-Za-z_*]", stmt[2]) is not None and \
        any(t in ("=", ";", ",") for t in stmt[3:4])


def check_side(lx: Lexed, start: int, end: int) -> str:
    """What a region [start, end) of one side's lines needs: "ok", "up",
    "down", "decl" (it declares at its top level: grow to the end of the
    block) or "fatal: <reason>"."""
    if any(lx.pp[start:end]):
        first = head = next(i for i in range(start, end) if lx.pp[i])
        while head > 0 and lx.pp[head - 1] and lx.lines[head - 1].rstrip("\n").endswith("\\"):
            head -= 1
        what = "a macro body" if head < first else "a preprocessor line"
        return f"fatal: {what} ({lx.lines[head].strip()[:40]})"
    if start < len(lx.in_comment) and lx.in_comment[start]:
        return "up"
    if end < len(lx.in_comment) and lx.in_comment[end]:
        return "down"
    toks = [t for i in range(start, end) for t in lx.tokens[i]]
    stack: list[str] = []
    unmatched_close = False
    for t in toks:
        if t in _OPEN:
            stack.append(t)
        elif t in _CLOSE:
            if stack and _OPEN.index(stack[-1]) == _CLOSE.index(t):
                stack.pop()
            else:
                unmatched_close = True
                stack = []
    if unmatched_close:
        return "up"
    if stack:
        return "down"
    prev = _prev_tokens(lx, start)
    if not prev:
        return "fatal: at file scope"
    if prev[-1] not in (";", "{", "}", ":"):
        return "up"
    if prev[-1] == ":" and not (len(prev) >= 2 and (prev[-2] == "default" or (
            re.match(r"\w+$", prev[-2]) and (len(prev) < 3 or prev[-3] in (";", "{", "}", ":")
                                            or prev[-3] == "case")))):
        return "up"
    if toks and toks[0] in ("else", "while"):
        return "up"
    if toks and toks[-1] not in (";", "}"):
        return "down"
    if _next_token(lx, end) in ("else", "while"):
        return "down"
    for i, t in enumerate(toks):
        if t == "case" or (t == "default" and i + 1 < len(toks) and toks[i + 1] == ":"):
            return "fatal: a case label"
    if any(_is_decl(s) for s in _statements(toks)):
        return "decl"
    return "ok"


def labels(lx: Lexed, start: int, end: int) -> list[str]:
    """The goto labels that lines [start, end) define."""
    toks = [t for i in range(start, end) for t in lx.tokens[i]]
    return [toks[i - 1] for i, t in enumerate(toks)
            if t == ":" and i and re.match(r"[A-Za-z_]\w*$", toks[i - 1]) and
            toks[i - 1] != "default" and (i == 1 or toks[i - 2] in (";", "{", "}", ":"))]


def _enclosing(lx: Lexed, line: int) -> str:
    """"ok" when line lies in a compound statement (a function body or a
    block in one); else why not."""
    stack = _open_brackets(lx, line, before=3, skip_pp=True)
    braces = [before for t, before in stack if t == "{"]
    if not braces or any(t != "{" for t, _ in stack):
        return "at file scope" if not stack else "inside an expression"
    before = braces[-1]
    if not before or before[-1] in ("=", ",") or \
            (len(before) >= 2 and before[-2] in ("struct", "union", "enum")) or \
            before[-1] in ("struct", "union", "enum"):
        return "in an initializer or a type, not in a function body"
    if len(braces) == 1 and before[-1] != ")":
        return "not in a function body"
    return "ok"


def _span(ops: list[Op], first: int, last: int) -> tuple[int, int, int, int]:
    """Old lines [o1, o2) and new lines [n1, n2) of ops[first:last]."""
    return (ops[first].o, ops[last - 1].o + len(ops[last - 1].old),
            ops[first].n, ops[last - 1].n + len(ops[last - 1].new))


def grow(path: str, ops: list[Op], first: int, last: int, old: Lexed,
         new: Lexed) -> tuple[int, int, bool]:
    """Grow ops[first:last] until both sides are runs of whole statements
    in a function body, or in the do-while block of one macro's body:
    (first, last, whether in a macro), or NotSwitchable."""
    o1, o2, n1, n2 = _span(ops, first, last)
    mo, mn = _macro_at(old, o1, o2), _macro_at(new, n1, n2)
    if mo and mn:
        a, b = _grow(path, ops, first, last, _macro_lex(old.lines, *mo),
                     _macro_lex(new.lines, *mn), (mo[0], mn[0]), (mo[1], mn[1]))
        return a, b, True
    return (*_grow(path, ops, first, last, old, new, (0, 0), None), False)


def _grow(path: str, ops: list[Op], first: int, last: int, old: Lexed, new: Lexed,
          at: tuple[int, int], ends: tuple[int, int] | None) -> tuple[int, int]:
    """grow() on lexed texts whose line 0 is line at (old, new) of the
    file; ends: where a macro's lines end (the region stays inside)."""
    changed = sum(len(op.old) + len(op.new) for op in ops[first:last])
    to_block_end = False
    while True:
        o1, o2, n1, n2 = _span(ops, first, last)
        where_at = f"{path}:{o1 + 1}: " + ("in a macro body, " if ends else "")
        o1, o2, n1, n2 = o1 - at[0], o2 - at[0], n1 - at[1], n2 - at[1]
        needs = [check_side(old, o1, o2), check_side(new, n1, n2)]
        fatal = next((x for x in needs if x.startswith("fatal")), None)
        if fatal:
            raise NotSwitchable(where_at + fatal[7:])
        if "decl" in needs:
            to_block_end = True
        if "up" not in needs and "down" not in needs:
            where = _macro_block(old, o1) if ends else _enclosing(old, o1)
            if where != "ok":
                raise NotSwitchable(f"{path}:{o1 + at[0] + 1}: {where}")
            # A label the switch would define twice in the function (one
            # only the mutant or only the head has is defined once).
            both = [x for x in labels(old, o1, o2) if x in labels(new, n1, n2)]
            if both:
                raise NotSwitchable(where_at + f"a label both sides have ({both[0]})")
        if "up" in needs:
            step = "up"
        elif "down" in needs:
            step = "down"
        elif to_block_end and _next_token(old, o2) != "}":
            step = "down"
        else:
            return first, last
        if step == "up" and first > 0 and (not ends or ops[first - 1].o > at[0]):
            first -= 1
        elif step == "down" and last < len(ops) and (
                not ends or (ops[last].o + len(ops[last].old) < ends[0] and
                             ops[last].n + len(ops[last].new) < ends[1])):
            last += 1
        else:
            raise NotSwitchable(where_at + "no whole statements before it ends")
        size = sum(len(op.old) + len(op.new) for op in ops[first:last])
        if size - changed > 2 * MAX_GROWTH:
            raise NotSwitchable(f"{path}:{o1 + 1}: no run of whole statements within "
                                f"{MAX_GROWTH} lines")


def header_ok(path: str, topic_headers: set[str]) -> str:
    """"" when a file of that path can carry a switch; else why not."""
    if path.endswith(".c"):
        return ""
    if path.endswith(".h"):
        if path in topic_headers:
            return ""
        return "a header the base has (its includers are most of the tree)"
    return "not C"


def regions(diff: str, texts: dict[str, str], topic_headers: set[str] = frozenset()
            ) -> list[Region]:
    """The mutant's regions on the head's texts (path -> text); raises
    NotSwitchable with the one-line reason."""
    out: list[Region] = []
    for fc in parse_diff(diff):
        why = header_ok(fc.path, set(topic_headers))
        if why:
            raise NotSwitchable(f"{fc.path}: {why}")
        if fc.path not in texts:
            raise NotSwitchable(f"{fc.path}: not in the head")
        ops, old_lines, new_lines = ops_of(texts[fc.path], fc)
        old, new = lex(old_lines), lex(new_lines)
        spans: list[list[int]] = []
        for i, op in enumerate(ops):
            if not op.changed:
                continue
            a, b, macro = grow(fc.path, ops, i, i + 1, old, new)
            # A change that an earlier region already covers, or whose
            # region reaches into it: one region for both.
            while spans and a < spans[-1][1]:
                a = min(a, spans.pop()[0])
                a, b, macro = grow(fc.path, ops, a, b, old, new)
            spans.append([a, b, macro])
        for a, b, macro in spans:
            out.append(Region(fc.path, ops[a].o, ops[b - 1].o + len(ops[b - 1].old),
                              [x for op in ops[a:b] for x in op.old],
                              [x for op in ops[a:b] for x in op.new], macro))
    if not out:
        raise NotSwitchable("changes nothing")
    return out


# --------------------------------------------------------- writing a file

@dataclass
class Placed:
    """Where one region landed in a switched file (1-based lines)."""
    number: int
    first: int
    last: int


@dataclass
class SwitchedFile:
    path: str
    text: str
    placed: list[Placed] = field(default_factory=list)

    def mutant_at(self, line: int) -> int | None:
        """The mutant whose switched region holds line (1-based), if any."""
        return next((p.number for p in self.placed if p.first <= line <= p.last), None)


def overlaps(a: Region, b: Region) -> bool:
    if a.path != b.path:
        return False
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def _indent(lines: list[str], fallback: str) -> str:
    for x in lines:
        if x.strip():
            return re.match(r"[ \t]*", x).group()
    return fallback


def decl_line(lines: list[str]) -> int:
    """Where the declaration goes: after the first block of #include
    lines (0 when the file has none)."""
    lx = lex(lines)
    i = next((k for k, x in enumerate(lines) if x.startswith("#include") and not
              lx.in_comment[k]), None)
    if i is None:
        return 0
    while i < len(lines) and lines[i].startswith("#include"):
        i += 1
    return i


def _clusters(taken: list[tuple[int, Region]]) -> list[tuple[int, int, dict[int, list[Region]]]]:
    """One file's regions in runs of overlapping ones: (start, end,
    {mutant: its regions in the run}), in the file's order."""
    out: list[tuple[int, int, dict[int, list[Region]]]] = []
    for n, r in sorted(taken, key=lambda x: (x[1].start, x[1].end)):
        if out:
            s, e, members = out[-1]
            if overlaps(Region(r.path, s, e, [], []), r) or \
                    any(overlaps(x, r) for rs in members.values() for x in rs):
                members.setdefault(n, []).append(r)
                out[-1] = (s, max(e, r.end), members)
                continue
        out.append((r.start, r.end, {n: [r]}))
    return out


def _variant(lines: list[str], s: int, e: int, rs: list[Region]) -> list[str]:
    """lines[s:e] with the regions rs (inside it) replaced by their new lines."""
    out: list[str] = []
    pos = s
    for r in sorted(rs, key=lambda r: (r.start, r.end)):
        out += lines[pos:r.start] + r.new
        pos = r.end
    return out + lines[pos:e]


def _union_ok(lx: Lexed, s: int, e: int) -> bool:
    """The run of the head's lines [s, e) is whole statements of a block."""
    mac = _macro_at(lx, s, e)
    where = _enclosing
    if mac:
        lx, s, e, where = _macro_lex(lx.lines, *mac), s - mac[0], e - mac[0], _macro_block
    need = check_side(lx, s, e)
    return (need == "ok" or (need == "decl" and _next_token(lx, e) == "}")) and \
        where(lx, s) == "ok" and not labels(lx, s, e)


def write_file(path: str, text: str, mine: list[tuple[int, Region]]) -> SwitchedFile:
    """text with each (number, region) switched.  Regions of several
    mutants that overlap become one run of the head's lines with a branch
    per mutant (if ... else if ... else <the head's lines>)."""
    lines = _lines(text)
    at = decl_line(lines)
    edits: list[tuple[int, int, list[str], list[tuple[int, int, int]]]] = \
        [(at, at, [DECL + "\n"], [])]
    for s, e, members in _clusters(mine):
        ind = _indent([x for rs in members.values() for r in rs for x in r.old + r.new],
                      "\t")
        eol = " \\\n" if any(r.macro for rs in members.values() for r in rs) else "\n"
        body: list[str] = []
        spans = []
        for k, (n, rs) in enumerate(members.items()):
            body.append(f"{ind}{'} else ' if k else ''}if (__builtin_expect({VAR} == {n}, 0)) {{"
                        + eol)
            first = len(body)
            body += _variant(lines, s, e, rs)
            spans.append((n, first, len(body)))
        body += [f"{ind}}} else {{ {OFF}{eol}", *lines[s:e], f"{ind}}} {END}{eol}"]
        edits.append((s, e, body, spans))
    edits.sort(key=lambda x: (x[0], x[1], bool(x[3])))
    out: list[str] = []
    placed: list[Placed] = []
    pos = 0
    for s, e, body, spans in edits:
        out += lines[pos:s]
        placed += [Placed(n, len(out) + a, len(out) + b + 1) for n, a, b in spans]
        out += body
        pos = max(pos, e)
    out += lines[pos:]
    return SwitchedFile(path, "".join(out), placed)


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def switch_unit() -> str:
    """The file that defines the switch (lib/ktopic_mutant.c)."""
    return ("// SPDX-License-Identifier: GPL-2.0\n"
            "/*\n"
            " * The mutant switch of a ktopic mutation build: ktopic_mutant=N on the\n"
            " * command line turns mutant N on.  Never part of a branch.\n"
            " */\n"
            "#include <linux/export.h>\n"
            "#include <linux/moduleparam.h>\n"
            "\n"
            f"{DECL}\n"
            f"int {VAR};\n"
            f"EXPORT_SYMBOL({VAR});\n"
            f"core_param({VAR}, {VAR}, int, 0444);\n")


def switch_makefile(text: str) -> str:
    """lib/Makefile with the switch unit built in."""
    return text + ("" if text.endswith("\n") or not text else "\n") + \
        "obj-y += ktopic_mutant.o\n"


@dataclass
class Plan:
    """A topic's switched files: which mutants are switched, which not and why."""
    files: dict[str, SwitchedFile] = field(default_factory=dict)
    switched: list[int] = field(default_factory=list)
    fallback: dict[int, str] = field(default_factory=dict)
    regions: dict[int, list[Region]] = field(default_factory=dict)


def plan(mutants: list[tuple[int, str]], texts: dict[str, str],
         topic_headers: set[str] = frozenset()) -> Plan:
    """Switch every mutant (number, diff) that can be, in order, on the
    head's texts.  A mutant whose region overlaps another's shares one
    run of lines with it (a branch each), when that run is whole
    statements; else it falls back."""
    p = Plan()
    taken: list[tuple[int, Region]] = []
    lexed: dict[str, Lexed] = {}
    for n, diff in mutants:
        try:
            rs = regions(diff, texts, topic_headers)
        except NotSwitchable as e:
            p.fallback[n] = str(e)
            continue
        why = ""
        for path in dict.fromkeys(r.path for r in rs):
            lx = lexed.setdefault(path, lex(_lines(texts[path])))
            for s, e, members in _clusters([x for x in taken if x[1].path == path] +
                                           [(n, r) for r in rs if r.path == path]):
                if n in members and len(members) > 1 and not _union_ok(lx, s, e):
                    other = next(m for m in members if m != n)
                    why = f"{path}:{s + 1}: overlaps mutant {other}, and the lines " \
                          "both change are not whole statements"
        if why:
            p.fallback[n] = why
            continue
        taken += [(n, r) for r in rs]
        p.switched.append(n)
        p.regions[n] = rs
    for path in dict.fromkeys(r.path for _, r in taken):
        p.files[path] = write_file(path, texts[path], [(n, r) for n, r in taken
                                                       if r.path == path])
    return p


def resolve(text: str, n: int) -> str:
    """A switched text as the compiler sees it with ktopic_mutant=n: the
    head's text when n is no mutant of it (0), else the head with mutant
    n applied.  The inverse that the tests check the transform by."""
    out: list[str] = []
    lines = _lines(text)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _IF.match(_CONT.sub("", line.rstrip("\n")))
        if line.rstrip("\n") == DECL:
            i += 1
            continue
        if not m:
            out.append(line)
            i += 1
            continue
        ind = m.group(1)
        take = int(m.group(2)) == n
        chosen = False
        i += 1
        while True:
            line = _CONT.sub("", lines[i].rstrip("\n"))
            m = _IF.match(line)
            if m and m.group(1) == ind:
                chosen = chosen or take
                take = not chosen and int(m.group(2)) == n
            elif line == f"{ind}}} else {{ {OFF}":
                chosen = chosen or take
                take = not chosen
            elif line == f"{ind}}} {END}":
                break
            elif take:
                out.append(lines[i])
            i += 1
        i += 1
    return "".join(out)
