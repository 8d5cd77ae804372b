"""ktopic mail and b4's branch b4/<topic>: ktopic moves it to each series it
mails, but a branch holding commits ktopic did not make (made there by hand
with `b4 prep`, as docs/mail.md invites) is not overwritten, as generate
does not overwrite a topic branch: refused without --force, and with it
the old head is kept under refs/ktopic/backup/ and said.  A run that fails
moves no ref."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import needs_b4, path_without

pytestmark = [needs_b4, pytest.mark.usefixtures("quiet_git")]

B4 = "refs/heads/b4/counters"
MADE = "refs/ktopic/made/b4/counters"


def hand_commit(project, ref: str) -> str:
    """A commit on top of ref, as a maintainer makes one with git or b4 prep."""
    tip = project.git("rev-parse", ref).strip()
    env = dict(os.environ, GIT_AUTHOR_NAME="M", GIT_AUTHOR_EMAIL="m@example.org",
               GIT_COMMITTER_NAME="M", GIT_COMMITTER_EMAIL="m@example.org",
               GIT_DIR=str(project.workdir / "linux.git"))
    new = subprocess.run(["git", "commit-tree", "-p", tip, "-m", "by hand", f"{tip}^{{tree}}"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    project.git("update-ref", ref, new, tip)
    return new


def test_a_hand_made_commit_on_b4_branch_is_kept(mailed_v1, ktopic):
    generated = mailed_v1           # `mail counters` gave v1
    refs = generated.refs()
    assert refs[B4] == refs[MADE]
    # mailing again moves the branch ktopic made
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 0, r
    assert generated.refs()[B4] == generated.refs()[MADE]

    mine = hand_commit(generated, B4)
    out = generated.root / "out/mail/topic/counters/v1"
    written = {p.name: p.read_bytes() for p in out.iterdir()}
    state = (generated.root / "mail/counters.yaml").read_text()
    before = generated.refs()
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 1, r
    assert r.err == (f"ktopic: branch b4/counters holds commits ktopic did not make (head "
                     f"{mine[:12]}); not overwritten. Keep them on a branch of their own (git "
                     f"branch -m), or pass --force to replace it (the old head is kept under "
                     f"refs/ktopic/backup/b4/counters/)\n"), r.err
    assert generated.refs() == before
    assert {p.name: p.read_bytes() for p in out.iterdir()} == written
    assert (generated.root / "mail/counters.yaml").read_text() == state

    r = ktopic(*generated.args("mail", "counters", "--force"))
    assert r.status == 0, r
    refs = generated.refs()
    backups = {k: v for k, v in refs.items() if k.startswith("refs/ktopic/backup/b4/counters/")}
    assert list(backups.values()) == [mine], refs
    assert refs[B4] == refs[MADE] != mine
    assert (f"ktopic: note: branch b4/counters held commits ktopic did not make (head "
            f"{mine[:12]}); replaced, the old head kept as {list(backups)[0]}\n") in r.err, r.err
    # b4's branch is enrolled, b4's cover commit under the series
    assert "b4-submit-tracking" in generated.git("log", "-1", "--format=%B", "b4/counters~2")
    cfg = generated.git("config", "--get", "branch.b4/counters.b4-prep-cover-strategy")
    assert cfg.strip() == "commit"


def test_a_branch_of_its_own_name_made_before_is_not_overwritten(generated, ktopic):
    """b4/<topic> with no record of ktopic making it: not overwritten."""
    generated.git("branch", "b4/counters", "topic/counters~1")
    mine = generated.refs()[B4]
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 0, r            # behind the branch mailed: nothing would be lost
    assert generated.refs()[B4] != mine
    hand = hand_commit(generated, "refs/heads/topic/counters")
    generated.git("update-ref", "refs/heads/topic/counters", f"{hand}~1")
    generated.git("update-ref", MADE, f"{hand}~1")      # another record
    generated.git("update-ref", B4, hand)
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 1 and "holds commits ktopic did not make" in r.err, r
    assert generated.refs()[B4] == hand


def test_b4_branch_checked_out_elsewhere_is_not_moved(generated, ktopic, tmp_path):
    generated.git("branch", "b4/counters", "topic/counters")
    wt = tmp_path / "mine"
    generated.git("worktree", "add", "-q", "--no-checkout", str(wt), "b4/counters")
    before = generated.refs()
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 1, r
    assert r.err == (f"ktopic: branch b4/counters is checked out in the worktree at {wt}; not "
                     f"moved (git branch -f refuses it too). Switch that worktree to another "
                     f"branch or detach it (git switch --detach), then mail again\n"), r.err
    assert generated.refs() == before


def test_a_failed_run_moves_no_ref(mailed_v1, ktopic, tmp_path, monkeypatch):
    generated = mailed_v1           # `mail counters` gave v1
    before = generated.refs()
    cfg = generated.git("config", "--list")
    monkeypatch.setenv("PATH", path_without(tmp_path / "bin", "b4"))
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 1 and "b4 is not installed" in r.err, r
    assert generated.refs() == before
    assert generated.git("config", "--list") == cfg
    assert generated.git("worktree", "list").count("\n") == 1       # the bare repository only
