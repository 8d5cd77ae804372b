"""The base tree's own scripts/checkpatch.pl and get_maintainer.pl, run on
patch files in a minimal tree extracted from the base commit (no checkout,
no .git, HOME inside it), their answers cached by content; docs/gates.md,
"checkpatch".

Takes the base tree and patch files; gives checkpatch's Messages and
get_maintainer's recipients.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ktopic import stampcache
from ktopic.errors import Failure
from ktopic.plumbing import gitutil
from ktopic.plumbing.gitutil import Git
from ktopic.fileio import write_atomic

# Version of the parsed format and of the way checkpatch is invoked: part of
# every cache key, so a change here never reuses an old verdict.
FORMAT = "2"

# What checkpatch.pl and get_maintainer.pl read from the tree.
TREE_FILES = ["scripts/checkpatch.pl", "scripts/spelling.txt",
              "scripts/const_structs.checkpatch", "scripts/get_maintainer.pl",
              "MAINTAINERS", "COPYING", "CREDITS", "Kbuild", "Makefile", "README", "include"]
# Names both scripts test for to recognise the top of a kernel tree.
TREE_DIRS = ["Documentation", "arch", "drivers", "fs", "init", "ipc", "kernel", "lib",
             "scripts", "include"]

LEVELS = ("ERROR", "WARNING", "CHECK")
_HEAD = re.compile(r"^(ERROR|WARNING|CHECK):([A-Z0-9_]+): ?(.*)$")
_TOTAL = re.compile(r"^total: (\d+) errors, (\d+) warnings, (?:(\d+) checks, )?(\d+) lines checked")


@dataclass
class Message:
    """One checkpatch report: its level, type, text and its own lines."""
    level: str                       # ERROR | WARNING | CHECK
    type: str                        # LONG_LINE, FILE_PATH_CHANGES, ...
    text: str                        # the message (first line)
    lines: list[str] = field(default_factory=list)   # checkpatch's lines, verbatim
    waived: str = ""                 # the manifest's reason, when waived

    @property
    def where(self) -> str:
        """'path:line' of the first "#N: FILE: path:line:" line, else ''."""
        for ln in self.lines:
            m = re.match(r"^#\d+: FILE: (\S+?):(\d+):", ln)
            if m:
                return f"{m.group(1)}:{m.group(2)}"
        return ""


@dataclass
class Run:
    """checkpatch.pl on one patch."""
    messages: list[Message]
    total: str                       # checkpatch's "total: ..." line
    strict: bool
    options: list[str]
    output: str                      # the whole output, for the log
    cached: bool = False

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("cached")
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Run":
        d = dict(d)
        d["messages"] = [Message(**m) for m in d["messages"]]
        return cls(**d)


def parse_output(text: str) -> tuple[list[Message], str]:
    """checkpatch's reports (blocks that start with LEVEL:TYPE:, end at a
    blank line) and its "total:" line."""
    messages: list[Message] = []
    total = ""
    current: Message | None = None
    for line in text.splitlines():
        m = _HEAD.match(line)
        if m:
            current = Message(m.group(1), m.group(2), m.group(3).strip(), [line])
            messages.append(current)
            continue
        if _TOTAL.match(line):
            total = line.strip()
            current = None
            continue
        if not line.strip():
            current = None
        elif current is not None:
            current.lines.append(line)
    return messages, total


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def codespell_dictionary() -> Path | None:
    """Debian's codespell dictionary (python3-codespell / codespell), found
    without importing codespell.  checkpatch's own lookup runs the python3
    first on PATH, which may not be Debian's."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("codespell_lib")
    except (ImportError, ValueError):
        spec = None
    cands = []
    if spec and spec.submodule_search_locations:
        cands += [Path(p) / "data" / "dictionary.txt" for p in spec.submodule_search_locations]
    cands.append(Path("/usr/share/codespell/dictionary.txt"))
    return next((c for c in cands if c.is_file()), None)


class ScriptsTree:
    """The minimal tree checkpatch.pl and get_maintainer.pl run in."""

    def __init__(self, path: Path, tree_id: str, label: str = ""):
        self.path = Path(path)
        self.tree_id = tree_id
        self.label = label or tree_id

    @classmethod
    def from_git(cls, git_dir: Path, rev: str, cache: Path) -> "ScriptsTree":
        """Extract (once) the files the scripts read from rev's tree."""
        git = Git(git_dir)
        p = git.try_run("rev-parse", f"{rev}^{{tree}}")
        if p.returncode:
            raise Failure(f"no {rev} in {git_dir}: run `ktopic import-base` first")
        tree = p.stdout.strip()
        path = Path(cache) / f"tree-{tree}"
        if (path / ".complete").exists():
            return cls(path, tree)
        present = git.try_run("ls-tree", "--name-only", tree, "--", *TREE_FILES).stdout.split()
        if "scripts/checkpatch.pl" not in present:
            raise Failure(f"the base tree {tree[:12]} has no scripts/checkpatch.pl")
        Path(cache).mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tree-{tree[:12]}-", dir=cache))
        try:
            # The commit, not the tree: files then carry the commit's time,
            # which names checkpatch's CamelCase cache.
            arch = subprocess.Popen(["git", "archive", "--format=tar", f"{rev}^{{commit}}", "--",
                                     *present],
                                    stdout=subprocess.PIPE, env=git.process_env())
            x = subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=arch.stdout,
                               capture_output=True)
            arch.stdout.close()
            if arch.wait() or x.returncode:
                raise Failure(f"extracting checkpatch's files from {tree[:12]} failed: "
                              f"{x.stderr.decode(errors='replace').strip()}")
            for d in TREE_DIRS:
                (tmp / d).mkdir(exist_ok=True)
            for f in ("COPYING", "CREDITS", "Kbuild", "MAINTAINERS", "Makefile", "README"):
                (tmp / f).touch(exist_ok=True)
            st = cls(tmp, tree)
            st._seed_camelcase()
            (tmp / ".complete").write_text(tree + "\n")
            try:
                tmp.rename(path)
            except OSError:
                # Another run finished first: its tree is the same.
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls(path, tree)

    def _seed_camelcase(self) -> None:
        """checkpatch --strict writes its CamelCase cache (the identifiers of
        include/) into the current directory on first use; make it now, once,
        so that parallel runs only read it."""
        if not (self.path / "include").is_dir():
            return
        patch = ("From: Seed <seed@example.org>\nSubject: [PATCH] seed\n\n"
                 "Signed-off-by: Seed <seed@example.org>\n---\n"
                 "diff --git a/lib/seed.c b/lib/seed.c\n--- a/lib/seed.c\n+++ b/lib/seed.c\n"
                 "@@ -1,1 +1,2 @@\n int a;\n+int SeedCamelCase;\n")
        subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", "--no-summary", "-q", "-"],
                       input=patch, cwd=self.path, env=self.env(), capture_output=True,
                       text=True)

    def env(self) -> dict[str, str]:
        e = dict(os.environ)
        e["HOME"] = str(self.path)
        e["LC_ALL"] = "C"
        e["TZ"] = "UTC"          # checkpatch names its CamelCase cache by local time
        e.pop("GIT_DIR", None)
        e.pop("GIT_WORK_TREE", None)
        return e

    def blob_id(self, rel: str) -> str:
        p = subprocess.run(["git", "hash-object", str(self.path / rel)], capture_output=True,
                           text=True, env=gitutil.env())
        return p.stdout.strip()


def options_for(strict: bool, codespell: Path | None) -> list[str]:
    opts = ["--show-types", "--color=never", "--root=."]
    if strict:
        opts.append("--strict")
    if codespell:
        opts += ["--codespell", f"--codespellfile={codespell}"]
    return opts


def adds_files(patch_text: str) -> bool:
    """The patch creates a file (checkpatch --strict applies to it)."""
    return re.search(r"^new file mode ", patch_text, re.M) is not None


_CALLED = re.compile(rb"\b([a-z_][a-z0-9_]*)\s*\(")


def kernel_dictionary(tree: ScriptsTree, dictionary: Path) -> Path:
    """codespell's dictionary without the words the tree's headers use as
    function or macro names: codespell takes iput() for a typo of "input"
    (and would fail every patch that puts an inode).  Written once per
    tree and dictionary, beside the tree."""
    digest = _sha256_file(dictionary)[:16]
    out = tree.path / f".codespell-{digest}.txt"
    if out.is_file():
        return out
    names: set[bytes] = set()
    for h in (tree.path / "include").rglob("*.h"):
        try:
            names.update(_CALLED.findall(h.read_bytes()))
        except OSError:
            pass
    kept = []
    for line in dictionary.read_bytes().splitlines(keepends=True):
        word = line.split(b"->", 1)[0].strip().lower()
        if word not in names:
            kept.append(line)
    write_atomic(out, b"".join(kept))
    return out


class Checker:
    """checkpatch.pl and get_maintainer.pl runs with a content cache."""

    def __init__(self, tree: ScriptsTree, cache: Path, codespell: bool = True):
        self.tree = tree
        self.cache = Path(cache)
        self.dictionary = codespell_dictionary() if codespell else None
        self._dict_hash = _sha256_file(self.dictionary)[:16] if self.dictionary else ""
        # What checkpatch reads: the dictionary minus the tree's own names.
        self.codespell = kernel_dictionary(tree, self.dictionary) if self.dictionary else None

    def _load(self, kind: str, key: str):
        return stampcache.Store(self.cache / kind).get(key)

    def _store(self, kind: str, key: str, value) -> None:
        stampcache.Store(self.cache / kind).put(key, value)

    def _key(self, *parts: str) -> str:
        return hashlib.sha256("\0".join((FORMAT, self.tree.tree_id, self._dict_hash, *parts))
                              .encode()).hexdigest()

    def checkpatch(self, patch: bytes, strict: bool) -> Run:
        opts = options_for(strict, self.codespell)
        sha = hashlib.sha256(patch).hexdigest()
        key = self._key("checkpatch", sha, *[o for o in opts if not o.startswith("--codespellfile")])
        hit = self._load("checkpatch", key)
        if hit is not None:
            try:
                run = Run.from_dict(hit)
                run.cached = True
                return run
            except (TypeError, KeyError):
                pass
        p = subprocess.run(["perl", "scripts/checkpatch.pl", *opts, "-"], input=patch,
                           cwd=self.tree.path, env=self.tree.env(), capture_output=True)
        out = p.stdout.decode("utf-8", errors="replace")
        err = p.stderr.decode("utf-8", errors="replace")
        messages, total = parse_output(out)
        if not total:
            raise Failure(f"checkpatch.pl did not finish (exit {p.returncode}): "
                          f"{(err or out).strip().splitlines()[-1:] or ''}")
        run = Run(messages, total, strict, opts, out + (("\n" + err) if err.strip() else ""))
        self._store("checkpatch", key, run.to_dict())
        return run

    def maintainers(self, patch: bytes) -> list[str]:
        """get_maintainer.pl --no-git --no-rolestats on the patch, in the base tree."""
        opts = ["--no-git", "--no-git-fallback", "--no-rolestats"]
        sha = hashlib.sha256(patch).hexdigest()
        key = self._key("get_maintainer", sha, *opts)
        hit = self._load("maintainers", key)
        if isinstance(hit, list):
            return hit
        with tempfile.NamedTemporaryFile(suffix=".patch", dir=self.cache) as f:
            f.write(patch)
            f.flush()
            p = subprocess.run(["perl", "scripts/get_maintainer.pl", *opts, f.name],
                               cwd=self.tree.path, env=self.tree.env(), capture_output=True,
                               text=True)
        if p.returncode:
            raise Failure(f"get_maintainer.pl failed (exit {p.returncode}): "
                          f"{p.stderr.strip().splitlines()[-1:] or ''}")
        out = [ln.strip() for ln in p.stdout.splitlines() if "@" in ln]
        self._store("maintainers", key, out)
        return out
