"""The branches `ktopic build`, `boot` and `ci` test: takes the manifest's
BranchSpecs (branchspec.branches()), gives Targets, each a view of one
BranchSpec built with qemu/configs/base.config (and a sanitizer
variant's fragment), plus what the runner learns of it (commit, tree,
content keys)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ktopic.model import branchspec, variants
from ktopic.model.branchspec import BASE, INTEGRATION, BranchSpec  # noqa: F401 (re-exported)



def variant_branch(branch: str, variant: str) -> str:
    """The name a sanitizer variant's result goes by: "topic/locking+kcsan"."""
    return f"{branch}+{variant}" if variant else branch


@dataclass
class Target:
    """One branch to test and what testing it means: the spec's suites,
    modules, programs, cmdline and smp, its expectations (none under a
    sanitizer: those are boots of the plain kernel)."""
    spec: BranchSpec
    fragments: list[Path]            # base.config, the spec's fragments, the variant's
    variant: str = ""                # "" or a sanitizer build variant ("kcsan")
    branch: str = ""                 # the name the result goes by: the spec's branch, or
                                     # another for a variant beside the plain run
                                     # ("topic/mm+kcsan") or a mutant
    git_branch: str = ""             # the branch built, when `branch` names another
    commit: str = ""
    tree: str = ""
    base_commit: str = ""
    build_key: str = ""
    key: str = ""
    boot_key: str = ""               # key's parts but the tree (runner/cachekeys.py)

    def __post_init__(self):
        self.branch = self.branch or self.spec.branch

    @property
    def ref(self) -> str:
        return self.spec.ref

    @property
    def beside(self) -> bool:
        """A sanitizer variant's target beside the plain run of the same
        branch ("topic/mm+kcsan"), not a target of a whole run's variant."""
        return bool(self.variant) and self.branch == variant_branch(self.spec.branch,
                                                                      self.variant)

    @property
    def topic(self) -> str:
        return self.spec.name

    @property
    def kunit(self) -> list[str]:
        return self.spec.kunit

    @property
    def modules(self) -> list[str]:
        return self.spec.modules

    @property
    def programs(self) -> list[str]:
        return self.spec.programs

    @property
    def cmdline(self) -> str:
        return self.spec.cmdline

    @property
    def smp(self) -> int:
        return self.spec.smp

    @property
    def expect(self) -> list:
        return [] if self.variant else self.spec.expect


def targets_from_manifest(m, qemu_dir: Path, variant: str = "",
                          sanitizers: bool = False) -> list[Target]:
    """The base, every topic in dependency order, then the integration branch.

    variant: every target is built with that variant (qemu/variants.yaml;
    one run, one variant).  sanitizers: besides the plain targets, each topic that
    declares `sanitizers:` (and the integration branch, when any of its
    topics does) gets a target per sanitizer, after the plain ones, and
    the base under that sanitizer first, for reference."""
    base_cfg = qemu_dir / "configs" / "base.config"
    run_variant = variant
    extra = [variants.get(qemu_dir, variant).config] if variant else []
    specs = branchspec.branches(m)
    out = [Target(s, [base_cfg, *s.fragments, *extra], run_variant) for s in specs]
    if sanitizers and not run_variant:
        # Per variant (in the order the topics ask for them): the base, the
        # topics that ask for it, the integration branch.
        want: dict[str, list[BranchSpec]] = {}
        for s in specs:
            if s.kind == "topic":
                for v in s.sanitizers:
                    want.setdefault(v, []).append(s)
        for v, topics in want.items():
            out += [variant_target(s, qemu_dir, v) for s in [specs[0], *topics, specs[-1]]]
    return out


def variant_target(spec: BranchSpec, qemu_dir: Path, variant: str) -> Target:
    """The spec under a sanitizer variant beside its plain run: its
    fragments and the variant's, its result named "<branch>+<variant>"."""
    return Target(spec, [qemu_dir / "configs" / "base.config", *spec.fragments,
                         variants.get(qemu_dir, variant).config], variant,
                  variant_branch(spec.branch, variant), spec.branch)


def select(targets: list[Target], names: list[str]) -> list[Target]:
    """Targets named as every command names branches (branchspec.pick:
    topic, branch, "integration", "base"), in the order named; all of
    them when no name is given.  The base always stays (reference), under
    every variant the selection runs."""
    if not names:
        return targets
    specs = list({id(t.spec): t.spec for t in targets}.values())
    topics = [s.name for s in specs if s.kind == "topic"]
    want: list[Target] = []
    for n in names:
        hit = [id(s) for s in branchspec.pick(specs, [n], topics)]
        want += [t for t in targets if id(t.spec) in hit and not any(t is w for w in want)]
    variants = {t.variant for t in want}
    base = [t for t in targets if t.topic == BASE and
            (t.variant in variants or t.branch == BASE)]
    return base + [t for t in want if t.topic != BASE]
