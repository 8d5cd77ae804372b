"""Revisions of a mailed series, kept in mail/<label>.yaml in the project.

Takes a branch's label; gives its State (change-id, revisions) and the
commits of a past revision.  docs/mail.md, "Revisions".
"""

from __future__ import annotations

import datetime
import re
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ktopic.errors import KtopicError
from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.patchfile import parse
from ktopic.fileio import write_atomic

STATE_DIR = "mail"
KEEP = "refs/ktopic/mail/"
HEADER = ("# ktopic mail state of {what}: b4 change-id and revisions.\n"
          "# Written by `ktopic mail`; commit it (docs/mail.md).\n")


@dataclass
class Revision:
    number: int
    head: str
    start: str
    tree: str
    base: str
    stack: list[dict] = field(default_factory=list)   # {file, blob}, base to head
    own: int = 0                 # the last `own` entries of stack are the series
    date: str = ""
    sent: str = ""               # date of a real send; "" when only written
    message_id: str = ""
    changes: list[str] = field(default_factory=list)
    messages: int = 0            # how many messages the revision is (once sending began)
    delivered: list[str] = field(default_factory=list)   # Message-Ids the server accepted
    sending: str = ""            # the Message-Id being handed over, until the server answers

    @property
    def partial(self) -> bool:
        """Sending began and did not finish: some messages are (perhaps) out."""
        return bool(self.delivered or self.sending) and not self.sent

    def message_ids(self) -> tuple[str, list[str]]:
        """(the cover's Message-Id or "", the Message-Id of each own patch,
        "" where none went out).  `delivered` is in the order of the written
        files: the cover first (none for a one-patch series), then patch 1..N."""
        ids = list(self.delivered)
        if not ids or not self.own:
            return "", []
        cover = ids.pop(0) if (self.messages or len(ids)) > self.own else ""
        return cover, (ids + [""] * self.own)[:self.own]

    def to_dict(self) -> dict:
        d = {"head": self.head, "start": self.start, "tree": self.tree, "base": self.base,
             "own": self.own, "stack": self.stack, "date": self.date}
        if self.sent:
            d["sent"] = self.sent
        if self.message_id:
            d["message-id"] = self.message_id
        if self.changes:
            d["changes"] = self.changes
        if self.messages:
            d["messages"] = self.messages
        if self.delivered:
            d["delivered"] = self.delivered
        if self.sending:
            d["sending"] = self.sending
        return d


@dataclass
class State:
    label: str
    path: Path
    change_id: str
    revision: int
    revisions: dict[int, Revision] = field(default_factory=dict)
    data: object = field(default=None, repr=False, compare=False)   # as loaded, with lines
    mirror: object = field(default=None, repr=False, compare=False)  # called with the text saved

    def line(self, *keys) -> int | None:
        """The line of a value of the file as it was loaded (None for a
        state made here)."""
        from ktopic.model import yamlpos
        return yamlpos.line_of(self.data, list(keys)) if self.data is not None else None

    @property
    def current(self) -> Revision | None:
        return self.revisions.get(self.revision)

    def save(self) -> None:
        import yaml
        data = {"change-id": self.change_id, "revision": self.revision,
                "revisions": {n: r.to_dict() for n, r in sorted(self.revisions.items())}}
        text = HEADER.format(what=self.label) + yaml.safe_dump(data, sort_keys=False, width=100)
        write_atomic(self.path, text)
        if self.mirror is not None:
            self.mirror(text)


def last_sent(state: State) -> Revision | None:
    """The newest revision of which at least one message went out."""
    return next((r for _, r in sorted(state.revisions.items(), reverse=True)
                 if r.sent or r.delivered or r.sending), None)


def state_path(root: Path, label: str) -> Path:
    return Path(root) / STATE_DIR / f"{label}.yaml"


SCHEMA = Path(__file__).with_name("mailstate.schema.json")


def load(root: Path, label: str) -> State | None:
    """The state of mail/<label>.yaml, or None when there is none.  The
    file is the project's, as untrusted as the manifest, and is loaded as
    the manifest is (yamlpos: lines, duplicate keys, nesting and alias
    bounds; its JSON Schema, mailstate.schema.json; then what a schema
    cannot say): a KtopicError names its line."""
    path = state_path(root, label)
    if not path.exists():
        return None
    from ktopic.model import manifest, yamlpos
    rel = f"{STATE_DIR}/{path.name}"
    raw = yamlpos.read(path, rel)
    try:
        data = yamlpos.load(path, rel, raw)
    except ValueError as e:
        # A scalar Python cannot make: an int of more than 4300 digits, a
        # timestamp of month 13.
        raise KtopicError(f"a value that cannot be read: {str(e).split(';')[0]}", rel,
                          _unreadable_scalar(raw, rel)) from None
    if not isinstance(data, dict):
        raise KtopicError("the mail state must be a mapping of keys (change-id, revision, "
                          "revisions)", rel, getattr(data, "line", None) or 1)
    revisions_ = data.get("revisions")
    for r in revisions_.values() if isinstance(revisions_, dict) else []:
        for key in ("date", "sent"):
            # A date YAML reads as one (date: 2026-12-03) is the text it was.
            if isinstance(r, dict) and isinstance(r.get(key), datetime.date):
                r[key] = str(r[key])
    manifest.no_nul(data, rel)
    _no_huge(data, rel)
    manifest.validate(data, rel, SCHEMA)

    def line(*keys) -> int | None:
        return yamlpos.line_of(data, list(keys))
    revs = {}
    for n, r in (data.get("revisions") or {}).items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise KtopicError(f"revisions: {n!r} is not a revision number (1, 2, ...)", rel,
                              line("revisions", n))
        if n > data["revision"]:
            raise KtopicError(f"revisions: v{n} is recorded, but the current revision is "
                              f"{data['revision']}", rel, line("revisions", n))
        stack = [{"file": e["file"], "blob": e["blob"]} for e in r.get("stack") or []]
        own = int(r.get("own", 0))          # 2.0 is an integer to JSON Schema
        if own > len(stack):
            raise KtopicError(f"revisions.{n}.own: {own} patches of its own, but its stack "
                              f"records {len(stack)}", rel, line("revisions", n, "own"))
        revs[n] = Revision(
            number=n, head=r["head"], start=r["start"], tree=r["tree"],
            base=r.get("base", ""), stack=stack, own=own, date=r.get("date", ""),
            sent=r.get("sent", ""), message_id=r.get("message-id", ""),
            changes=list(r.get("changes") or []), messages=int(r.get("messages", 0)),
            delivered=list(r.get("delivered") or []), sending=r.get("sending", ""))
    return State(label, path, data["change-id"], int(data["revision"]), revs, data)


def _no_huge(data, name: str) -> None:
    """Refuse a number no revision or count can be (0x followed by 5000
    digits is an int to YAML, and one Python cannot even print)."""
    from ktopic.model import yamlpos
    todo = [(data, [])]
    while todo:
        node, path = todo.pop()
        if isinstance(node, dict):
            todo += [(v, [*path, k]) for k, v in node.items()] + [(k, path) for k in node]
        elif isinstance(node, list):
            todo += [(v, [*path, i]) for i, v in enumerate(node)]
        elif isinstance(node, int) and node.bit_length() > 63:
            raise KtopicError(f"{'.'.join(map(str, path)) or 'value'}: a number of "
                              f"{node.bit_length()} bits, more than any count here can be",
                              name, yamlpos.line_of(data, path))


def _unreadable_scalar(raw: bytes, name: str) -> int | None:
    """The line of the first scalar of the document that cannot be
    constructed (yamlpos composed it already, within its bounds)."""
    from ktopic.model import yamlpos
    loader = yamlpos.Loader(raw.decode("utf-8"))
    loader.name = name
    try:
        todo = [loader.get_single_node()]
        while todo:
            n = todo.pop(0)
            if isinstance(n, yaml.ScalarNode):
                try:
                    loader.construct_object(n)
                except ValueError:
                    return n.start_mark.line + 1
            elif isinstance(n, yaml.SequenceNode):
                todo[:0] = n.value
            elif isinstance(n, yaml.MappingNode):
                todo[:0] = [x for kv in n.value for x in kv]
    finally:
        loader.dispose()
    return None


def new_state(root: Path, series: str, label: str) -> State:
    slug = re.sub(r"[^a-z0-9]+", "-", f"{series}-{label}".lower()).strip("-")
    change_id = f"{datetime.date.today():%Y%m%d}-{slug}-{uuid.uuid4().hex[:12]}"
    return State(label, state_path(root, label), change_id, 1)


def blob_ids(paths: list[Path]) -> list[str]:
    """The git blob id of each file, in one git process."""
    if not paths:
        return []
    return subprocess.run(["git", "hash-object", "--", *map(str, paths)], capture_output=True,
                          text=True, check=True).stdout.split()


def find_commits(git: Git, root: Path, label: str, rev: Revision, stacker=None) -> tuple[str | None, str]:
    """(head of the old revision, how it was found), or (None, why not)."""
    keep = git.rev_parse(f"{KEEP}{label}/v{rev.number}")
    if keep:
        return keep, f"{KEEP}{label}/v{rev.number}"
    if git.rev_parse(rev.head):
        return rev.head, "its recorded head"
    if not git.rev_parse(rev.base):
        return None, f"its base {rev.base[:12]} is not in the work repository"
    if stacker is None or not rev.stack:
        return None, "its commits are not in the work repository"
    with tempfile.TemporaryDirectory(prefix="ktopic-oldrev-") as tmp:
        patches = []
        for i, entry in enumerate(rev.stack):
            p = subprocess.run(["git", "-C", str(root), "cat-file", "blob", entry["blob"]],
                               capture_output=True)
            if p.returncode != 0:
                return None, (f"its commits are not in the work repository and the project "
                              f"history lacks {entry['file']} (blob {entry['blob'][:12]})")
            f = Path(tmp, f"{i:04d}.patch")
            f.write_bytes(p.stdout)
            patches.append(parse(f, entry["file"]))
        try:
            head = stacker.stack(rev.base, patches)
        except Exception as e:      # an ApplyError, or a patch that no longer parses
            return None, f"its patches, rebuilt from the project history, do not apply ({e})"
    if head != rev.head:
        return None, f"rebuilt from the project history it gives {head[:12]}, not {rev.head[:12]}"
    return head, "rebuilt from the patch files in the project history"
