"""Which two topics break the integration branch together, and with which
commit (docs/ci.md, "First bad commit").

When the integration branch fails and every topic it stacks passes on its
own, pairs of topics are stacked on the base (the later one's commits
replayed on the earlier one's head, under refs/ktopic/probe/, removed
after) and tested, those that touch the same files or config symbols
first; the first pair that fails the same way is bisected over the later
topic's commits.

Takes a Runner and the failing integration target; gives the dict that
BranchResult.attribution records.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import tempfile
from pathlib import Path

from ktopic.gates import bisectable
from ktopic.model import branchspec
from ktopic.model import results as R
from ktopic.model.targets import INTEGRATION, Target
from ktopic.plumbing.gitutil import Git
from ktopic.runner import attribute

PROBE_REFS = "refs/ktopic/probe/"
_SYMBOL = re.compile(r"\bCONFIG_([A-Z0-9_]+)")


def touched(git: Git, plan) -> set[str]:
    """What a topic's commits touch: paths and config symbols."""
    if not plan.commits:
        return set()
    paths = git.run("diff", "--name-only", plan.start, plan.head).split()
    diff = git.run("diff", plan.start, plan.head)
    return set(paths) | {f"CONFIG_{s}" for s in _SYMBOL.findall(diff)}


def candidates(runner, names: list[str], plans: dict) -> list[tuple[str, str]]:
    """Pairs in the manifest's order: those that share a path or a config
    symbol, else every pair."""
    git = Git(runner.git_dir)
    seen = {n: touched(git, plans[n]) for n in names}
    pairs = list(itertools.combinations(names, 2))
    near = [(a, b) for a, b in pairs if seen[a] & seen[b]]
    return near or pairs


def replay(git: Git, onto: str, plan) -> list[tuple[str, str]]:
    """The topic's commits (plan) replayed on onto, each its own diff
    applied as `git am` would (git apply on a temporary index); [] when
    one does not apply."""
    out, parent = [], onto
    with tempfile.TemporaryDirectory(prefix="ktopic-probe-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        for sha, subject in plan.commits:
            git.run("read-tree", parent, env=env)
            diff = git.run("diff-tree", "-p", "--binary", f"{sha}^", sha)
            if diff and git.try_run("apply", "--cached", "-", input=diff, env=env).returncode:
                return []
            tree = git.run("write-tree", env=env).strip()
            parent = git.run("commit-tree", tree, "-p", parent, "-m", subject,
                             env=attribute.PROBE_ENV).strip()
            out.append((parent, subject))
    return out


def pair_target(runner, t: Target, a: str, b: str, label: str) -> Target:
    """The integration target narrowed to topics a and b (their
    dependencies' code and configs included), with no expectation boots."""
    specs = {s.name: s for s in branchspec.branches(runner.m)}
    sa, sb = specs[a], specs[b]

    def both(field):
        return branchspec.uniq(getattr(sa, field) + getattr(sb, field))
    spec = dataclasses.replace(t.spec, name=INTEGRATION, branch=label,
                               topics=both("topics"), fragments=both("fragments"),
                               kunit=both("kunit"), modules=both("modules"),
                               programs=both("programs"), expect=[],
                               smp=max(sa.smp, sb.smp))
    others = set(t.spec.fragments) - set(spec.fragments)
    return dataclasses.replace(t, spec=spec, branch=label, git_branch=label,
                               fragments=[f for f in t.fragments if f not in others])


def find(runner, t: Target, head: R.BranchResult, bound: int) -> dict | None:
    """The pair of topics that fails as the integration branch does and
    its first bad commit, or None when no pair does (within bound)."""
    names = list(runner.m.integration.topics)
    plans = {n: bisectable.plan(runner.m, runner.wd, n) for n in names}
    git = Git(runner.git_dir)
    want = attribute.signature(head)
    boots = 0
    for a, b in candidates(runner, names, plans):
        if boots >= bound:
            return {"boots": boots, "error": "no pair found within the bound of boots"}
        stack = replay(git, plans[a].head, plans[b])
        if not stack:
            continue
        ref = f"{PROBE_REFS}{a}+{b}"
        git.run("update-ref", ref, stack[-1][0])
        try:
            pt = pair_target(runner, t, a, b, f"probe/{a}+{b}")
            br = runner.run_commit(pt, stack[-1][0], pt.branch)
            boots += 1
            if not attribute.signature(br) & want:
                continue
            bis = attribute.Bisection(runner, pt, head, stack, bound - boots)
            bis.want = want
            good, bad = bis.run()
        finally:
            git.try_run("update-ref", "-d", ref)
        out = attribute.verdict(runner.m, b, stack, good, bad, bis, boots + bis.boots, bound)
        out["topics"] = [a, b]
        if out.get("commit"):
            # The replayed commit stands for the later topic's own.
            out["commit"] = plans[b].commits[bad][0]
        return out
    return None


def wanted(runner, t: Target, done: dict[str, R.BranchResult]) -> bool:
    """An integration failure whose topics each pass on their own."""
    return t.topic == INTEGRATION and all(
        done.get(n) is not None and done[n].ok for n in runner.m.integration.topics)

