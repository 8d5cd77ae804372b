"""The branches `ktopic build`, `boot` and `ci` test, and what testing
each means: takes the manifest, gives Targets (the base, every topic in
dependency order, the integration branch) with their config fragments,
suites, modules and programs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ktopic.errors import KtopicError

BASE = "base"
INTEGRATION = "integration"


@dataclass
class Target:
    """One branch to test and what testing it means."""
    branch: str                      # branch name (refs/heads/<branch>)
    topic: str                       # topic name, "integration" or "base"
    fragments: list[Path]
    kunit: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)
    cmdline: str = ""
    commit: str = ""
    tree: str = ""
    base_commit: str = ""
    build_key: str = ""
    key: str = ""

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"


def _uniq(items):
    out = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


def targets_from_manifest(m, qemu_dir: Path, kasan: bool = False) -> list[Target]:
    """The base, every topic in dependency order, then the integration branch."""
    base_cfg = qemu_dir / "configs" / "base.config"
    extra = [qemu_dir / "configs" / "kasan.config"] if kasan else []
    out = [Target(BASE, BASE, [base_cfg, *extra])]
    for name in m.order:
        t = m.topics[name]
        # A topic is tested with its dependencies' code: their fragments too.
        chain = [m.topics[d] for d in m.closure(name)] + [t]
        frags = _uniq([c.config for c in chain if c.config])
        out.append(Target(t.branch, name, [base_cfg, *frags, *extra], kunit=list(t.kunit),
                          modules=list(t.modules), programs=list(t.programs),
                          cmdline=t.cmdline))
    ts = [m.topics[n] for n in m.integration.topics]
    out.append(Target(m.integration.branch, INTEGRATION,
                      [base_cfg, *_uniq([t.config for t in ts if t.config]), *extra],
                      kunit=_uniq(k for t in ts for k in t.kunit),
                      modules=_uniq(x for t in ts for x in t.modules),
                      programs=_uniq(x for t in ts for x in t.programs),
                      cmdline=" ".join(_uniq(t.cmdline for t in ts if t.cmdline))))
    return out


def select(targets: list[Target], names: list[str]) -> list[Target]:
    """Targets named by topic or branch name ("base" and "integration" too);
    all of them when no name is given.  The base always stays (reference)."""
    if not names:
        return targets
    want = []
    for n in names:
        hit = [t for t in targets if n in (t.branch, t.topic)]
        if not hit:
            raise KtopicError(f"no topic or branch {n!r} (known: "
                              f"{', '.join(t.topic for t in targets)})")
        want.extend(h for h in hit if h not in want)
    base = [t for t in targets if t.topic == BASE]
    return base + [t for t in want if t.topic != BASE]
