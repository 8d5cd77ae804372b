"""Object names resolved by one long-lived `git cat-file --batch-check`
per repository, instead of a `git rev-parse` process per name.

Takes a git process environment (Git.process_env()) and object names
(refs, ids, REV^{commit}, REV:PATH); gives (object id, type) per name,
None where git has no such object, or NotImplemented where the name is
one a long-lived git could answer from what it read at its start: the
caller then starts a git of its own.

What git re-reads at every request: loose refs, packed-refs (when the
file changed), loose objects, and the pack directory when an object is
not found, so objects and refs the tool writes are seen at once.  What
it keeps from its start, and so is not asked of it: the index (":PATH"),
the configuration ("@{upstream}"), the list of each loose-object
directory (a name that may be an abbreviated id).  A process is ended
and started again when the repository's packs, alternates or git
directory change (a removed pack stays mapped in it); the last KEEP are
kept, the others ended; a forked child never uses its parent's; all end
at exit.  docs/bench.md, "make check".
"""

from __future__ import annotations

import atexit
import os
import re
import subprocess
import threading
from collections import OrderedDict

KEEP = 8                 # processes kept, the least recently used ended first
CHUNK = 16 * 1024        # bytes of names written before their answers are read
FOUND = re.compile(r"([0-9a-f]{40}) (blob|tree|commit|tag) \d+")
# The revision a name starts with, up to its first operator.
BASE = re.compile(r"[^^~:@]*")
HEX = re.compile(r"[0-9a-fA-F]+")
# Environment variables that change what git answers (and the directory
# it runs in): another value, another process.
_ENV = ("HOME", "XDG_CONFIG_HOME", "PATH", "LANG")

_procs: OrderedDict[tuple, "_Batch"] = OrderedDict()
_lock = threading.Lock()


def chunks(names: list[str], limit: int):
    """names in consecutive runs of fewer than limit bytes (one name at
    least), each written to git before its answers are read."""
    i = 0
    while i < len(names):
        n, size = 0, 0
        while i + n < len(names) and (n == 0 or size + len(names[i + n]) < limit):
            size += len(names[i + n]) + 1
            n += 1
        yield names[i:i + n]
        i += n


def cacheable(name: str) -> bool:
    """Whether a long-lived git answers name as a new git would."""
    if not name or name != name.strip() or any(ord(c) < 32 for c in name) \
            or name.startswith((":", "-")) or "@{" in name:
        return False
    base = BASE.match(name).group()
    # An abbreviated id: git lists each loose-object directory only once.
    return not (HEX.fullmatch(base) and len(base) < 40)


class _Batch:
    def __init__(self, env: dict, signature: tuple):
        self.signature = signature
        self.pid = os.getpid()
        self.p = subprocess.Popen(["git", "cat-file", "--batch-check"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env={**env, "GIT_FLUSH": "1"})

    def ask(self, names: list[str]) -> list[str]:
        """git's answer line for each name; OSError if git is gone."""
        out: list[str] = []
        # A pipe's worth of names at most: git writes answers as it reads.
        for part in chunks(names, CHUNK):
            self.p.stdin.write("".join(s + "\n" for s in part).encode())
            self.p.stdin.flush()
            for _ in part:
                line = self.p.stdout.readline()
                if not line.endswith(b"\n"):
                    raise OSError("git cat-file ended")
                out.append(line[:-1].decode(errors="replace"))
        return out

    def close(self) -> None:
        for f in (self.p.stdin, self.p.stdout):
            try:
                f.close()
            except OSError:
                pass
        if self.pid != os.getpid():
            return                      # the parent's process: the parent ends it
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def _common(git_dir: str) -> str:
    """The directory a work tree's git directory shares with the others
    (its objects and most refs), or git_dir itself."""
    try:
        with open(os.path.join(git_dir, "commondir")) as f:
            return os.path.join(git_dir, f.read().strip())
    except OSError:
        return git_dir


def _signature(env: dict, cwd: str) -> tuple:
    """What, when it changes, a running git must not be asked about: the
    git directory itself, its packs and alternates."""
    git_dir = os.path.join(cwd, env.get("GIT_DIR", ".git"))
    common = _common(git_dir)
    objects = os.path.join(cwd, env.get("GIT_OBJECT_DIRECTORY") or os.path.join(common, "objects"))
    sig = []
    for path in (git_dir, os.path.join(objects, "pack"), os.path.join(objects, "info", "alternates")):
        try:
            st = os.stat(path)
            sig.append((st.st_ino, st.st_mtime_ns, st.st_size))
        except OSError:
            sig.append(None)
    return tuple(sig)


def lookup(env: dict, names: list[str]) -> list[tuple[str, str] | None] | type(NotImplemented):
    """(object id, type) of each name, None where there is none, in the
    repository of the git environment env; NotImplemented if any name is
    not cacheable() or git could not be asked."""
    if not all(cacheable(n) for n in names):
        return NotImplemented
    cwd = os.getcwd()
    key = (os.getpid(), cwd) + tuple(sorted((k, v) for k, v in env.items()
                                            if k.startswith(("GIT_", "LC_")) or k in _ENV))
    signature = _signature(env, cwd)
    with _lock:
        b = _procs.pop(key, None)
        if b is not None and b.signature != signature:
            b.close()
            b = None
        try:
            if b is None:
                b = _Batch(env, signature)
            answers = b.ask(names)
        except BaseException as e:
            # Gone, or interrupted between a question and its answer: what
            # it would say next is unknown, so it is not asked again.
            if b is not None:
                b.close()
            if isinstance(e, OSError):
                return NotImplemented
            raise
        _procs[key] = b
        while len(_procs) > KEEP:
            _procs.popitem(last=False)[1].close()
    out: list[tuple[str, str] | None] = []
    for a in answers:
        m = FOUND.fullmatch(a)
        out.append((m.group(1), m.group(2)) if m else None)
    return out


def ref_absent(git_dir: str, name: str) -> bool:
    """Whether no ref git would take name for (name itself, refs/NAME,
    refs/heads/NAME...: git's rules) is a file, of the git directory or
    of the common one a work tree's shares, or in packed-refs; when one
    may be, the caller asks git."""
    if not name.startswith("refs/") or not cacheable(name) or ".." in name \
            or not all(c.isalnum() or c in "/-_." for c in name):
        return False
    names = [name] + [p + name for p in ("refs/", "refs/tags/", "refs/heads/", "refs/remotes/")] \
        + [f"refs/remotes/{name}/HEAD"]
    common = _common(git_dir)
    if any(os.path.lexists(os.path.join(d, n)) for d in (git_dir, common) for n in names):
        return False
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as f:
            packed = f.read()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return not any(b" %s\n" % n.encode() in packed for n in names)


def close_all() -> None:
    with _lock:
        while _procs:
            _procs.popitem()[1].close()


def _forget_in_child() -> None:
    """In a forked child: close its copies of the pipes (so that git still
    sees the end of its input when the parent closes them), and start its
    own processes when it needs them."""
    for b in _procs.values():
        b.close()
    _procs.clear()
    global _lock
    _lock = threading.Lock()


atexit.register(close_all)
os.register_at_fork(after_in_child=_forget_in_child)
