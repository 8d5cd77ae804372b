"""Git objects read and written through a few long-lived git processes.

Takes object names or contents; gives contents or object ids, through
cat-file and hash-object processes kept for the run.  docs/design.md,
"Generation".
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import weakref

from ktopic.plumbing.gitutil import Git, GitError
from ktopic.plumbing.namelookup import chunks

CHUNK = 32 * 1024     # bytes of object names written before the objects are read
GROUP = 512           # objects written before their ids are read
CACHE_BYTES = 256 << 20   # object contents kept in memory, at most


class _Proc:
    """One git process answering a line (or a block) per request."""

    def __init__(self, git: Git, args: list[str], errdir: str):
        self.args = args
        self.err = tempfile.TemporaryFile(dir=errdir)
        self.p = subprocess.Popen(["git", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=git.process_env({"GIT_FLUSH": "1"}))

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
        self._end()                 # git has said all it will say
        self.err.seek(0)
        err = self.err.read().decode(errors="replace")
        self.close()
        raise GitError(self.args, self.p.returncode, err)

    @property
    def alive(self) -> bool:
        return not self.err.closed

    def _end(self) -> None:
        """Close git's input (it stores what it was sent, then exits) and
        wait for it; a git that does not exit is killed."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()

    def close(self) -> None:
        self._end()
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
        self._pending: list[tuple[_Proc, str, str]] = []   # written, not yet answered
        self._unsent: dict[_Proc, list[bytes]] = {}        # files git has not been told of
        self._cache: dict[str, tuple[str, bytes]] = {}
        self._cached_bytes = 0
        weakref.finalize(self, _close_all, self._procs, self._tmp)

    @property
    def tmp(self) -> str:
        if not self._tmp:
            self._tmp.append(tempfile.mkdtemp(prefix="ktopic-objects-"))
        return self._tmp[0]

    def _proc(self, name: str, *args: str) -> _Proc:
        if name not in self._procs or not self._procs[name].alive:
            self._procs[name] = _Proc(self.git, list(args), self.tmp)
        return self._procs[name]

    def close(self) -> None:
        """End the processes (git stores what it was sent before it reads
        the end of its input) and remove the directory; both come back if
        the store is used again."""
        try:
            self._send()
        except GitError:
            pass                    # what failed failed; the caller is ending anyway
        self._pending.clear()
        _close_all(self._procs, self._tmp)

    # --- reading ---------------------------------------------------------------

    def read(self, specs: list[str]) -> list[tuple[str, bytes] | None]:
        """(type, content) of each object name (anything `git cat-file`
        takes, e.g. TREE:PATH), None where there is no such object."""
        self.sync()
        p = self._proc("cat-file", "cat-file", "--batch")
        if any("\n" in s for s in specs):
            raise ValueError("an object name with a newline")
        out: list[tuple[str, bytes] | None] = []
        # Names are written a pipe's worth at a time at most: git may
        # block writing an object back before it has read them all.
        for part in chunks(specs, CHUNK):
            p.send("".join(s + "\n" for s in part).encode())
            for _ in part:
                header = p.line().split()
                if header[-1] in (b"missing", b"ambiguous"):
                    out.append(None)
                    continue
                body = p.read(int(header[2]) + 1)[:-1]
                out.append((header[1].decode(), body))
                self.remember(header[0].decode(), header[1].decode(), body)
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

    def write(self, kind: str, datas: list[bytes], wait: bool = True) -> list[str]:
        """Store each content as an object of kind (blob, tree or commit;
        git checks trees and commits are well formed); their ids, in order.

        The ids are computed here, so with wait=False nothing waits for
        git, nor even wakes it: the objects are sent at the next sync()
        (which read() does first, so this store always sees what it
        wrote; any other reader of the repository must sync() first), and
        git's answers read and checked against them then.  On a loaded
        machine every wake-up of a git process costs a turn of the
        scheduler."""
        p = self._proc("hash-object " + kind, "hash-object", "-t", kind, "-w", "--no-filters",
                       "--stdin-paths")
        ids = []
        for data in datas:
            oid = hashlib.sha1(b"%s %d\0" % (kind.encode(), len(data)) + data).hexdigest()
            self._n += 1
            path = os.path.join(self.tmp, f"{kind}-{self._n}")
            with open(path, "wb") as f:
                f.write(data)
            self._pending.append((p, oid, path))
            self._unsent.setdefault(p, []).append(os.fsencode(path) + b"\n")
            self.remember(oid, kind, data)
            ids.append(oid)
        # Answers are 41 bytes: GROUP of them never fill the pipe git
        # answers through, so git never waits for us to read them.
        if wait or len(self._pending) > GROUP:
            self.sync()
        return ids

    def _send(self) -> None:
        unsent, self._unsent = self._unsent, {}
        for p, lines in unsent.items():
            p.send(b"".join(lines))

    def sync(self) -> None:
        """Wait until git has stored everything written so far."""
        pending, self._pending = self._pending, []
        try:
            self._send()
            for p, oid, path in pending:
                got = p.line().decode()
                if got != oid:
                    raise GitError(p.args, 0, f"git stored {got} where {oid} was expected")
        finally:
            # After an error what is left is unknown: nothing waits for it.
            for _, _, path in pending:
                if os.path.exists(path):
                    os.unlink(path)

    def write_blobs(self, datas: list[bytes], wait: bool = True) -> list[str]:
        return self.write("blob", datas, wait)

    def write_trees(self, bodies: list[bytes], wait: bool = True) -> list[str]:
        """Trees in git's binary form."""
        return self.write("tree", bodies, wait)

    def write_commit(self, data: bytes, wait: bool = True) -> str:
        return self.write("commit", [data], wait)[0]

    # --- what was read or written, by id ----------------------------------------

    def remember(self, oid: str, kind: str, data: bytes) -> None:
        """Keep an object's content: a series reads back, patch after
        patch, the files and directories the patch before wrote."""
        if self._cached_bytes + len(data) > CACHE_BYTES:
            self._cache.clear()
            self._cached_bytes = 0
        if oid not in self._cache:
            self._cache[oid] = (kind, data)
            self._cached_bytes += len(data)

    def cached(self, oid: str) -> tuple[str, bytes] | None:
        """(type, content) of an object this store has in memory, else None."""
        return self._cache.get(oid)

    def objects(self, oids: list[str]) -> list[tuple[str, bytes] | None]:
        """(type, content) of each object id, from what this store has
        seen, else from git (one batch)."""
        missing = [o for o in dict.fromkeys(oids) if o not in self._cache]
        for oid, got in zip(missing, self.read(missing) if missing else []):
            if got is not None:
                self.remember(oid, *got)
        return [self._cache.get(o) for o in oids]
