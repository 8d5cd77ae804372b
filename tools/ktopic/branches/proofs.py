"""Proofs that the base carries (or replaced) a 2019 patch: each manifest
check is a regular expression that must match (contains) or must not match
(lacks) a file of the base tree.

Takes the manifest and the base commit; gives nothing, or the KtopicError
naming the check that fails."""

from __future__ import annotations

import re
import signal
import threading
from contextlib import contextmanager

from ktopic.errors import KtopicError

SECONDS = 10.0          # the longest a check may take (a regex that backtracks)
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
        with _limit(SECONDS, m.display(), chk):
            found = re.search(chk.pattern, text, re.M) is not None
        if found != chk.present:
            raise KtopicError(f"{c.kind} proof for {c.subject!r} fails on the base: "
                              f"{chk.describe()} is not true", m.display(), chk.line)
        n += 1
    return n


def failing(m: Manifest, git: Git, commit: str, checks: list) -> list:
    """The checks that do not hold on commit (a file it lacks fails a
    `contains` and passes a `lacks`)."""
    files = git.read_files(commit, sorted({chk.file for chk in checks}))
    out = []
    for chk in checks:
        text = files[chk.file]
        with _limit(SECONDS, m.display(), chk):
            found = text is not None and re.search(chk.pattern, text, re.M) is not None
        if found != chk.present:
            out.append(chk)
    return out


class _Expired(Exception):
    pass


@contextmanager
def _limit(seconds: float, name: str, chk):
    """Stop a check that runs longer than seconds (a regular expression that
    backtracks without end), naming its line.  Python's regex engine lets
    signals in while it matches; off the main thread there is no limit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(*_):
        raise _Expired
    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Expired:
        raise KtopicError(f"check {chk.describe()} did not finish in {seconds:g} s "
                          f"(a regular expression that backtracks without end?)",
                          name, chk.line) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
