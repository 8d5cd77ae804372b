"""Content keys of a branch's build and result: takes a Target with its
tree and the run's Options, gives build_key (tree + config) and key
(everything the boot and its checks depend on, the tool's own files
included), so an unchanged branch is never built or booted again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ktopic.kernel import kconfig
from ktopic.model.targets import Target
from ktopic.runner.options import Options

RESULT_VERSION = "1"
TOOL_FILES = ("kernel/build.py", "kernel/boot.py", "runner/runner.py", "kernel/console_scan.py",
              "kernel/initramfs.py", "kernel/qkvm.py", "kernel/kconfig.py", "kernel/ktap.py",
              "model/results.py", "runner/expect.py")


def _hash(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _files_hash(paths: list[Path]) -> list[tuple[str, str]]:
    out = []
    for p in paths:
        files = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
        for f in files:
            out.append((str(f.relative_to(p.parent)), hashlib.sha256(f.read_bytes()).hexdigest()))
    return out


def compute_keys(t: Target, qemu_dir: Path, opts: Options) -> None:
    """Build key: what the kernel and modules are made from.  Result key:
    that, plus everything the boot and the checks depend on.  Boot key:
    the result key's parts but the tree, for results keyed by what was
    built from it (a mutant's: runner/mutate.py, objects_key)."""
    mods = [qemu_dir / "modules" / m for m in t.modules]
    progs = [qemu_dir / "tests" / f"{p}.c" for p in t.programs]
    tool = Path(__file__).parents[1]
    t.build_key = _hash(t.tree, kconfig.fragment_hash(t.fragments))
    boot = [_files_hash(mods), _files_hash(progs),
            _files_hash([qemu_dir / "init", qemu_dir / "allowlist.yaml"]
                        if (qemu_dir / "allowlist.yaml").exists() else [qemu_dir / "init"]),
            t.cmdline, t.kunit, t.programs, t.modules, opts.smp or t.smp, opts.memory,
            t.variant, t.base_commit,
            [(e.name, e.module, e.args, e.report, e.match) for e in t.expect],
            _files_hash([qemu_dir / "modules" / e.module for e in t.expect]),
            _files_hash([tool / f for f in TOOL_FILES if (tool / f).exists()])]
    t.key = _hash(RESULT_VERSION, t.build_key, *boot)
    t.boot_key = _hash(RESULT_VERSION, "boot", kconfig.fragment_hash(t.fragments), *boot)
