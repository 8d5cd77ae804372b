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
    files: dict[str, str | None] = {}
    n = 0
    for name in topics or list(m.topics):
        t = m.topics[name]
        for c in t.upstream + t.superseded:
            for chk in c.checks:
                if chk.file not in files:
                    r = git.try_run("cat-file", "blob", f"{base}:{chk.file}")
                    files[chk.file] = r.stdout if r.returncode == 0 else None
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


def carried(m: Manifest, name: str) -> list[Carried]:
    t = m.topics[name]
    return t.upstream + t.superseded + t.dropped
