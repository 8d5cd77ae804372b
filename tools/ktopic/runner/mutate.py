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
where any other failure still catches it.  Before that, a mutant caught by
a KUnit case boots that case alone (_case_first), and one caught by an
expected report that expectation alone (_expected_first): a failure there
decides it, without the rest of the suites.

One kernel for a topic's mutants (runner/mutswitch.py): when two or more
of a topic's mutants are to run, every one that can be switched at boot
goes into one commit of the head (each changed region becomes
"if (ktopic_mutant == N) <mutant> else <head>", plus lib/ktopic_mutant.c
that defines the parameter), built once in a build directory of its own
(<branch build>-mutants, seeded from the branch's) and booted once per
mutant with ktopic_mutant=N.  That commit is never a branch: the switch
exists only in that build.  Before the first mutant boots, the switched
kernel boots with ktopic_mutant=0 and must pass the branch's tests, so a
fault of the transform cannot pass for a catch.  A mutant that cannot be
switched, or whose switched code does not compile (the compiler's errors
name the lines, and so the mutant), gets its own build as above, and its
result says why ("own build: ...").

Results are cached under <workdir>/results/mutants/ by content: the
mutant file, the branch's result key (tree, config, qemu inputs, tool);
not a result that rests on a time-out (it may be the machine's load).
The key does not hold the switched tree: the other mutants in it are
switched off, and a mutant added to a topic would otherwise run every
mutant of the topic again.

Why the key holds the tree, not the built objects (docs/ci.md, "Keying
mutants by the built objects"): "the unmutated branch's built kernel,
the mutant, and the unmutated text of the files it changes" does not
decide the mutant's kernel.  The objects the mutant recompiles read
every header they include, and a macro or inline that only the
mutant's lines use can change without changing one unmutated object; a
header mutant recompiles every includer; a lib.a member the mutant
starts to call is not in the unmutated image; a changed #include or #if
changes which files are read at all.  A sound key needs the hash of
every object and archive of the build (not only the image), and for
each object whose kbuild .cmd names a mutated file its command line and
the text of each of its dependencies, read from a build directory that
holds that tree's plain build (the branch's is shared with mutant
builds and bisect walks), and must fall back to the tree for mutants
that change a preprocessor line or anything but C.

On another branch (`ktopic mutate --on integration`): a topic's mutants
applied to the integration branch's head instead of the topic's, built
as that branch (its fragments, suites, modules, programs, smp; the
switched kernel in <its build>-mutants, seeded from its build directory)
and judged as on the topic.  Such a result names the branch it ran on
(MutantResult.on, "for-next+kcsan") and its key holds that name, so it
never stands for the topic's own result, even where the two branches
have the same tree and tests.
"""

from __future__ import annotations

import dataclasses
import hashlib
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
from ktopic.model.targets import Target, variant_branch
from ktopic.plumbing.gitutil import Git
from ktopic.runner import mutswitch

MUTATE_VERSION = "2"
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


def on_label(t: Target, topic: str) -> str:
    """The branch a topic's mutants run on when it is not the topic's own,
    as their results name it ("for-next+kcsan"); "" on the topic's branch."""
    return "" if t.topic == topic else variant_branch(t.spec.branch, t.variant)


def _prefix(t: Target, topic: str) -> str:
    """The result name's first part: "locking", or "for-next+kcsan/locking"."""
    on = on_label(t, topic)
    return f"{on}/{topic}" if on else topic


def mutant_commit(git_dir: Path, head: str, m: Mutant, where: str = "") -> str:
    """A commit of head's tree with the mutant applied; only objects are
    written (a temporary index, no ref, no worktree).  where: the branch
    head is, named in the failure when it is not the topic's."""
    g = Git(git_dir)
    with tempfile.TemporaryDirectory(prefix="ktopic-mutant-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        g.run("read-tree", head, env=env)
        p = g.try_run("apply", "--cached", "--whitespace=nowarn", "-", input=m.diff.decode(
            "utf-8", errors="surrogateescape"), env=env)
        if p.returncode:
            on = f"{where} ({head[:12]})" if where else head[:12]
            raise Failure(f"does not apply on {on}: "
                          f"{(p.stderr.strip().splitlines() or ['git apply failed'])[0]}")
        tree = g.run("write-tree", env=env).strip()
    return g.run("commit-tree", tree, "-p", head, "-m", f"mutant {m.topic}/{m.name}",
                 env=_CENV).strip()


_CENV = {"GIT_AUTHOR_NAME": "ktopic", "GIT_AUTHOR_EMAIL": "ktopic@localhost",
         "GIT_COMMITTER_NAME": "ktopic", "GIT_COMMITTER_EMAIL": "ktopic@localhost",
         "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000"}


def number(m: Mutant) -> int:
    """The mutant's number, NNNN of its file name: its ktopic_mutant=N."""
    return int(m.name[:4])


def _text(m: Mutant) -> str:
    return m.diff.decode("utf-8", errors="surrogateescape")


def head_texts(git_dir: Path, head: str, base: str, mutants: list[Mutant]
               ) -> tuple[dict[str, str], set[str]]:
    """The head's texts of every file the mutants touch, and the headers
    among them that the base does not have (the topic's own)."""
    paths: list[str] = []
    for m in mutants:
        try:
            paths += [fc.path for fc in mutswitch.parse_diff(_text(m))]
        except mutswitch.NotSwitchable:
            continue
    paths = list(dict.fromkeys(paths))
    g = Git(git_dir)
    there = set(g.run("ls-tree", "-z", "--name-only", head, "--", *paths).split("\0")) \
        if paths else set()
    # Byte for byte: a file that is not UTF-8 is written back as it was.
    texts = {p: g.run("cat-file", "blob", f"{head}:{p}", binary=True).decode(
        "utf-8", errors="surrogateescape") for p in paths if p in there}
    hs = [p for p in texts if p.endswith(".h")]
    in_base = g.read_files(base, hs) if base and hs else {p: "" for p in hs}
    return texts, {p for p in hs if in_base.get(p) is None}


def switched_commit(git_dir: Path, head: str, plan: mutswitch.Plan, topic: str,
                    where: str = "") -> str:
    """A commit of head's tree with the plan's switched files, the switch
    unit and lib/Makefile building it; only objects are written."""
    g = Git(git_dir)
    files = {p: f.text for p, f in plan.files.items()}
    files[mutswitch.SWITCH_PATH] = mutswitch.switch_unit()
    mk = g.read_files(head, [mutswitch.SWITCH_MAKEFILE])[mutswitch.SWITCH_MAKEFILE]
    if mk is None:
        raise Failure(f"no {mutswitch.SWITCH_MAKEFILE} in {head[:12]}")
    files[mutswitch.SWITCH_MAKEFILE] = mutswitch.switch_makefile(mk)
    with tempfile.TemporaryDirectory(prefix="ktopic-switched-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        g.run("read-tree", head, env=env)
        for path, text in files.items():
            blob = g.run("hash-object", "-w", "--stdin", input=text.encode(
                "utf-8", errors="surrogateescape")).decode().strip()
            mode = (g.run("ls-tree", head, "--", path).split() or ["100644"])[0]
            g.run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        tree = g.run("write-tree", env=env).strip()
    return g.run("commit-tree", tree, "-p", head, "-m",
                 f"mutants of {topic}, switched at boot" + (f", on {where}" if where else ""),
                 env=_CENV).strip()


_ERROR = re.compile(r"^(\S+?):(\d+):(?:\d+:)? (?:fatal )?error:")


def culprits(plan: mutswitch.Plan, log: str, details: list[str]) -> dict[int, str]:
    """The switched mutants a failed build names: a compiler error on a
    line of a mutant's switched region, or a switched file the build did
    not compile; each with its first error line."""
    bad: dict[int, str] = {}

    def owner(loc: str) -> mutswitch.SwitchedFile | None:
        return next((f for p, f in plan.files.items() if loc == p or loc.endswith("/" + p)),
                    None)
    for line in log.splitlines():
        m = _ERROR.match(line)
        f = owner(m.group(1)) if m else None
        n = f.mutant_at(int(m.group(2))) if f else None
        if n is not None:
            bad.setdefault(n, f"{f.path}:{line.split(':', 2)[2].strip()}"[:160])
    for line in details:
        f = owner(line.split(":", 1)[0])
        for n in (p.number for p in f.placed) if f else ():
            bad.setdefault(n, line[:160])
    return bad


@dataclass
class Switched:
    """A topic's mutants in one kernel: the plan, the commit built and its
    build (None when nothing is switched), and why each other mutant has
    its own build."""
    plan: mutswitch.Plan | None = None
    commit: str = ""
    build: buildmod.BuildResult | None = None
    own: dict[int, str] = dataclasses.field(default_factory=dict)
    digest: str = ""        # what its boots run, as built (objects_digest)

    def on(self, m: Mutant) -> bool:
        return self.build is not None and self.plan is not None and \
            number(m) in self.plan.switched and number(m) not in self.own


def switched_build_name(runner, t: Target) -> str:
    return runner.build_name(t) + "-mutants"


def build_switched(runner, t: Target, mutants: list[Mutant], on_line=None,
                   attempts: int = 3) -> Switched:
    """Plan, commit and build the topic's switchable mutants in one
    kernel; a mutant whose switched code does not compile moves to its
    own build, and the rest build again (incremental)."""
    texts, headers = head_texts(runner.git_dir, t.commit, t.base_commit, mutants)
    topic = mutants[0].topic
    on = on_label(t, topic)
    sw = Switched()
    if any(number(m) == 0 for m in mutants):
        sw.own[0] = f"{mutswitch.VAR}=0 is every mutant off"
    for _ in range(attempts):
        plan = mutswitch.plan([(number(m), _text(m)) for m in mutants
                               if number(m) not in sw.own], texts, headers)
        sw.own.update(plan.fallback)
        sw.plan = plan
        if not plan.switched:
            return sw
        try:
            sw.commit = switched_commit(runner.git_dir, t.commit, plan, topic, on)
            req = buildmod.BuildRequest(
                name=switched_build_name(runner, t), commit=sw.commit,
                base=t.base_commit or None, fragments=t.fragments,
                modules=[runner.qemu_dir / "modules" / x for x in t.modules],
                jobs=runner.opts.jobs, progress=runner.opts.progress,
                seed=runner.wd.build_dir(runner.build_name(t)), on_line=on_line)
            b = buildmod.build(runner.root, runner.git_dir, req)
        except Failure as e:
            why = f"the switched build could not run: {str(e).splitlines()[0]}"[:200]
            sw.own.update({n: why for n in plan.switched})
            return sw
        if b.ok:
            sw.build = b
            return sw
        try:
            log = b.log.read_text(errors="replace") if b.log else ""
        except OSError:
            log = ""
        bad = culprits(plan, log, b.details)
        if not bad:
            why = f"the switched build failed: {b.error}"[:200]
            sw.own.update({n: why for n in plan.switched})
            return sw
        sw.own.update({n: f"does not compile switched: {x}" for n, x in bad.items()})
    sw.own.update({n: "the switched build kept failing" for n in sw.plan.switched
                   if n not in sw.own})
    sw.build = None
    return sw


def at_build_tree(runner, commit: str) -> None:
    """Put the worktree back at commit, the tree of the build about to be
    booted, before anything is compiled against it: expectation modules are
    built at boot time, against whatever src/ holds, and a mutant with a
    build of its own moves src/ between two boots of the switched kernel.
    Built against that mutant's tree, a module that inlines a switched
    header (six.h: mutants 0018 and 0020) runs the head's code whatever
    ktopic_mutant says, and the mutant looks survived."""
    buildmod.Worktree(runner.git_dir, runner.root / "src").checkout(commit)


def objects_digest(runner, t: Target, b: buildmod.BuildResult, commit: str) -> str:
    """What a boot of build b runs, as built: the kernel image, the tree's
    and the test modules, and the expectations' modules (built here as
    the expectation boots build them); "" when one of them cannot be."""
    kos = [*b.test_modules, *b.kernel_modules]
    if t.expect:
        at_build_tree(runner, commit)
        mods, err, _ = buildmod.build_modules(
            runner.root, b, [runner.qemu_dir / "modules" / e.module for e in t.expect],
            runner.opts.jobs)
        if err:
            return ""
        kos += mods
    h = hashlib.sha256()
    try:
        for p in [b.bzimage, *sorted(set(kos))]:
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    except (OSError, AttributeError):
        return ""
    return h.hexdigest()


def check_switched(runner, t: Target, sw: Switched, store: stampcache.Store,
                   topic: str = "") -> None:
    """The switched kernel with no mutant on must pass the branch's tests
    (then a failure with a mutant on is the mutant's); when it does not,
    every mutant gets its own build.  Cached by what was built (sw.digest,
    set here), or by the switched tree when that cannot be read."""
    if sw.build is None:
        return
    tree = Git(runner.git_dir).tree_of(sw.commit)
    sw.digest = objects_digest(runner, t, sw.build, sw.commit)
    key = "switched-" + (stampcache.key(MUTATE_VERSION, t.boot_key, sw.digest, length=24)
                         if sw.digest else stampcache.key(MUTATE_VERSION, t.key, tree, length=24))
    d = store.get(key)
    if not isinstance(d, dict):
        mt = dataclasses.replace(t, branch=f"{_prefix(t, topic or t.topic)}/mutants-off",
                                 git_branch=t.git_branch or t.branch,
                                 commit=sw.commit, tree=tree)
        br = R.BranchResult(branch=mt.branch, topic=t.topic, variant=t.variant)
        runner.keep_build_outputs(mt, sw.build)
        runner.boot_and_test(mt, br, sw.build, cmdline=f"{mutswitch.VAR}=0")
        runner.mark_in_base(mt, br)
        d = {"ok": br.ok, "summary": failure_summary(br)}
        if not any(f.kind in LOAD_KINDS for f in br.findings):
            store.put(key, d)
    if not d.get("ok"):
        why = f"the switched kernel fails with no mutant on: {d.get('summary', '')}"[:200]
        sw.own.update({n: why for n in sw.plan.switched})
        sw.build = None


def stop_line(caught_by: str) -> re.Pattern[bytes]:
    """The console line that decides a mutant: the KTAP "not ok" of its
    Caught-by case (suite.case), suite or program (name)."""
    name = caught_by.rsplit(".", 1)[-1].encode()
    return re.compile(rb"^(?:\[[ \d.]+\] )?\s*not ok \d+ " + re.escape(name) + rb"(?:\s|$)")


def mutant_key(m: Mutant, t: Target) -> str:
    on = on_label(t, m.topic)
    return stampcache.key(MUTATE_VERSION, m.path.read_bytes(), t.key, t.tree,
                          Path(__file__).read_bytes(), Path(mutswitch.__file__).read_bytes(),
                          *([f"on {on}"] if on else []), length=24)


def objects_key(m: Mutant, t: Target, digest: str) -> str:
    """A switched mutant's result by what its boot runs (digest: the
    switched kernel and modules as built) instead of the tree they were
    built from: a change that leaves the objects as they were (a comment)
    boots none of the topic's mutants again."""
    on = on_label(t, m.topic)
    return "objects-" + stampcache.key(
        MUTATE_VERSION, m.path.name, m.path.read_bytes(), t.boot_key, digest,
        Path(__file__).read_bytes(), Path(mutswitch.__file__).read_bytes(),
        *([f"on {on}"] if on else []), length=24)


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
               on_line=None, switched: Switched | None = None) -> R.MutantResult:
    """Apply, build, boot one mutant (runner: a Runner whose out_dir is where
    the mutants' logs go); with switched (the topic's mutants in one
    kernel), a mutant in it boots that kernel with ktopic_mutant=N.  The
    caller holds the work directory's lock."""
    store, key = stampcache.Store(cache), mutant_key(m, t)
    okey = objects_key(m, t, switched.digest) \
        if switched is not None and switched.on(m) and switched.digest else ""
    res = R.MutantResult(topic=m.topic, name=m.name, breaks=m.breaks, caught_by=m.caught_by,
                         status=INVALID, on=on_label(t, m.topic))
    for k in (key, okey) if use_cache else ():
        d = store.get(k) if k else None
        if isinstance(d, dict):
            try:
                got = R.MutantResult(**d)
            except TypeError:
                continue
            if k != key:            # the same objects as a result of another tree
                store.put(key, d)
            got.cached = True
            return got
    t0 = time.monotonic()
    if switched is not None and switched.on(m):
        keep = _boot(runner, t, m, res, switched.commit, switched.build,
                     {"cmdline": f"{mutswitch.VAR}={number(m)}"})
    else:
        keep = _own_build(runner, t, m, res, on_line)
        own = switched.own.get(number(m)) if switched is not None else None
        if own:
            res.summary = f"{res.summary} (own build: {own})"[:300]
    res.seconds = time.monotonic() - t0
    if keep:
        for k in filter(None, (key, okey)):
            store.put(k, dataclasses.asdict(res))
    return res


def _own_build(runner, t: Target, m: Mutant, res: R.MutantResult, on_line) -> bool:
    """The mutant applied, built in the branch's build directory, booted
    (_boot); res says what happened, and the answer whether to keep it."""
    try:
        commit = mutant_commit(runner.git_dir, t.commit, m, on_label(t, m.topic))
    except Failure as e:
        res.summary = str(e).splitlines()[0]
        return True
    req = buildmod.BuildRequest(
        name=runner.build_name(t), commit=commit, base=t.base_commit or None,
        fragments=t.fragments, modules=[runner.qemu_dir / "modules" / x for x in t.modules],
        jobs=runner.opts.jobs, progress=runner.opts.progress,
        seed=runner.seed(t), on_line=on_line)
    try:
        b = buildmod.build(runner.root, runner.git_dir, req)
    except Failure as e:
        res.summary = "build: " + str(e).splitlines()[0]
        return True
    if not b.ok:
        res.summary = f"does not build: {b.error}"
        return True
    return _boot(runner, t, m, res, commit, b, {})


def _boot(runner, t: Target, m: Mutant, res: R.MutantResult, commit: str,
          b: buildmod.BuildResult, kw: dict) -> bool:
    """Boot the mutant's kernel b (of commit) with the branch's tests and
    expectations (kw: the kernel arguments that turn it on, if any) and
    judge into res: caught or survived.  Whether to keep the result: not
    when it rests on a time-out."""
    mt = dataclasses.replace(t, branch=f"{_prefix(t, m.topic)}/{m.name}",
                             git_branch=t.git_branch or t.branch,
                             commit=commit, tree=Git(runner.git_dir).tree_of(commit))
    runner.keep_build_outputs(mt, b)
    at_build_tree(runner, commit)
    br = _expected_first(runner, mt, m, b, kw) or _case_first(runner, mt, m, b, kw)
    if br is None:
        br = R.BranchResult(branch=mt.branch, topic=t.topic, variant=t.variant)
        booted = runner.boot_and_test(mt, br, b, stop_at=stop_line(m.caught_by), **kw)
        if booted is not None and booted.status == "stopped" and \
                not named_failed(m.caught_by, br):
            # A namesake in another suite failed: only the whole run decides.
            br = R.BranchResult(branch=mt.branch, topic=t.topic, variant=t.variant)
            runner.boot_and_test(mt, br, b, **kw)
        if t.expect and br.ok:
            runner.expectations(mt, br, b, **kw)
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
    return not (any(f.kind in LOAD_KINDS for f in br.findings) and not
                (res.status == CAUGHT and any(f.kind not in LOAD_KINDS | KILLED_KINDS and
                                              not f.in_base for f in br.findings)))


def _expected_first(runner, mt: Target, m: Mutant, b: buildmod.BuildResult,
                    kw: dict) -> R.BranchResult | None:
    """A mutant whose Caught-by is an expected report boots that
    expectation alone first: its failure decides the mutant, as the
    Caught-by case's "not ok" stops a test boot.  Otherwise (None) the
    tests and every expectation decide, as for any other mutant."""
    named = [e for e in mt.expect if e.name == m.caught_by]
    if not named:
        return None
    br = R.BranchResult(branch=mt.branch, topic=mt.topic, variant=mt.variant)
    alone = dataclasses.replace(mt, spec=dataclasses.replace(mt.spec, expect=named))
    runner.expectations(alone, br, b, **kw)
    runner.mark_in_base(mt, br)     # what the base shows anyway decides nothing
    return None if br.ok else br


def _case_first(runner, mt: Target, m: Mutant, b: buildmod.BuildResult,
                kw: dict) -> R.BranchResult | None:
    """A mutant whose Caught-by is a case of one of the branch's KUnit
    suites boots that case alone first (kunit.filter_glob; no programs,
    no other suite expected): its failure decides the mutant, without
    the cases before it (the six_lock suite takes 11 s of a boot, most
    of its cases well under one).  Otherwise (None) the whole run
    decides, as for any other mutant: a catch by another test is still
    a catch."""
    suite, _, case = m.caught_by.partition(".")
    if not case or suite not in mt.kunit:
        return None
    br = R.BranchResult(branch=mt.branch, topic=mt.topic, variant=mt.variant)
    alone = dataclasses.replace(mt, spec=dataclasses.replace(
        mt.spec, kunit=[suite], programs=[], expect=[]))
    cmdline = " ".join(filter(None, (kw.get("cmdline"), f"{KUNIT_FILTER}={m.caught_by}")))
    runner.boot_and_test(alone, br, b, stop_at=stop_line(m.caught_by), cmdline=cmdline)
    runner.mark_in_base(mt, br)
    return br if named_failed(m.caught_by, br) else None


# The KUnit executor runs only the built-in cases this glob matches
# ("suite.case"; a parameterised case with all its parameters).
KUNIT_FILTER = "kunit.filter_glob"


def mutate(runner, base: Target | None, t: Target, mutants: list[Mutant],
           use_cache: bool = True, on_result=None) -> list[R.MutantResult]:
    """Every mutant of one topic, on t: the topic's branch, or another
    that stacks it (the integration branch).  The base (None: not run)
    and the unmutated branch run first (from the result cache when
    unchanged): the base for the findings it shows anyway, the branch
    because its mutants prove something only when it passes itself."""
    if base is not None:
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
    is a step (t.branch, "mutants") of runner.steps, and so is the one
    kernel of the switched ones (when two or more are to run) and its
    boot with none on."""
    cache = runner.wd.results / "mutants"
    store = stampcache.Store(cache)
    todo = [m for m in mutants if not (use_cache and isinstance(store.get(mutant_key(m, t)),
                                                                 dict))]
    topic = mutants[0].topic if mutants else t.topic
    whose = "" if topic == t.topic else f"{topic}'s "
    switched = None
    if plain.ok and len(todo) >= 2:
        with runner.steps.step(t.branch, "mutants",
                               f"one kernel for {len(todo)} {whose}mutants",
                               kbuild=True) as st:
            switched = build_switched(runner, t, todo, on_line=st.line)
            st.result(f"{sum(switched.on(m) for m in todo)} switched"
                      if switched.build is not None else "none switched")
        if switched.build is not None:
            with runner.steps.step(t.branch, "mutants", "the switched kernel, no mutant on") as st:
                check_switched(runner, t, switched, store, topic)
                st.result("ok" if switched.build is not None else "FAILED")
    out = []
    for m in mutants:
        if not plain.ok:
            r = R.MutantResult(topic=m.topic, name=m.name, breaks=m.breaks,
                               caught_by=m.caught_by, status=INVALID, on=on_label(t, m.topic),
                               summary=f"{variant_branch(t.spec.branch, t.variant)} fails "
                                       f"without the mutant: {failure_summary(plain)}"[:200])
        else:
            with runner.steps.step(t.branch, "mutants", f"mutant {whose}{m.name}",
                                   kbuild=True) as st:
                r = run_mutant(runner, t, m, cache, use_cache, on_line=st.line,
                               switched=switched)
                st.result(r.status)
        out.append(r)
        if on_result:
            on_result(r)
    return out
