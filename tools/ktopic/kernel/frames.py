"""The code a sanitizer report names: its title's functions, its stack
frames and any `file:line` the console printed.

    BUG: KCSAN: data-race in six_lock_ip_read / six_unlock_ip_write
    write to 0xffff88800a1b2c30 of 8 bytes by task 97 on cpu 2:
     six_unlock_ip_write+0x4d/0x90
     six_kunit_writer+0x61/0xb0 [six_test]

Takes a Finding (console_scan: its message and quoted lines); gives the
function names (the title's first, then the frames', each once, without
offsets, modules or compiler suffixes) and the tree paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ktopic.model.results import Finding

# "data-race in A / B", "assert: race in A / B", "use-after-free in A+0x1/0x2".
_TITLE = re.compile(r"\b(?:race|[a-z-]+) in ([^\s].*?)\s*$")
_FRAME = re.compile(r"^\s*(?:\? )?([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w.-]+\.[chS]):\d+")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Where a KCSAN report stops naming the racing code.
_TAIL = re.compile(r"^(?:Reported by |CPU: \d+ PID: |Hardware name: |value changed: )")
MAX_FUNCTIONS = 24


@dataclass
class Frames:
    functions: list[str] = field(default_factory=list)   # the title's first
    paths: list[str] = field(default_factory=list)       # kernel/locking/six.c

    def named(self) -> str:
        """For a log line: the paths, else the title's functions."""
        return ", ".join(self.paths or self.functions[:2]) or "an unnamed place"


def _function(token: str) -> str:
    """six_lock_ip_read+0x2b/0x120 -> six_lock_ip_read; foo.constprop.0 -> foo."""
    name = token.split("+", 1)[0].split(".", 1)[0].strip()
    return name if _NAME.match(name) else ""


def of(f: Finding) -> Frames:
    """The functions and paths f names."""
    out = Frames()
    title = _TITLE.search(f.message)
    names = [_function(x) for x in title.group(1).split(" / ")] if title else []
    for line in f.lines[1:]:
        if _TAIL.match(line.strip()):
            break
        m = _FRAME.match(line)
        if m:
            names.append(_function(m.group(1)))
    for line in [f.message, *f.lines]:
        out.paths += [p.lstrip("./") for p in _PATH.findall(line)]
    out.functions = [n for n in dict.fromkeys(names) if n][:MAX_FUNCTIONS]
    out.paths = list(dict.fromkeys(out.paths))
    return out
