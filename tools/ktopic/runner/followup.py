"""The builds that attribute a sanitizer report of the integration
branch (docs/ci.md, "KCSAN").

The main job builds one kernel under KCSAN, for-next+kcsan
(model/sanitizerplan.py).  When its boot reports a race, each topic
whose own commits touch a file the report names (runner/locate.py) is
built and booted under the variant (topic/locking+kcsan), so that the
report says which topic carries it; a report in files no topic touches
makes the base's build under the variant (base+kcsan), once, which says
whether 6.1 itself reports it (then the finding is the base's, as it
was when base+kcsan ran first, and belongs in qemu/allowlist.yaml).
Each is an ordinary target, cached by content like any other.

Takes the Runner, the integration target under a variant and its
result; runs the follow-ups, records them in both results
(BranchResult.followups, .follows) and hands each to done().
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ktopic.kernel import console_scan
from ktopic.model import branchspec
from ktopic.model import results as R
from ktopic.model.targets import BASE, INTEGRATION, Target, variant_target
from ktopic.runner import locate


@dataclass
class Lead:
    """One follow-up: the target and the reports that lead to it."""
    target: Target
    reports: list[R.Finding] = field(default_factory=list)
    where: list[str] = field(default_factory=list)

    def line(self, variant: str) -> str:
        """"kcsan: report in kernel/locking/six.c -> topic/locking+kcsan"."""
        why = " (no topic touches it)" if self.target.topic == BASE else ""
        return f"{variant}: report in {', '.join(self.where)} -> {self.target.branch}{why}"


def reports(t: Target, br: R.BranchResult) -> list[R.Finding]:
    """The integration branch's own reports of its variant's kind (a
    KCSAN build's "kcsan" findings), when it runs beside its plain build."""
    if t.topic != INTEGRATION or not t.beside:
        return []
    return [f for f in br.findings if f.kind == t.variant and not f.in_base]


def leads(runner, t: Target, found: list[R.Finding]) -> list[Lead]:
    """The base's follow-up first (when a report is in no topic's
    files), then the topics' in the manifest's order."""
    specs = {s.name: s for s in branchspec.branches(runner.m)}
    out: dict[str, Lead] = {}
    for p in locate.places(runner, t, found):
        for name in p.topics or [BASE]:
            lead = out.setdefault(name, Lead(variant_target(specs[name], runner.qemu_dir,
                                                             t.variant)))
            lead.reports.append(p.report)
            lead.where += [w for w in p.where.split(", ") if w not in lead.where]
    order = [BASE, *t.spec.topics]
    return [out[n] for n in order if n in out]


def _signatures(findings, kind: str) -> set[str]:
    return {console_scan.signature(f) for f in findings if f.kind == kind}


def follow(runner, t: Target, br: R.BranchResult, done) -> None:
    """Run t's follow-ups, each handed to done(target, result) as it ends."""
    found = reports(t, br)
    if not found:
        return
    for lead in leads(runner, t, found):
        runner.say(lead.line(t.variant))
        fbr = copy.deepcopy(runner.run(lead.target))
        if lead.target.topic == BASE:      # the base's reports are no branch's failure
            runner.mark_in_base(t, br)
        entry = {"kind": t.variant, "files": lead.where,
                 "reports": [f.message for f in lead.reports],
                 "shows": bool(_signatures(fbr.findings, t.variant) &
                               _signatures(lead.reports, t.variant))}
        br.followups.append({"branch": lead.target.branch, "topic": lead.target.topic,
                             **entry})
        fbr.follows = {"branch": t.branch, **entry}
        runner.attribute(lead.target, fbr)
        done(lead.target, fbr)
