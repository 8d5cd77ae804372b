"""Which sanitizer-variant targets a run plans up front (docs/ci.md, "KCSAN").

A topic's `sanitizers: [kcsan]` asks for its code to run under KCSAN.
The integration branch under the variant (for-next+kcsan) stacks every
topic and runs every topic's suites and programs, so when it is among
the targets a run selected it covers the topics' own builds under that
variant and the base's: those are not planned, and the runner builds
them only to attribute a report of the integration branch's
(runner/followup.py).  Without the integration branch (a topic's own
run) nothing covers a topic, and its variant runs as before; a whole
run's variant (--variant) has no targets beside the plain ones.

Takes the targets a run selected (targets.select) and every target of
the manifest with its sanitizers; gives the Plan: what runs, and per
variant the integration target and the topics it covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ktopic.model.branchspec import BASE, INTEGRATION
from ktopic.model.targets import Target


@dataclass
class Plan:
    targets: list[Target]                                    # what the run starts with
    covering: dict[str, Target] = field(default_factory=dict)   # variant -> integration+variant
    covers: dict[str, list[str]] = field(default_factory=dict)  # variant -> topics it covers

    def lines(self) -> list[str]:
        """One log line per covering variant:
        "kcsan: for-next+kcsan covers locking, mm, closures"."""
        return [f"{v}: {t.branch} covers {', '.join(self.covers[v]) or 'no topic'}"
                for v, t in self.covering.items()]


def plan(chosen: list[Target], every: list[Target]) -> Plan:
    """chosen less the base's and the topics' targets beside the plain
    ones under each variant the integration branch runs beside its own
    (for the topics it stacks); the others as chosen."""
    covering = {t.variant: t for t in chosen if t.beside and t.topic == INTEGRATION}

    def covered(t: Target) -> bool:
        c = covering.get(t.variant)
        return t.beside and c is not None and t is not c and \
            (t.topic == BASE or t.topic in c.spec.topics)
    covers = {v: list(dict.fromkeys(t.topic for t in every
                                    if t.beside and t.variant == v and
                                    t.topic in c.spec.topics))
              for v, c in covering.items()}
    return Plan([t for t in chosen if not covered(t)], covering, covers)
