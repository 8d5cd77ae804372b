"""Generate the topic branches and the integration branch from the manifest.

Takes the manifest and the work directory (its base); gives an Outcome per
branch, the refs moved in one transaction.  docs/design.md, "Generation"
and "Branch safety".
"""

from __future__ import annotations

import bisect
import time
from pathlib import Path
from dataclasses import dataclass, field

from ktopic.branches import proofs
from ktopic.errors import Failure, KtopicError
from ktopic.plumbing.gitutil import Git
from ktopic.model import debversion, yamlpos
from ktopic.model.manifest import Manifest
from ktopic.plumbing.objstore import ObjectStore
from ktopic.plumbing.patchfile import Mailinfo, PatchFile, parse_many
from ktopic.plumbing.stack import ApplyError, StackCache, Stacker
from ktopic.model.workdir import Workdir

MADE = "refs/ktopic/made/"
BASES = "refs/ktopic/bases/"
BACKUP = "refs/ktopic/backup/"


@dataclass
class Outcome:
    name: str               # topic name or "integration"
    branch: str
    head: str | None = None
    old: str | None = None
    error: str = ""
    moved: bool = False
    backup: str = ""
    patches: int = 0


@dataclass
class Result:
    outcomes: list[Outcome] = field(default_factory=list)
    applied: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(o.error for o in self.outcomes)


def base_commit(git: Git, m: Manifest | None = None) -> str:
    """refs/heads/base; with m, only if it is the base m names."""
    base = git.rev_parse("refs/heads/base")
    if not base:
        raise Failure("no base in the work repository: run `ktopic import-base` first")
    if m is not None:
        why = base_mismatch(m, git, base)
        if why:
            raise Failure(why)
    return base


def base_mismatch(m: Manifest, git: Git, base: str) -> str | None:
    """Why base is not the import of the tree the manifest names, or None."""
    dv = m.base.debian_version
    if git.rev_parse(debversion.base_ref(dv)) == base:
        return None
    have = sorted(debversion.unmangle(r[len(BASES):]) for r, oid in git.refs(BASES).items()
                  if git.rev_parse(oid) == base)
    line = m.base.lines.get("debian-version")
    return (f"{m.display()}:{line}: the manifest's base is {m.base.package} {dv}, the work "
            f"repository's is {', '.join(have) or 'another'}: run `ktopic import-base`")


def refuse_ref_clashes(m: Manifest, refs: dict[str, str], names: list[str],
                       integration: bool) -> None:
    """Refuse, before any work, a branch of these topics (and of the
    integration branch) that git cannot make next to a ref the work
    repository has: one would be a directory of the other (the manifest
    renamed topic/names to topic/names/v2, or topic/n/v1 to topic/n).
    git cannot delete the one and create the other in one transaction,
    and ktopic does not delete a branch the manifest no longer names (it
    may be someone's), so the user deletes it, or names the branch
    otherwise."""
    have = sorted(refs)
    todo = [(m.topics[n].branch, m.topics[n].lines.get("branch")) for n in names]
    if integration:
        todo.append((m.integration.branch, yamlpos.line_of(m.data, ["integration", "branch"])))
    for branch, line in todo:
        clash = []
        for prefix in ("refs/heads/", MADE):
            want = prefix + branch
            parts = want.split("/")
            clash += [r for r in ("/".join(parts[:i]) for i in range(3, len(parts))) if r in refs]
            at = bisect.bisect_left(have, want + "/")
            while at < len(have) and have[at].startswith(want + "/"):
                clash.append(have[at])
                at += 1
        if clash:
            raise KtopicError(
                f"branch {branch!r} cannot be made: the work repository has {', '.join(clash)} "
                f"(git cannot keep both: one would be a directory of the other); ktopic does "
                f"not delete a ref the manifest no longer names: delete "
                f"{'it' if len(clash) == 1 else 'them'} (git update-ref -d REF), or name the "
                f"branch otherwise", m.display(), line)


def worktree_branches(git: Git) -> dict[str, str]:
    """The branches checked out in a worktree of the repository (a ref
    name, refs/heads/..., and the worktree's path), as `git branch -f`
    finds them: also one being rebased or bisected there (its HEAD is
    detached meanwhile), and a worktree whose directory is gone but which
    git has not pruned yet."""
    out = git.run("worktree", "list", "--porcelain", "-z", binary=True).decode(
        "utf-8", "surrogateescape")
    found: dict[str, str] = {}
    path = main = ""
    for field_ in out.split("\0"):
        if field_.startswith("worktree "):
            path = field_[len("worktree "):]
            main = main or path
        elif field_.startswith("branch "):
            found.setdefault(field_[len("branch "):], path)
    admin = sorted(p for p in (git.git_dir / "worktrees").glob("*") if p.is_dir())
    for d in [git.git_dir, *admin]:
        try:
            where = str(Path((d / "gitdir").read_text().strip()).parent) if d != git.git_dir \
                else main
        except OSError:
            where = str(d)
        for state in ("rebase-merge/head-name", "rebase-apply/head-name", "BISECT_START"):
            try:
                name = (d / state).read_text(errors="surrogateescape").strip()
            except OSError:
                continue
            if state == "BISECT_START" and not name.startswith("refs/"):
                name = "refs/heads/" + name
            if name.startswith("refs/heads/"):
                found.setdefault(name, where)
    return found


def load_patches(m: Manifest, name: str) -> list[PatchFile]:
    return parse_many([(p.path, f"patches/{name}/{p.rel}") for p in m.topics[name].patches])


class Generator:
    def __init__(self, m: Manifest, wd: Workdir):
        self.m, self.wd = m, wd
        self.git = Git(wd.git_dir)
        self.store = ObjectStore(self.git)
        self.cache = StackCache(wd.stack_cache, self.git, self.store)
        self.stacker = Stacker(self.git, self.cache, wd.index_cache, self.store)
        self._patches: dict[str, list[PatchFile]] = {}
        self._parsing: dict[str, list[Mailinfo]] = {}

    def patches(self, name: str) -> list[PatchFile]:
        if name not in self._patches:
            if name in self._parsing:
                running = self._parsing.pop(name)
                try:
                    self._patches[name] = [m.result() for m in running]
                finally:
                    for m in running:
                        m.stop()
            else:
                self._patches[name] = load_patches(self.m, name)
        return self._patches[name]

    def start_parsing(self, names: list[str], most: int = 64) -> None:
        """Start `git mailinfo` on the patches of these topics, all at once
        (up to most of them), while the run does other things.  Results,
        and errors, are taken by patches(), topic by topic, in the order a
        run asks for them: a topic never asked for (its dependency failed)
        reports nothing, as before."""
        for n in dict.fromkeys(names):
            todo = self.m.topics[n].patches
            if n in self._patches or n in self._parsing or not todo or len(todo) > most:
                continue
            most -= len(todo)
            self._parsing[n] = []
            for p in todo:
                self._parsing[n].append(Mailinfo(p.path, f"patches/{n}/{p.rel}"))

    def stop_parsing(self) -> None:
        for running in self._parsing.values():
            for m in running:
                m.stop()
        self._parsing.clear()

    def start_of(self, base: str, name: str) -> str:
        """Where a topic's own patches go: base plus its dependencies."""
        head = base
        for dep in self.m.closure(name):
            head = self.stacker.stack(head, self.patches(dep))
        return head

    def head_of(self, base: str, name: str) -> str:
        return self.stacker.stack(self.start_of(base, name), self.patches(name))

    def integration_head(self, base: str) -> str:
        head = base
        for name in self.m.integration.topics:
            head = self.stacker.stack(head, self.patches(name))
        return head

    def run(self, names: list[str] | None = None, force: bool = False,
            integration: bool | None = None) -> Result:
        """Generate the named topics (None: every topic) and the
        integration branch (by default only when no topic is named)."""
        t0 = time.monotonic()
        if integration is None:
            integration = names is None
        try:
            return self._run(t0, names, force, integration)
        finally:
            # Git processes end with the run, interrupted or not.
            self.stop_parsing()
            self.stacker.close()

    def _run(self, t0: float, names: list[str] | None, force: bool, integration: bool) -> Result:
        m, git = self.m, self.git
        base = base_commit(git, m)
        refs = git.refs()
        selected = list(m.topics) if names is None else names
        wanted = [n for n in m.order if n in selected]
        refuse_ref_clashes(m, refs, wanted, integration)
        branches = [m.topics[n].branch for n in wanted] + \
            ([m.integration.branch] if integration else [])
        git.check_objects(refs, [r for b in branches for r in ("refs/heads/" + b, MADE + b)])
        self.start_parsing([t for n in wanted for t in (*m.closure(n), n)] +
                           (list(m.integration.topics) if integration else []))
        proofs.verify(m, git, base, wanted)
        result = Result()
        failed: set[str] = set()
        for name in wanted:
            t = m.topics[name]
            o = Outcome(name, t.branch, old=refs.get(t.ref), patches=len(t.patches))
            bad = [d for d in m.closure(name) if d in failed]
            if bad:
                o.error = f"topic {name}: not generated: it depends on {', '.join(bad)}, which failed"
                failed.add(name)
            else:
                try:
                    o.head = self.head_of(base, name)
                except ApplyError as e:
                    o.error = f"topic {name}: {e}"
                    failed.add(name)
            result.outcomes.append(o)
        if integration:
            i = m.integration
            o = Outcome("integration", i.branch, old=refs.get(i.ref),
                        patches=sum(len(m.topics[n].patches) for n in i.topics))
            if failed:
                o.error = (f"integration ({i.branch}): not generated: topic(s) "
                           f"{', '.join(sorted(failed))} failed")
            else:
                o.head = self.integration_head(base)
            result.outcomes.append(o)
        self.cache.save()
        self._move(result, force, refs)
        result.applied = self.stacker.applied
        result.seconds = time.monotonic() - t0
        return result

    def _move(self, result: Result, force: bool, refs: dict[str, str]) -> None:
        git = self.git
        updates: list[tuple[str, str, str | None]] = []
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        checked_out = None
        for o in result.outcomes:
            if o.error or o.head is None:
                continue
            ref = "refs/heads/" + o.branch
            made = refs.get(MADE + o.branch)
            if o.old == o.head:
                if made != o.head:
                    updates.append((MADE + o.branch, o.head, made))
                continue
            if checked_out is None:
                checked_out = worktree_branches(git)
            if ref in checked_out:
                o.error = (f"branch {o.branch} is checked out in the worktree at "
                           f"{checked_out[ref]}; not moved (git branch -f refuses it too). "
                           f"Commit or export the work there, switch that worktree to "
                           f"another branch or detach it (git switch --detach), then "
                           f"generate again")
                continue
            if o.old and not self._ours(o.old, made, o.head):
                if not force:
                    o.error = (f"branch {o.branch} holds commits ktopic did not make "
                               f"(head {o.old[:12]}); not overwritten. Export them with "
                               f"`ktopic export`, or pass --force to replace it "
                               f"(the old head is kept under {BACKUP}{o.branch}/)")
                    continue
                o.backup = f"{BACKUP}{o.branch}/{stamp}"
                n = 1
                while o.backup in refs:      # a backup made within the same second
                    n += 1
                    o.backup = f"{BACKUP}{o.branch}/{stamp}-{n}"
                updates.append((o.backup, o.old, None))
            updates.append((ref, o.head, o.old))
            updates.append((MADE + o.branch, o.head, made))
            o.moved = True
        if updates:
            git.update_refs(updates, "ktopic generate")

    def _ours(self, old: str, made: str | None, new: str) -> bool:
        """Moving the branch from old loses nothing ktopic did not make."""
        if made and (old == made or self.git.is_ancestor(old, made)):
            return True
        return self.git.is_ancestor(old, new)
