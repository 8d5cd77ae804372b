"""Git processes with one environment, and errors that say what failed.

Takes a git directory (and optionally a work tree); gives Git (run(),
try_run(), ..., process_env() for a process the caller starts) and env().
The environment runs git in the C locale, without the system
configuration (GIT_CONFIG_NOSYSTEM=1) and without the user's
(GIT_CONFIG_GLOBAL=/dev/null, no `git -c` parameters), so what git writes
depends on the inputs only.  Git(..., user_config=True), for the commands
that act as the user (mail, pull requests), keeps the user's
configuration, and the system's too if the caller's environment sets
GIT_CONFIG_NOSYSTEM itself.  docs/design.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ktopic.errors import Failure, check_interrupted
from ktopic.plumbing import namelookup

ZERO = "0" * 40
# Every ref this process moved, in transactions that were committed: an
# interrupted command says whether any was.
MOVED: list[str] = []
# Variables every git process of this run gets (scratch_objects()).
OVERLAY: dict[str, str] = {}


class GitError(Failure):
    def __init__(self, args, returncode, stderr):
        self.args_ = args
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"git {' '.join(args)}: {stderr.strip() or f'exit {returncode}'}")


def env(extra: dict | None = None, user_config: bool = False) -> dict:
    """The environment of a git process: ours, in the C locale, without the
    system's configuration (with user_config: unless our environment sets
    GIT_CONFIG_NOSYSTEM) and, unless user_config, without the user's."""
    e = dict(os.environ)
    if user_config:
        e.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    else:
        # Neither the user's nor the system's configuration changes what the
        # tool writes: hashes must not depend on the machine.
        e["GIT_CONFIG_GLOBAL"] = os.devnull
        e["GIT_CONFIG_NOSYSTEM"] = "1"
        # `git -c` of a caller, and GIT_CONFIG_COUNT's pairs, are the
        # user's configuration too.
        for k in [k for k in e if k == "GIT_CONFIG_PARAMETERS" or k == "GIT_CONFIG_COUNT"
                  or k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
            del e[k]
    e["LC_ALL"] = "C"
    e.update(OVERLAY)
    if extra:
        e.update(extra)
    return e


class Git:
    def __init__(self, git_dir: Path | str, work_tree: Path | str | None = None,
                 user_config: bool = False):
        self.git_dir = Path(git_dir)
        self.work_tree = Path(work_tree) if work_tree else None
        self.user_config = user_config

    def process_env(self, extra: dict | None = None) -> dict:
        """env() for a git process of this repository, for a caller that
        starts git itself (a pipe, a stream)."""
        e = {"GIT_DIR": str(self.git_dir)}
        if self.work_tree:
            e["GIT_WORK_TREE"] = str(self.work_tree)
        e.update(extra or {})
        return env(e, self.user_config)

    def run(self, *args: str, input: str | bytes | None = None,
            env: dict | None = None, check: bool = True,
            binary: bool = False, cwd: Path | str | None = None):
        """Run git; return stdout (str, or bytes when binary)."""
        text = not binary and not isinstance(input, bytes)
        p = subprocess.run(["git", *args], input=input, env=self.process_env(env),
                           capture_output=True, text=text, cwd=cwd)
        if check and p.returncode != 0:
            err = p.stderr if text else p.stderr.decode(errors="replace")
            raise GitError(list(args), p.returncode, err)
        return p.stdout

    def try_run(self, *args: str, **kw) -> subprocess.CompletedProcess:
        """Run git and return the completed process whatever its status."""
        env = self.process_env(kw.pop("env", None))
        return subprocess.run(["git", *args], env=env, capture_output=True,
                              text=True, **kw)

    def found(self, name: str) -> tuple[str, str] | None | type(NotImplemented):
        """(object id, type) of an object name, None if the repository has
        no such object, NotImplemented where a git of the caller's own must
        be asked (namelookup)."""
        got = namelookup.lookup(self.process_env(), [name])
        return got if got is NotImplemented else got[0]

    def resolve(self, name: str) -> str | None:
        """The id of the object name names, when the repository has it;
        None where the caller must ask git itself (no such object, or a
        name namelookup leaves to a git of its own)."""
        got = self.found(name)
        return got[0] if got and got is not NotImplemented else None

    def rev_parse(self, rev: str) -> str | None:
        got = self.found(rev + "^{commit}")
        if got is not NotImplemented:
            return got[0] if got else None
        p = self.try_run("rev-parse", "--verify", "-q", rev + "^{commit}")
        return p.stdout.strip() if p.returncode == 0 else None

    def tree_of(self, rev: str) -> str:
        return self.resolve(rev + "^{tree}") or self.run("rev-parse", rev + "^{tree}").strip()

    def has(self, name: str) -> bool:
        """Whether `git cat-file -e name` succeeds (the object is there),
        asked of the repository's long-lived look-up where it can be."""
        got = self.found(name)
        if got is NotImplemented:
            return self.try_run("cat-file", "-e", name).returncode == 0
        return got is not None

    def exists(self, name: str) -> bool:
        """Whether `git rev-parse -q --verify name` succeeds."""
        if self.resolve(name):
            return True
        if namelookup.ref_absent(str(self.git_dir), name):
            return False
        return self.try_run("rev-parse", "-q", "--verify", name).returncode == 0

    def check_objects(self, refs: dict[str, str], names: list[str]) -> None:
        """Failure naming the first of the refs names whose object the
        repository does not have (refs: name -> object, from refs())."""
        want = [(n, refs[n]) for n in names if n in refs]
        if not want:
            return
        got = namelookup.lookup(self.process_env(), [o for _, o in want])
        if got is NotImplemented:
            out = self.run("cat-file", "--batch-check", input="".join(f"{o}\n" for _, o in want))
            got = [None if line.endswith(" missing") else line for line in out.splitlines()]
        for (n, o), found in zip(want, got):
            if found is None:
                raise self._missing(n, o)

    def _missing(self, name: str, oid: str) -> Failure:
        return Failure(f"{name} points at {oid}, which is missing from {self.git_dir}: "
                       f"restore the object, or delete the ref (git update-ref -d {name})")

    def ref(self, name: str) -> str | None:
        """The object a full ref name points at, or None; Failure when the
        ref names an object the repository does not have."""
        got = self.found(name + "^{object}")
        if got:
            return got[0]
        if got is NotImplemented:
            p = self.try_run("rev-parse", "--verify", "-q", name + "^{object}")
            if p.returncode == 0:
                return p.stdout.strip()
        elif namelookup.ref_absent(str(self.git_dir), name):
            return None
        p = self.try_run("rev-parse", "--verify", "-q", name)
        if p.returncode == 0 and not name.startswith(p.stdout.strip()):
            raise self._missing(name, p.stdout.strip())
        return None

    def refs(self, prefix: str = "refs/") -> dict[str, str]:
        """Every ref under prefix and the object it points at, in one call."""
        out = self.run("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        return dict(line.split(" ", 1) for line in out.splitlines())

    def read_files(self, commit: str, paths: list[str]) -> dict[str, str | None]:
        """The text of each path in commit (None where missing), in one git call."""
        if not paths:
            return {}
        out = self.run("cat-file", "--batch", binary=True,
                       input="".join(f"{commit}:{p}\n" for p in paths).encode())
        files: dict[str, str | None] = {}
        pos = 0
        for p in paths:
            eol = out.index(b"\n", pos)
            header = out[pos:eol].decode()
            pos = eol + 1
            if header.endswith(" missing"):
                files[p] = None
                continue
            _, kind, size = header.split()
            size = int(size)
            # A directory is no file either.
            files[p] = out[pos:pos + size].decode(errors="replace") if kind == "blob" else None
            pos += size + 1
        return files

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.try_run("merge-base", "--is-ancestor", a, b).returncode == 0

    def update_refs(self, updates: list[tuple[str, str, str | None]], msg: str) -> None:
        """Move several refs in one transaction: all move or none does.
        Each update is (ref, new, old); old None means "must not exist"
        unless it is the ZERO sentinel semantics of update-ref."""
        lines = ["start"]
        for ref, new, old in updates:
            if new == ZERO:
                lines.append(f"delete {ref} {old or ''}".rstrip())
            else:
                lines.append(f"update {ref} {new} {old if old is not None else ZERO}")
        lines += ["prepare", "commit", ""]
        check_interrupted()         # an interrupt Python swallowed moves nothing either
        refs = [ref for ref, _, _ in updates]
        self.clear_stale_locks(refs)
        try:
            self._transaction(["update-ref", "-m", msg, "--stdin"], "\n".join(lines), refs)
        except BaseException:
            # Interrupted (or failed): the transaction may have been
            # committed all the same; what an interrupt says must be true.
            if all(self.ref(ref) == (None if new == ZERO else new) for ref, new, _ in updates):
                MOVED.extend(refs)
            raise
        MOVED.extend(refs)

    # --- lock files a killed transaction leaves -------------------------------

    @property
    def _record(self) -> Path:
        """Which refs a transaction of ours locks, and its git's process id,
        while it runs: what a later run may clear once that process is gone."""
        return self.git_dir / "ktopic-update-ref.json"

    def _transaction(self, args: list[str], text: str, refs: list[str]) -> None:
        p = subprocess.Popen(["git", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=self.process_env())
        self._record.write_text(json.dumps({"pid": p.pid, "refs": refs}))
        try:
            _, err = p.communicate(text)
        except BaseException:
            # Let git finish (or abort at the end of its input) and remove
            # its own locks: killing it mid-transaction would leave them.
            with contextlib.suppress(OSError):
                p.stdin.close()
            try:
                p.wait(timeout=30)
            except BaseException:
                p.kill()
                raise
            self._after(p.returncode, refs)
            raise
        self._after(p.returncode, refs)
        if p.returncode != 0:
            raise GitError(args, p.returncode, err)

    def _after(self, returncode: int, refs: list[str]) -> None:
        if returncode < 0:          # git was killed: its locks stay, it is gone
            self._remove_locks(refs)
        self._record.unlink(missing_ok=True)

    def _remove_locks(self, refs: list[str]) -> None:
        for f in [self.git_dir / (r + ".lock") for r in refs] + [self.git_dir / "packed-refs.lock"]:
            f.unlink(missing_ok=True)

    def clear_stale_locks(self, refs: list[str]) -> None:
        """Remove the lock files a transaction of ours left when its git was
        killed (its process gone); refuse in one line, naming them, when a
        lock on one of refs is another's."""
        try:
            rec = json.loads(self._record.read_text())
        except (OSError, ValueError):
            rec = None
        if isinstance(rec, dict) and not _alive(rec.get("pid")):
            self._remove_locks([r for r in rec.get("refs", []) if isinstance(r, str)
                                and ".." not in r and r.startswith("refs/")])
            self._record.unlink(missing_ok=True)
        locks = [str(f) for f in [self.git_dir / (r + ".lock") for r in refs]
                 + [self.git_dir / "packed-refs.lock"] if f.exists()]
        if locks:
            raise Failure(f"lock file(s) of another git process on the refs to move: "
                          f"{' '.join(locks)}; if no git runs on {self.git_dir}, a killed one "
                          f"left them: remove them (rm {' '.join(locks)})")


def _alive(pid) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def scratch_objects(git_dir: Path):
    """Inside, git writes new objects to a temporary directory and reads
    the work repository's as an alternate: a run that only looks (status
    on a read-only work directory) writes nothing there."""
    with tempfile.TemporaryDirectory(prefix="ktopic-scratch-objects-") as tmp:
        OVERLAY.update(GIT_OBJECT_DIRECTORY=tmp,
                       GIT_ALTERNATE_OBJECT_DIRECTORIES=str(Path(git_dir, "objects").resolve()))
        try:
            yield
        finally:
            OVERLAY.clear()


@contextmanager
def tree_attributes(git: "Git", commit: str):
    """git options under which a bare repository reads the .gitattributes of
    `commit` (a bare one reads none from the tree): format-patch then names
    functions in hunk headers as a kernel checkout does ("*.c diff=cpp")."""
    with tempfile.NamedTemporaryFile("w", prefix="ktopic-attributes-") as f:
        f.write(git.run("show", f"{commit}:.gitattributes", check=False) or "")
        f.flush()
        yield ["-c", f"core.attributesFile={f.name}"]
