"""Build variants as data: qemu/variants.yaml names each one, its config
fragment (qemu/configs/<name>.config), how much slower its guest runs,
and what it cannot be combined with (docs/ci.md, "Variants").

Takes the qemu/ directory; gives the Variants by name."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from ktopic.errors import KtopicError

TABLE = "variants.yaml"


@dataclass(frozen=True)
class Variant:
    name: str
    config: Path                     # qemu/configs/<name>.config
    slowdown: float = 1.0            # boot time-outs are multiplied by it
    excludes: tuple[str, ...] = field(default_factory=tuple)


def load(qemu_dir: Path) -> dict[str, Variant]:
    """Every variant of qemu_dir/variants.yaml ({} when there is none)."""
    qemu_dir = Path(qemu_dir).resolve()
    path = qemu_dir / TABLE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise KtopicError(f"cannot read the variants table: {e.strerror}", path) from None
    return dict(_parse(qemu_dir, text))


@lru_cache(maxsize=8)
def _parse(qemu_dir: Path, text: str) -> tuple[tuple[str, Variant], ...]:
    path = qemu_dir / TABLE
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise KtopicError(f"cannot read the variants table: {e}", path) from None
    if not isinstance(data, dict):
        raise KtopicError("the variants table is not a mapping of names", path)
    out = []
    for name, d in data.items():
        d = d or {}
        if not isinstance(name, str) or not isinstance(d, dict) or \
                set(d) - {"slowdown", "excludes"}:
            raise KtopicError(f"variant {name!r}: takes slowdown and excludes", path)
        out.append((name, Variant(name, qemu_dir / "configs" / f"{name}.config",
                                  float(d.get("slowdown", 1.0)),
                                  tuple(d.get("excludes", ())))))
    return tuple(out)


def get(qemu_dir: Path, name: str) -> Variant:
    """The variant called name, or bad input naming the ones there are."""
    table = load(qemu_dir)
    if name not in table:
        raise KtopicError(f"no variant {name!r} (variants: {', '.join(table) or 'none'}; "
                          f"{Path(qemu_dir) / TABLE})")
    return table[name]


def slowdown(qemu_dir: Path, name: str) -> float:
    return load(qemu_dir)[name].slowdown if name in load(qemu_dir) else 1.0


def check_together(qemu_dir: Path, names: list[str]) -> None:
    """Refuse variants asked for together that the table says exclude each other."""
    for n in names:
        clash = [x for x in names if x in get(qemu_dir, n).excludes]
        if clash:
            raise KtopicError(f"--{n} and --{clash[0]} cannot be combined "
                              f"({Path(qemu_dir) / TABLE})")
