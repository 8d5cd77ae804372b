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


class SlowSink:
    """Accepts every message; holds the slow_at-th (1-based) for `hold`
    seconds before answering, with `started` set as it begins."""

    def __init__(self, slow_at: int, hold: float):
        import threading
        self.got, self.seen, self.slow_at, self.hold = [], 0, slow_at, hold
        self.started = threading.Event()

    async def handle_DATA(self, server, session, envelope):
        import asyncio
        self.seen += 1
        if self.seen == self.slow_at:
            self.started.set()
            await asyncio.sleep(self.hold)
        self.got.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


def _slow_sink(gitconfig, sink):
    from aiosmtpd.controller import Controller
    import contextlib

    class AnyPort(Controller):
        def _trigger_server(self):
            self.port = self.server.sockets[0].getsockname()[1]
            super()._trigger_server()

    @contextlib.contextmanager
    def run():
        ctl = AnyPort(sink, hostname="127.0.0.1", port=0, ready_timeout=120)
        ctl.start()
        try:
            gitconfig.write_text(f"[sendemail]\n\tsmtpserver = 127.0.0.1\n"
                                 f"\tsmtpserverport = {ctl.port}\n")
            yield sink
        finally:
            ctl.stop()
    return run()


@needs_b4
def test_a_killed_run_never_posts_a_message_twice(generated, ktopic, quiet_git):
    """ktopic killed (SIGKILL) while its delivery child hands the third
    message to the server: the child finishes it (3 accepted), unrecorded.
    The retry refuses that uncertain message, naming it (3 -> 3); with
    --uncertain=sent it is recorded as sent and only the fourth goes out
    (3 -> 4), never the third again."""
    import os
    import signal
    import sys
    from conftest import REPO
    sink = SlowSink(slow_at=3, hold=3.0)
    with _slow_sink(quiet_git, sink):
        p = subprocess.Popen([sys.executable, str(REPO / "tools/bin/ktopic"),
                              *generated.args("mail", "integration", "--send")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert sink.started.wait(120)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        import time
        deadline = time.monotonic() + 30
        while len(sink.got) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
    assert len(sink.got) == 3
    third = [m for _, _, m in sink.got][2]
    import email
    mid = email.message_from_bytes(third)["Message-Id"]
    with smtp_sink(quiet_git) as again:
        r = ktopic(*generated.args("mail", "integration", "--send"))
        assert r.status == 2, r
        assert len(r.err.strip().splitlines()) == 1, r.err
        assert mid in r.err and "0002-" in r.err and "--uncertain" in r.err, r.err
        assert again.got == []
        r = ktopic(*generated.args("mail", "integration", "--send", "--uncertain=sent"))
        assert r.status == 0, r
    assert [email.message_from_bytes(c)["Subject"] for _, _, c in again.got] == [
        "[PATCH 3/3] lib/names: rename"]
    v1 = _state(generated)["revisions"][1]
    assert v1["sent"] and len(v1["delivered"]) == 4 and v1["delivered"][2] == mid
    assert "sending" not in v1
