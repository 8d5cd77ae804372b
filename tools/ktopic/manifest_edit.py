"""Rewrite one topic's `patches:` list in branches.yaml, keeping the rest
of the file (comments, layout) as it is.  The edited text is loaded and
validated before it replaces the file, and the replacement is atomic."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import yaml

from . import manifest as manifest_mod
from .manifest import Manifest


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _entry_text(p, indent: str) -> list[str]:
    if isinstance(p, str):
        return [f"{indent}- {p}\n"]
    body = yaml.safe_dump(p, sort_keys=False, default_flow_style=False, width=1000).splitlines()
    out = [f"{indent}- {body[0]}\n"]
    out += [f"{indent}  {ln}\n" for ln in body[1:]]
    return out


def set_patches(m: Manifest, topic: str, entries: list) -> Manifest:
    """Make topic's patch list `entries` (file names, or mappings with
    file/waivers); return the reloaded manifest."""
    lines = m.path.read_text().splitlines(keepends=True)
    t = m.data["topics"][topic]
    key_indent = " " * _indent(lines[t.line]) if t.line < len(lines) else "    "
    # The first key of the topic mapping is on the line after `name:`.
    first_key = min(t.lines.values())
    key_indent = " " * _indent(lines[first_key - 1])
    block = [f"{key_indent}patches:\n"] if entries else [f"{key_indent}patches: []\n"]
    for p in entries:
        block += _entry_text(p, key_indent + "  ")
    if "patches" in t.lines:
        start = t.lines["patches"] - 1
        end = start + 1
        n = len(key_indent)
        while end < len(lines):
            ln = lines[end]
            if ln.strip() == "" or ln.lstrip().startswith("#"):
                # Blank lines and comments belong to the list only if the list goes on.
                j = end
                while j < len(lines) and (lines[j].strip() == "" or lines[j].lstrip().startswith("#")):
                    j += 1
                if j < len(lines) and (_indent(lines[j]) > n or
                                       (_indent(lines[j]) == n and lines[j].lstrip().startswith("- "))):
                    end = j
                    continue
                break
            if _indent(ln) > n or (_indent(ln) == n and ln.lstrip().startswith("- ")):
                end += 1
                continue
            break
        lines[start:end] = block
    else:
        at = t.lines["branch"]           # insert after the branch: line
        lines[at:at] = block
    text = "".join(lines)
    fd, tmp = tempfile.mkstemp(dir=m.path.parent, prefix=".branches.", suffix=".yaml")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        reloaded = manifest_mod.load(tmp, m.root)
        got = [p.rel for p in reloaded.topics[topic].patches]
        want = [p if isinstance(p, str) else p["file"] for p in entries]
        if got != want:
            raise RuntimeError(f"manifest edit went wrong: {got} != {want}")
        os.replace(tmp, m.path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return manifest_mod.load(m.path, m.root)


def slug(subject: str) -> str:
    """A file name for a patch, as git format-patch makes it."""
    s = re.sub(r"^\[[^\]]*\]\s*", "", subject)
    s = re.sub(r"[^A-Za-z0-9._]+", "-", s).strip("-.")
    return s[:52].rstrip("-.") or "patch"
