"""The topic gates by name: `ktopic check --NAME`, `ktopic ci --NAME`, the
main job's gates and the gate cache all read this table (docs/gates.md).

Takes nothing; gives GATES, name -> Gate class, in the order they run."""

from __future__ import annotations

from ktopic.gates.base import Gate
from ktopic.gates.bisectable import BisectGate
from ktopic.gates.coccicheck import CoccicheckGate
from ktopic.gates.new_warnings import WarningsGate

GATES: dict[str, type[Gate]] = {g.name: g for g in (BisectGate, WarningsGate, CoccicheckGate)}


def get(name: str) -> Gate:
    """A new instance of the gate named (ValueError for an unknown name)."""
    try:
        return GATES[name]()
    except KeyError:
        raise ValueError(f"unknown gate {name!r}") from None


def waived_by_a_gate(waiver_type: str) -> bool:
    """A patches[].waivers type that a gate reads (not checkpatch's)."""
    return any(g.waiver_prefix and waiver_type.startswith(g.waiver_prefix)
               for g in GATES.values())


def main_job() -> tuple[str, ...]:
    return tuple(n for n, g in GATES.items() if g.main_job)


def building() -> tuple[str, ...]:
    return tuple(n for n, g in GATES.items() if g.builds)
