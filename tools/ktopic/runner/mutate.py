"""The mutation gate (`ktopic mutate`): deliberate bugs that the tests
must see.

qemu/mutants/<topic>/NNNN-<what-it-breaks>.patch is a `git diff` on the
topic's branch head, after two header lines:

    Breaks: <one line: what the deliberate bug breaks>
    Caught-by: <suite.case, program or expect name that must fail>

For each mutant: the diff is applied to the head's tree in a temporary
index (git apply --cached) and committed with commit-tree: no ref moves
and no worktree is touched but the tool's own src/.  The mutant commit is
built in the branch's own build directory (incremental: make recompiles
what the diff touched, and the next build of the branch recompiles it
back, because the worktree switch rewrites those files again), booted with
the branch's tests and its expectation boots, and must fail: any failure
of the boot, the tests or the expectations counts, and the result says
whether the Caught-by test was among them.  A mutant that does not apply
or does not build is "invalid" (it no longer tests anything): like a
survivor, it fails the gate.  So does every mutant of a branch whose own
tests fail (a failure then proves nothing).

The boot ends at the Caught-by test's first "not ok" line: that line
decides the mutant (caught, by the test named), and the rest of the run
would only add time; a mutant whose Caught-by test passes boots to the end,
where any other failure still catches it.

Results are cached under <workdir>/results/mutants/ by content: the
mutant file, the branch's result key (tree, config, qemu inputs, tool);
not a result that rests on a time-out (it may be the machine's load).
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ktopic import stampcache
from ktopic.errors import Failure, KtopicError
from ktopic.kernel import build as buildmod
from ktopic.model import results as R
from ktopic.model.results import CAUGHT, FAIL, INVALID, PASS, SURVIVED
from ktopic.model.targets import Target
from ktopic.plumbing.gitutil import Git

MUTATE_VERSION = "1"
# Findings a loaded machine can cause, and those a guest cut short by one
# gives (a suite that had not run yet, the cases of the one it was in, no
# "done").
LOAD_KINDS = {"timeout", "silence", "qemu"}
KILLED_KINDS = {"missing_suite", "unreported_case", "incomplete"}
_NAME = re.compile(r"^\d{4}-[A-Za-z0-9._+-]+\.patch$")


@dataclass
class Mutant:
    topic: str
    path: Path
    breaks: str
    caught_by: str
    diff: bytes

    @property
    def name(self) -> str:
        return self.path.name[:-len(".patch")]


def parse_mutant(path: Path, topic: str) -> Mutant:
    """Read one mutant file; bad input is a KtopicError naming FILE:LINE."""
    if not _NAME.match(path.name):
        raise KtopicError("a mutant file is named NNNN-<what-it-breaks>.patch", path, 1)
    data = path.read_bytes()
    lines = data.split(b"\n")
    heads = {}
    for i, key in enumerate((b"Breaks", b"Caught-by")):
        line = lines[i] if i < len(lines) else b""
        m = re.match(rb"^" + key + rb": (\S.*)$", line)
        if not m:
            raise KtopicError(f"line {i + 1} must be '{key.decode()}: ...'", path, i + 1)
        heads[key] = m.group(1).decode("utf-8", errors="replace").strip()
    if len(lines) < 3 or lines[2].strip():
        raise KtopicError("a blank line must follow the Caught-by: line", path, 3)
    diff = b"\n".join(lines[3:])
    if not re.search(rb"^diff --git a/", diff, re.M):
        raise KtopicError("no 'diff --git' section after the headers", path, 4)
    return Mutant(topic, path, heads[b"Breaks"], heads[b"Caught-by"], diff)


def load_mutants(mutants_dir: Path, topic: str) -> list[Mutant]:
    d = mutants_dir / topic
    if not d.is_dir():
        return []
    return [parse_mutant(p, topic) for p in sorted(d.glob("*.patch"))]


def mutant_commit(git_dir: Path, head: str, m: Mutant) -> str:
    """A commit of head's tree with the mutant applied; only objects are
    written (a temporary index, no ref, no worktree)."""
    g = Git(git_dir)
    with tempfile.TemporaryDirectory(prefix="ktopic-mutant-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        g.run("read-tree", head, env=env)
        p = g.try_run("apply", "--cached", "--whitespace=nowarn", "-", input=m.diff.decode(
            "utf-8", errors="surrogateescape"), env=env)
        if p.returncode:
            raise Failure(f"does not apply on {head[:12]}: "
                          f"{(p.stderr.strip().splitlines() or ['git apply failed'])[0]}")
        tree = g.run("write-tree", env=env).strip()
    cenv = {"GIT_AUTHOR_NAME": "ktopic", "GIT_AUTHOR_EMAIL": "ktopic@localhost",
            "GIT_COMMITTER_NAME": "ktopic", "GIT_COMMITTER_EMAIL": "ktopic@localhost",
            "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000"}
    return g.run("commit-tree", tree, "-p", head, "-m", f"mutant {m.topic}/{m.name}",
                 env=cenv).strip()


def stop_line(caught_by: str) -> re.Pattern[bytes]:
    """The console line that decides a mutant: the KTAP "not ok" of its
    Caught-by case (suite.case), suite or program (name)."""
    name = caught_by.rsplit(".", 1)[-1].encode()
    return re.compile(rb"^(?:\[[ \d.]+\] )?\s*not ok \d+ " + re.escape(name) + rb"(?:\s|$)")


def mutant_key(m: Mutant, t: Target) -> str:
    return stampcache.key(MUTATE_VERSION, m.path.read_bytes(), t.key, t.tree,
                          Path(__file__).read_bytes(), length=24)


def named_failed(caught_by: str, br: R.BranchResult) -> bool:
    """The Caught-by test is among br's failures: a case "suite.case", a
    suite or program name, or an expect name."""
    bad_cases = {f"{s.name}.{c.name}" for s in br.suites for c in s.cases
                 if c.status in (R.FAIL, R.CRASH)}
    bad_suites = {s.name for s in br.suites if s.status in (R.FAIL, R.CRASH)} | \
        {c.split(".", 1)[0] for c in bad_cases}
    msgs = [f.message for f in br.findings if not f.in_base]
    return caught_by in bad_cases or caught_by in bad_suites or \
        any(re.search(rf"\b{re.escape(caught_by)}\b", x) for x in msgs)


def failure_summary(br: R.BranchResult) -> str:
    bad = [f for f in br.findings if not f.in_base]
    if bad:
        return f"{bad[0].kind}: {bad[0].message}"[:160] + \
            (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
    st = next((s for s in br.stages if s.status == FAIL), None)
    return f"{st.stage}: {st.summary}"[:160] if st else ""


def run_mutant(runner, t: Target, m: Mutant, cache: Path, use_cache: bool,
               on_line=None) -> R.MutantResult:
    """Apply, build, boot one mutant (runner: a Runner whose out_dir is where
    the mutants' logs go).  The caller holds the work directory's lock."""
    store, key = stampcache.Store(cache), mutant_key(m, t)
    res = R.MutantResult(topic=m.topic, name=m.name, breaks=m.breaks, caught_by=m.caught_by,
                         status=INVALID)
    d = store.get(key) if use_cache else None
    if isinstance(d, dict):
        try:
            got = R.MutantResult(**d)
            got.cached = True
            return got
        except TypeError:
            pass
    t0 = time.monotonic()
    try:
        commit = mutant_commit(runner.git_dir, t.commit, m)
    except Failure as e:
        res.summary = str(e).splitlines()[0]
        return _store(res, store, key, t0)
    mt = dataclasses.replace(t, branch=f"{m.topic}/{m.name}", git_branch=t.branch,
                             commit=commit, tree=Git(runner.git_dir).tree_of(commit))
    br = R.BranchResult(branch=mt.branch, topic=t.topic, variant=t.variant)
    req = buildmod.BuildRequest(
        name=runner.build_name(t), commit=commit, base=t.base_commit or None,
        fragments=t.fragments, modules=[runner.qemu_dir / "modules" / x for x in t.modules],
        jobs=runner.opts.jobs, progress=runner.opts.progress,
        seed=runner.seed(t), on_line=on_line)
    try:
        b = buildmod.build(runner.root, runner.git_dir, req)
    except Failure as e:
        res.summary = "build: " + str(e).splitlines()[0]
        return _store(res, store, key, t0)
    if not b.ok:
        res.summary = f"does not build: {b.error}"
        return _store(res, store, key, t0)
    runner.keep_build_outputs(mt, b)
    booted = runner.boot_and_test(mt, br, b, stop_at=stop_line(m.caught_by))
    if booted is not None and booted.status == "stopped" and \
            not named_failed(m.caught_by, br):
        # A namesake in another suite failed: only the whole run decides.
        br = R.BranchResult(branch=mt.branch, topic=t.topic, variant=t.variant)
        runner.boot_and_test(mt, br, b)
    if t.expect and br.ok:
        runner.expectations(mt, br, b)
    runner.mark_in_base(mt, br)
    res.log = f"{runner.rel(runner.out(mt) / 'console.log')}"
    if br.ok:
        res.status = SURVIVED
        res.summary = f"every test passed; {m.caught_by} should have failed"
    else:
        res.status = CAUGHT
        res.named_failed = named_failed(m.caught_by, br)
        res.summary = failure_summary(br) + \
            ("" if res.named_failed else f" (not by {m.caught_by})")
    # Time-outs may be load, not the mutant: a result that rests on one is
    # not kept.  One caught by another failure too is (a mutant that hangs
    # the guest after a WARNING): the time-out does not decide it.
    if any(f.kind in LOAD_KINDS for f in br.findings) and not \
            (res.status == CAUGHT and any(f.kind not in LOAD_KINDS | KILLED_KINDS and
                                          not f.in_base for f in br.findings)):
        res.seconds = time.monotonic() - t0
        return res
    return _store(res, store, key, t0)


def _store(res: R.MutantResult, store: stampcache.Store, key: str, t0: float) -> R.MutantResult:
    res.seconds = time.monotonic() - t0
    store.put(key, dataclasses.asdict(res))
    return res


def mutate(runner, base: Target, t: Target, mutants: list[Mutant],
           use_cache: bool = True, on_result=None) -> list[R.MutantResult]:
    """Every mutant of one topic.  The base and the unmutated branch run
    first (from the result cache when unchanged): the base for the
    findings it shows anyway, the branch because its mutants prove
    something only when it passes itself."""
    runner.run(base)
    plain = runner.run(t)
    return run_mutants(runner, t, plain, mutants, use_cache, on_result)


def verdict(results: list[R.MutantResult]) -> tuple[str, str]:
    """One topic's mutation verdict: (status, "15/16 caught; survived: X")."""
    caught = sum(r.status == R.CAUGHT for r in results)
    text = f"{caught}/{len(results)} caught"
    for label in (R.SURVIVED, R.INVALID):
        names = [r.name for r in results if r.status == label]
        if names:
            text += f"; {label}: {', '.join(names)}"
    return (PASS if caught == len(results) else FAIL), text


def run_mutants(runner, t: Target, plain: R.BranchResult, mutants: list[Mutant],
                use_cache: bool = True, on_result=None) -> list[R.MutantResult]:
    """The mutants of one topic whose plain result (plain) is known; each
    is a step (t.branch, "mutants") of runner.steps."""
    cache = runner.wd.results / "mutants"
    out = []
    for m in mutants:
        if not plain.ok:
            r = R.MutantResult(topic=m.topic, name=m.name, breaks=m.breaks,
                               caught_by=m.caught_by, status=INVALID,
                               summary=f"{t.branch} fails without the mutant: "
                                       f"{failure_summary(plain)}"[:200])
        else:
            with runner.steps.step(t.branch, "mutants", f"mutant {m.name}", kbuild=True) as st:
                r = run_mutant(runner, t, m, cache, use_cache, on_line=st.line)
                st.result(r.status)
        out.append(r)
        if on_result:
            on_result(r)
    return out
