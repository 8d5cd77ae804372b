"""Caches keyed by content, in the work directory.

Takes a directory and keys (key(), Store, tool_versions()); gives values
remembered under them, a miss where an entry cannot be read.
docs/design.md, "The work directory".
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

from ktopic.fileio import write_atomic


def key(*parts, length: int | None = None) -> str:
    """sha256 (hex) of the parts, each followed by a NUL: str and bytes as
    they are, anything else as JSON with sorted keys; cut to length
    characters when given."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, str):
            p = p.encode()
        elif not isinstance(p, bytes):
            p = json.dumps(p, sort_keys=True).encode()
        h.update(p)
        h.update(b"\0")
    return h.hexdigest()[:length] if length else h.hexdigest()


def read(path: Path) -> Any:
    """The JSON value in path, or None when it is missing, unreadable or
    not JSON."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write(path: Path, value: Any, indent: int | None = 1) -> None:
    """Write value as JSON to path atomically (raises OSError)."""
    write_atomic(path, json.dumps(value, indent=indent) + "\n")


class Store:
    """JSON entries in one directory, one file a key."""

    def __init__(self, dir: Path | str, pattern: str = "{key}.json", indent: int | None = 1):
        self.dir = Path(dir)
        self.pattern = pattern
        self.indent = indent

    def path(self, key: str) -> Path:
        return self.dir / self.pattern.format(key=key)

    def has(self, key: str) -> bool:
        """An entry exists (whatever it holds: for marks whose presence is
        the answer)."""
        return self.path(key).exists()

    def get(self, key: str) -> Any:
        """The stored value, or None (missing, unreadable or corrupt)."""
        return read(self.path(key))

    def put(self, key: str, value: Any) -> Any:
        """Store value under key atomically; gives value back."""
        write(self.path(key), value, self.indent)
        return value


# ------------------------------------------------------------ tool versions

def first_line(cmd: tuple[str, ...]) -> str:
    """The first line a program prints (stdout, else stderr)."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unavailable"


def exe_stamp(programs: dict[str, tuple[str, ...]]) -> list[list]:
    """[name, path, size, mtime_ns] of each program's executable ([name,
    None, 0, 0] when it is not on PATH)."""
    stamp = []
    for name, cmd in programs.items():
        exe = shutil.which(cmd[0])
        st = os.stat(exe) if exe else None
        stamp.append([name, exe, st.st_size if st else 0, st.st_mtime_ns if st else 0])
    return stamp


def tool_versions(path: Path, programs: dict[str, tuple[str, ...]],
                  ask: Callable[[tuple[str, ...]], str] = first_line,
                  indent: int | None = 1) -> dict[str, str]:
    """{name: first line of cmd's output} for programs {name: cmd}, stored in
    path with the programs' stamp; a program not installed is "not
    installed".  The programs run again only when the stamp changed."""
    stamp = exe_stamp(programs)
    saved = read(path)
    if isinstance(saved, dict) and saved.get("stamp") == stamp and \
            isinstance(saved.get("versions"), dict):
        return saved["versions"]
    versions = {name: (ask(cmd) if exe else "not installed")
                for (name, exe, *_), cmd in zip(stamp, programs.values())}
    try:
        write(path, {"stamp": stamp, "versions": versions}, indent)
    except OSError:
        pass                    # a read-only cache only costs time
    return versions
