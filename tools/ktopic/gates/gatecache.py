"""The build gates' verdicts (--bisect, --warnings) remembered by content.

A verdict is stored under a key made of what it depends on:

    the gate            "bisect" or "warnings"
    the commit range    the topic's start and head commit ids, and its
                        commits (start..head as bisectable.plan walks it)
    the configuration   kconfig.fragment_hash() of the topic's fragments
    the toolchain       gcc --version, ld --version, sparse --version
                        (first lines)
    the rules           the source of the modules that make the verdict
                        (bisectable, new_warnings, build, kconfig, this one)

in ``<workdir>/cache/check/gates/<gate>-<key>.json``.  A topic whose head
moved (or whose dependencies moved, which moves its start) has another key
and is walked again; an unchanged one costs a few git commands.

Only passing verdicts are stored: a failure may be the machine's (a full
disk, a compiler killed under memory pressure), and a topic that fails is
being worked on, so it is walked again on the next run.

The toolchain's versions are remembered by the programs' (path, size,
mtime) in ``gates/toolchain.json``, so a cached run starts no compiler.

Takes a topic's Plan and the run's inputs; gives the verdict remembered for
them, or a place to remember a new one.
"""

from __future__ import annotations

from pathlib import Path

from ktopic.gates import bisectable as bs
from ktopic.gates import new_warnings as wn
from ktopic.kernel import kconfig
from ktopic import stampcache
from ktopic.stampcache import first_line as _first_line

# Version of the stored format: part of every key.
FORMAT = "1"
GATES = ("bisect", "warnings")
TOOLCHAIN = {"gcc": ("gcc", "--version"), "ld": ("ld", "--version"),
             "sparse": ("sparse", "--version")}
RULE_FILES = ("gates/bisectable.py", "gates/new_warnings.py", "kernel/build.py", "kernel/kconfig.py",
              "gates/gatecache.py")


def cache_dir(wd) -> Path:
    return wd.gate_cache


def toolchain(cache: Path) -> dict[str, str]:
    """{"gcc": ..., "ld": ..., "sparse": ...}: the first line of each
    program's --version, asked again only when the program file changed."""
    return stampcache.tool_versions(cache / "toolchain.json", TOOLCHAIN, _first_line)


def rules_hash() -> str:
    here = Path(__file__).parents[1]
    return stampcache.key(*(part for name in RULE_FILES for part in (name, (here / name).read_bytes())),
                          length=16)


def key_parts(gate: str, plan, tools: dict[str, str], rules: str) -> dict:
    """What a gate's verdict on a plan depends on (see the module's doc)."""
    if gate not in GATES:
        raise ValueError(f"unknown gate {gate!r}")
    return {"format": FORMAT, "gate": gate, "start": plan.start, "head": plan.head,
            "commits": [sha for sha, _ in plan.commits],
            "config": kconfig.fragment_hash(plan.fragments),
            "toolchain": dict(sorted(tools.items())), "rules": rules}


def key(parts: dict) -> str:
    return stampcache.key(parts, length=24)


class GateCache:
    """Load and store the verdicts of one run (one toolchain, one rule set)."""

    def __init__(self, wd):
        self.dir = cache_dir(wd)
        self.tools = toolchain(self.dir)
        self.rules = rules_hash()
        self.entries = stampcache.Store(self.dir)

    def _key(self, gate: str, plan) -> str:
        return f"{gate}-{key(key_parts(gate, plan, self.tools, self.rules))}"

    def path(self, gate: str, plan) -> Path:
        return self.entries.path(self._key(gate, plan))

    def load(self, gate: str, plan):
        """The stored verdict (a BisectResult or WarningsResult, marked
        cached), or None."""
        if plan.error:
            return None
        try:
            data = self.entries.get(self._key(gate, plan))
            cls = bs.BisectResult if gate == "bisect" else wn.WarningsResult
            res = cls.from_dict(data["result"])
        except (ValueError, KeyError, TypeError):
            return None
        res.cached = True
        return res

    def store(self, gate: str, plan, result) -> bool:
        """Remember a passing verdict; failures are not stored."""
        if plan.error or not result.ok or getattr(result, "error", ""):
            return False
        parts = key_parts(gate, plan, self.tools, self.rules)
        d = result.to_dict()
        d["cached"] = False
        self.entries.put(self._key(gate, plan), {"key": parts, "branch": plan.branch, "result": d})
        return True
