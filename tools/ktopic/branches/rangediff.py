"""ktopic range-diff: how a topic changed between two base versions.

The old branch is refs/ktopic/old/<OLD_BASE>/<branch> (kept by `ktopic
rebase`; OLD_BASE a Debian version, in the ref by its DEP-14 name), the
new one the current branch.  Each side starts after the
branch of the topic's last dependency on that base (or the base itself), so
only the topic's own patches are compared.

Takes a topic, the work repository and an old base's version; gives the two
commit ranges git range-diff compares."""

from __future__ import annotations

import re

from ktopic.model import manifest
from ktopic.errors import Failure, KtopicError
from ktopic.plumbing.gitutil import Git
from ktopic.branches.rebase import OLD
from ktopic.model import debversion


def _vkey(v: str) -> list:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", v)]


def old_bases(git: Git, branch: str) -> list[str]:
    """Debian versions under which an old head of branch is kept, oldest first."""
    out = []
    for ref in git.refs(OLD):
        rest = ref[len(OLD):]
        v, _, b = rest.partition("/")
        if b == branch:
            out.append(debversion.unmangle(v))
    return sorted(out, key=_vkey)


def ranges(m: manifest.Manifest, git: Git, topic: str, old_base: str | None) -> tuple[str, str]:
    t = m.topic(topic)
    kept = old_bases(git, t.branch)
    if old_base is None:
        if not kept:
            raise Failure(f"no old head of {t.branch} is kept: `ktopic rebase` keeps them "
                          f"under {OLD}<old base>/")
        old_base = kept[-1]
    elif old_base not in kept:
        raise KtopicError(f"no old head of {t.branch} for base {old_base!r} "
                          f"(kept: {', '.join(kept) or 'none'})")
    old_head = git.ref(debversion.old_ref(old_base, t.branch))
    new_head = git.ref(t.ref)
    if not new_head:
        raise Failure(f"branch {t.branch} does not exist")

    def start(base: str, head: str, dep_ref) -> str:
        deps = m.closure(topic)
        if deps:
            d = dep_ref(m.topics[deps[-1]].branch)
            if d and git.is_ancestor(d, head):
                return d
        return base
    old_start = start(git.ref(debversion.base_ref(old_base)) or old_head, old_head,
                      lambda b: git.ref(debversion.old_ref(old_base, b)))
    new_start = start(git.ref("refs/heads/base"), new_head, lambda b: git.ref("refs/heads/" + b))
    return f"{old_start}..{old_head}", f"{new_start}..{new_head}"
