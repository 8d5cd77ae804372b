"""ktopic check: the gates a topic passes before it is sent.  Per patch
checkpatch (checkpatch.py) and the series hygiene (hygiene.py); per topic
the recipients, and each gate of gates/registry.py asked for (--bisect,
--warnings, --coccicheck).  docs/gates.md has the rules and the waivers.

Takes the manifest, the work directory and branch names; gives a
TopicVerdict per topic (and out/<branch>/check.log).
"""

from __future__ import annotations

import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ktopic.gates import bisectable as bs
from ktopic.gates import checkpatch as cp
from ktopic.gates import hygiene as hy
from ktopic.gates import registry
from ktopic.gates.base import GateRun
from ktopic.send import signoffs
from ktopic.gates.gatecache import GateCache
from ktopic.kernel.steplog import StepLog
from ktopic.model import results as R
from ktopic.model.results import branch_dir
from ktopic.plumbing.patchfile import parse
from ktopic.model.branchspec import INTEGRATION
from ktopic.fileio import write_atomic
from ktopic import stampcache


@dataclass
class PatchVerdict:
    file: str                        # patches/<topic>/<name>
    subject: str
    strict: bool
    ok: bool = True
    messages: list[cp.Message] = field(default_factory=list)   # checkpatch's, waived marked
    problems: list[hy.Problem] = field(default_factory=list)   # hygiene's, waived marked
    total: str = ""                  # checkpatch's "total:" line
    cached: bool = False
    unused_waivers: list[str] = field(default_factory=list)
    warning_lines: list[str] = field(default_factory=list)   # shown, never failing

    def failures(self) -> list:
        return [x for x in self.messages + self.problems if not x.waived]


@dataclass
class TopicVerdict:
    topic: str
    branch: str
    ok: bool = True
    patches: list[PatchVerdict] = field(default_factory=list)
    recipients: list[hy.Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gates: dict[str, object] = field(default_factory=dict)   # gate name -> its result
    versions: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    timing: list[R.StageTime] = field(default_factory=list)   # this topic's rows (steplog)

    def summary(self) -> str:
        n = len(self.patches)
        bad = [p for p in self.patches if not p.ok]
        errs = sum(1 for p in self.patches for x in p.messages if x.level == "ERROR")
        waived = sum(1 for p in self.patches for x in p.messages + p.problems if x.waived)
        parts = [f"{n} patch(es)" + (f", {len(bad)} failing" if bad else " clean")]
        if errs:
            parts.append(f"{errs} checkpatch error(s)")
        if waived:
            parts.append(f"{waived} waived")
        warned = sum(len(p.warning_lines) for p in self.patches)
        if warned:
            parts.append(f"{warned} warning(s)")
        rbad = [r for r in self.recipients if not r.waived]
        if rbad:
            parts.append(f"{len(rbad)} recipient(s) missing")
        parts += [f"{name}: {res.summary()}" for name, res in self.gates.items()]
        return "; ".join(parts)

    def gates_ok(self) -> bool:
        return all(res.ok for res in self.gates.values())

    def to_dict(self) -> dict:
        gates, self.gates = self.gates, {}
        try:
            d = asdict(self)
        finally:
            self.gates = gates
        d["gates"] = {name: res.to_dict() for name, res in gates.items()}
        return d


@dataclass
class Options:
    strict_all: bool = False         # --strict for every patch
    codespell: bool = True
    gates: tuple[str, ...] = ()      # names in gates/registry.py
    jobs: int = 0                    # parallel checkpatch runs / make -j (0: nproc)
    progress: bool = True


# ----------------------------------------------------------- tool versions

PROGRAMS = {"git": ("git", "--version"), "b4": ("b4", "--version"),
            "perl": ("perl", "-e", "print qq{perl $^V}"),
            "codespell": ("codespell", "--version")}


def tool_versions(cache: Path, tree: cp.ScriptsTree, checker: cp.Checker) -> dict[str, str]:
    """checkpatch's tree, git, b4, perl, codespell: what a verdict was made
    with.  Program versions are remembered by the programs' (path, size,
    mtime), so asking costs nothing on a cached run."""
    versions = stampcache.tool_versions(cache / "versions.json", PROGRAMS, indent=None)
    if versions.get("codespell", "").replace(".", "").isdigit():
        versions["codespell"] = "codespell " + versions["codespell"]
    out = {"checkpatch": f"scripts/checkpatch.pl of base tree {tree.tree_id}"}
    out.update(versions)
    out["codespell"] = (f"{versions.get('codespell')} ({checker.dictionary}, without the "
                        "names include/ calls)" if checker.codespell else "not used (no dictionary)")
    return out


# ------------------------------------------------------------------ gates

def _spec(m, name: str):
    return m.resolve([name])[0]


def _topic_patches(m, name: str):
    """(topic, Patch) pairs a name stands for: a topic's own, or every
    topic's for the integration branch."""
    return _spec(m, name).patches


def _branch_of(m, name: str) -> str:
    return _spec(m, name).branch


def resolve_names(m, names: list[str]) -> list[str]:
    """Topic names (or branch names, or "integration") -> topic names, in
    manifest order; every topic when none are given."""
    if not names:
        return list(m.order)
    return [s.name for s in m.resolve(names)]


def _apply_waivers(pv: PatchVerdict, waivers) -> None:
    by_type = {w.type: w.reason for w in waivers}
    used = set()
    for msg in pv.messages:
        if msg.level != "ERROR" and msg.type in by_type:
            msg.waived = by_type[msg.type]
            used.add(msg.type)
    for prob in pv.problems:
        if prob.type in hy.WAIVABLE and prob.type in by_type:
            prob.waived = by_type[prob.type]
            used.add(prob.type)
    pv.unused_waivers = [w.type for w in waivers
                         if w.type not in used and not registry.waived_by_a_gate(w.type)]
    pv.ok = not pv.failures()


def check_topics(m, wd, names: list[str], opts: Options | None = None,
                 log=None, steps: StepLog | None = None) -> list[TopicVerdict]:
    """Run the gates on the named topics (all when empty).  The gates of
    opts.gates that build take the work directory's lock for the topics
    that the gate cache does not answer (gatecache.py).  steps
    (kernel/steplog.py) times the style gates and each gate step, and says
    in a log what runs; by default the gates' steps go to log."""
    opts = opts or Options()
    t0 = time.monotonic()
    names = resolve_names(m, names)
    cache = wd.check_cache
    tree = cp.ScriptsTree.from_git(Path(wd.git_dir), m.base.ref, cache)
    checker = cp.Checker(tree, cache, codespell=opts.codespell)
    versions = tool_versions(cache, tree, checker)
    verdicts, maintainers = _patch_verdicts(m, names, checker, opts, steps)
    out = [_topic_verdict(m, name, versions, verdicts, maintainers) for name in names]
    if opts.gates:
        _run_gates(m, wd, out, opts, log, steps)
    for tv in out:
        tv.ok = all(p.ok for p in tv.patches) and not any(not r.waived for r in tv.recipients) \
            and tv.gates_ok()
        tv.seconds = time.monotonic() - t0
    if steps is not None:
        rows = steps.totals()
        for tv in out:
            tv.timing = [r for r in rows if r.branch == tv.branch]
    return out


def _sender(m) -> str:
    """Who signs off last is whoever sends: `mail --send` checks that
    chain; here the placeholder is a warning."""
    sender = m.series.sender
    if m.series.placeholder and hy.address(sender) == hy.address(m.series.placeholder):
        return ""
    return sender


def _patch_verdicts(m, names: list[str], checker: cp.Checker, opts: Options,
                    steps: StepLog | None):
    """checkpatch, hygiene and get_maintainer.pl of every distinct patch
    once, whichever topics list it: ({path: PatchVerdict}, {path: [ident]})."""
    sender = _sender(m)
    todo: dict[Path, tuple[str, object]] = {}
    for name in names:
        for topic, p in _topic_patches(m, name):
            todo.setdefault(p.path, (topic, p))
    data = {path: path.read_bytes() for path in todo}
    workers = opts.jobs or os.cpu_count() or 1

    def one(path: Path):
        topic, p = todo[path]
        pf = parse(path, f"patches/{topic}/{p.rel}")
        strict = opts.strict_all or cp.adds_files(data[path].decode("utf-8", "replace"))
        run = checker.checkpatch(data[path], strict)
        pv = PatchVerdict(pf.display, pf.subject, strict, messages=run.messages,
                          total=run.total, cached=run.cached)
        pv.problems = hy.check_patch(pf.subject, pf.body, pf.author, pf.email, pf.files,
                                     sender)
        pv.warning_lines = [f"PLACEHOLDER: line {x.line}: {x.text}: `ktopic signoff` before "
                       f"sending" for x in signoffs.check_file(m, path, pv.file) if x.placeholder]
        _apply_waivers(pv, p.waivers)
        return path, pv

    def maint(path: Path):
        return path, checker.maintainers(data[path])

    verdicts: dict[Path, PatchVerdict] = {}
    maintainers: dict[Path, list[str]] = {}
    branches = [_branch_of(m, n) for n in names]
    with (steps or StepLog()).step(branches[0] if len(branches) == 1 else "every topic",
                                   "checkpatch", f"checkpatch, hygiene, recipients of "
                                   f"{len(todo)} patch(es)"), \
            ThreadPoolExecutor(max_workers=workers) as pool:
        # The slow checkpatch runs first, get_maintainer.pl behind them.
        futs = [pool.submit(one, p) for p in todo] + [pool.submit(maint, p) for p in todo]
        for f in futs:
            path, value = f.result()
            if isinstance(value, PatchVerdict):
                verdicts[path] = value
            else:
                maintainers[path] = value
    return verdicts, maintainers


def _topic_verdict(m, name: str, versions: dict[str, str], verdicts: dict,
                   maintainers: dict) -> TopicVerdict:
    """One topic's verdict from its patches' and their recipients."""
    tv = TopicVerdict(name, _branch_of(m, name), versions=dict(versions))
    pairs = _topic_patches(m, name)
    tv.patches = [verdicts[p.path] for _, p in pairs]
    for pv in tv.patches:
        tv.notes += [f"{pv.file}: waiver {w} matches nothing (stale?)"
                     for w in pv.unused_waivers]
    if name != INTEGRATION:
        t = m.topics[name]
        wanted: dict[str, list[str]] = {}
        for _, p in pairs:
            for ident in maintainers[p.path]:
                wanted.setdefault(ident, []).append(f"patches/{name}/{p.rel}")
        tv.recipients, notes = hy.check_recipients(t.to, t.cc, t.recipients_waived, wanted)
        tv.notes += notes
    return tv


def _run_gates(m, wd, verdicts: list[TopicVerdict], opts: Options, log,
               steps: StepLog | None = None) -> None:
    """The gates of opts.gates (gates/registry.py), per topic in the
    registry's order; for the build gates one walk in the topic's build
    directory: W=1/sparse of the start, every commit built, W=1/sparse of
    the head.

    A passing verdict is remembered by content (gatecache): a topic whose
    inputs are unchanged is not looked at again, and costs no lock either;
    the lock is taken only when a gate that builds runs (re-entrant: ci
    already holds it).

    Every build and W=1/sparse pass is a step of `steps`; without one, a
    StepLog writes their lines to log, with a line every 30 s while one
    runs (kernel/steplog.py)."""
    own = steps is None
    steps = steps or StepLog(say=log)
    try:
        _run_gates_steps(m, wd, verdicts, opts, log, steps)
    finally:
        if own:
            steps.close()


def _run_gates_steps(m, wd, verdicts: list[TopicVerdict], opts: Options, log,
                     steps: StepLog) -> None:
    names = [g for g in registry.GATES if g in opts.gates]
    cache = GateCache(wd, m)
    todo = []
    for tv in verdicts:
        plan = bs.plan(m, wd, tv.topic)
        if plan.error:
            _walk(plan, wd, tv, cache, names, opts, log, steps)   # says what is missing
        elif not _from_cache(tv, plan, cache, names, log):
            todo.append(tv)
    if not todo:
        return
    builds = any(registry.GATES[g].builds for g in names)
    with wd.lock() if builds else contextlib.nullcontext():
        for tv in todo:
            # Again under the lock: a run that held it may have moved the refs.
            plan = bs.plan(m, wd, tv.topic)
            if plan.error or not _from_cache(tv, plan, cache, names, log):
                _walk(plan, wd, tv, cache, names, opts, log, steps)


def _from_cache(tv: TopicVerdict, plan, cache, names: list[str], log) -> bool:
    """Take every requested verdict from the cache, or none."""
    hits = {g: cache.load(g, plan) for g in names}
    if not all(hits.values()):
        return False
    tv.gates.update(hits)
    if log:
        log(f"gates {plan.branch}: cached: {' and '.join(names)} passed at "
            f"{plan.start[:12]}..{plan.head[:12]} ({len(plan.commits)} commit(s))")
    return True


def _walk(plan, wd, tv: TopicVerdict, cache, names: list[str], opts: Options, log,
          steps: StepLog) -> None:
    """Run the requested gates that the cache does not answer; store what passes."""
    if plan.error:
        tv.gates.update({g: registry.get(g).failed(plan.error) for g in names})
        return
    hits = {g: cache.load(g, plan) for g in names}
    need = [registry.get(g) for g in names if hits[g] is None]
    if log:
        log(f"gates {plan.branch}: {' and '.join(g.name for g in need)} at "
            f"{plan.start[:12]}..{plan.head[:12]} ({len(plan.commits)} commit(s))"
            + "".join(f"; {g} cached" for g in names if hits[g] is not None))
    tv.gates.update({g: hits[g] for g in names if hits[g] is not None})
    run = GateRun(plan, wd, cache.m, jobs=opts.jobs, progress=opts.progress, log=log, steps=steps)
    for gate in need:
        gate.before(run)
    for gate in need:
        tv.gates[gate.name] = res = gate.run(run)
        cache.store(gate.name, plan, res)
    tv.gates = {g: tv.gates[g] for g in names}


# ------------------------------------------------------------- rendering

def render(tv: TopicVerdict, tools: bool = True) -> list[str]:
    """The plain-text report of one topic: failures quoted with checkpatch's
    (or the compiler's) own lines, then the waived ones, then notes."""
    lines = [f"{tv.branch}: {'PASS' if tv.ok else 'FAIL'}: {tv.summary()}"]
    for pv in tv.patches:
        state = "ok" if pv.ok else "FAIL"
        lines.append(f"  {pv.file}: {state}{' (--strict)' if pv.strict else ''}"
                     f"{' [cached]' if pv.cached else ''}  {pv.total}")
        for x in pv.failures():
            if isinstance(x, cp.Message):
                lines += [f"      {ln}" for ln in x.lines]
            else:
                lines.append(f"      {x.type}: {x.message}")
                lines += [f"        {ln}" for ln in x.lines]
        lines += [f"      WARNING {w}" for w in pv.warning_lines]
        for x in pv.messages + pv.problems:
            if x.waived:
                head = f"{x.level}:{x.type}" if isinstance(x, cp.Message) else x.type
                lines.append(f"      waived {head}: {x.waived}")
    for r in tv.recipients:
        if r.waived:
            lines.append(f"  recipient waived: {r.message}: {r.waived}")
        else:
            lines.append(f"  {r.type}: {r.message}")
            lines += [f"    {ln}" for ln in r.lines]
    for res in tv.gates.values():
        lines += ["  " + ln for ln in res.render()]
    lines += [f"  note: {n}" for n in tv.notes]
    if tools:
        lines.append(tools_line(tv.versions))
    return lines


def tools_line(versions: dict[str, str]) -> str:
    return "tools: " + "; ".join(f"{k}: {v}" for k, v in versions.items())


# The kinds of finding the patch gates make: read from patches and
# builds, never from a boot (runner/attribute.py leaves them out).
FINDING_KINDS = frozenset({"checkpatch", "hygiene", "bisect", "new_warning", "coccicheck"})


def findings(tv: TopicVerdict) -> list[R.Finding]:
    """The verdict's failures as report findings (kind checkpatch, hygiene,
    or the gates' own: bisect, new_warning, coccicheck: FINDING_KINDS)."""
    out = []
    for pv in tv.patches:
        for x in pv.failures():
            if isinstance(x, cp.Message):
                out.append(R.Finding("checkpatch", f"{pv.file}: {x.level}:{x.type}: {x.text}",
                                     0, list(x.lines)))
            else:
                out.append(R.Finding("hygiene", f"{pv.file}: {x.type}: {x.message}", 0,
                                     list(x.lines)))
    for r in tv.recipients:
        if not r.waived:
            out.append(R.Finding("hygiene", f"{r.type}: {r.message}", 0, list(r.lines)))
    for res in tv.gates.values():
        out += res.findings()
    return out


def check_branch(manifest, workdir, topic: str, out_dir: Path | None = None,
                 gates: tuple[str, ...] = (), jobs: int = 0,
                 steps: StepLog | None = None) -> tuple[R.StageResult, dict]:
    """The "check" stage of one branch, for `ktopic ci`.

    topic: a topic name, a branch name, or "integration".  Returns the
    StageResult and details: {"verdict": TopicVerdict.to_dict(), "findings":
    [results.Finding], "versions": {...}, "lines": the rendered report}.
    With out_dir, the report is written to out_dir/<branch-dir>/check.log
    and the StageResult's log points at it (relative to out_dir).  Builds
    (bisect, warnings) take the work directory's lock (ci already holds it;
    the lock is re-entrant).  gates: names in gates/registry.py.  steps: the run's StepLog, which times the
    gates' steps (checkpatch, bisect builds, warnings)."""
    t0 = time.monotonic()
    tv = check_topics(manifest, workdir, [topic],
                      Options(gates=tuple(gates), jobs=jobs, progress=False),
                      steps=steps)[0]
    lines = render(tv)
    log = ""
    if out_dir is not None:
        d = Path(out_dir) / branch_dir(tv.branch)
        write_atomic(d / "check.log", "\n".join(lines) + "\n")
        log = str((d / "check.log").relative_to(out_dir))
    all_cached = bool(tv.patches) and all(p.cached for p in tv.patches) and \
        all(res.cached for res in tv.gates.values())
    status = R.FAIL if not tv.ok else (R.CACHED if all_cached else R.PASS)
    st = R.StageResult("check", status, time.monotonic() - t0, tv.summary(), log)
    return st, {"verdict": tv.to_dict(), "findings": findings(tv), "versions": tv.versions,
                "lines": lines}
