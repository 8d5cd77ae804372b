"""Files written whole: takes a path and its new content, gives a file that
readers see old or new, never half written (a temporary file named by
process and thread in the same directory, then rename(2))."""

from __future__ import annotations

import os
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
