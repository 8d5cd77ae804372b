"""Every generated branch made again with git alone, the slow way: a full
index of the parent (`git read-tree`), `git apply --cached`, `git
write-tree`, `git commit-tree` with the patch's author (as committer too)
at the patch's date, and the message git am would take plus any notes
written between two `---` lines (format-patch gives them back from there).
No ktopic code applies or commits anything here: the
Python fast path (hunkapply, fastapply, commitobj, the stack cache) is
what the ids are compared against."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from ktopic.model.manifest import Manifest


def _env(git_dir: Path, **extra: str) -> dict:
    e = dict(os.environ, GIT_DIR=str(git_dir), GIT_CONFIG_GLOBAL=os.devnull,
             GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    e.update(extra)
    return e


def _git(git_dir: Path, *args: str, input: str | None = None, **env: str) -> str:
    return subprocess.run(["git", *args], env=_env(git_dir, **env), input=input,
                          capture_output=True, text=True, check=True).stdout


def chains(m: Manifest) -> dict[str, list[Path]]:
    """Branch ref -> the patch files stacked on the base to make it."""
    out = {}
    for name, t in m.topics.items():
        out[t.ref] = [p.path for d in [*m.closure(name), name] for p in m.topics[d].patches]
    out[m.integration.ref] = [p.path for n in m.integration.topics for p in m.topics[n].patches]
    return out


def rebuild(git_dir: Path, base: str, patches: list[Path]) -> str:
    """The head git alone makes from base and the patch files."""
    head = base
    with tempfile.TemporaryDirectory(prefix="git-rebuild-") as tmp:
        index = os.path.join(tmp, "index")
        _git(git_dir, "read-tree", base, GIT_INDEX_FILE=index)
        for patch in patches:
            info = subprocess.run(["git", "mailinfo", "-u", f"{tmp}/msg", f"{tmp}/diff"],
                                  stdin=open(patch, "rb"), capture_output=True, text=True,
                                  check=True, env=_env(git_dir)).stdout
            who = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
            body = Path(tmp, "msg").read_text().strip()
            message = who["Subject"] + ("\n\n" + body if body else "") + "\n"
            notes = re.match(r"---\n((?:(?!diff --git ).*\n)*?)---\n", Path(tmp, "diff").read_text())
            if notes and notes.group(1):
                message += "---\n" + notes.group(1)
            _git(git_dir, "apply", "--cached", "--whitespace=nowarn", str(patch),
                 GIT_INDEX_FILE=index)
            tree = _git(git_dir, "write-tree", GIT_INDEX_FILE=index).strip()
            ident = dict(GIT_AUTHOR_NAME=who["Author"], GIT_AUTHOR_EMAIL=who["Email"],
                         GIT_AUTHOR_DATE=who["Date"], GIT_COMMITTER_NAME=who["Author"],
                         GIT_COMMITTER_EMAIL=who["Email"], GIT_COMMITTER_DATE=who["Date"])
            head = _git(git_dir, "commit-tree", tree, "-p", head, input=message, **ident).strip()
    return head


def mismatches(m: Manifest, git_dir: Path) -> dict[str, tuple[str, str]]:
    """Branch ref -> (generated head, git's head) wherever they differ."""
    base = _git(git_dir, "rev-parse", "refs/heads/base").strip()
    out = {}
    for ref, patches in chains(m).items():
        ours = _git(git_dir, "rev-parse", ref).strip()
        theirs = rebuild(git_dir, base, patches)
        if ours != theirs:
            out[ref] = (ours, theirs)
    return out
