"""The record of what was sent, kept in the project and in the work repository.

Takes the work repository and a state; gives a refusal or nothing.
docs/mail.md, "Revisions".
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from ktopic.errors import KtopicError
from ktopic.plumbing.gitutil import Git
from ktopic.send import revisions

STATE_REF = "refs/ktopic/mail-state/"


def store(git: Git, label: str, text: str) -> None:
    """The state file's text, as a blob the work repository keeps."""
    blob = git.run("hash-object", "-w", "--stdin", input=text).strip()
    git.run("update-ref", "-m", "ktopic mail: state", STATE_REF + label, blob)


def _out(data) -> dict[int, tuple[str, list[str], str]]:
    """{revision: (sent, delivered, sending)} of the revisions of which a
    message went out (or may have), from a loaded state."""
    revs = data.get("revisions") if isinstance(data, dict) else None
    out = {}
    for n, r in (revs or {}).items():
        if isinstance(r, dict) and (r.get("sent") or r.get("delivered") or r.get("sending")):
            out[n] = (str(r.get("sent") or ""), list(r.get("delivered") or []),
                      str(r.get("sending") or ""))
    return out


def _lacks(kept: dict, kept_id: str, state: revisions.State | None) -> int:
    """The first revision the work repository records as (perhaps) sent
    that the state file does not know of as sent, or 0."""
    for n, (sent, delivered, sending) in sorted(kept.items()):
        r = state.revisions.get(n) if state and state.change_id == kept_id else None
        if r is None or (sent and not r.sent) or not set(delivered) <= set(r.delivered) \
                or (sending and sending not in r.delivered + [r.sending]):
            return n
    return 0


def check(git: Git, root: Path, label: str, branch: str,
          state: revisions.State | None) -> None:
    """Refuse when the work repository records a message sent that the
    state file lacks; otherwise keep the file's copy in the repository."""
    rel = f"{revisions.STATE_DIR}/{label}.yaml"
    blob = git.ref(STATE_REF + label)
    kept, kept_id = {}, ""
    kept_text = git.run("cat-file", "blob", blob) if blob else None
    if blob:
        try:
            data = yaml.safe_load(kept_text)
            kept, kept_id = _out(data), str(data.get("change-id", ""))
        except (yaml.YAMLError, AttributeError):
            kept = {}
    n = _lacks(kept, kept_id, state)
    if n:
        restore = (f"mkdir -p {revisions.STATE_DIR} && git --git-dir={git.git_dir} cat-file "
                   f"blob {STATE_REF}{label} > {rel}")
        what = "is missing" if state is None else "does not say so"
        raise KtopicError(f"the work repository records v{n} of {branch} as sent "
                          f"({kept[n][0] or 'partly'}), but {rel} {what}: restore it "
                          f"(`{restore}`, in the project) and commit it; nothing was written "
                          f"or sent", rel)
    if state is not None and state.path.exists():
        text = state.path.read_text()
        if not blob or kept_text != text:
            store(git, label, text)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def checkout(root: Path, rel: str) -> None:
    """--send only from a git checkout of the project: the state file is
    kept there (keep_tracked)."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode or Path(top.stdout.strip()).resolve() != Path(root).resolve():
        raise KtopicError(f"the project at {root} is not a git checkout: {rel}, the record of "
                          f"what was sent, would stay untracked; `git init` it and commit "
                          f"before --send")


def keep_tracked(root: Path, rel: str) -> str:
    """Before a send: the state file in the project's git index (so that
    `git clean` leaves it); a note saying so, or "" when it was tracked."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return _git(root, *args)
    if git("ls-files", "--error-unmatch", "--", rel).returncode == 0:
        return ""
    p = git("add", "--", rel)
    if p.returncode:
        raise KtopicError(f"cannot add {rel} to the project's git index "
                          f"({(p.stderr.strip().splitlines() or ['?'])[-1]}): it records what "
                          f"was sent and must not stay untracked", rel)
    return f"{rel} records what was sent: added to the project's git index (git add); commit it"
