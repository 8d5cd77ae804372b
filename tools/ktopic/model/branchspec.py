"""One model of a branch the manifest makes: takes a Manifest, gives
BranchSpecs (the base, each topic in dependency order, the integration
branch) and resolves the names a user types to them.  Every command
accepts the same names: a topic (`mm`), a branch (`topic/mm`),
`integration` or the integration branch (`for-next`), and `base` where a
command works on the base too."""

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

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"


def _uniq(items):
    return list(dict.fromkeys(items))


def branches(m) -> list[BranchSpec]:
    """The base, every topic in dependency order, then the integration branch."""
    out = [BranchSpec(BASE, BASE, BASE)]
    for name in m.order:
        t = m.topics[name]
        deps = m.closure(name)
        # A topic is tested with its dependencies' code: their fragments too.
        chain = [m.topics[d] for d in deps] + [t]
        out.append(BranchSpec("topic", name, t.branch, [name], deps,
                              [(name, p) for p in t.patches],
                              _uniq(c.config for c in chain if c.config),
                              list(t.kunit), list(t.modules), list(t.programs), t.cmdline))
    i = m.integration
    ts = [m.topics[n] for n in i.topics]
    out.append(BranchSpec(INTEGRATION, INTEGRATION, i.branch, list(i.topics), [],
                          [(n, p) for n in i.topics for p in m.topics[n].patches],
                          _uniq(t.config for t in ts if t.config),
                          _uniq(k for t in ts for k in t.kunit),
                          _uniq(x for t in ts for x in t.modules),
                          _uniq(x for t in ts for x in t.programs),
                          " ".join(_uniq(t.cmdline for t in ts if t.cmdline))))
    return out


def resolve(m, names: list[str], base: bool = False) -> list[BranchSpec]:
    """The branches names stand for, in manifest order, each once; every
    topic and the integration branch when names is empty (and the base
    first, when base).  An unknown name is bad input."""
    specs = [s for s in branches(m) if base or s.kind != BASE]
    if not names:
        return specs
    want: list[BranchSpec] = []
    for n in names:
        hit = [s for s in specs if n in (s.name, s.branch)]
        if not hit:
            # As Manifest.topic() says it: a branch name or "integration"
            # is accepted too, but a topic is what is usually meant.
            raise KtopicError(f"no topic {n!r} (topics: {', '.join(m.topics)})")
        want += [h for h in hit if h not in want]
    return [s for s in specs if s in want]


def resolve_one(m, name: str, kinds: tuple[str, ...]) -> BranchSpec:
    """The one branch name stands for, which must be of one of kinds."""
    spec = resolve(m, [name], base=BASE in kinds)[0]
    if spec.kind not in kinds:
        raise KtopicError(f"{name!r} is the {spec.kind} branch; this command takes "
                          + " or ".join("a topic" if k == "topic" else k for k in kinds))
    return spec
