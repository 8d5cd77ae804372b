"""git apply on a commit's tree without an index of the whole tree.

Reading 78,000 entries into an index, and writing them back, is most of
what `git apply --cached` + `git write-tree` cost on the kernel tree.  A
patch touches a handful of files: here only those go into a temporary
index (their entries read from the tree objects of the directories on
their paths), `git apply --cached` (with --3way, --reverse, ... as asked)
runs on it, and the changed entries are grafted back into the tree: the
directories on the changed paths are rewritten (`git mktree --batch`),
everything else is shared.  Tree ids are canonical, so the result is the
tree a full index would give.  Anything unusual (a path that is a
directory on one side, a name git mktree cannot take) raises NotSimple and
the caller uses a full index instead.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .gitutil import Git

TREE_MODE = b"40000"


class NotSimple(Exception):
    pass


@dataclass
class Applied:
    ok: bool
    tree: str | None = None
    stderr: str = ""
    unmerged: list[str] = field(default_factory=list)


def _dirs(paths: list[str]) -> list[str]:
    out = {""}
    for p in paths:
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out.add("/".join(parts[:i]))
    return sorted(out, key=lambda d: (d.count("/") + (1 if d else 0), d))


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
    def __init__(self, git: Git):
        self.git = git

    def _read_trees(self, tree: str, dirs: list[str]) -> dict[str, dict | None]:
        req = "".join(f"{tree}:{d}\n" if d else f"{tree}\n" for d in dirs).encode()
        p = subprocess.run(["git", "cat-file", "--batch"], input=req, capture_output=True,
                           env=self.git._env(None), check=True)
        out, pos, trees = p.stdout, 0, {}
        for d in dirs:
            eol = out.index(b"\n", pos)
            header = out[pos:eol].split()
            pos = eol + 1
            if header[-1] == b"missing":
                trees[d] = None
                continue
            size = int(header[2])
            if header[1] != b"tree":
                raise NotSimple(f"{d} is not a directory")
            trees[d] = _parse_tree(out[pos:pos + size])
            pos += size + 1
        return trees

    def apply(self, tree: str, patch: Path, paths: list[str], *args: str) -> Applied:
        """git apply --cached ARGS patch on tree; the new tree when it applied."""
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
            r = self.git.try_run("apply", "--cached", "--whitespace=nowarn", *args, str(patch),
                                 env=env)
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

    def _graft(self, tree: str, trees: dict, paths: list[str], now: dict) -> str:
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
        batch: list[str] = []
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
            for name in sorted(entries):
                mode, oid = entries[name]
                kind = "tree" if mode == TREE_MODE else "blob"
                batch.append(f"{mode.decode()} {kind} {oid.hex()}\t{name.decode()}\n")
            batch.append("\n")
        out = self.git.run("mktree", "--batch", "--missing", input="".join(batch)).split()
        root = ids[""].hex()
        if not out or out[-1] != root:
            raise NotSimple("tree ids differ from git mktree's")
        return root
