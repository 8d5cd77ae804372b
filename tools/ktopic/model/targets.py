"""The branches `ktopic build`, `boot` and `ci` test, and what testing
each means: takes the manifest, gives Targets (the base, every topic in
dependency order, the integration branch) with their config fragments,
suites, modules and programs."""

from __future__ import annotations

import dataclasses
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
    smp: int = 2                     # guest CPUs (the manifest's smp:, max over a stack)
    variant: str = ""                # "" or a sanitizer build variant ("kcsan")
    git_branch: str = ""             # the ref's branch when `branch` names a variant
    expect: list = field(default_factory=list)     # manifest Expect entries
    commit: str = ""
    tree: str = ""
    base_commit: str = ""
    build_key: str = ""
    key: str = ""

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.git_branch or self.branch}"


def _uniq(items):
    out = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


SANITIZERS = ("kasan", "kcsan")      # build variants: qemu/configs/<name>.config


def variant_branch(branch: str, variant: str) -> str:
    """The name a sanitizer variant's result goes by: "topic/locking+kcsan"."""
    return f"{branch}+{variant}" if variant else branch


def targets_from_manifest(m, qemu_dir: Path, kasan: bool = False,
                          kcsan: bool = False, sanitizers: bool = False) -> list[Target]:
    """The base, every topic in dependency order, then the integration branch.

    kasan/kcsan: every target is built with that sanitizer (one run, one
    variant).  sanitizers: besides the plain targets, each topic that
    declares `sanitizers:` (and the integration branch, when any of its
    topics does) gets a target per sanitizer, after the plain ones, and
    the base under that sanitizer first, for reference."""
    if kasan and kcsan:
        raise KtopicError("--kasan and --kcsan cannot be combined (6.1's KCSAN "
                          "depends on !KASAN)")
    base_cfg = qemu_dir / "configs" / "base.config"
    run_variant = "kasan" if kasan else "kcsan" if kcsan else ""
    extra = [qemu_dir / "configs" / f"{run_variant}.config"] if run_variant else []
    out = [Target(BASE, BASE, [base_cfg, *extra], variant=run_variant)]
    want: dict[str, list[Target]] = {}
    for name in m.order:
        t = m.topics[name]
        # A topic is tested with its dependencies' code: their fragments too.
        chain = [m.topics[d] for d in m.closure(name)] + [t]
        frags = _uniq([c.config for c in chain if c.config])
        out.append(Target(t.branch, name, [base_cfg, *frags, *extra], kunit=list(t.kunit),
                          modules=list(t.modules), programs=list(t.programs),
                          cmdline=t.cmdline, smp=t.smp, variant=run_variant,
                          expect=[] if run_variant else list(t.expect)))
        for v in t.sanitizers:
            want.setdefault(v, []).append(out[-1])
    ts = [m.topics[n] for n in m.integration.topics]
    out.append(Target(m.integration.branch, INTEGRATION,
                      [base_cfg, *_uniq([t.config for t in ts if t.config]), *extra],
                      kunit=_uniq(k for t in ts for k in t.kunit),
                      modules=_uniq(x for t in ts for x in t.modules),
                      programs=_uniq(x for t in ts for x in t.programs),
                      cmdline=" ".join(_uniq(t.cmdline for t in ts if t.cmdline)),
                      smp=max([t.smp for t in ts] or [2]), variant=run_variant,
                      expect=[] if run_variant else _uniq(e for t in ts for e in t.expect)))
    if sanitizers and not run_variant:
        integ = out[-1]
        for v, plain in want.items():
            vcfg = qemu_dir / "configs" / f"{v}.config"
            out.append(Target(variant_branch(BASE, v), BASE, [base_cfg, vcfg], variant=v,
                              git_branch=BASE))
            for p in plain + [integ]:
                out.append(dataclasses.replace(
                    p, branch=variant_branch(p.branch, v), git_branch=p.branch, variant=v,
                    fragments=[*p.fragments, vcfg], expect=[]))
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
    # The base of every variant the selection runs (the plain base always).
    variants = {t.variant for t in want}
    base = [t for t in targets if t.topic == BASE and
            (t.variant in variants or t.branch == BASE)]
    return base + [t for t in want if t.topic != BASE]
