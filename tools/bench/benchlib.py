"""Small helpers shared by the benchmarks: timing and a result table."""

from __future__ import annotations

import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KTOPIC = ["/usr/bin/python3", str(REPO / "tools/bin/ktopic")]


def timed(fn, repeat: int, before=None) -> float:
    """Median wall-clock seconds of fn() over repeat runs (before() untimed)."""
    times = []
    for _ in range(repeat):
        if before:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def sh(*args, **kw) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def table(rows: list[tuple[str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")


def verdict(name: str, ok: bool, detail: str) -> bool:
    print(f"  {'PASS' if ok else 'MISS'} {name}: {detail}")
    return ok


@contextlib.contextmanager
def scratch_workdir(prefix: str):
    """A throw-away work directory whose repository shares the objects of
    the main one (the base imported there first, once): benchmarks start
    from empty caches without importing the tarball again."""
    sys.path.insert(0, str(REPO / "tools"))
    from ktopic.model.workdir import Workdir

    main_wd = Workdir()
    subprocess.run([*KTOPIC, "-w", str(main_wd.root), "import-base"], check=True,
                   stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        wd = Path(tmp, "work")
        wd.mkdir()
        sh("git", "clone", "-q", "--bare", "--shared", str(main_wd.git_dir), str(wd / "linux.git"))
        yield Path(tmp), wd


def scratch_checkout(dst: Path, src: Path = REPO) -> Path:
    """A copy of the checkout src as it stands, at dst: the files git
    tracks and the untracked ones it does not ignore, from the working
    tree (so an uncommitted patch counts; out/, a ci-local work directory
    in .ktopic/ and node_modules do not).  For a benchmark that edits
    patches/ without touching the user's checkout."""
    names = subprocess.run(["git", "-C", str(src), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], check=True, capture_output=True).stdout
    for rel in sorted({n for n in names.decode().split("\0") if n}):
        s, d = src / rel, dst / rel
        if s.is_file() or s.is_symlink():       # not a file deleted in the working tree
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, d, follow_symlinks=False)
    return dst
