"""git apply on a commit's tree without an index of the whole tree.

Takes a tree and a patch; gives the new tree (apply_exact() in Python,
apply() through a small index), or NotSimple where the caller needs a full
index.  docs/design.md, "Generation".
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.plumbing import hunkapply
from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.objstore import ObjectStore

TREE_MODE = b"40000"


class NotSimple(Exception):
    pass


@dataclass
class Applied:
    ok: bool
    tree: str | None = None
    stderr: str = ""
    unmerged: list[str] = field(default_factory=list)


def _kind(mode: bytes) -> int:
    """The file type bits of a git mode (file, symbolic link, submodule)."""
    return int(mode, 8) & 0o170000


def _dirs(paths: list[str]) -> list[str]:
    out = {""}
    for p in paths:
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out.add("/".join(parts[:i]))
    return sorted(out, key=lambda d: (d.count("/") + (1 if d else 0), d))


def _in_tree(path: str) -> bool:
    """A path `git cat-file` can look up in a tree (<tree>:<path>): no
    empty, "." or ".." component (git would read those as relative to a
    working tree, or refuse them)."""
    return all(c not in ("", ".", "..") for c in path.split("/"))


def _parse_tree(body: bytes) -> dict[bytes, tuple[bytes, bytes]]:
    """name -> (mode, 20-byte id)."""
    out, pos = {}, 0
    while pos < len(body):
        sp = body.index(b" ", pos)
        nul = body.index(b"\0", sp)
        out[body[sp + 1:nul]] = (body[pos:sp], body[nul + 1:nul + 21])
        pos = nul + 21
    return out


def _tree_bytes(entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
    def key(name):
        return name + (b"/" if entries[name][0] == TREE_MODE else b"")
    return b"".join(entries[n][0] + b" " + n + b"\0" + entries[n][1] for n in sorted(entries, key=key))


class FastApply:
    def __init__(self, git: Git, store: ObjectStore | None = None):
        self.git = git
        self.store = store or ObjectStore(git)
        self._parsed: dict[bytes, dict] = {}      # tree id -> its entries

    def _tree(self, oid: bytes) -> dict | None:
        """The entries of a tree (None: not a tree), parsed once."""
        if oid not in self._parsed:
            got = self.store.objects([oid.hex()])[0]
            if got is None or got[0] != "tree":
                return None
            self._parsed[oid] = _parse_tree(got[1])
        return self._parsed[oid]

    def _known_tree(self, oid: bytes) -> dict | None:
        """A tree's entries if this run has them in memory, else None."""
        if oid not in self._parsed:
            got = self.store.cached(oid.hex())
            if got is None or got[0] != "tree":
                return None
            self._parsed[oid] = _parse_tree(got[1])
        return self._parsed[oid]

    def _in_memory(self, tree: str, path: str) -> bool:
        """Whether finding path in tree needs nothing from git (a path that
        is not there, or is not what it should be, needs nothing either)."""
        t = self._known_tree(bytes.fromhex(tree))
        parts = path.split("/")
        for i, name in enumerate(parts):
            if t is None:
                return False
            entry = t.get(name.encode())
            if entry is None:
                return True
            if i == len(parts) - 1:
                return entry[0] == TREE_MODE and self._known_tree(entry[1]) is not None \
                    or entry[0] != TREE_MODE and self.store.cached(entry[1].hex()) is not None
            if entry[0] != TREE_MODE:
                return True
            t = self._known_tree(entry[1])
        return True

    def prefetch(self, tree: str, paths: list[str]) -> None:
        """Read, in one request, the directories and files of paths in tree
        that this run has not seen: the patches of a series then find them
        all in memory, instead of asking git patch after patch."""
        specs = [] if self._known_tree(bytes.fromhex(tree)) is not None else [tree]
        specs += [f"{tree}:{p}" for p in _dirs(paths)[1:] + list(dict.fromkeys(paths))
                  if "\n" not in p and _in_tree(p) and not self._in_memory(tree, p)]
        if specs:
            self.store.read(specs)

    def _read_trees(self, tree: str, dirs: list[str]) -> dict[str, dict | None]:
        """The entries of each directory of tree (None: it has no such
        directory), found from the root down.  A directory this run has
        seen or written is neither read nor parsed again: a series touches
        the same few directories patch after patch."""
        root = self._tree(bytes.fromhex(tree))
        if root is None:
            raise NotSimple(f"{tree} is not a tree")
        trees: dict[str, dict | None] = {"": root}
        for d in dirs:                   # parents before children
            if not d:
                continue
            parent, _, name = d.rpartition("/")
            entry = (trees.get(parent) or {}).get(name.encode())
            if entry is None:
                trees[d] = None
                continue
            if entry[0] != TREE_MODE or (sub := self._tree(entry[1])) is None:
                raise NotSimple(f"{d} is not a directory")
            trees[d] = sub
        return trees

    def apply_exact(self, tree: str, data: bytes, search: bool = True,
                    wait: bool = True) -> Applied:
        """The tree after the patch mail data, applied in Python; NotSimple
        unless every hunk's old lines are found exactly, in the order git
        apply looks for them (then the result is the one git apply gives).
        search=False: only where git looks first (hunkapply.apply).
        wait=False: the new objects may still be on their way to git
        (ObjectStore.write)."""
        try:
            diffs = hunkapply.parse(data)
        except hunkapply.Unusual as e:
            raise NotSimple(str(e)) from None
        paths = [p for fd in diffs for p in fd.paths]
        if len(set(paths)) != len(paths):
            raise NotSimple("a path named twice")
        trees = self._read_trees(tree, _dirs(paths))
        olds = [self._entry(trees, fd.old) if fd.old else None for fd in diffs]
        modes = [self._modes(trees, fd, old) for fd, old in zip(diffs, olds)]
        blobs = self.store.objects([e[1].hex() for e in olds if e is not None])
        if None in blobs:
            raise NotSimple("a blob the tree names is missing")
        contents = iter(blobs)
        now: dict[str, tuple[bytes, bytes]] = {}
        pending: list[tuple[str, bytes, bytes]] = []      # path, mode, content
        for fd, old, new_mode in zip(diffs, olds, modes):
            body = next(contents)[1] if old is not None else b""
            same = old is not None and not fd.hunks       # a rename or mode change only
            if same:
                after = body
            else:
                try:
                    after = hunkapply.apply(body, fd.hunks, search)
                except hunkapply.Unusual as e:
                    raise NotSimple(str(e)) from None
            if fd.new is None:
                if after:
                    raise NotSimple(f"{fd.old}: a deletion that leaves lines")
            elif same:
                now[fd.new] = (new_mode, old[1])
            else:
                pending.append((fd.new, new_mode, after))
        ids = self.store.write_blobs([c for _, _, c in pending], wait=False)
        for (path, mode, _), oid in zip(pending, ids):
            now[path] = (mode, bytes.fromhex(oid))
        return Applied(True, self._graft(tree, trees, paths, now, wait))

    @staticmethod
    def _entry(trees: dict, path: str) -> tuple[bytes, bytes] | None:
        d, _, name = path.rpartition("/")
        return (trees.get(d) or {}).get(name.encode())

    def _modes(self, trees: dict, fd: hunkapply.FileDiff, old) -> bytes:
        """The mode fd leaves; NotSimple where git apply would fail or warn:
        a file that is not there (or is there, for a new one), a directory
        or submodule, a mode other than the patch expects."""
        if fd.old is None:
            if self._entry(trees, fd.new) is not None:
                raise NotSimple(f"{fd.new} exists")
            return fd.new_mode
        if old is None or old[0] not in hunkapply.MODES:
            raise NotSimple(f"{fd.old} is missing or not a file")
        if fd.old_mode and fd.old_mode != old[0]:
            raise NotSimple(f"{fd.old} has mode {old[0]!r}, the patch expects {fd.old_mode!r}")
        if fd.new is not None and fd.new != fd.old and self._entry(trees, fd.new) is not None:
            raise NotSimple(f"{fd.new} exists")
        if fd.new is not None and fd.new_mode and _kind(fd.new_mode) != _kind(old[0]):
            # git apply refuses a file that changes its type under one name
            raise NotSimple(f"{fd.new}: mode {old[0]!r} becomes {fd.new_mode!r}")
        return fd.new_mode or old[0]

    def apply(self, tree: str, patch: Path, paths: list[str], *args: str) -> Applied:
        """git apply --cached ARGS patch on tree; the new tree when it applied."""
        self.store.sync()           # git apply reads what the store wrote
        if not paths or any(("\n" in p or "\t" in p or '"' in p) for p in paths):
            raise NotSimple("unusual paths")
        dirs = _dirs(paths)
        trees = self._read_trees(tree, dirs)
        lines = []
        for path in paths:
            d, _, name = path.rpartition("/")
            entry = (trees.get(d) or {}).get(name.encode())
            if entry is None:
                continue
            if entry[0] == TREE_MODE:
                raise NotSimple(f"{path} is a directory")
            lines.append(f"{entry[0].decode()} {entry[1].hex()} 0\t{path}\n")
        with tempfile.TemporaryDirectory(prefix="ktopic-fast-") as tmp:
            env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
            self.git.run("update-index", "--index-info", input="".join(lines), env=env)
            # cwd: git 2.39's `apply --cached --3way` may write a merged file
            # to the current directory; let that be a directory nobody reads.
            r = self.git.try_run("apply", "--cached", "--whitespace=nowarn", *args,
                                 str(Path(patch).resolve()),
                                 env=env, cwd=tmp)
            if r.returncode != 0 or "--check" in args:
                unmerged = sorted({ln.split("\t", 1)[1] for ln in
                                   self.git.run("ls-files", "-u", env=env).splitlines()})
                return Applied(r.returncode == 0, None, r.stderr, unmerged)
            staged = self.git.run("ls-files", "-s", "-z", env=env, binary=True)
        now: dict[str, tuple[bytes, bytes]] = {}
        for rec in staged.split(b"\0"):
            if not rec:
                continue
            meta, path = rec.split(b"\t", 1)
            mode, oid, stage = meta.split()
            if stage != b"0":
                raise NotSimple("unmerged entries after a clean apply")
            now[path.decode()] = (mode, bytes.fromhex(oid.decode()))
        return Applied(True, self._graft(tree, trees, paths, now))

    def _graft(self, tree: str, trees: dict, paths: list[str], now: dict,
               wait: bool = True) -> str:
        """The tree with paths set as in now (absent: deleted)."""
        # Every touched path lives in a directory read above; new paths may
        # need directories that do not exist yet (a missing tree is empty).
        for path in set(now) - set(paths):
            raise NotSimple(f"git apply touched {path}, which the patch does not name")
        work = {d: dict(t or {}) for d, t in trees.items()}
        for path in paths:
            d, _, name = path.rpartition("/")
            if path in now:
                old = work[d].get(name.encode())
                if old is not None and old[0] == TREE_MODE:
                    raise NotSimple(f"{path} is a directory")
                work[d][name.encode()] = now[path]
            else:
                work[d].pop(name.encode(), None)
        batch: list[bytes] = []
        ids: dict[str, bytes | None] = {}
        for d in sorted(work, key=lambda x: -(x.count("/") + (1 if x else 0))):
            entries = work[d]
            for child, oid in ids.items():        # children already written
                cd, _, cname = child.rpartition("/")
                if cd == d and child:
                    if oid is None:
                        entries.pop(cname.encode(), None)
                    else:
                        prev = entries.get(cname.encode())
                        if prev is not None and prev[0] != TREE_MODE:
                            raise NotSimple(f"{child} is a file")
                        entries[cname.encode()] = (TREE_MODE, oid)
            if not entries and d:
                ids[d] = None
                continue
            body = _tree_bytes(entries)
            ids[d] = hashlib.sha1(b"tree %d\0" % len(body) + body).digest()
            batch.append(body)
            self._parsed[ids[d]] = entries
        out = self.store.write_trees(batch, wait)
        root = ids[""].hex()
        if not out or out[-1] != root:
            raise NotSimple("tree ids differ from git's")
        return root
