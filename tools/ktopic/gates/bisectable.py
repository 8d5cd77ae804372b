"""`ktopic check --bisect`: every commit of a topic builds, oldest first,
incrementally in the branch's own build directory, which the walk leaves
at the head; docs/gates.md, "--bisect".  plan() is the topic's Plan that
every topic gate works on.

Takes a topic's commits (a Plan) and the work directory; gives a
CommitBuild per commit.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.gates.base import BuildGate, GateRun, ResultBase
from ktopic.kernel import build as buildmod
from ktopic.kernel import seeds
from ktopic.kernel.steplog import StepLog
from ktopic.model import results as R
from ktopic.model.targets import targets_from_manifest
from ktopic.errors import Failure
from ktopic.model.branchspec import INTEGRATION
from ktopic.plumbing.gitutil import Git


@dataclass
class Plan:
    """What to walk: the topic's commits and how to build them."""
    topic: str
    branch: str
    start: str = ""                  # the commit the topic's own commits start from
    head: str = ""
    commits: list[tuple[str, str]] = field(default_factory=list)   # (sha, subject), oldest first
    fragments: list[Path] = field(default_factory=list)
    build_name: str = ""
    seed: Path | None = None         # what a new build directory starts from (kernel/seeds.py)
    error: str = ""


@dataclass
class CommitBuild:
    commit: str
    subject: str
    ok: bool
    seconds: float = 0.0
    error: str = ""
    details: list[str] = field(default_factory=list)   # the compiler's lines
    notes: list[str] = field(default_factory=list)     # config values left out, ...


@dataclass
class BisectResult(ResultBase):
    label = "bisect"
    nested = {"builds": CommitBuild, "first_bad": CommitBuild}
    ok: bool
    builds: list[CommitBuild] = field(default_factory=list)
    total: int = 0                   # commits in the topic
    first_bad: CommitBuild | None = None
    start_ok: bool | None = None     # built only when the first commit fails
    error: str = ""                  # could not walk at all
    cached: bool = False             # the verdict came from gatecache

    def summary(self) -> str:
        if self.error:
            return self.error
        if self.first_bad:
            b = self.first_bad
            return f"{b.commit[:12]} ({b.subject}) does not build" + \
                (f": {first_error(b.details)}" if first_error(b.details) else "")
        return f"{len(self.builds)}/{self.total} commits build"

    def render(self) -> list[str]:
        out = self.head()
        if self.error:
            return out
        for b in self.builds:
            out.append(f"  {'ok  ' if b.ok else 'FAIL'} {b.commit[:12]} {b.subject} "
                       f"({b.seconds:.0f}s)")
            out += [f"      note: {n}" for n in b.notes]
            if not b.ok:
                out += [f"      {ln}" for ln in (b.details or [b.error])[:20]]
        if self.start_ok is False:
            out.append("  the topic's start (base + dependencies) does not build either")
        return out

    def findings(self) -> list[R.Finding]:
        if self.ok:
            return []
        if self.error:
            return [R.Finding("bisect", self.error)]
        b = self.first_bad
        return [R.Finding("bisect", f"first commit that does not build: {b.commit[:12]} "
                                    f"{b.subject}", 0, (b.details or [b.error])[:20])]



def first_error(lines: list[str]) -> str:
    for ln in lines:
        if re.search(r"\berror\b|undefined reference|undefined!", ln):
            return ln.strip()
    return ""


def _git(git_dir: Path, *args: str) -> str:
    return Git(git_dir).run(*args)


def plan(m, wd, topic: str) -> Plan:
    """The commits of a topic (or of the integration branch) and their build."""
    git_dir = Path(wd.git_dir)
    targets = targets_from_manifest(m, Path(m.root) / "qemu")
    want = INTEGRATION if topic == INTEGRATION else topic
    target = next(t for t in targets if t.topic == want)
    p = Plan(topic, target.branch, fragments=target.fragments,
             build_name=buildmod.build_dir_name(target.branch),
             seed=seeds.seed_for(m, wd, want))
    tip = f"refs/heads/{target.branch}^{{commit}}"
    head = (Git(git_dir).resolve(tip) or _git(git_dir, "rev-parse", "-q", "--verify", tip)) \
        if _exists(git_dir, f"refs/heads/{target.branch}") else ""
    if not head.strip():
        p.error = f"no branch {target.branch} in the work repository: run `ktopic generate`"
        return p
    p.head = head.strip()
    exclude = [m.base.ref]
    if topic != INTEGRATION:
        for d in m.closure(topic):
            ref = f"refs/heads/{m.topics[d].branch}"
            if not _exists(git_dir, ref):
                p.error = f"no branch {m.topics[d].branch} (a dependency): run `ktopic generate`"
                return p
            exclude.append(ref)
    out = _git(git_dir, "rev-list", "--reverse", "--topo-order", "--format=%s", p.head,
               "--not", *exclude)
    lines = out.splitlines()
    for i in range(0, len(lines) - 1, 2):
        p.commits.append((lines[i].split()[1], lines[i + 1]))
    if p.commits:
        p.start = _git(git_dir, "rev-parse", f"{p.commits[0][0]}^").strip()
    else:
        p.start = p.head
    return p


def _exists(git_dir: Path, ref: str) -> bool:
    return Git(git_dir).exists(ref)


def _clean(lines: list[str], src: Path) -> list[str]:
    """Compiler lines with the worktree's absolute path made relative."""
    pre = str(src) + "/"
    return [ln.replace(pre, "") for ln in lines]


def undefined_symbols(git_dir: Path, commit: str, names: list[str]) -> list[str]:
    """The CONFIG_ names no Kconfig file of commit defines (config or menuconfig)."""
    bare = sorted({n.removeprefix("CONFIG_") for n in names})
    if not bare:
        return []
    pat = r"^[[:space:]]*(menu)?config[[:space:]]+(" + "|".join(bare) + r")[[:space:]]*$"
    p = Git(git_dir).try_run("grep", "-h", "-E", "-e", pat, commit,
                             "--", "Kconfig*", "*/Kconfig*")
    found = {ln.split()[-1] for ln in p.stdout.splitlines() if ln.strip()}
    return [f"CONFIG_{n}" for n in bare if n not in found]


def without_symbols(fragments: list[Path], names: list[str], out: Path) -> list[Path]:
    """Copies of the fragments (in out/) with the lines setting names left out."""
    setting = re.compile(r"^\s*(?:(\w+)=|#\s*(\w+) is not set)")
    out.mkdir(parents=True, exist_ok=True)
    copies = []
    for i, frag in enumerate(fragments):
        keep = []
        for ln in frag.read_text().splitlines():
            m = setting.match(ln)
            if not (m and (m.group(1) or m.group(2)) in names):
                keep.append(ln)
        copy = out / f"{i}-{frag.name}"
        copy.write_text("\n".join(keep) + "\n")
        copies.append(copy)
    return copies


def build_commit(p: Plan, wd, commit: str, parent: str | None, jobs: int = 0,
                 progress: bool = False, on_line=None) -> CommitBuild:
    """Build one commit of the plan in its build directory.

    The fragments describe the topic's head: an option the topic adds in a
    later commit does not exist yet at this one, so its value cannot stick.
    Before the head, such values (options no Kconfig file of the commit
    defines) are left out and the commit is built again without them (a
    note says which); every other value must still stick."""
    t0 = time.monotonic()
    res = _build(p, wd, commit, parent, p.fragments, jobs, progress, on_line)
    if isinstance(res, CommitBuild):
        return res
    notes = []
    if not res.ok and commit != p.head and res.config is not None and res.config.missing:
        missing = [x.split("=")[0] for x in res.config.missing]
        absent = undefined_symbols(Path(wd.git_dir), commit, missing)
        if absent:
            notes.append(f"not defined at this commit, left out: {', '.join(absent)}")
            frags = without_symbols(p.fragments, absent,
                                    wd.gate_cache / "fragments" / p.build_name)
            res = _build(p, wd, commit, parent, frags, jobs, progress, on_line)
            if isinstance(res, CommitBuild):
                res.notes = notes
                return res
    return CommitBuild(commit, "", res.ok, time.monotonic() - t0, res.error,
                       _clean(res.details, wd.src), notes)


def seed_of(p: Plan, wd) -> Path:
    """What the plan's build directory starts from when it is new."""
    return p.seed or wd.build_dir(buildmod.build_dir_name("base"))


def _build(p: Plan, wd, commit: str, parent: str | None, fragments: list[Path], jobs: int,
           progress: bool, on_line=None):
    """build.build() of one commit: its BuildResult, or a failed CommitBuild."""
    root = Path(wd.root)
    t0 = time.monotonic()
    req = buildmod.BuildRequest(name=p.build_name, commit=commit, base=parent,
                                fragments=fragments, jobs=jobs, progress=progress,
                                on_line=on_line, seed=seed_of(p, wd))
    try:
        return buildmod.build(root, Path(wd.git_dir), req)
    except Failure as e:
        return CommitBuild(commit, "", False, time.monotonic() - t0, str(e).splitlines()[0],
                           str(e).splitlines()[:20])


def _outcome(b: CommitBuild) -> str:
    return "ok" if b.ok else "FAILED: " + b.error


def walk(p: Plan, wd, jobs: int = 0, progress: bool = False, log=None,
         steps: StepLog | None = None) -> BisectResult:
    """Build every commit of the plan, oldest first; stop at the first failure.
    Each build is a step of row (branch, "bisect builds") in steps
    (kernel/steplog.py; default: start and end lines to log)."""
    res = BisectResult(ok=True, total=len(p.commits))
    if p.error:
        return BisectResult(ok=False, error=p.error)
    steps = steps or StepLog(say=log, heartbeat=False)
    parent = p.start
    for i, (sha, subject) in enumerate(p.commits, 1):
        with steps.step(p.branch, "bisect builds", f"bisect build {i} of {len(p.commits)}",
                        commit=sha, subject=subject, kbuild=True) as st:
            b = build_commit(p, wd, sha, parent, jobs, progress, on_line=st.line)
            st.result(_outcome(b))
        b.subject = subject
        res.builds.append(b)
        if not b.ok:
            res.ok = False
            res.first_bad = b
            if i == 1 and p.start:
                # The first commit fails: does its start (base + dependencies) build?
                with steps.step(p.branch, "bisect builds", "bisect build of the start",
                                commit=p.start, subject="base + dependencies",
                                kbuild=True) as st:
                    s = build_commit(p, wd, p.start, None, jobs, progress, on_line=st.line)
                    st.result(_outcome(s))
                res.start_ok = s.ok
            break
        parent = sha
    return res


def build_head(p: Plan, wd, jobs: int = 0, progress: bool = False, log=None,
               steps: StepLog | None = None) -> bool:
    """Build only the head (for --warnings without --bisect): a step of row
    (branch, "head build")."""
    if p.error:
        return False
    steps = steps or StepLog(say=log, heartbeat=False)
    subject = p.commits[-1][1] if p.commits and p.commits[-1][0] == p.head else ""
    with steps.step(p.branch, "head build", "build of the head", commit=p.head,
                    subject=subject, kbuild=True) as st:
        b = build_commit(p, wd, p.head, p.start, jobs, progress, on_line=st.line)
        st.result(_outcome(b))
    return b.ok


class BisectGate(BuildGate):
    name = "bisect"
    help = "build every commit of the topic (test config, ccache, incremental)"
    result = BisectResult

    def run(self, run: GateRun) -> BisectResult:
        res = walk(run.plan, run.wd, jobs=run.jobs, progress=run.progress, log=run.log,
                   steps=run.steps)
        run.built = res.ok
        return res
