"""Series hygiene, per patch and per topic: what a maintainer checks in a
series before checkpatch's style does (sign-offs, subject prefixes,
leftovers, recipients); the problem types and their waivers are in
docs/gates.md, "Series hygiene" and "Recipients".

Takes a parsed patch (and a topic's recipients); gives the Problems a
maintainer would point out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.utils import parseaddr

WAIVABLE = {"SUBJECT_PREFIX", "LEFTOVER"}


@dataclass
class Problem:
    type: str
    message: str
    lines: list[str] = field(default_factory=list)
    waived: str = ""


# Subject prefixes by the files a patch touches.  Each row: a regular
# expression searched at the start of a path, and the prefixes a subject may
# use for such a file.  In a prefix, "[/*]" is an optional "/part" (the
# kernel nests: "locking/six:", "mm/filemap:"), "[x]" an optional x, and
# "{name}" the path's named group.  Every matching row counts; the generic
# rows at the end only when no specific row matched.  Prefixes compare
# case-insensitively ("Compiler Attributes:" and "compiler attributes:").
PREFIXES: list[tuple[str, list[str]]] = [
    (r"(kernel/locking/six|include/linux/six\.h)", ["locking/six", "six"]),
    (r"kernel/locking/|include/linux/(lockdep|mutex|rwsem|spinlock|rwlock|seqlock|"
     r"percpu-rwsem|osq_lock|qspinlock)", ["locking[/*]"]),
    (r"Documentation/locking/", ["locking[/*]", "docs[/*]", "Documentation[/*]"]),
    (r"(lib/closure|include/linux/closure\.h|drivers/md/bcache/closure)", ["closure[s]"]),
    (r"drivers/md/bcache/", ["bcache"]),
    (r"mm/|include/linux/(mm|mm_types|mmzone|pagemap|gfp|vmalloc|swap|highmem|"
     r"page-flags|page_ref|pagevec|filemap|memcontrol|writeback)\b", ["mm[/*]"]),
    (r"fs/(?P<fs>[\w-]+)/", ["{fs}", "fs/{fs}"]),
    (r"fs/|include/linux/(fs|dcache|namei|mount|file|fdtable)\.h",
     ["fs[/*]", "vfs", "dcache", "inode", "namei"]),
    (r"block/|include/linux/(bio|blkdev|blk_types|blk-mq|bvec)\.h",
     ["block[/*]", "blk-mq", "bio"]),
    (r"include/linux/compiler", ["compiler attributes", "compiler[/*]", "compiler.h",
                                 "compiler_types.h", "compiler_attributes.h"]),
    (r"kernel/sched/|include/linux/sched(/|\.h)", ["sched[/*]"]),
    (r"Documentation/(?P<doc>[\w-]+)/", ["Documentation[/*]", "docs[/*]", "{doc}[/*]"]),
    (r"Documentation/", ["Documentation[/*]", "docs[/*]"]),
    (r"tools/testing/selftests/", ["selftests[/*]"]),
    (r"MAINTAINERS$", ["MAINTAINERS"]),
    # generic: a lib/ or kernel/ file's own name, a header's name, the top directory
    (r"lib/(?P<lib>[\w-]+)", ["lib[/*]", "{lib}"]),
    (r"kernel/(?P<k>[\w-]+)", ["kernel[/*]", "{k}[/*]"]),
    (r"include/linux/(?P<h>[\w-]+)\.h", ["{h}"]),
    (r"(?P<top>[^/]+)/", ["{top}[/*]"]),
]
_GENERIC_FROM = len(PREFIXES) - 4

_PART = r"(?:/[\w.-]+)*"


def _spec_regex(spec: str, groups: dict[str, str]) -> str:
    out = ""
    i = 0
    while i < len(spec):
        if spec.startswith("[/*]", i):
            out += _PART
            i += 4
        elif spec[i] == "[":
            j = spec.index("]", i)
            out += f"(?:{re.escape(spec[i + 1:j])})?"
            i = j + 1
        elif spec[i] == "{":
            j = spec.index("}", i)
            val = groups.get(spec[i + 1:j])
            if val is None:
                return ""
            out += re.escape(val)
            i = j + 1
        else:
            out += re.escape(spec[i])
            i += 1
    return out


def _shown(spec: str, groups: dict[str, str]) -> str:
    for k, v in groups.items():
        if v is not None:
            spec = spec.replace("{" + k + "}", v)
    return spec.replace("[/*]", "[/...]")


def expected_prefixes(files: list[str]) -> list[tuple[str, str]]:
    """(shown, regex) of every prefix the files allow, in table order."""
    out: list[tuple[str, str]] = []

    def add(row):
        rx, specs = row
        m = re.match(rx, path)
        if not m:
            return False
        groups = m.groupdict()
        for spec in specs:
            r = _spec_regex(spec, groups)
            if r and (spec_shown := _shown(spec, groups)) not in [s for s, _ in out]:
                out.append((spec_shown, r))
        return True
    for path in files:
        specific = [add(row) for row in PREFIXES[:_GENERIC_FROM]]
        if not any(specific):
            for row in PREFIXES[_GENERIC_FROM:]:
                if add(row):
                    break
    tops = {f.split("/", 1)[0] for f in files if "/" in f and not f.startswith("Documentation/")}
    if len(tops) > 2:              # really across the tree
        out.append(("treewide", "treewide"))
    return out


def subject_prefix(subject: str) -> str | None:
    """"locking/six" of "locking/six: add SIX locks" (after any [PATCH ...])."""
    s = re.sub(r"^(\[[^\]]*\]\s*)+", "", subject.strip())
    m = re.match(r"^([^:]{1,60}?):\s+\S", s)
    return m.group(1).strip() if m else None


def prefix_ok(prefix: str, files: list[str]) -> tuple[bool, list[str]]:
    exp = expected_prefixes(files)
    ok = any(re.fullmatch(rx, prefix, re.I) for _, rx in exp)
    return ok, [s for s, _ in exp]


_SOB = re.compile(r"^Signed-off-by:[ \t]*(.*?)[ \t]*$", re.M | re.I)
_LEFTOVER = re.compile(r"\b(EDITME|TODO|FIXME|XXX+|TBD)\b|\*\*\* [A-Z ]+ HERE \*\*\*")


def address(ident: str) -> str:
    """The lower-case mail address of 'Name <addr>' (or of a bare address)."""
    return parseaddr(ident)[1].strip().lower()


def sign_offs(message: str) -> list[str]:
    """Addresses of the Signed-off-by: lines, in order."""
    return [address(m.group(1)) for m in _SOB.finditer(message)]


def check_patch(subject: str, body: str, author: str, author_email: str,
                files: list[str], sender: str = "") -> list[Problem]:
    """The per-patch problems of one patch (see the module's docstring)."""
    probs: list[Problem] = []
    sobs = sign_offs(body)
    who = author_email.strip().lower()
    if who not in sobs:
        probs.append(Problem("SIGN_OFF_AUTHOR",
                             f"no Signed-off-by: from the author {author} <{author_email}>",
                             [ln for ln in body.splitlines() if _SOB.match(ln)] or
                             ["(no Signed-off-by: line)"]))
    snd = address(sender) if sender else ""
    if snd and snd != who:
        if snd not in sobs:
            probs.append(Problem("SIGN_OFF_SENDER",
                                 f"the series is sent by {sender}, whose Signed-off-by: is "
                                 "missing (the one who passes a patch on signs it off)"))
        elif who in sobs and max(i for i, a in enumerate(sobs) if a == snd) < sobs.index(who):
            probs.append(Problem("SIGN_OFF_SENDER",
                                 f"{sender} signs off before the author; the sender's "
                                 "Signed-off-by: comes last"))
    prefix = subject_prefix(subject)
    if prefix is None:
        probs.append(Problem("SUBJECT_PREFIX",
                             f"subject has no 'subsystem: ' prefix: {subject!r}",
                             [f"Subject: {subject}"]))
    else:
        ok, shown = prefix_ok(prefix, files)
        if not ok:
            probs.append(Problem("SUBJECT_PREFIX",
                                 f"subject prefix {prefix + ':'!r} is not one the files touched use "
                                 f"(expected one of: {', '.join(s + ':' for s in shown)})",
                                 [f"Subject: {subject}"] + [f"  touches {f}" for f in files[:8]]))
    for n, line in enumerate([subject] + body.splitlines()):
        m = _LEFTOVER.search(line)
        if m:
            probs.append(Problem("LEFTOVER",
                                 f"{m.group(0)!r} left in the "
                                 f"{'subject' if n == 0 else 'message'}",
                                 [("Subject: " if n == 0 else "") + line]))
    return probs


def check_recipients(to: list[str], cc: list[str], waived: list[tuple[str, str]],
                     wanted: dict[str, list[str]]) -> tuple[list[Problem], list[str]]:
    """wanted: get_maintainer.pl address -> the patches that brought it.
    Returns the problems and the notes (waivers nobody needs)."""
    have = {address(a) for a in to + cc}
    excused = {address(a): r for a, r in waived}
    probs: list[Problem] = []
    needed = set()
    for ident, patches in wanted.items():
        a = address(ident)
        needed.add(a)
        if a in have:
            continue
        if a in excused:
            probs.append(Problem("RECIPIENT", f"{ident} not in to/cc", waived=excused[a]))
            continue
        probs.append(Problem("RECIPIENT",
                             f"get_maintainer.pl names {ident}, who is neither in the topic's "
                             "to/cc nor in recipients-waived",
                             [f"  for {p}" for p in patches]))
    notes = [f"recipients-waived: {a} is not named by get_maintainer.pl (stale waiver?)"
             for a, _ in waived if address(a) not in needed]
    return probs, notes
