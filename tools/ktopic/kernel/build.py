"""Build a branch's kernel and its out-of-tree test modules.

Takes a BuildRequest (commit, fragments, build directory, seed); gives a
BuildResult (kernel image, modules, errors).  docs/ci.md, "Where things
live" and "One worktree, many build directories".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.kernel import kconfig
from ktopic.errors import Failure
from ktopic.plumbing.gitutil import Git

# Pinned so that objects are reproducible and ccache hits across builds.
BUILD_ENV = {
    "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 2019",
    "KBUILD_BUILD_USER": "ktopic",
    "KBUILD_BUILD_HOST": "ktopic",
    "KBUILD_BUILD_VERSION": "1",
}

# Every make of a build directory, its config targets too: host programs
# (fixdep, conf) built by another compiler would be built again.
HOSTCC = "HOSTCC=ccache gcc"

# Paths of the tree that kbuild never compiles.
_NOT_KBUILD = ("tools/", "Documentation/")


def git(git_dir: Path, *args: str, cwd: Path | None = None) -> str:
    return Git(git_dir).run(*args, cwd=cwd)


def tree_of(git_dir: Path, rev: str) -> str:
    return git(git_dir, "rev-parse", f"{rev}^{{tree}}").strip()


class Worktree:
    """The single tool-managed checkout that every build compiles from."""

    def __init__(self, git_dir: Path, path: Path):
        self.git_dir = Path(git_dir)
        self.path = Path(path)

    def _wt(self, *args: str) -> str:
        p = subprocess.run(["git", "-C", str(self.path), *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode:
            raise Failure(f"git -C {self.path} {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def checkout(self, commit: str) -> None:
        """Make the worktree hold exactly `commit` (only differing files are written)."""
        if (self.path / ".git").exists():
            try:
                self._wt("rev-parse", "HEAD")
            except Failure:
                # The repository was re-created: the old worktree is not one of its own.
                shutil.rmtree(self.path)
        if not (self.path / ".git").exists():
            if self.path.exists():
                shutil.rmtree(self.path)
            # A stale registration (worktree directory removed by hand).
            git(self.git_dir, "worktree", "prune")
            git(self.git_dir, "worktree", "add", "--detach", "--force", str(self.path), commit)
            return
        head = self._wt("rev-parse", "HEAD").strip()
        if head != commit:
            self._wt("checkout", "-q", "--force", "--detach", commit)
        # Nothing else may live in the source tree (O= builds only).
        if self._wt("status", "--porcelain", "--untracked-files=no").strip():
            self._wt("reset", "-q", "--hard", commit)


@dataclass
class BuildRequest:
    name: str                        # build directory name (branch, variant)
    commit: str                      # what to build
    base: str | None                 # commit the branch is based on (changed-code check)
    fragments: list[Path]            # config fragments, in order
    modules: list[Path] = field(default_factory=list)   # qemu/modules/<name> dirs
    jobs: int = 0                    # 0: nproc
    progress: bool = True            # a rich progress bar on a terminal
    on_line: object = None           # callback(count, what) per kbuild step
    seed: Path | None = None         # a finished O= dir to start a new one from


@dataclass
class BuildResult:
    name: str
    ok: bool
    out: Path
    seconds: float = 0.0
    error: str = ""                  # one line when not ok
    details: list[str] = field(default_factory=list)   # quoted lines for the report
    config: kconfig.ConfigResult | None = None
    bzimage: Path | None = None
    test_modules: list[Path] = field(default_factory=list)    # out-of-tree .ko
    kernel_modules: list[Path] = field(default_factory=list)  # the tree's own .ko
    log: Path | None = None
    toolchain: dict[str, str] = field(default_factory=dict)


def toolchain_versions() -> dict[str, str]:
    def first_line(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True).stdout.splitlines()[0].strip()
        except (OSError, IndexError):
            return "unavailable"
    return {"gcc": first_line("gcc", "--version"), "ld": first_line("ld", "--version"),
            "make": first_line("make", "--version"),
            "ccache": first_line("ccache", "--version"),
            "qemu": first_line("qemu-system-x86_64", "--version")}


def make_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(BUILD_ENV)
    env["CCACHE_DIR"] = str(root / "ccache")
    env.setdefault("CCACHE_MAXSIZE", "5G")
    env["LC_ALL"] = "C"
    # Make flags from an outer make (MAKEFLAGS=-s, jobserver) would change the output.
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(k, None)
    return env


_QUIET_LINE = re.compile(r"^\s{2}([A-Z][A-Z0-9_\[\] ]{1,9})\s+(\S+)")


def _rebase_paths(top: Path, old: Path, new: Path) -> None:
    """Point a copied build directory's absolute paths at its new place.

    tools/ (objtool) is built with absolute output paths in its .cmd and .d
    files; left alone they make objtool rebuild, and every object depends on
    objtool, so the whole kernel would recompile.  The kernel's own .cmd
    files use paths relative to the build directory and need nothing."""
    if not top.is_dir():
        return
    a, b = str(old).encode() + b"/", str(new).encode() + b"/"
    for f in top.rglob(".*"):
        if f.is_file() and (f.suffix in (".cmd", ".d")):
            data = f.read_bytes()
            if a in data:
                st = f.stat()
                f.write_bytes(data.replace(a, b))
                os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def build_dir_name(branch: str, variant: str = "") -> str:
    """The O= directory name of a branch (one path component); a build
    variant ("kcsan") has its own."""
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", branch).strip("_") or "_"
    return name + (f"-{variant}" if variant else "")


class _Progress:
    """A rich progress bar fed by kbuild's quiet output ("  CC      foo.o")."""

    def __init__(self, name: str, total: int | None, enabled: bool, callback=None):
        self.count = 0
        self.progress = None
        self.callback = callback
        if not enabled:
            return
        try:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress,
                                       SpinnerColumn, TextColumn, TimeElapsedColumn)
        except ImportError:
            return
        console = Console(stderr=True)
        if not console.is_terminal:
            return
        self.progress = Progress(SpinnerColumn(), TextColumn(f"[bold]build {name}"),
                                 BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("{task.description}"), console=console,
                                 transient=True)
        self.task = self.progress.add_task("", total=total)
        self.progress.start()

    def line(self, text: str) -> None:
        m = _QUIET_LINE.match(text)
        if not m:
            return
        self.count += 1
        if self.callback:
            self.callback(self.count, m.group(2))
        if self.progress:
            self.progress.update(self.task, advance=1, description=m.group(2)[-28:])

    def stop(self) -> None:
        if self.progress:
            self.progress.stop()


def _run_make(cmd: list[str], env: dict[str, str], log, prog: _Progress) -> int:
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace", start_new_session=True)
    try:
        for line in p.stdout:
            log.write(line)
            prog.line(line)
        return p.wait()
    except BaseException:
        os.killpg(p.pid, 9)
        p.wait()
        raise


def _error_lines(log_path: Path, limit: int = 20) -> list[str]:
    """The compiler/make error lines of a failed build log."""
    out = []
    for line in log_path.read_text(errors="replace").splitlines():
        if re.search(r"\berror\b|Error \d+|undefined reference|\*\*\*", line):
            out.append(line.rstrip())
    return out[:limit] or log_path.read_text(errors="replace").splitlines()[-limit:]


def _modules(out: Path, modules: list[Path], env: dict, jobs: int, log, prog):
    """Build out-of-tree modules (copies of qemu/modules/<name>) against out."""
    kos: list[Path] = []
    for mod in modules:
        dst = out / "ktopic-modules" / mod.name
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(mod, dst)
        rc = _run_make(["make", "-C", str(out), f"M={dst}", f"-j{jobs}",
                        "CC=ccache gcc", "modules"], env, log, prog)
        if rc:
            return kos, f"test module {mod.name} failed to build", _error_lines(Path(log.name))
        built = sorted(dst.glob("*.ko"))
        if not built:
            return kos, f"test module {mod.name} produced no .ko", []
        kos.extend(built)
    return kos, "", []


def build_modules(root: Path, res: BuildResult, modules: list[Path], jobs: int = 0):
    """Out-of-tree test modules against an existing kernel build (another branch
    with the same tree and config built it): (kos, error, details)."""
    with open(res.out / "ktopic-modules.log", "a", buffering=1) as log:
        return _modules(res.out, modules, make_env(root), jobs or os.cpu_count() or 1, log,
                        _Progress("", None, False))


def changed_c_files(git_dir: Path, base: str, commit: str) -> list[str]:
    """The .c files that `commit` adds or changes against `base`."""
    out = git(git_dir, "diff", "--name-only", "--diff-filter=AMR", "--no-renames",
              f"{base}", f"{commit}", "--", "*.c")
    return [p for p in out.split() if not p.startswith(_NOT_KBUILD)]


def uncompiled(src: Path, out: Path, files: list[str]) -> list[str]:
    """Changed .c files whose object is missing or older than the source,
    and that no up-to-date object of their directory #includes either (a
    KUnit suite compiled into the file it tests has no object of its own)."""
    bad = []
    for rel in files:
        obj = out / (rel[:-2] + ".o")
        try:
            if obj.stat().st_mtime < (src / rel).stat().st_mtime:
                bad.append(f"{rel}: {obj.relative_to(out)} is older than the source")
        except FileNotFoundError:
            if not _included_by_built_object(src, out, rel):
                bad.append(f"{rel}: no {rel[:-2]}.o was built")
    return bad


def _included_by_built_object(src: Path, out: Path, rel: str) -> bool:
    """Some object in rel's directory lists rel among its dependencies
    (kbuild's .<name>.o.cmd) and is newer than it."""
    mtime = (src / rel).stat().st_mtime
    d = out / Path(rel).parent
    for cmd in d.glob(".*.o.cmd"):
        obj = d / cmd.name[1:-4]
        try:
            if obj.stat().st_mtime >= mtime and "/" + rel in cmd.read_text(errors="replace"):
                return True
        except FileNotFoundError:
            continue
    return False


def kernel_modules(out: Path) -> list[Path]:
    """The .ko files the tree's own build produced for this configuration."""
    order = out / "modules.order"
    if not order.is_file():
        return []
    kos = []
    for line in order.read_text().split():
        ko = out / (line[:-2] + ".ko" if line.endswith(".o") else line)
        if ko.is_file():
            kos.append(ko)
    return sorted(kos, key=lambda p: p.name)


def seed_dir(out: Path, seed: Path | None) -> bool:
    """Start a new build directory `out` as a copy of a finished build
    (its nearest built relative, kernel/seeds.py): make then recompiles
    only what differs.  Sound because every build compiles from the one
    worktree, so every file that differs from what an object of the seed
    was compiled from was rewritten (new mtime) after that object; the
    copy keeps the objects' mtimes.  False, and nothing done, when `out`
    is already configured or the seed is not a finished build."""
    if not seed or (out / ".config").exists() or \
            not (Path(seed) / "arch/x86/boot/bzImage").is_file():
        return False
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(seed, out, symlinks=True, ignore=shutil.ignore_patterns(
        "ktopic-modules", "ktopic-build.log", "ktopic.count", "ktopic-deps.json"))
    _rebase_paths(out / "tools", Path(seed).resolve(), out.resolve())
    return True


def build(root: Path, git_dir: Path, req: BuildRequest) -> BuildResult:
    """Configure and build one branch in <root>/build/<name>. The caller holds the lock."""
    t0 = time.monotonic()
    out = root / "build" / req.name
    seed_dir(out, req.seed)
    out.mkdir(parents=True, exist_ok=True)
    res = BuildResult(name=req.name, ok=False, out=out, log=out / "ktopic-build.log",
                      toolchain=toolchain_versions())
    wt = Worktree(git_dir, root / "src")
    wt.checkout(req.commit)
    env = make_env(root)
    jobs = req.jobs or os.cpu_count() or 1

    cfg = kconfig.configure(kconfig.ConfigRequest(src=wt.path, out=out,
                                                  fragments=req.fragments, make_env=env,
                                                  make_args=[HOSTCC]))
    res.config = cfg
    if not cfg.ok:
        res.error = f"{len(cfg.missing)} config value(s) did not stick: " + \
            ", ".join(m.split()[0] for m in cfg.missing)
        res.details = cfg.missing
        res.seconds = time.monotonic() - t0
        return res

    values = kconfig.read_config(cfg.config)
    targets = ["bzImage"] + (["modules"] if values.get("CONFIG_MODULES") == "y" else [])
    count_file = out / "ktopic.count"
    try:
        total = int(count_file.read_text())
    except (OSError, ValueError):
        total = None
    prog = _Progress(req.name, total, req.progress, req.on_line)
    try:
        with open(res.log, "w", buffering=1) as log:
            rc = _run_make(["make", "-C", str(wt.path), f"O={out}", f"-j{jobs}",
                            "CC=ccache gcc", HOSTCC, *targets], env, log, prog)
            if rc:
                res.error = f"kernel build failed (make exit {rc}), see {res.log}"
                res.details = _error_lines(res.log)
            else:
                res.test_modules, res.error, res.details = _modules(
                    out, req.modules, env, jobs, log, prog)
    finally:
        prog.stop()
    if prog.count and not res.error and total is None:
        # A fresh build: remember how many steps it had for the next bar.
        count_file.write_text(f"{prog.count}\n")
    res.seconds = time.monotonic() - t0
    if res.error:
        return res
    res.bzimage = out / "arch/x86/boot/bzImage"
    res.kernel_modules = kernel_modules(out)
    if req.base and req.base != req.commit:
        bad = uncompiled(wt.path, out, changed_c_files(git_dir, req.base, req.commit))
        if bad:
            res.error = f"changed code never compiled: {len(bad)} file(s)"
            res.details = bad
            return res
    res.ok = True
    return res
