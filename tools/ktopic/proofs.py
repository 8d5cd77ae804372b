"""Proofs that the base carries (or replaced) a 2019 patch: each manifest
check is a regular expression that must match (contains) or must not match
(lacks) a file of the base tree."""

from __future__ import annotations

import re

from .errors import KtopicError
from .gitutil import Git
from .manifest import Carried, Manifest


def verify(m: Manifest, git: Git, base: str, topics: list[str] | None = None) -> int:
    """Run every check of the given topics against base; return how many
    ran.  A failing check is bad input: the manifest claims something the
    base does not show."""
    entries = [(c, chk) for name in topics or list(m.topics)
               for c in m.topics[name].upstream + m.topics[name].superseded for chk in c.checks]
    files = _read_files(git, base, sorted({chk.file for _, chk in entries}))
    n = 0
    for c, chk in entries:
        text = files[chk.file]
        if text is None:
            raise KtopicError(f"{c.kind} proof for {c.subject!r}: the base has no file "
                              f"{chk.file}", m.display(), chk.line)
        found = re.search(chk.pattern, text, re.M) is not None
        if found != chk.present:
            raise KtopicError(f"{c.kind} proof for {c.subject!r} fails on the base: "
                              f"{chk.describe()} is not true", m.display(), chk.line)
        n += 1
    return n


def _read_files(git: Git, commit: str, paths: list[str]) -> dict[str, str | None]:
    """The text of each path in commit (None where missing), in one git call."""
    if not paths:
        return {}
    out = git.run("cat-file", "--batch", input="".join(f"{commit}:{p}\n" for p in paths).encode(),
                  binary=True)
    files: dict[str, str | None] = {}
    pos = 0
    for p in paths:
        eol = out.index(b"\n", pos)
        header = out[pos:eol].decode()
        pos = eol + 1
        if header.endswith(" missing"):
            files[p] = None
            continue
        size = int(header.split()[2])
        files[p] = out[pos:pos + size].decode(errors="replace")
        pos += size + 1
    return files


def carried(m: Manifest, name: str) -> list[Carried]:
    t = m.topics[name]
    return t.upstream + t.superseded + t.dropped
