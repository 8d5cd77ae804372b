"""What was sent stays known: the state file and the work repository's
record are checked against each other, a retry sends only what was
written and nothing twice, a pull request quotes only what was sent, and
the sign-off chain ends with the sender.  Every scenario counts the
messages the local SMTP server accepted."""

from __future__ import annotations

import subprocess

import pytest

from conftest import needs_b4
from test_mail import messages, smtp_sink

pytestmark = pytest.mark.usefixtures("quiet_git")


def _git_project(root, msg="project") -> None:
    """The project checkout as a git repository with everything committed."""
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=T", "-c", "user.email=t@e.org",
                    "commit", "-qm", msg], check=True)


def _cover(project, version: int) -> str:
    from test_mail import body
    return body(messages(project.root / f"out/mail/topic/counters/v{version}")[0])


@needs_b4
def test_reroll_with_nothing_changed_says_so(generated, ktopic):
    assert ktopic(*generated.args("mail", "counters")).status == 0
    r = ktopic(*generated.args("mail", "counters", "--reroll"))
    assert r.status == 0, r
    cov = _cover(generated, 2)
    assert "the cover letter was updated" not in cov, cov
    assert "Changes in v2:\n- No change to the patches\n" in cov, cov


def _state(project, label="integration") -> dict:
    import yaml
    return yaml.safe_load((project.root / f"mail/{label}.yaml").read_text())


@needs_b4
def test_a_retry_sends_no_message_edited_since_it_was_written(generated, ktopic, quiet_git):
    """2 of 4 accepted, then 0003 edited by hand: the retry checks every
    message against .ktopic-mail before sending any, names the edited one,
    and the server gets nothing more (2 -> 2)."""
    with smtp_sink(quiet_git, fail_at=3) as sink:
        assert ktopic(*generated.args("mail", "integration", "--send")).status == 1
    assert len(sink.got) == 2
    out = generated.root / "out/mail/for-next/v1"
    third = sorted(out.glob("0002-*.eml"))[0]
    third.write_bytes(third.read_bytes().replace(b"return 300;", b"return 301;"))
    with smtp_sink(quiet_git) as sink:
        r = ktopic(*generated.args("mail", "integration", "--send"))
    assert r.status == 2, r
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert third.name in r.err and "SHA-256" in r.err and "nothing was sent" in r.err, r.err
    assert sink.got == []
    assert len(_state(generated)["revisions"][1]["delivered"]) == 2
