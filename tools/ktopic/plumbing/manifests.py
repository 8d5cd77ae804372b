"""The manifest, loaded with its validation remembered in the work directory.

Takes the manifest's path (and the work directory, -w); gives the
Manifest, validated once per content: a record under <workdir>/validated/
keyed by the bytes read, the schema and the validating code lets the
next load skip the checks.  docs/design.md, "Manifest validation".
"""

from __future__ import annotations

from pathlib import Path

from ktopic import stampcache
from ktopic.model import manifest
from ktopic.model.workdir import default_root


def load(path: Path | str, root: Path | None = None,
         workdir: Path | str | None = None) -> manifest.Manifest:
    src = manifest.read(path, root)
    stamps = stampcache.Store((Path(workdir).expanduser() if workdir else default_root())
                              / "validated", "{key}")
    # The bytes validated, not the file read again: it may have changed since.
    stamp = stampcache.key(*src.stamp_parts())
    known = stamps.has(stamp)
    m = manifest.build(src, validated=known, workdir=workdir)
    if not known:
        # Only a manifest that passed every check is remembered: the checks
        # build() skips for a known manifest must have run once.
        try:
            stamps.put(stamp, True)
        except OSError:
            pass                  # a read-only cache only costs time
    return m
