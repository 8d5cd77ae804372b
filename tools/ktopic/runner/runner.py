"""The runner: build, boot and test branches one after another (the stages
of `ktopic ci`, `build` and `boot`: generate, build, boot, test), each
result cached by content, branches of one tree and configuration built
once, the base booted for reference; docs/ci.md, "Stages" and "Caches".

Takes Targets and Options; gives a BranchResult per target, and writes
out/report.json, out/<branch-dir>/ (console.log, build.log, config,
junit.xml) and out/index.html.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import re
import shutil
import time
from pathlib import Path

from ktopic import stampcache
from ktopic.errors import Failure
from ktopic.fileio import write_atomic
from ktopic.gates import check
from ktopic.kernel import boot as bootmod
from ktopic.kernel import build as buildmod
from ktopic.kernel import console_scan, initramfs, kconfig, ktap, seeds
from ktopic.kernel.steplog import StepLog, ccache_counter
from ktopic.model import results as R
from ktopic.model import sanitizerplan, variants
from ktopic.model.results import CACHED, FAIL, PASS, SKIP
from ktopic.model.targets import BASE, INTEGRATION, Target, select, targets_from_manifest
from ktopic.plumbing.gitutil import Git
from ktopic.report import report as rep
from ktopic.runner.cachekeys import compute_keys
from ktopic.runner import expect as expect_mod
from ktopic.runner import attribute
from ktopic.runner import followup
from ktopic.runner import mutate as mut
from ktopic.runner import pairs
from ktopic.runner import tiers
from ktopic.runner.options import Options

CI_STAGES = ("generate", "check", "build", "boot", "test", "expect")
# Findings that make the boot stage fail (the rest belong to the test stage).
TEST_KINDS = {"missing_suite", "failed_case", "unreported_case"}
# A branch's files in out/<branch-dir>/ (and in its cached result), besides
# one expect-<name>.log per expectation boot.
OUTPUTS = ("console.log", "build.log", "config")
# How an expectation boot ends when the guest, not the kernel under test,
# stopped it: booted once more before it counts.
STALL_KINDS = {"silence", "timeout", "qemu"}


class Runner:
    """Runs targets one after another in a locked work directory."""

    def __init__(self, wd, m, out_dir: Path, opts: Options, live=None,
                 steps: StepLog | None = None):
        self.wd = wd
        self.m = m
        self.root = Path(wd.root)
        self.git_dir = Path(wd.git_dir)
        self.qemu_dir = Path(m.root) / "qemu"
        self.out_dir = out_dir
        self.opts = opts
        self.live = live
        self.steps = steps or StepLog()          # timing only, unless the caller's says more
        self.builds: dict[str, tuple[str, buildmod.BuildResult]] = {}   # build key -> (branch, result)
        self.results: dict[str, R.BranchResult] = {}                    # result key -> result
        # Per build variant ("" plain, "kcsan", ...): the base's finding signatures.
        self.base_sigs: dict[str, set[str]] = {}
        self.gate_failed: set[str] = set()   # topics whose build gates failed (not booted)
        self.plain_results: dict[str, R.BranchResult] = {}   # topic -> its plain result
        self.host = bootmod.Host(self.root, opts.accel)
        self.allow = console_scan.load_allowlist(self.qemu_dir / "allowlist.yaml")

    # --- helpers
    def note(self, t: Target, stage: str, status: str, summary: str = "") -> None:
        if self.live is not None:
            self.live.update(t.branch, stage, status, summary)

    def say(self, text: str) -> None:
        """A line of the run's log (nothing without a live table)."""
        if self.live is not None:
            self.live.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def out(self, t: Target) -> Path:
        d = self.out_dir / rep.branch_dir(t.branch)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def smp(self, t: Target) -> int:
        """Guest CPUs: --smp when given, else the target's (the manifest's smp:)."""
        return self.opts.smp or t.smp

    @staticmethod
    def build_name(t: Target) -> str:
        """The O= directory: the git branch's, plus the sanitizer variant."""
        return buildmod.build_dir_name(t.git_branch or t.branch, t.variant)

    def seed(self, t: Target) -> Path | None:
        """What a new build directory of t starts from: its nearest built
        relative (kernel/seeds.py)."""
        return seeds.seed_for(self.m, self.wd, t.topic, t.variant)

    def rel(self, p: Path) -> str:
        return str(p.relative_to(self.out_dir))

    def resolve(self, t: Target) -> bool:
        g = Git(self.git_dir)
        commit = g.rev_parse(t.ref)
        if not commit:
            return False
        t.commit = commit
        t.tree = g.tree_of(commit)
        base = g.rev_parse(self.m.base.ref) if hasattr(self.m, "base") else None
        t.base_commit = base or ""
        compute_keys(t, self.qemu_dir, self.opts)
        return True

    # --- the stages
    def gated(self, t: Target) -> bool:
        """The topic gates run just before this target's build (and block
        it): a topic's plain target in a run with opts.gates."""
        return bool(self.opts.gates) and not t.variant and \
            t.topic not in (BASE, INTEGRATION)

    def run(self, t: Target) -> R.BranchResult:
        br = self._run_checked(t)
        if not t.variant:
            self.plain_results[t.topic] = br
        return br

    def _run_checked(self, t: Target) -> R.BranchResult:
        if t.topic in self.gate_failed:
            return self._blocked(t, None, "the topic's gates failed")
        if self.gated(t):
            return self._run_gated(t)
        br = self._run(t)
        if not self.opts.check or t.topic == BASE or br.stage("generate").status != PASS:
            return br
        # The gates have their own cache (by patch content), so they run on
        # every pass, after generate, whether or not the rest was cached.
        with self.steps.step(t.branch, "check", "check (checkpatch, hygiene)"):
            st, details = check.check_branch(self.m, self.wd, t.topic, self.out_dir)
        self.note(t, "check", st.status, st.summary)
        br = copy.deepcopy(br)
        br.stages.insert(1, st)
        if st.status == FAIL:
            br.findings += details["findings"]
        return br

    def _run_gated(self, t: Target) -> R.BranchResult:
        """The topic's gates, then (when they pass) its build, boot and
        tests: the walk leaves its build directory at the head, so the
        build that follows compiles nothing.  Timed by the gates' own steps
        (checkpatch, bisect builds, warnings)."""
        self.note(t, "check", "running", "gates")
        st, details = check.check_branch(self.m, self.wd, t.topic, self.out_dir,
                                         gates=self.opts.gates, jobs=self.opts.jobs,
                                         steps=self.steps)
        self.note(t, "check", st.status, st.summary)
        if st.status == FAIL:
            self.gate_failed.add(t.topic)
            return self._blocked(t, st, "a gate failed", details["findings"])
        br = copy.deepcopy(self._run(t))
        br.stages.insert(1, st)
        return br

    def _blocked(self, t: Target, check_st: R.StageResult | None, why: str,
                 findings: list[R.Finding] = ()) -> R.BranchResult:
        """A target not built nor booted because its topic's gates failed
        (recorded, never cached)."""
        br = R.BranchResult(branch=t.branch, topic=t.topic, variant=t.variant)
        if self.resolve(t):
            br.head, br.tree = t.commit, t.tree
            br.stages.append(R.StageResult("generate", PASS, 0.0, f"head {t.commit[:12]}"))
        else:
            br.stages.append(R.StageResult("generate", FAIL, 0.0, f"no branch {t.branch}"))
        if check_st is not None:
            br.stages.append(check_st)
        br.findings += list(findings)
        for s in ("build", "boot", "test") + (("expect",) if t.expect else ()):
            br.stages.append(R.StageResult(s, SKIP, 0.0, why))
            self.note(t, s, SKIP, why)
        return br

    def attribute(self, t: Target, br: R.BranchResult) -> None:
        """A failing branch's first bad commit, into br.attribution: for an
        integration branch whose topics pass alone, the pair of topics
        that fails and the commit in the later one (runner/pairs.py)."""
        if not self.opts.attribute or not attribute.wanted(t, br):
            return
        with self.steps.step(t.branch, "attribute", "first bad commit"):
            found = None
            if pairs.wanted(self, t, self.plain_results):
                found = pairs.find(self, t, br, self.opts.attribute)
            br.attribution = found or attribute.first_bad(self, t, br, self.opts.attribute)
        self.note(t, "attribute", FAIL, rep.attribution_text(t.branch, br.attribution))

    def follow_up(self, t: Target, br: R.BranchResult, done) -> None:
        """The integration branch under a sanitizer reported: build the
        topics (or the base) the report is in under it, each handed to
        done(target, result) (runner/followup.py)."""
        followup.follow(self, t, br, done)

    def mutant_runner(self) -> "Runner":
        """A runner whose outputs go to <out>/mutants/ (what `ktopic mutate`
        writes), sharing this one's steps and base findings."""
        r = Runner(self.wd, self.m, self.out_dir / "mutants",
                   dataclasses.replace(self.opts, check=False), None, self.steps)
        r.base_sigs = self.base_sigs
        return r

    def _run(self, t: Target) -> R.BranchResult:
        br = R.BranchResult(branch=t.branch, topic=t.topic, variant=t.variant)
        t0 = time.monotonic()
        if not self.resolve(t):
            br.stages.append(R.StageResult("generate", FAIL, 0.0,
                                           f"no branch {t.branch} in the work repository: "
                                           "run ktopic generate"))
            self.note(t, "generate", FAIL, "branch missing")
            return br
        br.head, br.tree = t.commit, t.tree
        br.config_hash = kconfig.fragment_hash(t.fragments)
        br.stages.append(R.StageResult("generate", PASS, 0.0, f"head {t.commit[:12]}"))
        self.note(t, "generate", PASS)
        if not self.opts.build:
            # --gates-only: the kernel stages are recorded as not run, and
            # nothing is cached (a later full run must build).
            for s in ("build", "boot", "test") + (("expect",) if t.expect else ()):
                br.stages.append(R.StageResult(s, SKIP, 0.0, "gates only"))
                self.note(t, s, SKIP, "gates only")
            return br

        return self._build_and_boot(t, br, t0)

    def run_commit(self, t: Target, commit: str, label: str) -> R.BranchResult:
        """t at another of its commits, under the name label: built in t's
        build directory, booted with t's tests, cached like any result
        (runner/attribute.py probes with it)."""
        pt = dataclasses.replace(t, branch=label, git_branch=t.git_branch or t.branch,
                                 commit=commit, tree=Git(self.git_dir).tree_of(commit))
        compute_keys(pt, self.qemu_dir, self.opts)
        br = R.BranchResult(branch=label, topic=t.topic, variant=t.variant, head=commit,
                            tree=pt.tree, config_hash=kconfig.fragment_hash(t.fragments))
        br.stages.append(R.StageResult("generate", PASS, 0.0, f"commit {commit[:12]}"))
        return self._build_and_boot(pt, br, time.monotonic())

    def _build_and_boot(self, t: Target, br: R.BranchResult, t0: float) -> R.BranchResult:
        # Same tree, config and qemu inputs as a branch already done in this run.
        if t.key in self.results:
            return self._same_as(t, br, self.results[t.key])
        use = self.opts.use_cache or (t.topic == BASE and self.opts.base_cache)
        cached = self._cache_load(t) if use else None
        if cached is not None:
            self.results[t.key] = cached
            return cached

        res = self._build(t, br)
        if res is not None and res.ok:
            with self.steps.step(t.branch, "boot+tests", "boot and tests"):
                self.boot_and_test(t, br, res)
            if t.expect:
                with self.steps.step(t.branch, "expect", f"{len(t.expect)} expectation boot(s)"):
                    self.expectations(t, br, res)
        else:
            for s in ("boot", "test") + (("expect",) if t.expect else ()):
                br.stages.append(R.StageResult(s, SKIP, 0.0, "not built"))
                self.note(t, s, SKIP)
        self.results[t.key] = br
        self.mark_in_base(t, br)
        if self._cacheable(br):
            self._cache_store(t, br)
        br.repro.setdefault("seconds", f"{time.monotonic() - t0:.1f}")
        return br

    def _same_as(self, t: Target, br: R.BranchResult, other: R.BranchResult) -> R.BranchResult:
        dup = copy.deepcopy(other)
        dup.branch, dup.topic, dup.head = t.branch, t.topic, t.commit
        dup.same_as = other.same_as or other.branch
        dup.stages = [br.stage("generate")] + [s for s in dup.stages if s.stage != "generate"]
        for s in dup.stages[1:]:
            s.summary = f"same as {dup.same_as}" + (f": {s.summary}" if s.summary else "")
            self.note(t, s.stage, s.status, f"same as {dup.same_as}")
        self._copy_outputs(other.branch, t)
        return dup

    def _copy_outputs(self, from_branch: str, t: Target) -> None:
        src = self.out_dir / rep.branch_dir(from_branch)
        dst = self.out(t)
        for name in OUTPUTS + tuple(f"expect-{e.name}.log" for e in t.expect):
            if (src / name).is_file() and src != dst:
                shutil.copyfile(src / name, dst / name)

    def build_only(self, t: Target) -> tuple[R.BranchResult, buildmod.BuildResult | None]:
        """Build t's kernel and test modules, boot nothing (`ktopic build`):
        its result (generate and build stages, findings) and the build, None
        when there was no branch or the build could not start.  A target
        with the tree and config of one built before in this run shares
        that build (its stage says so)."""
        br = R.BranchResult(branch=t.branch, topic=t.topic, variant=t.variant)
        if not self.resolve(t):
            br.stages.append(R.StageResult("generate", FAIL, 0.0,
                                           f"no branch {t.branch} in {self.git_dir} "
                                           "(run ktopic generate)"))
            return br, None
        br.head, br.tree = t.commit, t.tree
        br.stages.append(R.StageResult("generate", PASS, 0.0, f"head {t.commit[:12]}"))
        return br, self._build(t, br)

    def _build(self, t: Target, br: R.BranchResult) -> buildmod.BuildResult | None:
        if t.build_key in self.builds:
            first, res = self.builds[t.build_key]
            summary = f"same tree and config as {first}"
            t0 = time.monotonic()
            # The kernel is shared; this branch's own test modules are not.
            res = dataclasses.replace(res, test_modules=[])
            if res.ok and t.modules:
                with self.steps.step(t.branch, "build", "build of the test modules",
                                     kbuild=True):
                    res.test_modules, err, details = buildmod.build_modules(
                        self.root, res, [self.qemu_dir / "modules" / m for m in t.modules],
                        self.opts.jobs)
                if err:
                    res.ok, res.error, res.details = False, err, details
                    summary = err
                    br.findings.append(R.Finding("build", err, 0, details))
            elif not res.ok:
                summary = f"{summary}: {res.error}"
                br.findings.append(R.Finding("build", res.error, 0, res.details))
            st = R.StageResult("build", PASS if res.ok else FAIL, time.monotonic() - t0,
                               summary, self.rel(self.out(t) / "build.log"))
            self.keep_build_outputs(t, res)
            br.stages.append(st)
            self.note(t, "build", st.status, st.summary)
            return res
        self.note(t, "build", "running")
        last = [0.0]
        # A terminal's live table shows the step count as it goes; a log gets
        # the StepLog's line every 30 s instead of one a second.
        live_counts = self.live is not None and getattr(self.live, "interactive", True)

        def on_line(count: int, what: str) -> None:
            step.line(count, what)
            now = time.monotonic()
            if live_counts and now - last[0] > 1.0:
                last[0] = now
                self.note(t, "build", "running", f"{count} steps, {what}")
        name = self.build_name(t)
        req = buildmod.BuildRequest(
            name=name, commit=t.commit, base=t.base_commit or None, fragments=t.fragments,
            modules=[self.qemu_dir / "modules" / m for m in t.modules],
            jobs=self.opts.jobs, progress=self.opts.progress and self.live is None,
            seed=self.seed(t), on_line=on_line)
        try:
            with self.steps.step(t.branch, "build", kbuild=True) as step:
                res = buildmod.build(self.root, self.git_dir, req)
                step.result("ok" if res.ok else f"FAILED: {res.error}")
        except Failure as e:
            br.stages.append(R.StageResult("build", FAIL, 0.0, str(e).splitlines()[0]))
            br.findings.append(R.Finding("build", str(e).splitlines()[0], 0, str(e).splitlines()))
            self.note(t, "build", FAIL, str(e).splitlines()[0])
            return None
        self.builds[t.build_key] = (t.branch, res)
        self.keep_build_outputs(t, res)
        if res.ok:
            summary = f"{res.seconds:.0f}s, {len(res.kernel_modules)} kernel module(s), " \
                      f"{len(res.test_modules)} test module(s)"
        else:
            summary = res.error
            br.findings.append(R.Finding("build", res.error, 0, res.details))
        br.stages.append(R.StageResult("build", PASS if res.ok else FAIL, res.seconds, summary,
                                       self.rel(self.out(t) / "build.log")))
        self.note(t, "build", PASS if res.ok else FAIL, summary)
        return res

    def keep_build_outputs(self, t: Target, res: buildmod.BuildResult) -> None:
        d = self.out(t)
        if res.log and res.log.is_file():
            shutil.copyfile(res.log, d / "build.log")
        if res.config and res.config.config.is_file():
            shutil.copyfile(res.config.config, d / "config")

    def _repro(self, t: Target, res: buildmod.BuildResult) -> dict[str, str]:
        """What a boot of t needs to be made again: its build's config and
        directory and the toolchain."""
        return {"config": self.rel(self.out(t) / "config"), "build_dir": str(res.out),
                "toolchain": "; ".join(f"{v}" for v in res.toolchain.values())}

    def boot_and_test(self, t: Target, br: R.BranchResult, res: buildmod.BuildResult,
                       stop_at: re.Pattern[bytes] | None = None,
                       cmdline: str = "") -> bootmod.BootResult | None:
        """Boot t's kernel with its tests and parse their KTAP; the boot's
        result, None when there was nothing to boot.  stop_at: a console line
        that decides the run (a mutant's Caught-by failure); the boot ends
        there, and what had not run by then is no finding.  cmdline: kernel
        arguments after t's own (a switched mutant's ktopic_mutant=N)."""
        br.repro.update(self._repro(t, res))
        if res.config:
            br.repro["config_sha"] = res.config.config_hash
        d = self.out(t)
        # initramfs
        try:
            ir = initramfs.build_initramfs(initramfs.InitramfsRequest(
                init_src=self.qemu_dir / "init" / "init.c", cache=self.wd.cache,
                programs=[self.qemu_dir / "tests" / f"{p}.c" for p in t.programs],
                test_modules=res.test_modules, kernel_modules=res.kernel_modules))
        except Failure as e:
            msg = str(e).splitlines()[0]
            br.stages.append(R.StageResult("boot", FAIL, 0.0, msg))
            br.stages.append(R.StageResult("test", SKIP, 0.0, "not booted"))
            br.findings.append(R.Finding("build", msg, 0, str(e).splitlines()))
            self.note(t, "boot", FAIL, msg)
            return None
        br.repro["initramfs"] = f"sha256:{ir.sha256} ({ir.path})"
        accel = self.host.accel()[0]
        self.note(t, "boot", "running")
        b, text, findings = self.guest(t, res.bzimage, ir.path, d / "console.log",
                                       _args(t.cmdline, cmdline), br.repro, stop_at)
        br.findings.extend(findings)
        boot_bad = [f for f in findings]
        summary = f"{b.seconds:.1f}s {accel}" if not boot_bad else \
            f"{boot_bad[0].kind}: {boot_bad[0].message}"[:120]
        if b.status == "stopped":
            summary = f"{summary}; {b.message}"[:200]
        br.stages.append(R.StageResult("boot", FAIL if boot_bad else PASS, b.seconds, summary,
                                       self.rel(d / "console.log")))
        self.note(t, "boot", FAIL if boot_bad else PASS, summary)
        # KTAP
        t1 = time.monotonic()
        try:
            pdir = ktap.parser_dir(self.git_dir, t.commit, self.wd.cache)
        except Failure:
            pdir = ktap.parser_dir(self.git_dir, t.base_commit, self.wd.cache)
        parser = ktap.load_parser(pdir)
        kr = ktap.parse_console(text, parser)
        br.suites = kr.suites
        tf = ktap.check(kr, text, t.kunit, t.programs, cut_short=b.status == "stopped")
        br.findings.extend(tf)
        ncases = sum(len(s.cases) for s in kr.suites)
        nbad = sum(1 for s in kr.suites for c in s.cases if c.status in (FAIL, R.CRASH))
        summary = f"{len(kr.suites)} suite(s), {ncases} case(s), {nbad} failed"
        if tf:
            summary = f"{tf[0].message}" + (f" (+{len(tf) - 1} more)" if len(tf) > 1 else "")
        br.stages.append(R.StageResult("test", FAIL if tf else PASS, time.monotonic() - t1,
                                       summary, self.rel(d / "console.log")))
        self.note(t, "test", FAIL if tf else PASS, summary)
        return b

    def guest(self, t: Target, kernel: Path, initrd: Path, console: Path, cmdline: str,
              repro: dict | None = None, stop_at: re.Pattern[bytes] | None = None):
        """Boot one guest of target t and scan its console: (BootResult, text, findings)."""
        accel, why = self.host.accel()
        scale = self.host.factor() * variants.slowdown(self.qemu_dir, t.variant)
        smp = self.smp(t)
        req = bootmod.BootRequest(kernel=kernel, initrd=initrd, console=console,
                                  cmdline=cmdline, smp=smp, memory=self.opts.memory,
                                  accel=accel, timeout=self.opts.timeout * scale,
                                  silence=self.opts.silence * scale, stop_at=stop_at)
        b = bootmod.boot(req)
        if repro is not None:
            repro["qemu"] = b.command
            repro["accel"] = why
            repro["timeouts"] = f"overall {req.timeout:.0f}s, silence {req.silence:.0f}s " \
                                f"(machine speed factor {self.host.factor():.2f})"
        text = console_scan.read(b.console)
        lines = console_scan.clean_lines(text)
        findings = console_scan.scan_text(text, self.allow, expect_cpus=smp)
        if b.status in ("silence", "timeout"):
            findings.append(R.Finding(b.status, b.message, len(lines), lines[-15:]))
        elif b.status == "exited" and not any(f.kind in ("panic", "oops") for f in findings):
            findings.append(R.Finding("incomplete", b.message, len(lines), lines[-15:]))
        elif b.status == "error":
            findings.append(R.Finding("qemu", b.message, 0, b.qemu_stderr))
        return b, text, findings

    def _expect_boot(self, t: Target, e, bzimage, initrd, console, args: str):
        """Boot for expectation e and judge it.  A boot that stalled or timed
        out without the report says nothing about the kernel (a guest stuck
        in SMP bring-up on a loaded host does that): it is booted once more,
        and the second boot decides."""
        findings = self.guest(t, bzimage, initrd, console, args)[2]
        v = expect_mod.judge(e, findings)
        if not v.seen and any(f.kind in STALL_KINDS for f in findings):
            self.note(t, "expect", "running", f"{e.name} again (the boot stalled)")
            findings = self.guest(t, bzimage, initrd, console, args)[2]
            v = expect_mod.judge(e, findings)
        return v, findings

    def expectations(self, t: Target, br: R.BranchResult, res: buildmod.BuildResult,
                     cmdline: str = "") -> None:
        """One boot per `expect:` entry: its module alone, with its parameters
        and no KUnit suite (NO_KUNIT); the expected report must appear
        (runner/expect.py).  Console: out/<branch>/expect-<name>.log.
        cmdline: kernel arguments after t's own, as boot_and_test takes them."""
        if not t.expect:
            return
        t0 = time.monotonic()
        d = self.out(t)
        bad: list[str] = []
        seen = 0
        for e in t.expect:
            self.note(t, "expect", "running", e.name)
            console = d / f"expect-{e.name}.log"
            mods, err, details = buildmod.build_modules(
                self.root, res, [self.qemu_dir / "modules" / e.module], self.opts.jobs)
            if err:
                br.findings.append(R.Finding("expect", f"{e.name}: {err}", 0, details))
                bad.append(e.name)
                continue
            try:
                ir = initramfs.build_initramfs(initramfs.InitramfsRequest(
                    init_src=self.qemu_dir / "init" / "init.c", cache=self.wd.cache,
                    test_modules=mods, kernel_modules=res.kernel_modules,
                    module_args={m.name: e.args for m in mods} if e.args else {}))
            except Failure as ex:
                br.findings.append(R.Finding("expect", f"{e.name}: {str(ex).splitlines()[0]}",
                                             0, str(ex).splitlines()))
                bad.append(e.name)
                continue
            v, findings = self._expect_boot(t, e, res.bzimage, ir.path, console,
                                            _args(t.cmdline, cmdline, NO_KUNIT))
            log = self.rel(console)
            for f in v.other:
                f.message = f"{e.name}: {f.message} ({log})"
            br.findings.extend(v.other)
            if not v.seen:
                br.findings.append(R.Finding("expect", v.message + f" ({log})", 0,
                                             [ln for f in findings for ln in f.lines[:5]]))
            seen += v.seen
            if not v.seen:
                bad.append(e.name)
            elif v.other:
                bad.append(f"{e.name} (other reports too)")
        summary = f"{seen}/{len(t.expect)} expected report(s) seen" + \
            (f"; failed: {', '.join(bad)}" if bad else "")
        br.stages.append(R.StageResult("expect", FAIL if bad else PASS,
                                       time.monotonic() - t0, summary))
        self.note(t, "expect", FAIL if bad else PASS, summary)

    # --- base comparison
    def set_base(self, br: R.BranchResult, variant: str = "") -> None:
        self.base_sigs[variant] = {console_scan.signature(f) for f in br.findings}
        for f in br.findings:
            f.in_base = True

    def mark_in_base(self, t: Target, br: R.BranchResult) -> None:
        if t.topic == BASE:
            self.set_base(br, t.variant)
            return
        sigs = self.base_sigs.get(t.variant)
        if not sigs:
            return
        for f in br.findings:
            if f.kind not in TEST_KINDS and console_scan.signature(f) in sigs:
                f.in_base = True
        self._restatus(br)

    @staticmethod
    def _restatus(br: R.BranchResult) -> None:
        """A boot that failed only on findings the base shows too passes."""
        st = br.stage("boot")
        if st and st.status == FAIL and all(f.in_base for f in br.findings
                                            if f.kind not in TEST_KINDS and f.kind != "build"):
            st.status = PASS
            st.summary += " (the base shows the same)"

    # --- result cache
    def _cache_path(self, t: Target) -> Path:
        return self.wd.results / f"{t.tree[:16]}-{t.key}"

    @staticmethod
    def _cacheable(br: R.BranchResult) -> bool:
        """Results that the same inputs would give again: not time-outs (load)."""
        return not any(f.kind in ("timeout", "silence", "qemu") for f in br.findings) and \
            br.stage("build") is not None

    def _cache_store(self, t: Target, br: R.BranchResult) -> None:
        p = self._cache_path(t)
        p.mkdir(parents=True, exist_ok=True)
        d = self.out(t)
        for name in OUTPUTS + tuple(f"expect-{e.name}.log" for e in t.expect):
            if (d / name).is_file():
                shutil.copyfile(d / name, p / name)
        stampcache.write(p / "result.json", dataclasses.asdict(br))

    def _cache_load(self, t: Target) -> R.BranchResult | None:
        p = self._cache_path(t)
        try:
            br = R.branch_from_dict(stampcache.read(p / "result.json"))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        d = self.out(t)
        for name in OUTPUTS + tuple(f"expect-{e.name}.log" for e in t.expect):
            if (p / name).is_file():
                shutil.copyfile(p / name, d / name)
        br.branch, br.topic, br.head = t.branch, t.topic, t.commit
        # The result is the tree's; the head may be another commit with that tree.
        br.stages = [R.StageResult("generate", PASS, 0.0, f"head {t.commit[:12]}")] + \
            [s for s in br.stages if s.stage != "generate"]
        for s in br.stages:
            if s.stage != "generate" and s.status == PASS:
                s.status = CACHED
            self.note(t, s.stage, s.status, "cached" if s.status == CACHED else s.summary)
        if t.topic == BASE:
            self.base_sigs[t.variant] = {console_scan.signature(f) for f in br.findings}
        else:
            for f in br.findings:
                f.in_base = False
            self.mark_in_base(t, br)
        return br


# An expectation boot is for its module's report alone: the built-in KUnit
# suites, which the branch's own boot runs, would take most of its time
# (12 of locking's 16 s) and could spend lockdep's one report first.
NO_KUNIT = "kunit.enable=0"


def _args(*parts: str) -> str:
    """Kernel arguments, the empty ones left out."""
    return " ".join(p for p in parts if p)


def main_order(targets: list[Target], costs: dict[str, int] | None = None) -> list[Target]:
    """The order the targets run in, so that each tree is worked on once,
    back to back: the base under every variant; then per topic its plain
    target and its variants; then the integration branch and its variants.
    Topics come after their dependencies; among the topics whose
    dependencies are done, the one with the lowest switch cost first
    (costs: seeds.switch_costs(), else the given order): a topic that
    rewrites a header most objects include makes every later build
    directory recompile them, so it goes as late as it can.  A topic's
    gates come just before its plain build and its mutants just after it,
    all on the worktree state of its head (run_targets)."""
    costs = costs or {}
    rest = [t for t in targets if t.topic not in (BASE, INTEGRATION)]
    names = list(dict.fromkeys(t.topic for t in rest))
    deps = {n: [d for d in next(t for t in rest if t.topic == n).spec.depends if d in names]
            for n in names}
    order: list[str] = []
    while len(order) < len(names):
        ready = [n for n in names if n not in order and all(d in order for d in deps[n])]
        order.append(min(ready, key=lambda n: costs.get(n, 0)))
    return [t for t in targets if t.topic == BASE] + \
        [t for n in order for t in rest if t.topic == n] + \
        [t for t in targets if t.topic == INTEGRATION]


def run_targets(m, wd, opts: Options, names: list[str], out_dir: Path, write_report: bool,
                use_live: bool) -> R.Report:
    """Run the named targets (all when empty) under the work directory's
    lock, in main_order(); the report lists them in the manifest's order.
    With opts.mutate each topic's mutants (qemu/mutants/<topic>/) run
    right after its plain result, as `ktopic mutate` runs them."""
    every = targets_from_manifest(m, Path(m.root) / "qemu", opts.variant,
                                  sanitizers=opts.sanitizers)
    # The integration branch under a sanitizer covers the topics' builds under it.
    plan = sanitizerplan.plan(select(every, names), every)
    targets = plan.targets
    # Parse every mutant first: a malformed one stops the run before any build.
    mutants = {t.topic: mut.load_mutants(Path(m.root) / "qemu" / "mutants", t.topic)
               for t in targets if opts.mutate and t.topic not in (BASE, INTEGRATION)}
    report = R.Report(base_version=m.base.version)
    with wd.lock():
        if not Path(wd.git_dir).is_dir():
            raise Failure(f"no work repository at {wd.git_dir}: run ktopic import-base "
                          "and ktopic generate first")
        live = rep.LiveTable([t.branch for t in targets], stages=CI_STAGES) if use_live else None
        ctx = live if live is not None else contextlib.nullcontext()
        with ctx, _steps(live, Path(wd.root)) as steps:
            runner = Runner(wd, m, out_dir, opts, live, steps)
            for line in plan.lines():
                runner.say(line)
            topics = list(dict.fromkeys(t.topic for t in targets
                                        if t.topic not in (BASE, INTEGRATION)))

            def costs() -> dict[str, int]:     # once the base is built
                return seeds.switch_costs(m, wd, topics) if len(topics) > 1 else {}
            if opts.tiers:
                tiers.run(runner, targets, lambda ts: main_order(ts, costs()), mutants,
                          report, out_dir if write_report else None, live,
                          opts.first_verdict)
            else:
                _run_in_order(runner, targets, mutants, costs, report, live)
            return _finish(report, steps, out_dir, write_report)


def _run_in_order(runner: Runner, targets: list[Target], mutants: dict, costs,
                  report: R.Report, live) -> None:
    """Each tree once, back to back (main_order), a topic's mutants right
    after its plain result."""
    mrunner = None
    done: dict[int, R.BranchResult] = {}
    followed: list[Target] = []

    def follow_done(ft: Target, fbr: R.BranchResult) -> None:
        followed.append(ft)
        done[id(ft)] = fbr
    for t in [t for t in targets if t.topic == BASE]:
        done[id(t)] = runner.run(t)
    for t in main_order([t for t in targets if t.topic != BASE], costs()):
        done[id(t)] = br = runner.run(t)
        runner.follow_up(t, br, follow_done)
        runner.attribute(t, br)
        if mutants.get(t.topic) and not t.variant and t.topic not in runner.gate_failed:
            mrunner = mrunner or runner.mutant_runner()
            got = mut.run_mutants(mrunner, t, br, mutants[t.topic],
                                  use_cache=runner.opts.use_cache)
            report.mutants += got
            if live is not None:
                live.update(t.branch, "mutants", *mut.verdict(got))
    report.branches = [done[id(t)] for t in targets + followed]


def _finish(report: R.Report, steps: StepLog, out_dir: Path, write_report: bool) -> R.Report:
    report.timing = steps.totals()
    if write_report:
        rep.write_all(report, out_dir)
        # Each step's time and compile count (a benchmark's floor: bench_mainjob.py).
        write_atomic(out_dir / "steps.json", json.dumps(steps.steps_done(), indent=1) + "\n")
    return report


def _steps(live, root: Path) -> StepLog:
    """The run's StepLog: in a log (the live table prints lines, not a
    table) a running build or boot says so every 30 s, through the table's
    console; the table prints its start and end.  On a terminal, timing only."""
    cc = ccache_counter(root / "ccache")
    if live is None or live.interactive:
        return StepLog(ccache=cc)

    def say(text: str) -> None:
        live.console.print(text, markup=False, highlight=False, soft_wrap=True)
    return StepLog(say=say, edges=False, ccache=cc)
