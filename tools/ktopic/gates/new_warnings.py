"""`ktopic check --warnings`: a topic adds no compiler (W=1) or sparse
warning.  The .c files it adds or changes are compiled as single objects
at its start and at its head, in its build directory, which is left as its
last normal build made it (objects_kept()); docs/gates.md, "--warnings".

Takes a topic's Plan and the work directory; gives the warnings its head
adds over its start.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.gates.base import BuildGate, GateRun, Located, ResultBase, beyond
from ktopic.gates import bisectable
from ktopic.gates.bisectable import build_commit, seed_of
from ktopic.kernel import build as buildmod
from ktopic.kernel import kconfig
from ktopic.model import results as R
from ktopic.plumbing.gitutil import Git

_DIAG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)?\s+"
                   r"(?P<kind>warning|error):\s+(?P<msg>.*)$")
_QUIET = re.compile(r"^\s{2}(CC|CHECK)\s+(\S+)")
_GCC_OPTION = re.compile(r"\[-W[^\]]+\]$")


@dataclass
class Diagnostic(Located):
    kind: str                        # warning | error
    message: str
    tool: str                        # gcc | sparse
    lines: list[str] = field(default_factory=list)   # the tool's own lines

    def signature(self) -> tuple[str, str, str]:
        msg = re.sub(r"(:\d+)+\b", "", self.message)
        msg = re.sub(r"\s+", " ", msg).strip()
        return (self.file, self.kind, msg)


@dataclass
class Collected:
    at: str                          # start | head
    commit: str
    files: list[str]                 # .c files compiled
    not_built: list[str] = field(default_factory=list)   # not in the configuration
    diagnostics: list[Diagnostic] = field(default_factory=list)
    log: str = ""


@dataclass
class WarningsResult(ResultBase):
    label = "warnings"
    nested = {"new": Diagnostic}
    ok: bool
    new: list[Diagnostic] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    not_built: list[str] = field(default_factory=list)
    base_count: int = 0
    head_count: int = 0
    error: str = ""
    cached: bool = False             # the verdict came from gatecache

    def summary(self) -> str:
        if self.error:
            return self.error
        s = f"{len(self.new)} new (start {self.base_count}, head {self.head_count}) " \
            f"in {len(self.files)} file(s)"
        if self.new:
            s = f"{self.new[0].where()}: {self.new[0].kind}: {self.new[0].message}; " + s
        return s

    def render(self) -> list[str]:
        out = self.head()
        for d in self.new:
            out.append(f"  new {d.tool} {d.kind}: {d.where()}: {d.message}")
            out += [f"      {ln}" for ln in d.lines]
        for f in self.not_built:
            out.append(f"  not built in the test configuration: {f}")
        return out

    def findings(self) -> list[R.Finding]:
        if self.error:
            return [R.Finding("new_warning", self.error)]
        # No console line: the source file and line are in the message.
        return [R.Finding("new_warning", f"{d.where()}: {d.tool} {d.kind}: {d.message}",
                          0, [f"{d.where()}: {d.kind}: {d.message}", *d.lines])
                for d in self.new]



def _tool(kind: str, msg: str, context: str) -> str:
    """Which tool said it.  gcc names the option of every warning it gives
    ("[-Wunused-variable]"), sparse never does; with -j the lines of a CHECK
    and a CC interleave, so the quiet line before is only a guess, left for
    errors, which neither tool tags."""
    if kind == "warning":
        return "gcc" if _GCC_OPTION.search(msg) else "sparse"
    return context


def parse(text: str, src: Path, out: Path) -> list[Diagnostic]:
    """gcc and sparse diagnostics of a make log, paths relative to the tree."""
    pre = [str(src) + "/", str(out) + "/", "./"]

    def rel(p: str) -> str:
        for x in pre:
            if p.startswith(x):
                return p[len(x):]
        return p
    diags: list[Diagnostic] = []
    tool = "gcc"
    cur: Diagnostic | None = None
    for raw in text.splitlines():
        q = _QUIET.match(raw)
        if q:
            tool = "sparse" if q.group(1) == "CHECK" else "gcc"
            cur = None
            continue
        m = _DIAG.match(raw)
        if m:
            # gcc quotes with U+2018/U+2019 in a UTF-8 locale: compare as ASCII
            msg = m.group("msg").strip().replace("\u2018", "'").replace("\u2019", "'")
            cur = Diagnostic(rel(m.group("file")), int(m.group("line")), m.group("kind"),
                             msg, _tool(m.group("kind"), msg, tool))
            diags.append(cur)
            continue
        if cur is not None and re.match(r"^\s*(\d+\s*)?\|", raw) and len(cur.lines) < 6:
            cur.lines.append(raw.rstrip())
        else:
            cur = None
    return diags


def collect(plan, wd, at: str, jobs: int = 0, log=None) -> Collected:
    """W=1 + sparse of the topic's changed .c files at its start or head."""
    root, git_dir = Path(wd.root), Path(wd.git_dir)
    commit = plan.start if at == "start" else plan.head
    files = buildmod.changed_c_files(git_dir, plan.start, plan.head) if plan.start != plan.head \
        else []
    if at == "start":
        git = Git(git_dir)
        files = [f for f in files if git.has(f"{commit}:{f}")]
    col = Collected(at, commit, files)
    if not files:
        return col
    out = wd.build_dir(plan.build_name)
    wt = buildmod.Worktree(git_dir, wd.src)
    env = buildmod.make_env(root)
    if not (out / ".config").is_file() and not buildmod.seed_dir(out, seed_of(plan, wd)):
        # A directory never built and nothing to start it from: build the
        # commit first, which configures and prepares it.  From a seed it
        # is only configured below: a full build at the start would be
        # compiled again by the walk's first commit whenever that commit
        # changes a header (or the worktree last held another topic).
        build_commit(plan, wd, commit, None, jobs)
    wt.checkout(commit)
    # Configure at both ends.  The topic's own options may not exist at its
    # start (values that do not stick are expected there), and that
    # configuration drops them from .config: the head must get them back, or
    # its new code is compiled with its options off.
    kconfig.configure(kconfig.ConfigRequest(src=wt.path, out=out,
                                            fragments=plan.fragments, make_env=env,
                                            make_args=[buildmod.HOSTCC]))
    # A .c that another .c #includes (a KUnit suite compiled into the file
    # it tests) has no object of its own: its warnings come with the
    # including object's, and compiling it alone only gives errors.
    files = [f for f in files if not included_only(out, f)]
    col.files = files
    objs = [f[:-2] + ".o" for f in files]
    if log:
        log(f"warnings {plan.branch}: W=1 C=1 at the {at} ({commit[:12]}): {' '.join(objs)}")
    cmd = ["make", "-C", str(wt.path), f"O={out}", "-k", f"-j{jobs or os.cpu_count() or 1}",
           "W=1", "C=1", "CC=ccache gcc", "HOSTCC=ccache gcc", *objs]
    with objects_kept(out, objs):
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, errors="replace")
        built = {o for o in objs if (out / o).is_file()}
    col.log = f"$ {' '.join(cmd)}\n{p.stdout}"
    (out / f"ktopic-warnings-{at}.log").write_text(col.log)
    col.diagnostics = parse(p.stdout, wt.path, out)
    for f, o in zip(files, objs):
        if o not in built and not any(d.file == f and d.kind == "error"
                                      for d in col.diagnostics):
            col.not_built.append(f)
    return col


STASH = "ktopic-warnings-stash"


@contextlib.contextmanager
def objects_kept(out: Path, objs: list[str]):
    """The objects (and kbuild's .<name>.o.cmd beside each) moved aside, so
    that make really compiles them, and put back afterwards as they were
    (renames keep their mtimes): the directory is then in the state the
    last normal build left, and the next one (`ktopic ci` right after the
    walk) has nothing to compile or link again.  Sound: the files put back
    are the ones make's dependency tracking already accounted for.  An
    object that was not there is left as the W=1 pass made it."""
    stash = out / STASH
    shutil.rmtree(stash, ignore_errors=True)
    kept = []
    for o in objs:
        for rel in (o, str(Path(o).parent / f".{Path(o).name}.cmd")):
            if (out / rel).is_file():
                (stash / rel).parent.mkdir(parents=True, exist_ok=True)
                os.replace(out / rel, stash / rel)
                kept.append(rel)
    try:
        yield
    finally:
        for rel in kept:
            os.replace(stash / rel, out / rel)
        shutil.rmtree(stash, ignore_errors=True)


def included_only(out: Path, rel: str) -> bool:
    """rel was never built on its own in `out` but another object of its
    directory lists it among its dependencies (kbuild's .<name>.o.cmd)."""
    d = out / Path(rel).parent
    own = d / f".{Path(rel).stem}.o.cmd"
    if own.exists():
        return False
    for cmd in d.glob(".*.o.cmd"):
        try:
            if "/" + rel in cmd.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def distinct(diags: list[Diagnostic]) -> list[Diagnostic]:
    """One per (file, line, kind, message): a header's warning is printed
    for every object that includes it."""
    out, keys = [], set()
    for d in diags:
        k = (d.file, d.line, d.kind, d.message)
        if k not in keys:
            keys.add(k)
            out.append(d)
    return out


def compare(before: Collected | None, after: Collected) -> WarningsResult:
    """What the head shows more often than the start, by (file, kind,
    message without line numbers)."""
    old = distinct(before.diagnostics) if before else []
    now = distinct(after.diagnostics)
    new = beyond(old, now, Diagnostic.signature)
    return WarningsResult(ok=not new, new=new, files=after.files, not_built=after.not_built,
                          base_count=len(old), head_count=len(now))


class WarningsGate(BuildGate):
    """W=1/sparse at the start (before()), the head built (by the bisect
    walk, or here), W=1/sparse at the head, compared."""
    name = "warnings"
    help = "W=1 and sparse on the .c files the topic touches, base vs branch"
    result = WarningsResult

    def before(self, run: GateRun) -> None:
        self.start = _collect_step(run, "start")

    def run(self, run: GateRun) -> WarningsResult:
        if run.built is None:
            run.built = bisectable.build_head(run.plan, run.wd, jobs=run.jobs, progress=run.progress,
                                   log=run.log, steps=run.steps)
        if not run.built:
            return WarningsResult(ok=False, error="the branch does not build")
        return compare(self.start, _collect_step(run, "head"))


def _collect_step(run: GateRun, at: str) -> Collected:
    """W=1/sparse at the start or head: a step of row (branch, "warnings")."""
    plan = run.plan
    commit = plan.start if at == "start" else plan.head
    with run.steps.step(plan.branch, "warnings", f"W=1/sparse at the {at}",
                        commit=commit) as st:
        col = collect(plan, run.wd, at=at, jobs=run.jobs, log=run.log)
        st.result(f"{len(col.diagnostics)} diagnostic(s) in {len(col.files)} file(s)")
    return col
