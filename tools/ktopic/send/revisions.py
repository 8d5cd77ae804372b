"""Revisions of a mailed series, kept in the project repository.

Each topic (and the integration branch) has ``mail/<label>.yaml`` at the top
of the checkout: b4's change-id, the current revision number, and per
revision what was mailed (head, start, tree, the patch files by their git
blob id, the cover's Message-Id, when it was written or sent, the
changelog).  Committing the file lets another clone continue at v3 after
v2; docs/mail.md describes it.

The commits of a past revision are found, in this order: the ref
``refs/ktopic/mail/<label>/v<N>`` that `ktopic mail` keeps in the work
repository; the recorded head itself (generation is deterministic, so a
regenerated work repository often has it); or rebuilt by stacking the
recorded patch blobs, read from the project repository's own history, on
the base.  When none works the range-diff is left out and the cover letter
says why.

Takes a branch's label; gives its mailed revisions (the State kept in the
project) and their commits.
"""

from __future__ import annotations

import datetime
import re
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

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

    @property
    def partial(self) -> bool:
        """Sending began and did not finish: some messages are out."""
        return bool(self.delivered) and not self.sent

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
        return d


@dataclass
class State:
    label: str
    path: Path
    change_id: str
    revision: int
    revisions: dict[int, Revision] = field(default_factory=dict)

    @property
    def current(self) -> Revision | None:
        return self.revisions.get(self.revision)

    def save(self) -> None:
        import yaml
        data = {"change-id": self.change_id, "revision": self.revision,
                "revisions": {n: r.to_dict() for n, r in sorted(self.revisions.items())}}
        text = HEADER.format(what=self.label) + yaml.safe_dump(data, sort_keys=False, width=100)
        write_atomic(self.path, text)


def last_sent(state: State) -> Revision | None:
    """The newest revision of which at least one message went out."""
    return next((r for _, r in sorted(state.revisions.items(), reverse=True)
                 if r.sent or r.delivered), None)


def state_path(root: Path, label: str) -> Path:
    return Path(root) / STATE_DIR / f"{label}.yaml"


def load(root: Path, label: str) -> State | None:
    path = state_path(root, label)
    if not path.exists():
        return None
    import yaml
    rel = f"{STATE_DIR}/{path.name}"
    try:
        data = yaml.safe_load(path.read_text())
        revs = {}
        for n, r in (data.get("revisions") or {}).items():
            revs[int(n)] = Revision(
                number=int(n), head=r["head"], start=r["start"], tree=r["tree"],
                base=r.get("base", ""), stack=list(r.get("stack") or []),
                own=int(r.get("own", 0)), date=str(r.get("date", "")),
                sent=str(r.get("sent", "")), message_id=r.get("message-id", ""),
                changes=list(r.get("changes") or []), messages=int(r.get("messages", 0)),
                delivered=[str(x) for x in r.get("delivered") or []])
        state = State(label, path, str(data["change-id"]), int(data["revision"]), revs)
    except (yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise KtopicError(f"unreadable revision state ({type(e).__name__}: {e})".splitlines()[0],
                          rel) from None
    if state.revision < 1:
        raise KtopicError(f"revision must be 1 or more, not {state.revision}", rel)
    return state


def new_state(root: Path, series: str, label: str) -> State:
    slug = re.sub(r"[^a-z0-9]+", "-", f"{series}-{label}".lower()).strip("-")
    change_id = f"{datetime.date.today():%Y%m%d}-{slug}-{uuid.uuid4().hex[:12]}"
    return State(label, state_path(root, label), change_id, 1)


def blob_id(path: Path) -> str:
    return subprocess.run(["git", "hash-object", "--", str(path)], capture_output=True,
                          text=True, check=True).stdout.strip()


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
