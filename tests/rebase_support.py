"""What the rebase tests share, on the synthetic tree (unit/branches/test_rebase.py)
and on the real one (e2e/test_rebase_real.py): the outcome table as a dict,
a snapshot of everything `ktopic rebase --abort` must put back, a
scripted conflict resolution, and the part of a patch mail a rewrite keeps."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

# One conflict as git leaves it (merge style): ours, then theirs.
CONFLICT = re.compile(r"^<<<<<<< .*?\n(.*?)^=======\n(.*?)^>>>>>>> .*?\n", re.S | re.M)


def outcomes(out: str) -> dict[tuple[str, str], str]:
    """(topic, patch) -> outcome, from the table `ktopic rebase` prints;
    a topic-level row (done, waiting, failed) has the patch "-"."""
    rows = {}
    for ln in out.splitlines():
        cells = [c.strip() for c in ln.split("│")[1:-1]]
        if len(cells) == 4 and cells[0] and cells[0] != "topic":
            rows[(cells[0], cells[1])] = cells[2]
    return rows


def snapshot(project) -> dict:
    """Everything a rebase may change, of a conftest.Project: refs, the
    manifest's text, every file under patches/, the work directory's
    entries, the stack cache and the worktrees."""
    return {"refs": project.refs(),
            "manifest": project.manifest.read_text(),
            "patches": {str(p.relative_to(project.root)): p.read_text()
                        for p in sorted((project.root / "patches").rglob("*")) if p.is_file()},
            "workdir": sorted(str(p.relative_to(project.workdir))
                              for p in project.workdir.iterdir()),
            "cache": (project.workdir / "stack-cache.json").read_text(),
            "worktrees": project.git("worktree", "list")}


def header(patch: str) -> str:
    """A patch mail up to its diffstat: the headers and the message, which
    a patch rewritten for the new base keeps as they were."""
    return patch.split("\n---\n", 1)[0]


def resolve_conflicts(path: Path, choose: Callable[[str, str], str]) -> None:
    """Replace each conflict in path, markers and both sides, by
    choose(ours, theirs): ours is the new base's side, theirs the patch's."""
    text = path.read_text()
    assert CONFLICT.search(text), f"no conflict markers in {path}"
    path.write_text(CONFLICT.sub(lambda m: choose(m.group(1), m.group(2)), text))
