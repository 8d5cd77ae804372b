"""Is a patch already in the new base?  The evidence and the check it leaves.

Takes a patch and the old and new bases; gives the evidence that the new
base carries it (or none) and the manifest entry with a `contains`/`lacks`
check that the new base backs and the old one does not.  docs/rebase.md,
"What happens".
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.patchfile import PatchFile


def patch_id(git: Git, diff: bytes | str) -> str | None:
    """The stable patch-id of a diff (None for an empty one)."""
    data = diff.encode() if isinstance(diff, str) else diff
    out = git.run("patch-id", "--stable", input=data, binary=True).decode().split()
    return out[0] if out else None


def same_as_base_diff(git: Git, p: PatchFile, old: str, new: str) -> str | None:
    """The patch-id when the old..new diff of the patch's files is exactly
    this patch, else None."""
    files = p.paths
    if not files:
        return None
    ours = patch_id(git, p.patch)          # the diff git am applies, decoded
    if ours is None:
        return None
    theirs = patch_id(git, git.run("diff", "--no-color", "--no-ext-diff", old, new, "--", *files,
                                   binary=True))
    return ours if ours == theirs else None


def added_lines(p: PatchFile) -> dict[str, list[str]]:
    """File (new side) -> lines the patch adds; and removed lines under
    the key (file, '-')."""
    out: dict = {}
    current = None
    for line in p.diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("--- "):
            continue
        elif current and line.startswith("+"):
            out.setdefault(current, []).append(line[1:])
        elif current and line.startswith("-"):
            out.setdefault((current, "-"), []).append(line[1:])
    return out


def line_regex(line: str) -> str | None:
    """A whitespace-tolerant, anchored regular expression for one line."""
    tokens = line.split()
    if not tokens:
        return None
    return r"^\s*" + r"\s+".join(re.escape(t) for t in tokens) + r"\s*$"


def _distinctive(line: str) -> bool:
    s = line.strip()
    return len(s) >= 6 and re.search(r"[A-Za-z0-9_]{3}", s) is not None


# What a line of C the patch adds may be: an export of a symbol, or a
# function's signature (a definition or a prototype, at the start of a line).
EXPORT = re.compile(r"^EXPORT_SYMBOL(?:_GPL)?(?:_NS)?\(\s*\w+")
SIGNATURE = re.compile(r"^(?!(?:return|if|while|for|switch|else|do|case|goto)\b)"
                       r"[A-Za-z_][\w \t*]*?\b\w+\s*\([^;{}]*\)?\s*[;{]?\s*$")


def _rank(file: str, line: str) -> int:
    """0: an export or a function's signature in C, 1: another line of C
    code (not a comment), 2: any other line (Kconfig help, documentation)."""
    if not file.endswith((".c", ".h")):
        return 2
    if EXPORT.match(line) or SIGNATURE.match(line):
        return 0
    s = line.strip()
    return 2 if s.startswith(("/*", "*", "//")) else 1


def find_check(git: Git, p: PatchFile, old: str, new: str) -> dict | None:
    """A check ({file, contains|lacks}) that holds on new and fails on old,
    so that it proves the change arrived; None when there is none."""
    lines = added_lines(p)
    files = sorted({k if isinstance(k, str) else k[0] for k in lines})
    new_text = git.read_files(new, files)
    old_text = git.read_files(old, files)
    # contains: a line the patch adds, its own code first (an export, a
    # function's signature), then any code, then any other file's line
    cands = sorted(((f, ln) for f in files for ln in set(lines.get(f, [])) if _distinctive(ln)),
                   key=lambda c: (_rank(*c), -len(c[1]), c))
    for f, ln in cands:
        rx = line_regex(ln)
        if rx and new_text.get(f) is not None and re.search(rx, new_text[f], re.M):
            if old_text.get(f) is None or not re.search(rx, old_text[f], re.M):
                return {"file": f, "contains": rx}
    for f in files:                          # lacks: a line a pure deletion removes
        if lines.get(f):
            continue
        for ln in sorted({ln for ln in lines.get((f, "-"), []) if _distinctive(ln)},
                         key=len, reverse=True):
            rx = line_regex(ln)
            if rx and new_text.get(f) is not None and not re.search(rx, new_text[f], re.M) \
                    and old_text.get(f) and re.search(rx, old_text[f], re.M):
                return {"file": f, "lacks": rx}
    return None


def entry(p: PatchFile, check: dict, how: str, version: str, package: str,
          debian_version: str) -> dict:
    """The manifest's upstream entry for p."""
    return {"subject": p.subject,
            "upstream-in": f"v{version} ({package} {debian_version})",
            "evidence": f"found by ktopic rebase onto {debian_version}: {how}",
            "checks": [check]}


def reverse_applies(git: Git, tree: str, diff: bytes, paths: list[str]) -> bool:
    """Does diff (of paths) reverse-apply on tree, whitespace ignored?  On a
    temporary index of just those files, run in a temporary directory."""
    if not paths or not diff:
        return False
    with tempfile.TemporaryDirectory(prefix="ktopic-series-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        entries = git.run("ls-tree", "-r", "-z", tree, "--", *paths, binary=True)
        git.run("update-index", "-z", "--index-info", input=entries, env=env, binary=True)
        Path(tmp, "series.diff").write_bytes(diff)
        r = git.try_run("apply", "--cached", "--check", "--reverse", "--ignore-whitespace",
                        "series.diff", env=env, cwd=tmp)
    return r.returncode == 0
