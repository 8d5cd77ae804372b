"""Apply patch files on top of a commit with git plumbing only.

Takes a commit and patch files; gives the commit of each patch on the one
before (or an ApplyError), remembered in the stack cache.  docs/design.md,
"Generation".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from ktopic.plumbing import commitobj
from ktopic.errors import Failure, KtopicError
from ktopic.plumbing.fastapply import Applied, FastApply, NotSimple
from ktopic.plumbing.gitutil import Git, GitError
from ktopic.plumbing.objstore import ObjectStore
from ktopic.plumbing.patchfile import PatchFile
from ktopic.fileio import write_atomic

# git configuration that changes what git apply or git commit-tree does
SETTINGS = ("apply.ignorewhitespace", "commit.gpgsign", "i18n.commitencoding")


def printable(text: str) -> str:
    """text with its control characters escaped (a newline as \\n): an
    error is one line, and no part of it may pass for another."""
    return re.sub("[\x00-\x1f\x7f-\x9f]", lambda m: repr(m.group())[1:-1], text)


class ApplyError(Failure):
    def __init__(self, patch: PatchFile, file: str, hunk: str, detail: str):
        self.patch, self.file, self.hunk, self.detail = patch, file, hunk, detail
        super().__init__(printable(f"{patch.display}: {file}: {hunk}: {detail}"))


class StackCache:
    """(parent commit, patch sha256) -> commit, persisted as JSON.  The key
    also holds the version of the way a commit is made from a patch
    (LAYOUT), so that commits made the way an older ktopic made them are
    not taken from the cache: layout 2 keeps notes below `---`; layout 3
    applies the diff git mailinfo decodes (not the mail's raw bytes);
    layout 4 commits the message git am makes (cleaned up, made UTF-8 as
    git makes it)."""

    LAYOUT = 4

    def __init__(self, path: Path, git: Git, store: ObjectStore | None = None):
        self.path, self.git, self.store = path, git, store
        try:
            self.map: dict[str, str] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.map = {}
        self.dirty = False

    def get(self, parent: str, patch: PatchFile) -> str | None:
        return self.map.get(f"{parent} {patch.sha256} {self.LAYOUT}")

    def exists(self, commit: str) -> bool:
        if self.store is not None:
            return self.store.exists(commit + "^{commit}")
        return self.git.has(commit + "^{commit}")

    def put(self, parent: str, patch: PatchFile, commit: str) -> None:
        self.map[f"{parent} {patch.sha256} {self.LAYOUT}"] = commit
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        write_atomic(self.path, json.dumps(self.map, indent=0, sort_keys=True))
        self.dirty = False


class Stacker:
    def __init__(self, git: Git, cache: StackCache, index_dir: Path | None = None,
                 store: ObjectStore | None = None):
        self.git, self.cache = git, cache
        self.index_dir = index_dir    # index files of start trees, by tree id
        self.applied = 0          # patches that really went through git apply
        self.store = store or cache.store or ObjectStore(git)
        self.fast = FastApply(git, self.store)
        self._trees: dict[str, str] = {}
        self._settings: set[str] | None = None
        self._deferred = False    # inside stack(): writes need not be waited for

    def close(self) -> None:
        """End the git processes (they start again if needed)."""
        self.store.close()

    def tree_of(self, commit: str) -> str:
        if commit not in self._trees:
            self._trees[commit] = self.store.tree_of(commit) or self.git.tree_of(commit)
        return self._trees[commit]

    def _read_tree(self, commit: str, index: str, env: dict) -> None:
        """Fill index with commit's tree; reading an 80,000-entry tree costs
        far more than copying the index file it gave last time."""
        if self.index_dir is None:
            self.git.run("read-tree", commit, env=env)
            return
        tree = self.git.tree_of(commit)
        cached = self.index_dir / tree
        if cached.exists():
            shutil.copyfile(cached, index)
            return
        self.git.run("read-tree", commit, env=env)
        self.index_dir.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp")
        shutil.copyfile(index, tmp)
        tmp.replace(cached)

    def stack(self, parent: str, patches: list[PatchFile]) -> str:
        """The commit made by applying patches on parent, in order."""
        head = parent
        pending: list[PatchFile] = []
        for i, p in enumerate(patches):
            hit = self.cache.get(head, p)
            if hit is None:
                pending = patches[i:]
                break
            head = hit
        if not pending:
            # A commit that exists has all its ancestors: checking the
            # chain's end checks the chain.  Anything missing (a deleted
            # work repository) is simply made again.
            if head == parent or self.cache.exists(head):
                return head
            self.cache.map.clear()
            return self.stack(parent, patches)
        if head != parent and not self.cache.exists(head):
            # The chain's cached part ends at a commit that is not there:
            # make it all again rather than build on nothing.
            self.cache.map.clear()
            return self.stack(parent, patches)
        # Within the series nothing waits for git to store what was made:
        # the next patch reads it back from the store's memory.  It is all
        # stored before the commit is returned, or the error raised (the
        # stack cache names the commits made before a patch that fails).
        self._deferred = True
        try:
            self.fast.prefetch(self.tree_of(head), [f for p in pending for f in p.paths])
            for p in pending:
                r = self.apply(head, p)
                if not r.ok:
                    raise self._explain(p, r.stderr)
                head = self.commit(r.tree, head, p)
        except Exception:
            self.store.sync()
            raise
        finally:
            self._deferred = False
        self.store.sync()
        return head

    def apply(self, head: str, p: PatchFile, *args: str) -> Applied:
        """git apply --cached ARGS p on head's tree: only the patch's files
        in a temporary index when possible (when its diff --git lines name
        the files git applies to: names_agree), else the whole tree."""
        if not args:
            try:
                return self.fast.apply_exact(self.tree_of(head), p.patch,
                                             search="apply.ignorewhitespace" not in self._config(),
                                             wait=not self._deferred)
            except NotSimple:
                pass
        with tempfile.TemporaryDirectory(prefix="ktopic-index-") as tmp:
            diff = Path(tmp, "patch")           # what git am gives git apply
            diff.write_bytes(p.patch)
            if p.names_agree:       # else git may apply to files the index would lack
                try:
                    return self.fast.apply(self.tree_of(head), diff, p.paths, *args)
                except NotSimple:
                    pass
            self.store.sync()
            index = os.path.join(tmp, "index")
            env = {"GIT_INDEX_FILE": index}
            self._read_tree(head, index, env)
            r = self.git.try_run("apply", "--cached", "--whitespace=nowarn", *args,
                                 str(diff), env=env,
                                 cwd=tmp)     # not the user's cwd
            if r.returncode != 0 or "--check" in args:
                unmerged = sorted({ln.split("\t", 1)[1] for ln in
                                   self.git.run("ls-files", "-u", env=env).splitlines()})
                return Applied(r.returncode == 0, None, r.stderr, unmerged)
            return Applied(True, self.git.run("write-tree", env=env).strip())

    def commit(self, tree: str, parent: str, p: PatchFile) -> str:
        """The commit of tree on parent with p's message and identity (cached)."""
        plain = not {"i18n.commitencoding", "commit.gpgsign"} & self._config()
        data = commitobj.commit_bytes(tree, parent, p.author, p.email, p.date, p.message) \
            if plain else None
        if data is not None:
            commit = self.store.write_commit(data, wait=not self._deferred)
        else:
            self.store.sync()
            try:
                commit = self.git.run("commit-tree", tree, "-p", parent, input=p.message,
                                      env=p.ident_env()).strip()
            except GitError as e:
                # What git am refuses too (a date git cannot read, a NUL in
                # the message): the patch file's fault, in git's words.
                why = e.stderr.strip().splitlines()[-1] if e.stderr.strip() else "refused"
                raise KtopicError(f"git commit-tree refuses its commit: {why}",
                                  file=p.display) from None
        self._trees[commit] = tree
        self.cache.put(parent, p, commit)
        self.applied += 1
        return commit

    def _config(self) -> set[str]:
        """Which of the settings that change what `git apply` or `git
        commit-tree` do are set (asked once; all of them if git cannot
        say): where one is, the work it changes is left to git."""
        if self._settings is None:
            r = self.git.try_run("config", "--name-only", "--get-regexp",
                                 "^(%s)$" % "|".join(s.replace(".", r"\.") for s in SETTINGS))
            self._settings = set(r.stdout.split()) if r.returncode in (0, 1) else set(SETTINGS)
        return self._settings

    @staticmethod
    def _explain(p: PatchFile, stderr: str) -> ApplyError:
        m = re.search(r"^error: patch failed: (.+):(\d+)$", stderr, re.M)
        if m:
            file, line = m.group(1), int(m.group(2))
            h = p.hunk_at(file, line)
            hunk = f"hunk #{h.number} ({h.header})" if h else f"the hunk at line {line}"
            return ApplyError(p, file, hunk, "does not apply")
        m = re.search(r"^error: invalid path '(.*)'$", stderr, re.M)
        if m:
            return ApplyError(p, m.group(1), "path",
                              "invalid path: git refuses it")
        m = re.search(r"^error: (.+?): (does not exist in index|already exists in index)$",
                      stderr, re.M)
        if m:
            return ApplyError(p, m.group(1), "file", m.group(2))
        # git's first complaint is the fault ("corrupt binary patch at line
        # 7: ..."); the ones after it are what came of it: "No valid patches
        # in input", whose "--allow-empty" is no cure for a corrupt patch.
        said = [ln.split(": ", 1)[1] for ln in stderr.splitlines()
                if ln.startswith(("error: ", "fatal: "))]
        said = [ln for ln in said if not ln.startswith("No valid patches")] or said
        detail = said[0] if said else (stderr.strip().splitlines() or ["git apply failed"])[0]
        detail = detail.replace(' (allow with "--allow-empty")', "")
        # git counts the lines of the diff it was given: those of the file
        # after the message, or of what git mailinfo decoded.
        if p.patch_line is not None:
            detail = re.sub(r"\bline (\d+)", lambda m: f"line {int(m.group(1)) + p.patch_line}",
                            detail)
        elif re.search(r"\bline \d+", detail):
            detail += " (of the diff git mailinfo decodes from the mail)"
        return ApplyError(p, "(patch)", "whole patch", detail)
