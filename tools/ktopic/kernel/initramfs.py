"""The guest's initramfs, built reproducibly and cached by content hash.

Takes an InitramfsRequest (init source, modules, programs, module
arguments); gives an InitramfsResult (a cached newc cpio and its hash).
docs/ci.md, "The guest".
"""

from __future__ import annotations

import hashlib
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.errors import Failure
from ktopic.fileio import write_atomic

CFLAGS = ["-static", "-O2", "-Wall"]


@dataclass
class InitramfsRequest:
    init_src: Path                   # qemu/init/init.c
    cache: Path                      # <workdir>/cache
    programs: list[Path] = field(default_factory=list)      # qemu/tests/<name>.c
    test_modules: list[Path] = field(default_factory=list)  # -> /lib/modules/test/
    kernel_modules: list[Path] = field(default_factory=list)  # -> /lib/modules/kernel/
    # test module file name -> its parameters ("case=read_write"): /etc/ktopic/modargs/<name>
    module_args: dict[str, str] = field(default_factory=dict)


@dataclass
class InitramfsResult:
    path: Path
    sha256: str
    entries: list[str]               # guest paths, for the report


@dataclass
class _Entry:
    name: str                        # guest path without the leading "/"
    mode: int
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


def _gcc_version() -> str:
    p = subprocess.run(["gcc", "--version"], stdout=subprocess.PIPE, text=True)
    return p.stdout.splitlines()[0] if p.stdout else "gcc"


def compile_static(src: Path, cache: Path, extra_flags: tuple[str, ...] = ()) -> Path:
    """gcc -static src, cached under the hash of (source, flags, compiler)."""
    try:
        text = src.read_bytes()
    except OSError as e:
        raise Failure(f"initramfs: cannot read {src}: {e.strerror}") from None
    h = hashlib.sha256(text + "\0".join([*CFLAGS, *extra_flags, _gcc_version()]).encode())
    out = cache / "bin" / h.hexdigest()[:20] / src.stem
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    p = subprocess.run(["gcc", *CFLAGS, *extra_flags, "-o", str(tmp), str(src)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        raise Failure(f"initramfs: gcc -static {src.name} failed:\n{p.stdout.strip()}")
    tmp.replace(out)
    return out


def _newc(entries: list[_Entry]) -> bytes:
    """A newc ("070701") cpio archive of the entries, in the given order."""
    chunks = []

    def header(ino: int, e: _Entry) -> None:
        name = e.name.encode() + b"\0"
        fields = [ino, e.mode, 0, 0, 2 if stat.S_ISDIR(e.mode) else 1, 0, len(e.data),
                  0, 0, e.rdev[0], e.rdev[1], len(name), 0]
        hdr = b"070701" + b"".join(b"%08X" % f for f in fields) + name
        chunks.append(hdr + b"\0" * (-len(hdr) % 4))
        chunks.append(e.data + b"\0" * (-len(e.data) % 4))

    for ino, e in enumerate(entries, 1):
        header(ino, e)
    header(0, _Entry("TRAILER!!!", 0))
    return b"".join(chunks)


def entries_for(init: Path, programs: list[Path], test_modules: list[Path],
                kernel_modules: list[Path],
                module_args: dict[str, str] | None = None) -> list[_Entry]:
    dirs = ["dev", "lib", "lib/modules", "lib/modules/kernel", "lib/modules/test",
            "proc", "sys", "tests", "tmp"]
    if module_args:
        dirs += ["etc", "etc/ktopic", "etc/ktopic/modargs"]
    ents = [_Entry(d, stat.S_IFDIR | (0o1777 if d == "tmp" else 0o755)) for d in dirs]
    ents.append(_Entry("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1)))
    ents.append(_Entry("init", stat.S_IFREG | 0o755, init.read_bytes()))
    seen: set[str] = set()

    def add(name: str, mode: int, path: Path) -> None:
        if name in seen:
            raise Failure(f"initramfs: two files for /{name} ({path})")
        seen.add(name)
        ents.append(_Entry(name, stat.S_IFREG | mode, path.read_bytes()))

    for prog in programs:
        add(f"tests/{prog.name}", 0o755, prog)
    for ko in test_modules:
        add(f"lib/modules/test/{ko.name}", 0o644, ko)
    for ko in kernel_modules:
        add(f"lib/modules/kernel/{ko.name}", 0o644, ko)
    for name, args in sorted((module_args or {}).items()):
        if "/" in name or name.startswith("."):
            raise Failure(f"initramfs: bad module name {name!r} for parameters")
        seen.add(f"etc/ktopic/modargs/{name}")
        ents.append(_Entry(f"etc/ktopic/modargs/{name}", stat.S_IFREG | 0o644,
                           args.encode() + b"\n"))
    ents.sort(key=lambda e: e.name)
    return ents


def build_initramfs(req: InitramfsRequest) -> InitramfsResult:
    init = compile_static(req.init_src, req.cache)
    progs = [compile_static(p, req.cache) for p in req.programs]
    ents = entries_for(init, progs, req.test_modules, req.kernel_modules, req.module_args)
    data = _newc(ents)
    digest = hashlib.sha256(data).hexdigest()
    out = req.cache / "initramfs" / f"{digest[:20]}.cpio"
    if not out.is_file():
        write_atomic(out, data)
    return InitramfsResult(path=out, sha256=digest, entries=["/" + e.name for e in ents])
