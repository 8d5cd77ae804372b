"""The common part of the in-guest benchmarks (six, closures, pagecache).

Each of them builds a bench kernel for a branch, makes an initramfs that
loads a module (whose KUnit suite runs at load) or runs a static program,
boots it under QEMU and reads the `# bench:` / `# bench-ratio:` lines from
the console.  Everything is done with ktopic's own modules (build.py,
kconfig.py, initramfs.py, boot.py, qkvm.py, console_scan.py) in the normal
work directory (`$KTOPIC_WORKDIR`, default ~/.cache/ktopic), holding its
lock like any ktopic run.

Bench kernels:

- configuration: qemu/configs/base.config, the fragments of the topic's
  dependencies and the topic's own (as `ktopic ci` has them), the bench's
  extra fragments, then qemu/bench/nodebug.config, which turns lockdep and
  the debug checks off again (later fragments win; every value is checked
  by kconfig.py as usual);
- build directory `<workdir>/build/bench-<branch-dir>`, seeded (the first
  time) from the no-debug base kernel `bench-base`, which is built first if
  it is missing (itself seeded from the base's test build, `build/base`):
  the debug options change almost every object, so seeding from the no-debug
  base is what keeps the topic kernels incremental;
- through the work directory's ccache, with ktopic's pinned build variables;
- each distinct (tree, configuration) once per run (per process).

Consoles go to out/bench/<bench>/<branch-dir>.console.log beside the
manifest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import REPO

sys.path.insert(0, str(REPO / "tools"))
from ktopic.kernel import boot as bootmod  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.kernel import console_scan, initramfs, kconfig  # noqa: E402
from ktopic.model import manifest  # noqa: E402
from ktopic.errors import Failure, KtopicError  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402

QEMU_DIR = REPO / "qemu"
BENCH_DIR = QEMU_DIR / "bench"
BASE_CONFIG = QEMU_DIR / "configs" / "base.config"
NODEBUG = BENCH_DIR / "nodebug.config"
PAGECACHE_CONFIG = BENCH_DIR / "pagecache_fill" / "bench.config"
OUT = REPO / "out" / "bench"
BASE = "base"
# The no-debug base kernel every other bench kernel is seeded from.
SEED_FRAGMENTS = [BASE_CONFIG, PAGECACHE_CONFIG, NODEBUG]


class BenchError(Exception):
    """A bench could not measure (build failed, guest did not finish, a
    figure is missing): not a MISS, an error."""

    def __init__(self, msg: str, details: list[str] | None = None):
        super().__init__(msg)
        self.details = details or []


# ------------------------------------------------------------- parsing (pure)

_BENCH = re.compile(r"#\s*bench:\s*(\S+?):\s*(-?[0-9]+(?:\.[0-9]+)?)(?:\s+(\S+))?\s*$")
_RATIO = re.compile(r"#\s*bench-ratio:\s*(.+?):\s*(-?[0-9]+(?:\.[0-9]+)?)\s*$")
_TS = re.compile(r"^\[\s*[0-9]+\.[0-9]+\]\s?")


def _lines(text: str):
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        yield _TS.sub("", raw)


def parse_bench(text: str) -> dict[str, tuple[float, str]]:
    """`# bench: NAME: VALUE [UNIT]` lines: NAME -> (VALUE, UNIT).  A name
    printed twice keeps its last value."""
    out: dict[str, tuple[float, str]] = {}
    for line in _lines(text):
        m = _BENCH.search(line)
        if m:
            out[m.group(1)] = (float(m.group(2)), m.group(3) or "")
    return out


def parse_ratios(text: str) -> dict[str, float]:
    """`# bench-ratio: WHAT: X.XX` lines: WHAT (e.g. "six_read six/rwsem",
    "closure_call_wq old/new paired") -> X.XX."""
    out: dict[str, float] = {}
    for line in _lines(text):
        m = _RATIO.search(line)
        if m:
            out[m.group(1).strip()] = float(m.group(2))
    return out


def ktap_status(text: str, name: str) -> str | None:
    """The last KTAP result line for test or suite `name`: "ok", "not ok",
    "skip" (ok with # SKIP), or None if it never reported."""
    pat = re.compile(r"^\s*(ok|not ok)\s+[0-9]+\s+(?:-\s+)?" + re.escape(name) +
                     r"(?:\s*#\s*(\w+).*)?\s*$")
    status = None
    for line in _lines(text):
        m = pat.match(line)
        if m:
            status = m.group(1)
            if status == "ok" and (m.group(2) or "").upper() == "SKIP":
                status = "skip"
    return status


def debug_summary(values: dict[str, str]) -> str:
    """What a .config says about lockdep and the debug checks."""
    on = [k[len("CONFIG_"):] for k in ("CONFIG_LOCKDEP", "CONFIG_PROVE_LOCKING",
                                       "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_LIST",
                                       "CONFIG_DEBUG_OBJECTS", "CONFIG_DEBUG_CLOSURES",
                                       "CONFIG_KASAN")
          if values.get(k) == "y"]
    return "lockdep and debug checks off" if not on else "DEBUG: " + ", ".join(on) + " on"


def fmt(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def grid(header: list[str], rows: list[list[str]]) -> None:
    """A right-aligned table (first column left-aligned), two spaces in."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        cells = [str(r[0]).ljust(widths[0])] + [str(c).rjust(w) for c, w in zip(r[1:], widths[1:])]
        print("  " + "  ".join(cells).rstrip())


def load_line() -> str:
    try:
        a, b, c = os.getloadavg()
    except OSError:
        return "load average unavailable"
    return f"load average {a:.2f} {b:.2f} {c:.2f} on {os.cpu_count()} CPUs"


# ------------------------------------------------------------ the session

@dataclass
class Kernel:
    branch: str
    commit: str
    fragments: list[Path]
    build: buildmod.BuildResult
    seconds: float                   # build time in this run (0 if shared)
    shared_with: str = ""            # built earlier in this run for ...
    stamped: bool = False            # up to date from an earlier run: not rebuilt

    @property
    def config_line(self) -> str:
        frags = " + ".join(_rel(f) for f in self.fragments)
        vals = kconfig.read_config(self.build.config.config)
        how = f"shared with {self.shared_with}" if self.shared_with else \
            "up to date, not rebuilt" if self.stamped else f"built in {self.seconds:.0f}s"
        return (f"{self.branch} {self.commit[:12]}: {frags} "
                f"[{debug_summary(vals)}; {self.build.out}; {how}]")


@dataclass
class Guest:
    text: str
    console: Path
    status: str
    seconds: float
    command: str
    findings: list = field(default_factory=list)

    @property
    def accel(self) -> str:
        return "kvm" if "-accel kvm" in self.command else "tcg"


def _rel(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(REPO))
    except ValueError:
        return str(p)


class Session:
    """The work directory, its lock, the manifest, and what this process
    already built (shared by every bench of one run.py)."""

    _instance: Session | None = None

    def __init__(self):
        self.wd = Workdir(None)
        self.root = Path(self.wd.root)
        self.git_dir = Path(self.wd.git_dir)
        self.m = manifest.load(REPO / "branches.yaml")
        self.kernels: dict[tuple[str, str], Kernel] = {}
        self.host = bootmod.Host(self.root)
        self.allow = console_scan.load_allowlist(QEMU_DIR / "allowlist.yaml")

    @classmethod
    def get(cls) -> Session:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    @contextlib.contextmanager
    def locked(self):
        if not self.git_dir.is_dir():
            raise BenchError(f"no work repository at {self.git_dir}: run `make` "
                             "(or ktopic import-base and ktopic generate) first")
        with self.wd.lock():
            yield self

    # --- git
    def commit_of(self, branch: str) -> str:
        try:
            return buildmod.git(self.git_dir, "rev-parse", "--verify", "-q",
                                f"refs/heads/{branch}^{{commit}}").strip()
        except Failure:
            raise BenchError(f"no branch {branch} in {self.git_dir}: run "
                             "tools/bin/ktopic generate") from None

    def fragments(self, topic: str | None, extra=()) -> list[Path]:
        """base.config, the topic's dependencies' and own fragments (as ktopic
        ci has them), the bench's extra fragments, nodebug.config last."""
        frags = [BASE_CONFIG]
        if topic:
            t = self.m.topic(topic)
            for c in [self.m.topics[d] for d in self.m.closure(topic)] + [t]:
                if c.config and c.config not in frags:
                    frags.append(c.config)
        for f in extra:
            if f not in frags:
                frags.append(Path(f))
        return frags + [NODEBUG]

    # --- build
    def kernel(self, branch: str, fragments: list[Path]) -> Kernel:
        """The bench kernel of `branch` with `fragments`, built once per run."""
        commit = self.commit_of(branch)
        tree = buildmod.tree_of(self.git_dir, commit)
        key = (tree, kconfig.fragment_hash(fragments))
        if key in self.kernels:
            k = self.kernels[key]
            if k.branch == branch:
                return k
            return dataclasses.replace(k, branch=branch, commit=commit, seconds=0.0,
                                       shared_with=k.branch)
        name = "bench-" + buildmod.build_dir_name(branch)
        out = self.root / "build" / name
        stamp = build_stamp(tree, fragments)
        res = up_to_date(out, name, stamp, fragments)
        if res is not None:
            print(f"  {name}: up to date ({branch} {commit[:12]}, same configuration): "
                  "not rebuilt", flush=True)
            k = Kernel(branch, commit, list(fragments), res, 0.0, stamped=True)
            self.kernels[key] = k
            return k
        seed = self.root / "build" / "base"
        if not (branch == BASE and fragments == SEED_FRAGMENTS):
            seed = self.kernel(BASE, SEED_FRAGMENTS).build.out
        print(f"  building {name} ({branch} {commit[:12]}) ...", flush=True)
        # base=None: no "changed code never compiled" gate.  That is ktopic
        # ci's job; a bench kernel may leave out what it does not measure
        # (the closures kernel leaves bcache out).
        req = buildmod.BuildRequest(name=name, commit=commit, base=None,
                                    fragments=fragments, progress=True, seed=seed)
        (out / STAMP).unlink(missing_ok=True)
        try:
            res = buildmod.build(self.root, self.git_dir, req)
        except (Failure, KtopicError) as e:
            raise BenchError(f"{name}: {str(e).splitlines()[0]}", str(e).splitlines()) from None
        if not res.ok:
            raise BenchError(f"{name}: {res.error}", res.details)
        (out / STAMP).write_text(stamp + "\n")
        k = Kernel(branch, commit, list(fragments), res, res.seconds)
        self.kernels[key] = k
        return k

    def module(self, k: Kernel, src: Path) -> Path:
        """An out-of-tree module (qemu/bench/<name>/) built against k.  Its
        headers come from ktopic's worktree, which must hold k's commit (a
        kernel that was not rebuilt in this run left it elsewhere)."""
        try:
            buildmod.Worktree(self.git_dir, self.root / "src").checkout(k.commit)
        except Failure as e:
            raise BenchError(f"{src.name}: {e}") from None
        kos, err, details = buildmod.build_modules(self.root, k.build, [src])
        if err:
            raise BenchError(f"{src.name} against {k.branch}: {err}", details)
        return kos[0]

    # --- boot
    def boot(self, bench: str, k: Kernel, modules=(), programs=(), smp: int = 2,
             memory: str = "1G", qemu_args=(), timeout: float = 600.0,
             silence: float = 90.0) -> Guest:
        """Boot k with an initramfs holding `modules` (loaded by /init, in name
        order) and `programs` (qemu/... .c, run by /init).  `qemu_args` are
        appended to ktopic's QEMU command (e.g. -icount, which needs TCG).
        timeout/silence are reference seconds, scaled like ktopic's."""
        ir = initramfs.build_initramfs(initramfs.InitramfsRequest(
            init_src=QEMU_DIR / "init" / "init.c", cache=self.root / "cache",
            programs=list(programs), test_modules=list(modules)))
        accel = "tcg" if qemu_args else self.host.accel()[0]
        console = OUT / bench / (buildmod.build_dir_name(k.branch) + ".console.log")
        scale = self.host.factor()
        req = bootmod.BootRequest(kernel=k.build.bzimage, initrd=ir.path, console=console,
                                  smp=smp, memory=memory, accel=accel,
                                  timeout=timeout * scale, silence=silence * scale,
                                  qemu_args=tuple(qemu_args))
        b = bootmod.boot(req)
        text = console.read_bytes().decode("utf-8", errors="replace")
        findings = console_scan.scan_text(text, self.allow, expect_cpus=smp)
        g = Guest(text, console, b.status, b.seconds, b.command, findings)
        if b.status != "done":
            lines = console_scan.clean_lines(text)
            raise BenchError(f"{k.branch}: guest did not finish ({b.status}: {b.message}); "
                             f"console {console}", lines[-15:])
        return g


STAMP = "bench.stamp"


def build_stamp(tree: str, fragments: list[Path]) -> str:
    """What a finished bench build was made from: the tree, the requested
    configuration, and the source of ktopic's build and kconfig modules."""
    h = hashlib.sha256()
    for f in ("build.py", "kconfig.py"):
        h.update((Path(buildmod.__file__).parent / f).read_bytes())
    return f"{tree} {kconfig.fragment_hash(fragments)} {h.hexdigest()[:16]}"


def up_to_date(out: Path, name: str, stamp: str,
               fragments: list[Path]) -> buildmod.BuildResult | None:
    """The finished build in `out` when its stamp says it was made from
    exactly this (a warm run then boots without switching ktopic's worktree
    back and forth, which would make make recompile, from ccache, every
    file that two branches change, e.g. all of sched.h's users for mm)."""
    try:
        if (out / STAMP).read_text().strip() != stamp:
            return None
    except OSError:
        return None
    bz, cfg = out / "arch/x86/boot/bzImage", out / ".config"
    if not bz.is_file() or not cfg.is_file():
        return None
    conf = kconfig.ConfigResult(config=cfg, fragment_hash=kconfig.fragment_hash(fragments),
                                config_hash=kconfig.config_file_hash(cfg), missing=[])
    return buildmod.BuildResult(name=name, ok=True, out=out, config=conf, bzimage=bz,
                                kernel_modules=buildmod.kernel_modules(out),
                                log=out / "ktopic-build.log")


def require(values: dict, names: list[str], where: str) -> None:
    missing = [n for n in names if n not in values]
    if missing:
        raise BenchError(f"{where}: no figure for {', '.join(missing)}")


def describe(k: Kernel, g: Guest, suite: str, what: str, vcpus: int = 2) -> None:
    """What a bench ran on: the kernel, the guest, its suite's KTAP result,
    any kernel report in its console."""
    st = ktap_status(g.text, suite)
    print(f"  kernel: {k.config_line}")
    print(f"  guest: {g.accel}, {vcpus} vCPUs, {g.seconds:.0f}s; {suite} suite: "
          f"{st or 'no result'}; console {g.console}")
    report_findings(g, what)


def report_findings(g: Guest, what: str) -> None:
    """Kernel reports in a bench guest's console: printed (a bench kernel
    that WARNs is suspect), not fatal."""
    for f in g.findings:
        print(f"  note: {what}: console finding {f.kind}: {f.message} ({g.console}:{f.line})")


def run_bench(name: str, fn) -> bool:
    """Run one bench body (fn(session) -> bool) under the work directory's
    lock; a BenchError is printed and counts as a failure."""
    t0 = time.monotonic()
    print(f"  {load_line()} at start")
    try:
        s = Session.get()
        with s.locked():
            ok = fn(s)
    except BenchError as e:
        print(f"  ERROR {name}: {e}")
        for d in e.details[-20:]:
            print(f"      {d}")
        ok = False
    print(f"  {name}: {time.monotonic() - t0:.0f}s wall; {load_line()} at end")
    return ok
