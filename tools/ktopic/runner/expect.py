"""Expected reports: a boot that loads one test module (with parameters)
which must make the kernel print a given report.

This is how annotations are tested: a module that takes a SIX read lock
and then asks for write on the same lock must make lockdep report a
deadlock.  Lockdep turns itself off after its first report, so every
expectation is a boot of its own: the topic's kernel, an initramfs with
only that module, its parameters passed by /init (finit_module).

judge() takes the manifest entry and the boot's console findings and says
whether the expected report is there: the findings that satisfy it are
set aside (an expected report does not fail the branch); every other
finding still does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ktopic.model.results import Finding

# Kinds that end a run early: a boot expecting them is not "incomplete".
FATAL_KINDS = ("panic", "oops")


@dataclass
class Verdict:
    name: str
    seen: bool                       # the expected report appeared
    message: str                     # one line for the report
    expected: list[Finding] = field(default_factory=list)   # findings that satisfy it
    other: list[Finding] = field(default_factory=list)      # findings that still fail


def matches(e, f: Finding) -> bool:
    """Finding f is the report entry e expects: same kind, and the regular
    expression found in its message or quoted lines."""
    if f.kind != e.report:
        return False
    pat = re.compile(e.match)
    return bool(pat.search(f.message) or any(pat.search(x) for x in f.lines))


def judge(e, findings: list[Finding]) -> Verdict:
    hit = [f for f in findings if matches(e, f)]
    rest = [f for f in findings if f not in hit]
    if e.report in FATAL_KINDS and hit:
        # The panic/oops we asked for stops the guest before /init is done.
        rest = [f for f in rest if f.kind != "incomplete"]
    if hit:
        return Verdict(e.name, True, f"{e.name}: {e.report} report seen "
                       f"(console line {hit[0].line})", hit, rest)
    kinds = sorted({f.kind for f in findings})
    return Verdict(e.name, False, f"{e.name}: expected a {e.report} report matching "
                   f"/{e.match}/ from {e.module}"
                   + (f" {e.args}" if e.args else "")
                   + (f"; the console shows only: {', '.join(kinds)}" if kinds else
                      "; the console shows no report"), [], rest)
