"""Where a sanitizer report of the integration branch is: the files its
functions are defined in and the topics whose own commits touch them
(docs/ci.md, "KCSAN").

The console names functions (`data-race in six_lock_ip_read /
six_unlock_ip_write`, and each access's stack), rarely files: a
function is looked up with `git grep` at the branch's commit, first in
the files the topics touch (a topic's own commits, as bisectable.plan()
gives them: not its dependencies'), and only when none of those defines
one, in the whole tree (to name the base's file).

Takes the Runner and the integration target; gives per report (a
console Finding) the Place: its files and the topics that touch them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.gates import bisectable
from ktopic.kernel import frames as framesmod
from ktopic.model.results import Finding
from ktopic.model.targets import Target
from ktopic.plumbing.gitutil import Git

SOURCES = ("*.c", "*.h")


@dataclass
class Place:
    report: Finding
    files: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)     # none: the base's code
    where: str = ""                                     # for a log line


def _definition(fn: str) -> str:
    """A line that starts fn's definition: "static void fn(", "fn(" (the
    type on the line before); a prototype ends in ';' and is left out
    after the grep."""
    return rf"^([A-Za-z_][^;(=]*[^A-Za-z0-9_])?{fn}\("


def defining(git_dir: Path, commit: str, functions: list[str],
             paths: list[str] | None) -> dict[str, list[str]]:
    """Function -> the files at commit that define it, a .c file before a
    header (a header's match is a multi-line prototype's first line, unless
    no .c defines it).  paths: only those (None: every .c and .h)."""
    if not functions or paths == []:
        return {}
    args = ["grep", "-I", "-E"] + [x for f in functions for x in ("-e", _definition(f))]
    out = Git(git_dir).run(*args, commit, "--", *(paths if paths is not None else SOURCES),
                           check=False, binary=True).decode(errors="replace")
    found: dict[str, list[str]] = {}
    for line in out.splitlines():
        _, path, text = (line.split(":", 2) + ["", ""])[:3]
        if text.rstrip().endswith(";"):
            continue
        for f in functions:
            if re.search(_definition(f), text) and path not in found.get(f, []):
                found.setdefault(f, []).append(path)
    return {f: [p for p in ps if p.endswith(".c")] or ps for f, ps in found.items()}


def topic_files(runner, topics: list[str]) -> dict[str, set[str]]:
    """Topic -> the files its own commits change (its dependencies' left out)."""
    git = Git(runner.git_dir)
    out = {}
    for name in topics:
        p = bisectable.plan(runner.m, runner.wd, name)
        out[name] = set(git.run("diff", "--name-only", "--no-renames", p.start,
                                p.head).split()) if p.commits else set()
    return out


def places(runner, t: Target, reports: list[Finding]) -> list[Place]:
    """Each report's files and the topics of t (the integration branch)
    that touch one of them."""
    named = [framesmod.of(f) for f in reports]
    own = topic_files(runner, list(t.spec.topics))
    touched = sorted(set().union(*own.values())) if own else []
    defs = defining(runner.git_dir, t.commit,
                    list(dict.fromkeys(fn for n in named for fn in n.functions)), touched)
    out = []
    for f, n in zip(reports, named):
        files = list(dict.fromkeys(n.paths + [p for fn in n.functions for p in defs.get(fn, [])]))
        out.append(Place(f, files, [name for name in own if own[name] & set(files)]))
    base = [(p, n) for p, n in zip(out, named) if not p.topics]
    if base:
        whole = defining(runner.git_dir, t.commit,
                         list(dict.fromkeys(fn for _, n in base for fn in n.functions[:2])), None)
        for p, n in base:
            p.files = list(dict.fromkeys(n.paths + [x for fn in n.functions[:2]
                                                    for x in whole.get(fn, [])]))
    for p, n in zip(out, named):
        mine = [x for x in p.files if any(x in own[name] for name in p.topics)]
        p.where = ", ".join(mine or p.files) or framesmod.Frames(n.functions).named()
    return out
