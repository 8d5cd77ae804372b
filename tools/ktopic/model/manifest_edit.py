"""Rewrite one topic's `patches:` list in branches.yaml, keeping the rest
of the file (comments, layout, line ends) as it is, byte for byte: the
lines written end as the file's first line does (CRLF in a file written
so).  The edited text is loaded and validated before it replaces the
file, and the replacement is atomic.

Takes a Manifest, a topic and its new patch list; gives the rewritten,
reloaded Manifest."""

from __future__ import annotations

import os
import re
import stat
import tempfile

import yaml

from ktopic.model import manifest as manifest_mod
from ktopic.model import yamlpos
from ktopic.errors import KtopicError
from ktopic.model.manifest import Manifest


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _lines(m: Manifest) -> tuple[list[str], str]:
    """The manifest's lines, each with its own line end as it is in the
    file, and the line end the file's first line has (that of the lines an
    edit writes)."""
    text = m.path.read_bytes().decode("utf-8")
    first = re.search(r"\r\n|\n|\r", text)
    return text.splitlines(keepends=True), first.group() if first else "\n"




class _Dumper(yaml.SafeDumper):
    """Lists indented under their key, as branches.yaml writes them."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def _entry_text(p, indent: str, eol: str = "\n") -> list[str]:
    if isinstance(p, str):
        return [f"{indent}- {p}{eol}"]
    body = yaml.dump(p, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     width=72).split("\n")[:-1]
    out = [f"{indent}- {body[0]}{eol}"]
    out += [f"{indent}  {ln}{eol}" for ln in body[1:]]
    return out


def _file(p) -> str:
    return p if isinstance(p, str) else p["file"]


def _same(a, b) -> bool:
    """The same entry, however it is spelt (a name, or a mapping of it)."""
    def norm(p):
        return {"file": p} if isinstance(p, str) else {k: v for k, v in p.items() if v}
    return norm(a) == norm(b)


def _written(t, lines: list[str], end: int) -> dict:
    """file -> (entry as loaded, its lines as written) for the topic's list,
    which ends before line index `end`."""
    old = list(t.get("patches", []))
    starts = [t["patches"].lines[i] - 1 for i in range(len(old))]
    return {_file(p): (p, lines[a:b]) for p, a, b in zip(old, starts, starts[1:] + [end])}


def _entries_text(entries: list, written: dict, indent: str, eol: str) -> list[str]:
    """The list's lines: an entry that did not change keeps its text (its
    layout, comments and anchors), unless it names an anchor that is no
    longer defined above it; any other is written out afresh."""
    out: list[str] = []
    for p in entries:
        old = written.get(_file(p))
        if old and _same(old[0], p):
            text = "".join(out)
            if all(f"&{a}" in text for a in _ALIAS.findall("".join(old[1]))):
                out += old[1]
                continue
        out += _entry_text(p, indent, eol)
    return out


_ALIAS = re.compile(r"(?<![\w&])\*([\w-]+)")


def set_patches(m: Manifest, topic: str, entries: list) -> Manifest:
    """Make topic's patch list `entries` (file names, or mappings with
    file/waivers); return the reloaded manifest."""
    lines, eol = _lines(m)
    t = _block_topic(m, topic, "patches")
    # The first key of the topic mapping is on the line after `name:`.
    first_key = min(t.lines.values())
    key_indent = " " * _indent(lines[first_key - 1])
    block = [f"{key_indent}patches:{eol}"] if entries else [f"{key_indent}patches: []{eol}"]
    if "patches" in t.lines and getattr(t["patches"], "flow", False):
        # patches: [a, b], on one line or several: written again as a block
        # list, from the key to the closing bracket (a comment after it
        # goes on the key's line).
        start = t.lines["patches"] - 1
        end, column = t["patches"].end
        comment = lines[end - 1][column:].strip()
        if comment:
            block[0] = block[0][:-len(eol)] + "  " + comment + eol
        block += _entries_text(entries, {}, key_indent + "  ", eol)
        lines[start:end] = block
    elif "patches" in t.lines:
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
        block += _entries_text(entries, _written(t, lines, end), key_indent + "  ", eol)
        lines[start:end] = block
    else:
        block += _entries_text(entries, {}, key_indent + "  ", eol)
        at = t.lines["branch"]           # insert after the branch: line
        lines[at:at] = block
    want = [_file(p) for p in entries]

    def check(reloaded: Manifest) -> None:
        got = [p.rel for p in reloaded.topics[topic].patches]
        if got != want:
            raise RuntimeError(f"manifest edit went wrong: {got} != {want}")
    return _write_validated(m, "".join(lines), check)


def _block_topic(m: Manifest, topic: str, key: str):
    """The topic's mapping, refused when it is written in flow style
    (`names: {branch: ..., patches: [...]}`): its lines are not one key
    a line, and the edit works on lines."""
    t = m.data["topics"][topic]
    if t.flow:
        raise KtopicError(f"topic {topic} is written as a flow mapping ({{...}}): ktopic cannot "
                          f"edit its {key}: list there; write the topic as a block mapping, "
                          f"one key a line", m.display(), t.line)
    return t


def slug(subject: str) -> str:
    """A file name for a patch, as git format-patch makes it."""
    s = re.sub(r"^\[[^\]]*\]\s*", "", subject)
    s = re.sub(r"[^A-Za-z0-9._]+", "-", s).strip("-.")
    return s[:52].rstrip("-.") or "patch"


# --- edits made by ktopic rebase ---------------------------------------------

def _write_validated(m: Manifest, text: str, check) -> Manifest:
    """Load text as the manifest, run check(reloaded) (raises when the edit
    went wrong), then replace the file atomically; return the reloaded one."""
    fd, tmp = tempfile.mkstemp(dir=m.path.parent, prefix=".branches.", suffix=".yaml")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))           # the line ends as they are in text
        os.chmod(tmp, stat.S_IMODE(os.stat(m.path).st_mode))    # not mkstemp's 0600
        try:
            check(manifest_mod.load(tmp, m.root, workdir=m.workdir))
        except KtopicError as e:
            e.file = f"{m.display()} (as edited)"     # not the temporary file's name
            raise
        os.replace(tmp, m.path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return manifest_mod.load(m.path, m.root, workdir=m.workdir)


def _scalar(value: str) -> str:
    """value as a YAML scalar: plain when that reads back the same, else quoted."""
    if re.fullmatch(r"[A-Za-z0-9_./+~-]+", value) and yaml.safe_load(value) == value:
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def set_base(m: Manifest, **values: str) -> Manifest:
    """Set keys of `base:` (tarball, version, debian_version) in place."""
    lines, eol = _lines(m)
    want = {k.replace("_", "-"): str(v) for k, v in values.items() if v is not None}
    for key, value in want.items():
        at = m.base.lines[key] - 1
        mt = re.match(rf"^([ \t]*{re.escape(key)}:[ \t]*)", lines[at])
        end = lines[at][len(lines[at].rstrip("\r\n")):] or eol     # the line's own end
        lines[at] = mt.group(1) + _scalar(value) + end

    def check(r: Manifest) -> None:
        got = {"tarball": str(r.base.tarball), "version": r.base.version,
               "debian-version": r.base.debian_version}
        if any(got[k] != v for k, v in want.items()):
            raise RuntimeError(f"manifest edit went wrong: base {got} != {want}")
    return _write_validated(m, "".join(lines), check)


def _block_end(lines: list[str], start: int, n: int) -> int:
    """The index after the block that starts with the key at lines[start]
    (indent n): deeper lines, and list items at the same indent."""
    end = start + 1
    while end < len(lines):
        j = end
        while j < len(lines) and (lines[j].strip() == "" or lines[j].lstrip().startswith("#")):
            j += 1
        if j < len(lines) and (_indent(lines[j]) > n or
                               (_indent(lines[j]) == n and lines[j].lstrip().startswith("- "))):
            end = j + 1
            continue
        break
    return end


def add_upstream(m: Manifest, topic: str, entry: dict, kind: str = "upstream") -> Manifest:
    """Append entry ({subject, upstream-in, evidence, checks}) to the
    topic's `upstream:` list (or the `kind` one: `dropped:` takes {subject,
    reason}), creating the list after `patches:` (or `branch:`) when there
    is none."""
    lines, eol = _lines(m)
    t = _block_topic(m, topic, kind)
    key_indent = " " * _indent(lines[min(t.lines.values()) - 1])
    n = len(key_indent)
    item = _entry_text(entry, key_indent + "  ", eol)
    before = len(getattr(m.topics[topic], kind))
    if kind in t.lines:
        start = t.lines[kind] - 1
        if lines[start].rstrip().endswith("[]"):
            lines[start:start + 1] = [f"{key_indent}{kind}:{eol}"] + item
        elif getattr(t[kind], "flow", False):
            # `upstream: [{...}, ...]`: written again as a block list with
            # the new entry last, from the key to the closing bracket (a
            # comment after it goes on the key's line), as set_patches does.
            end, column = t[kind].end
            head = f"{key_indent}{kind}:"
            comment = lines[end - 1][column:].strip()
            block = [f"{head}  {comment}{eol}" if comment else f"{head}{eol}"]
            for old in t[kind]:
                block += _entry_text(yamlpos.plain(old), key_indent + "  ", eol)
            lines[start:end] = block + item
        else:
            at = _block_end(lines, start, n)
            lines[at:at] = item
    else:
        anchor = "patches" if "patches" in t.lines else "branch"
        at = _block_end(lines, t.lines[anchor] - 1, n)
        lines[at:at] = [f"{key_indent}{kind}:{eol}"] + item

    def check(r: Manifest) -> None:
        ups = getattr(r.topics[topic], kind)
        if len(ups) != before + 1 or ups[-1].subject != entry["subject"]:
            raise RuntimeError(f"manifest edit went wrong: {kind} of {topic}")
    return _write_validated(m, "".join(lines), check)
