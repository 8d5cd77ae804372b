"""Which finished build directory a new one starts from (BuildRequest.seed).

Takes the manifest, the work directory, a branch name (or "base",
"integration") and a variant; gives the build directory whose tree is
nearest (or None).  docs/ci.md, "The main job".
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from ktopic.fileio import write_atomic

from ktopic.kernel.build import build_dir_name
from ktopic.model.branchspec import BASE, INTEGRATION
from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.treediff import changed_paths


def finished(d: Path) -> bool:
    """A build directory that holds a kernel (its build finished once)."""
    return (d / "arch/x86/boot/bzImage").is_file()


def _dir(wd, branch: str, variant: str) -> Path:
    return wd.build_dir(build_dir_name(branch, variant))


def candidates(m, name: str) -> tuple[str, list[str]]:
    """(the branch of name, the branches it may be seeded from, nearest
    last when trees tie): the base, then every topic of the integration
    branch; or (a topic) the base, the integration branch, then the
    dependencies in closure order.  A topic's new build directory comes
    after the integration branch's only in a warm work directory, or when
    it attributes the integration branch's report under a sanitizer
    (runner/followup.py): there no base is built under the variant."""
    if name == INTEGRATION:
        return m.integration.branch, [BASE] + [m.topics[t].branch
                                               for t in m.integration.topics]
    return m.topics[name].branch, [BASE, m.integration.branch] + \
        [m.topics[d].branch for d in m.closure(name)]


def changed_files(git_dir: Path, pairs: list[tuple[str, str]]) -> list[int | None]:
    """How many files differ between the trees of each pair of branches
    (None: a branch is missing), in one git."""
    got = changed_paths(Git(git_dir), [(f"refs/heads/{a}", f"refs/heads/{b}") for a, b in pairs])
    return [None if names is None else len(names) for names in got]


def seed_for(m, wd, name: str, variant: str = "") -> Path | None:
    """The finished build directory a new build of `name` (a topic, "base"
    or "integration") under `variant` starts from; the base's (finished or
    not: build.build() then starts empty) when no relative is built."""
    if name == BASE:
        return None
    base = _dir(wd, BASE, variant)
    branch, cands = candidates(m, name)
    built = [(c, _dir(wd, c, variant)) for c in cands]
    built = [(c, d) for c, d in built if finished(d)]
    counts = changed_files(Path(wd.git_dir), [(c, branch) for c, _ in built]) if built else []
    best, best_n = base, None
    for (c, d), n in zip(built, counts):
        if n is not None and (best_n is None or n <= best_n):
            best, best_n = d, n
    return best


DEPS_FILE = "ktopic-deps.json"


def dependents(build_dir: Path, src: Path) -> dict[str, int]:
    """How many objects of a finished build depend on each file of the
    tree (kbuild's .<obj>.o.cmd files name them as <src>/<path>).  Kept
    in <build_dir>/ktopic-deps.json until the build changes (its
    bzImage's mtime): a warm run reads one small file."""
    try:
        stamp = (build_dir / "arch/x86/boot/bzImage").stat().st_mtime_ns
    except FileNotFoundError:
        return {}
    cache = build_dir / DEPS_FILE
    try:
        d = json.loads(cache.read_text())
        if d["stamp"] == stamp:
            return d["counts"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    counts: dict[str, int] = defaultdict(int)
    for deps in object_dependencies(build_dir, src):
        for f in deps:
            counts[f] += 1
    write_atomic(cache, json.dumps({"stamp": stamp, "counts": counts}) + "\n")
    return dict(counts)


def object_dependencies(build_dir: Path, src: Path):
    """Per object of a build, the files of the tree it was compiled from
    (its kbuild .<obj>.o.cmd names them as <src>/<path>): one set each."""
    pre = str(src) + "/"
    for cmd in build_dir.rglob(".*.o.cmd"):
        try:
            text = cmd.read_text(errors="replace")
        except OSError:
            continue
        yield {t[len(pre):] for t in text.split() if t.startswith(pre)}


def switch_costs(m, wd, topics: list[str]) -> dict[str, int]:
    """Per topic: how many objects of the base's build depend on a file
    the topic changes (summed over the files).  A switch of the one
    worktree to or from the topic's tree rewrites those files, and every
    build directory that was compiled without the change recompiles those
    objects; {} when the base was never built."""
    deps = dependents(wd.build_dir(build_dir_name(BASE)), Path(wd.src))
    if not deps:
        return {}
    got = changed_paths(Git(Path(wd.git_dir)), [(f"refs/heads/{BASE}",
                                                  f"refs/heads/{m.topics[t].branch}")
                                                 for t in topics])
    return {t: sum(deps.get(f, 0) for f in names) if names is not None else 0
            for t, names in zip(topics, got)}
