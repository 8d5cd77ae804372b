"""The topic gates' passing verdicts (gates/registry.py) remembered by
content: under a key of the gate, what it reads (its key_parts()) and the
source of the modules that make it, in
<workdir>/cache/check/gates/<gate>-<key>.json; docs/gates.md, "The topic
gates' cache".

Takes a topic's Plan and the run's inputs; gives the verdict remembered for
them, or a place to remember a new one.
"""

from __future__ import annotations

from pathlib import Path

from ktopic.gates import registry
from ktopic import stampcache
from ktopic.stampcache import first_line as _first_line

# Version of the stored format: part of every key.
FORMAT = "1"
TOOLCHAIN = {"gcc": ("gcc", "--version"), "ld": ("ld", "--version"),
             "sparse": ("sparse", "--version")}


def cache_dir(wd) -> Path:
    return wd.gate_cache


def toolchain(cache: Path) -> dict[str, str]:
    """{"gcc": ..., "ld": ..., "sparse": ...}: the first line of each
    program's --version, asked again only when the program file changed."""
    return stampcache.tool_versions(cache / "toolchain.json", TOOLCHAIN, _first_line)


def rules_hash(files: tuple[str, ...]) -> str:
    """The source of a gate's modules (relative to ktopic/), hashed."""
    here = Path(__file__).parents[1]
    files = tuple(files) + ("gates/base.py",)
    return stampcache.key(*(part for name in files for part in (name, (here / name).read_bytes())),
                          length=16)


def key_parts(gate: str, plan, tools: dict[str, str], rules: str, wd=None, m=None) -> dict:
    """What a gate's verdict on a plan depends on (see the module's doc and
    the gate's key_parts)."""
    parts = {"format": FORMAT, "gate": gate}
    parts.update(registry.get(gate).key_parts(plan, tools, wd, m))
    parts["rules"] = rules
    return parts


def key(parts: dict) -> str:
    return stampcache.key(parts, length=24)


class GateCache:
    """Load and store the verdicts of one run (one toolchain, one rule set)."""

    def __init__(self, wd, m=None):
        self.wd, self.m = wd, m
        self.dir = cache_dir(wd)
        self.tools = toolchain(self.dir)
        self.rules = {n: rules_hash(g.rule_files) for n, g in registry.GATES.items()}
        self.entries = stampcache.Store(self.dir)

    def _parts(self, gate: str, plan) -> dict:
        return key_parts(gate, plan, self.tools, self.rules[gate], self.wd, self.m)

    def _key(self, gate: str, plan) -> str:
        return f"{gate}-{key(self._parts(gate, plan))}"

    def path(self, gate: str, plan) -> Path:
        return self.entries.path(self._key(gate, plan))

    def load(self, gate: str, plan):
        """The stored verdict (the gate's result, marked cached), or None."""
        if plan.error:
            return None
        try:
            data = self.entries.get(self._key(gate, plan))
            res = registry.get(gate).from_dict(data["result"])
        except (ValueError, KeyError, TypeError):
            return None
        res.cached = True
        return res

    def store(self, gate: str, plan, result) -> bool:
        """Remember a passing verdict; failures are not stored."""
        if plan.error or not result.ok or getattr(result, "error", ""):
            return False
        parts = self._parts(gate, plan)
        d = result.to_dict()
        d["cached"] = False
        self.entries.put(self._key(gate, plan), {"key": parts, "branch": plan.branch, "result": d})
        return True
