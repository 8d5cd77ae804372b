"""The main job in two tiers (docs/ci.md, "The main job").

Tier 1, the verdict: every plain target (the base, each topic with its
checkpatch and hygiene gates, the integration branch) built, booted and
tested; the report is written with what tier 2 will add marked pending.
Tier 2, the depth: per topic its gates (--bisect, --warnings, ...) and
its mutants, then the sanitizer variants, each followed by the builds
that attribute its report when it makes one (runner/followup.py); the
report is written again after each of them.

Takes a Runner, the targets and mutants of a run; fills the Report.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ktopic.gates import check
from ktopic.model import results as R
from ktopic.model.results import FAIL, PENDING
from ktopic.model.targets import BASE, INTEGRATION, Target
from ktopic.report import report as rep
from ktopic.runner import mutate as mut

LATER = "tier 2"
FIRST_VERDICT = "first verdict"   # the mark in steps.json where tier 1 ends


def pending_branch(t: Target) -> R.BranchResult:
    """A variant's row before tier 2 has run it."""
    return R.BranchResult(branch=t.branch, topic=t.topic, variant=t.variant,
                          stages=[R.StageResult(s, PENDING, 0.0, LATER)
                                  for s in ("build", "boot", "test")])


def pending_mutants(mutants: list[mut.Mutant]) -> list[R.MutantResult]:
    return [R.MutantResult(topic=m.topic, name=m.name, breaks=m.breaks,
                           caught_by=m.caught_by, status=PENDING, summary=LATER)
            for m in mutants]


def first_verdict(report: R.Report) -> str:
    plain = [b for b in report.branches if not b.variant]
    good = sum(b.verdict_ok for b in plain)
    return f"{FIRST_VERDICT}: {good}/{len(plain)} branches pass"


class Tiers:
    """One tiered run: `order` is the plain targets in the order they run
    (base first), `variants` likewise; `publish` writes the report."""

    def __init__(self, runner, report: R.Report, out_dir: Path | None, live=None):
        self.runner, self.report, self.out_dir, self.live = runner, report, out_dir, live
        self.done: dict[int, R.BranchResult] = {}

    def say(self, text: str) -> None:
        if self.live is not None:
            self.live.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def publish(self, targets: list[Target]) -> None:
        self.report.branches = [self.done.get(id(t)) or pending_branch(t) for t in targets]
        if self.out_dir is not None:
            rep.write_all(self.report, self.out_dir)

    def tier1(self, plain: list[Target], ordered, targets: list[Target],
              gates: tuple[str, ...]) -> list[Target]:
        """Every plain target, the base first; a topic's check stage is
        pending while its gates (names) are still to run.  Gives the order
        the targets ran in."""
        r = self.runner
        opts = r.opts
        r.opts = dataclasses.replace(opts, gates=())
        order = [t for t in plain if t.topic == BASE]
        try:
            for t in order:
                self.done[id(t)] = r.run(t)
            order += ordered([t for t in plain if t.topic != BASE])
            for t in order[len(self.done):]:
                br = self.done[id(t)] = r.run(t)
                st = br.stage("check")
                if gates and st is not None and st.status != FAIL and \
                        t.topic not in (BASE, INTEGRATION):
                    st.status = PENDING
                    st.summary = f"{st.summary}; {' and '.join(gates)}: {LATER}".lstrip("; ")
        finally:
            r.opts = opts
        self.publish(targets)
        self.runner.steps.mark(FIRST_VERDICT)
        where = f" (report: {self.out_dir / rep.HTML_NAME})" if self.out_dir else ""
        self.say(first_verdict(self.report) + where)
        for line in rep.failure_lines(self.report):
            self.say(line)
        return order

    def gates(self, t: Target) -> None:
        """A topic's gates; their check stage replaces tier 1's."""
        r = self.runner
        r.note(t, "check", "running", "gates")
        st, details = check.check_branch(r.m, r.wd, t.topic, r.out_dir,
                                         gates=r.opts.gates, jobs=r.opts.jobs, steps=r.steps)
        r.note(t, "check", st.status, st.summary)
        br = self.done[id(t)]
        br.stages = [st if s.stage == "check" else s for s in br.stages]
        if st.status == FAIL:
            r.gate_failed.add(t.topic)
            seen = {(f.kind, f.message) for f in br.findings}
            br.findings += [f for f in details["findings"] if (f.kind, f.message) not in seen]

    def mutants(self, t: Target, mutants: list[mut.Mutant], mrunner) -> None:
        got = mut.run_mutants(mrunner, t, self.done[id(t)], mutants,
                              use_cache=self.runner.opts.use_cache)
        names = {m.name for m in mutants}
        self.report.mutants = [x for x in self.report.mutants
                               if not (x.topic == t.topic and not x.on and
                                       x.name in names)] + got
        if self.live is not None:
            self.live.update(t.branch, "mutants", *mut.verdict(got))

    def tier2(self, order: list[Target], variants: list[Target], targets: list[Target],
              mutants: dict[str, list[mut.Mutant]]) -> None:
        r = self.runner
        self.say("tier 2: topic gates, mutants, sanitizer variants")
        mrunner = None
        for t in order:
            if t.topic == INTEGRATION:
                r.attribute(t, self.done[id(t)])
            if t.topic in (BASE, INTEGRATION):
                continue
            if r.opts.gates:
                self.gates(t)
            r.attribute(t, self.done[id(t)])
            if t.topic in r.gate_failed:    # as without tiers: no mutants for it
                self.report.mutants = [x for x in self.report.mutants if x.topic != t.topic]
            elif mutants.get(t.topic):
                mrunner = mrunner or r.mutant_runner()
                self.mutants(t, mutants[t.topic], mrunner)
            self.publish(targets)
        for t in variants:
            self.done[id(t)] = br = r.run(t)
            self.publish(targets)
            r.follow_up(t, br, lambda ft, fbr: self.followed(targets, ft, fbr))
            r.attribute(t, br)
            self.publish(targets)

    def followed(self, targets: list[Target], ft: Target, fbr: R.BranchResult) -> None:
        """A build that attributes a variant's report: a row of its own,
        after the others."""
        targets.append(ft)
        self.done[id(ft)] = fbr
        self.publish(targets)


def run(runner, targets: list[Target], ordered, mutants: dict[str, list[mut.Mutant]],
        report: R.Report, out_dir: Path | None, live=None, first_only: bool = False) -> None:
    """The two tiers, or tier 1 alone (first_only: `make verdict`).
    ordered(targets) puts targets other than the base in the order they
    run in (runner.main_order), once the base is built."""
    tiers = Tiers(runner, report, out_dir, live)
    gates = runner.opts.gates
    report.mutants = [x for ms in mutants.values() for x in pending_mutants(ms)]
    order = tiers.tier1([t for t in targets if not t.variant], ordered, targets, gates)
    if not first_only:
        variants = [t for t in targets if t.variant]
        variants = [t for t in variants if t.topic == BASE] + \
            ordered([t for t in variants if t.topic != BASE])
        tiers.tier2(order, variants, targets, mutants)
