"""Files written whole: takes a path and its new content, gives a file that
readers see old or new, never half written (a temporary file named by
process and thread in the same directory, then rename(2)); several files
all or none."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path


def write_atomic(path: Path | str, data: str | bytes) -> None:
    """Write a file so that readers see the old or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()


def replace_together(files: list[tuple[Path, bytes]], check=None) -> None:
    """Every (path, data) written, or none: each beside itself first (with
    the file's mode), check(path, tmp) on each (it raises to stop), then
    all renamed into place."""
    tmps: list[tuple[Path, Path]] = []
    try:
        for path, data in files:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmps.append((tmp, path))
            tmp.write_bytes(data)
            shutil.copymode(path, tmp)
            if check is not None:
                check(path, tmp)
        for tmp, path in tmps:
            tmp.replace(path)
    finally:
        for tmp, _ in tmps:
            if tmp.exists():
                tmp.unlink()
