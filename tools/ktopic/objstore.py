"""Git objects read and written through a few long-lived git processes.

Starting git costs milliseconds (more on a loaded machine); reading a tree
or writing a blob through a process that is already running costs tens of
microseconds.  Generation reads and writes a few objects per patch, so one
`git cat-file --batch` reads them all, one `git hash-object --stdin-paths -w`
per object type writes blobs, trees and commits (from files in a private
temporary directory, without filters: the bytes given are the bytes
stored).  Git stays the only writer of the repository.  Each
process starts when first needed; close() (or the object being collected,
or the interpreter exiting) ends them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import weakref

from .gitutil import Git, GitError

CHUNK = 32 * 1024     # bytes of object names written before the objects are read
GROUP = 512           # objects written before their ids are read


class _Proc:
    """One git process answering a line (or a block) per request."""

    def __init__(self, git: Git, args: list[str], errdir: str):
        self.args = args
        self.err = tempfile.TemporaryFile(dir=errdir)
        self.p = subprocess.Popen(["git", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=git._env({"GIT_FLUSH": "1"}))

    def send(self, data: bytes) -> None:
        try:
            self.p.stdin.write(data)
            self.p.stdin.flush()
        except BrokenPipeError:
            self.fail()

    def line(self) -> bytes:
        out = self.p.stdout.readline()
        if not out.endswith(b"\n"):
            self.fail()
        return out[:-1]

    def read(self, n: int) -> bytes:
        out = self.p.stdout.read(n)
        if len(out) != n:
            self.fail()
        return out

    def fail(self):
        self.close()
        self.err.seek(0)
        raise GitError(self.args, self.p.returncode, self.err.read().decode(errors="replace"))

    def close(self) -> None:
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.p.stdout.close()
        self.err.close()


def _close_all(procs: dict[str, _Proc], tmp: list[str]) -> None:
    for p in procs.values():
        p.close()
    procs.clear()
    if tmp:
        shutil.rmtree(tmp.pop(), ignore_errors=True)


class ObjectStore:
    def __init__(self, git: Git):
        self.git = git
        self._procs: dict[str, _Proc] = {}
        self._tmp: list[str] = []          # the private directory, once made
        self._n = 0
        weakref.finalize(self, _close_all, self._procs, self._tmp)

    @property
    def tmp(self) -> str:
        if not self._tmp:
            self._tmp.append(tempfile.mkdtemp(prefix="ktopic-objects-"))
        return self._tmp[0]

    def _proc(self, name: str, *args: str) -> _Proc:
        if name not in self._procs:
            self._procs[name] = _Proc(self.git, list(args), self.tmp)
        return self._procs[name]

    def close(self) -> None:
        """End the processes and remove the directory; both come back if
        the store is used again."""
        _close_all(self._procs, self._tmp)

    # --- reading ---------------------------------------------------------------

    def read(self, specs: list[str]) -> list[tuple[str, bytes] | None]:
        """(type, content) of each object name (anything `git cat-file`
        takes, e.g. TREE:PATH), None where there is no such object."""
        p = self._proc("cat-file", "cat-file", "--batch")
        if any("\n" in s for s in specs):
            raise ValueError("an object name with a newline")
        out: list[tuple[str, bytes] | None] = []
        i = 0
        while i < len(specs):
            # Names are written a pipe's worth at a time at most: git may
            # block writing an object back before it has read them all.
            n, size = 0, 0
            while i + n < len(specs) and (n == 0 or size + len(specs[i + n]) < CHUNK):
                size += len(specs[i + n]) + 1
                n += 1
            p.send("".join(s + "\n" for s in specs[i:i + n]).encode())
            for _ in range(n):
                header = p.line().split()
                if header[-1] in (b"missing", b"ambiguous"):
                    out.append(None)
                    continue
                body = p.read(int(header[2]) + 1)[:-1]
                out.append((header[1].decode(), body))
            i += n
        return out

    def exists(self, spec: str) -> bool:
        return self.read([spec])[0] is not None

    def tree_of(self, commit: str) -> str | None:
        """The tree id of a commit (None if there is no such commit)."""
        got = self.read([commit + "^{commit}"])[0]
        if got is None:
            return None
        first = got[1].split(b"\n", 1)[0]
        return first[5:].decode() if first.startswith(b"tree ") else None

    # --- writing ---------------------------------------------------------------

    def _ids(self, p: _Proc, items: list[bytes]) -> list[str]:
        """Send each item, read one id per item.  Answers are 41 bytes: a
        group of GROUP never fills the pipe git answers through while we
        are still writing, so neither side waits on the other."""
        ids: list[str] = []
        for i in range(0, len(items), GROUP):
            group = items[i:i + GROUP]
            p.send(b"".join(group))
            ids += [p.line().decode() for _ in group]
        return ids

    def _hash_files(self, kind: str, datas: list[bytes]) -> list[str]:
        p = self._proc("hash-object " + kind, "hash-object", "-t", kind, "-w", "--no-filters",
                       "--stdin-paths")
        paths = []
        try:
            for data in datas:
                self._n += 1
                path = os.path.join(self.tmp, f"{kind}-{self._n}")
                with open(path, "wb") as f:
                    f.write(data)
                paths.append(path)
            return self._ids(p, [os.fsencode(x) + b"\n" for x in paths])
        finally:
            for path in paths:
                os.unlink(path)

    def write_blobs(self, datas: list[bytes]) -> list[str]:
        """Store each content as a blob; their ids, in order."""
        return self._hash_files("blob", datas)

    def write_commit(self, data: bytes) -> str:
        """Store a commit object (git checks its format); its id."""
        return self._hash_files("commit", [data])[0]

    def write_trees(self, bodies: list[bytes]) -> list[str]:
        """Store tree objects given in git's binary form (git checks that
        each entry is well formed); their ids, in order."""
        return self._hash_files("tree", bodies)
