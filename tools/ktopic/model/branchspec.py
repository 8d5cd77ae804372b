"""One model of a branch the manifest makes: takes a Manifest, gives
BranchSpecs (the base, each topic in dependency order, the integration
branch) and resolves the names a user types to them.  Every command
accepts the same names: a topic (`mm`), a branch (`topic/mm`),
`integration` or the integration branch (`for-next`), and `base` where a
command works on the base too.

A BranchSpec says everything the commands need of a branch: what it
carries (generate, export, status), how it is tested (the runner's
Targets are views of it) and whom it is mailed to (mail, pull-request)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from ktopic.errors import KtopicError

# m is a manifest.Manifest, not imported here: manifest.py imports this module.
BASE = "base"
INTEGRATION = "integration"


@dataclass
class BranchSpec:
    kind: str                        # "base", "topic" or "integration"
    name: str                        # topic name, "integration" or "base"
    branch: str                      # refs/heads/<branch>
    topics: list[str] = field(default_factory=list)    # topics whose patches it carries
    depends: list[str] = field(default_factory=list)   # topics it starts on (not carried)
    patches: list[tuple[str, object]] = field(default_factory=list)   # (topic, manifest.Patch)
    fragments: list[Path] = field(default_factory=list)   # the topics' config fragments
    kunit: list[str] = field(default_factory=list)        # the suites it is expected to run
    modules: list[str] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)
    cmdline: str = ""
    smp: int = 2                     # guest CPUs (the integration branch: its topics' largest)
    sanitizers: list[str] = field(default_factory=list)   # build variants it is also tested under
    expect: list = field(default_factory=list)            # manifest.Expect entries
    to: list[str] = field(default_factory=list)           # recipients (mail, pull-request)
    cc: list[str] = field(default_factory=list)
    carried: list = field(default_factory=list)   # manifest.Carried: what its topics no longer carry
    description: str = ""
    tested: bool = False             # every topic it carries says `tested: true`
    line: int = 0                    # where the manifest declares it

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"


def uniq(items):
    out = []                         # by ==: manifest.Expect entries are not hashable
    for x in items:
        if x not in out:
            out.append(x)
    return out


def _carried(t) -> list:
    return t.upstream + t.superseded + t.dropped


def branches(m) -> list[BranchSpec]:
    """The base, every topic in dependency order, then the integration branch."""
    out = [BranchSpec(BASE, BASE, BASE)]
    for name in m.order:
        t = m.topics[name]
        deps = m.closure(name)
        # A topic is tested with its dependencies' code: their fragments too.
        chain = [m.topics[d] for d in deps] + [t]
        out.append(BranchSpec(
            "topic", name, t.branch, [name], deps, [(name, p) for p in t.patches],
            uniq(c.config for c in chain if c.config), list(t.kunit), list(t.modules),
            list(t.programs), t.cmdline, t.smp, list(t.sanitizers), list(t.expect),
            list(t.to), list(t.cc), _carried(t), t.description, t.tested, t.line))
    i = m.integration
    ts = [m.topics[n] for n in i.topics]
    to, cc = list(i.to), list(i.cc)
    if not to and not cc:                # every topic's recipients
        to = uniq(a for t in ts for a in t.to)
        cc = uniq(a for t in ts for a in t.cc)
    out.append(BranchSpec(
        INTEGRATION, INTEGRATION, i.branch, list(i.topics), [],
        [(n, p) for n in i.topics for p in m.topics[n].patches],
        uniq(t.config for t in ts if t.config),
        uniq(k for t in ts for k in t.kunit),
        uniq(x for t in ts for x in t.modules),
        uniq(x for t in ts for x in t.programs),
        " ".join(uniq(t.cmdline for t in ts if t.cmdline)),
        max([t.smp for t in ts] or [2]),
        uniq(v for t in ts for v in t.sanitizers),
        uniq(e for t in ts for e in t.expect),
        to, cc, [c for t in ts for c in _carried(t)], i.description,
        bool(ts) and all(t.tested for t in ts), i.line))
    return out


def pick(specs: list[BranchSpec], names: list[str], topics: list[str]) -> list[BranchSpec]:
    """The specs names stand for (by name or branch), in specs' order,
    each once.  An unknown name is bad input, said with the topics."""
    want: list[BranchSpec] = []
    for n in names:
        hit = [s for s in specs if n in (s.name, s.branch)]
        if not hit:
            # As Manifest.topic() says it: a branch name or "integration"
            # is accepted too, but a topic is what is usually meant.
            raise KtopicError(f"no topic {n!r} (topics: {', '.join(topics)})")
        want += [h for h in hit if h not in want]
    return [s for s in specs if s in want]


def resolve(m, names: list[str], base: bool = False) -> list[BranchSpec]:
    """The branches names stand for, in manifest order, each once; every
    topic and the integration branch when names is empty (and the base
    first, when base).  An unknown name is bad input."""
    specs = [s for s in branches(m) if base or s.kind != BASE]
    if not names:
        return specs
    return pick(specs, names, list(m.topics))


def resolve_one(m, name: str, kinds: tuple[str, ...]) -> BranchSpec:
    """The one branch name stands for, which must be of one of kinds."""
    spec = resolve(m, [name], base=BASE in kinds)[0]
    if spec.kind not in kinds:
        raise KtopicError(f"{name!r} is the {spec.kind} branch; this command takes "
                          + " or ".join("a topic" if k == "topic" else k for k in kinds))
    return spec
