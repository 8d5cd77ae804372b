"""Proofs that the base carries (or replaced) a 2019 patch: each manifest
check is a regular expression that must match (contains) or must not match
(lacks) a file of the base tree."""

from __future__ import annotations

import re

from ktopic.errors import KtopicError
from ktopic.plumbing.gitutil import Git
from ktopic.model.manifest import Manifest


def verify(m: Manifest, git: Git, base: str, topics: list[str] | None = None) -> int:
    """Run every check of the given topics against base; return how many
    ran.  A failing check is bad input: the manifest claims something the
    base does not show."""
    entries = [(c, chk) for name in topics or list(m.topics)
               for c in m.topics[name].upstream + m.topics[name].superseded for chk in c.checks]
    files = git.read_files(base, sorted({chk.file for _, chk in entries}))
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
