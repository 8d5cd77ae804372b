"""The work directory: the kernel git repository and everything built from
it live here, outside the checkout (kernel trees do not belong in it).

    <root>/linux.git     bare repository: base imports, topic branches
    <root>/lock          flock(2) file that serialises ktopic runs
    <root>/stack-cache.json, index-cache/   generation's caches
    <root>/cache/, src/, build/, results/    the gates', build and boot stages'
    <root>/rebase/, mail-worktrees/          a rebase in progress, b4's worktrees

Takes a root (or $KTOPIC_WORKDIR, or ~/.cache/ktopic); gives Workdir,
whose properties name every one of these places, and its lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
from pathlib import Path

from ktopic.errors import KtopicError


def default_root() -> Path:
    env = os.environ.get("KTOPIC_WORKDIR")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "ktopic"


class Workdir:
    def __init__(self, root: Path | str | None = None):
        self.root = Path(root).expanduser().resolve() if root else default_root().resolve()
        for p in (self.root, *self.root.parents):
            if p.exists():
                if not p.is_dir():
                    raise KtopicError("the work directory cannot be made: "
                                      f"{p} is not a directory", self.root)
                break
        self.git_dir = self.root / "linux.git"
        self._lock_fd: int | None = None

    def ensure(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    # Every place of the layout, named once.
    @property
    def stack_cache(self) -> Path:
        """(parent commit, patch SHA-256) -> commit made (plumbing/stack.py)."""
        return self.root / "stack-cache.json"

    @property
    def index_cache(self) -> Path:
        """Full index files of start trees, by tree id (plumbing/stack.py)."""
        return self.root / "index-cache"

    @property
    def cache(self) -> Path:
        """Content-keyed caches: kunit parsers, initramfs, check results."""
        return self.root / "cache"

    @property
    def check_cache(self) -> Path:
        """checkpatch's extracted scripts and its per-patch results."""
        return self.cache / "check"

    @property
    def gate_cache(self) -> Path:
        """The bisect and warnings gates' verdicts (gates/gatecache.py)."""
        return self.check_cache / "gates"

    @property
    def src(self) -> Path:
        """The one worktree builds compile from."""
        return self.root / "src"

    def build_dir(self, name: str) -> Path:
        """A build's output directory (kernel/build.py names it)."""
        return self.root / "build" / name

    @property
    def results(self) -> Path:
        """Cached branch results, by tree and key (runner/)."""
        return self.root / "results"

    @property
    def rebase_state(self) -> Path:
        """A `ktopic rebase` in progress."""
        return self.root / "rebase"

    def mail_worktree(self, label: str) -> Path:
        """The sparse worktree b4 prepares a series in."""
        return self.root / "mail-worktrees" / label

    def writable(self) -> bool:
        """Whether this process can write the work repository's objects."""
        objects = self.git_dir / "objects"
        return not objects.is_dir() or os.access(objects, os.W_OK)

    def _open_lock(self) -> int:
        """The lock file, opened; one line when the work directory is not
        ours to write (a read-only mount, another user's)."""
        path = self.root / "lock"
        try:
            self.ensure()
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            if e.errno == errno.EROFS:
                why = "the work directory is on a read-only file system"
            else:
                why = f"cannot open the work directory's lock ({e.strerror})"
            raise KtopicError(f"{why}: run as its owner, or give another one with -w DIR",
                              path) from None

    @contextlib.contextmanager
    def lock(self, wait: bool = True):
        """Hold the work directory's lock; a second ktopic run waits for it
        (saying so) instead of racing on refs and build directories."""
        if self._lock_fd is not None:      # re-entrant within one process
            yield
            return
        fd = self._open_lock()
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                if not wait:
                    raise KtopicError("another ktopic run holds the lock",
                                      self.root / "lock") from None
                print(f"ktopic: waiting for another run to finish "
                      f"(lock {self.root / 'lock'})", file=sys.stderr)
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._lock_fd = fd
            yield
        finally:
            self._lock_fd = None
            os.close(fd)
