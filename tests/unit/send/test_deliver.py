"""send/deliver: the written messages handed to the mailer one at a
time, each said as it goes (on_sending) and as it is taken (on_sent);
a mailer that fails leaves the ones before it sent and the one it had
uncertain.  The mailer is a local sendmail command, as git's
sendemail.smtpserver may name one."""

from __future__ import annotations

import os
import smtplib
from pathlib import Path

from conftest import needs_b4
from ktopic.send import deliver

SENDMAIL = """#!/bin/sh
# Keeps each message in $SINK; refuses the one numbered $FAIL_AT.
n=$(ls "$SINK" | wc -l)
n=$((n + 1))
if [ "$n" = "$FAIL_AT" ]; then echo "mail queue full" >&2; exit 75; fi
cat > "$SINK/$n.eml"
"""


def _message(path: Path, n: int) -> Path:
    path.write_text(f"From: Porter <porter@example.org>\nTo: list@example.org\n"
                    f"Cc: a@example.org\nSubject: [PATCH {n}/2] part {n}\n"
                    f"Message-Id: <part{n}@example.org>\n\nbody {n}\n")
    return path


def _env(tmp_path: Path, fail_at: int = 0) -> dict:
    sink = tmp_path / "sink"
    sink.mkdir()
    mailer = tmp_path / "sendmail"
    mailer.write_text(SENDMAIL)
    mailer.chmod(0o755)
    config = tmp_path / "gitconfig"
    config.write_text(f"[sendemail]\n\tsmtpserver = {mailer}\n\tfrom = Porter <porter@example.org>\n")
    return dict(os.environ, GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1",
                SINK=str(sink), FAIL_AT=str(fail_at))


def test_message_id_is_read_from_the_file(tmp_path):
    assert deliver.message_id(_message(tmp_path / "1.eml", 1)) == "<part1@example.org>"
    (tmp_path / "none.eml").write_text("Subject: x\n\nbody\n")
    assert deliver.message_id(tmp_path / "none.eml") == ""


def test_one_line_gives_the_servers_code_and_text():
    e = smtplib.SMTPDataError(552, b"message too\n  large")
    assert deliver.one_line(e) == "552 message too large"
    r = smtplib.SMTPRecipientsRefused({"a@example.org": (550, b"no such user")})
    assert deliver.one_line(r) == "recipients refused: a@example.org (550 no such user)"
    assert deliver.one_line(OSError("down")) == "OSError: down"


@needs_b4                   # the child connects as b4 does
def test_every_message_goes_out_in_order_each_said(tmp_path):
    files = [_message(tmp_path / f"{n}.eml", n) for n in (1, 2)]
    events = []
    d = deliver.run(files, _env(tmp_path), tmp_path,
                    on_sent=lambda mid: events.append(("sent", mid)),
                    on_sending=lambda mid: events.append(("sending", mid)))
    assert (d.sent, d.error, d.uncertain) == (["<part1@example.org>", "<part2@example.org>"], "", "")
    assert events == [("sending", "<part1@example.org>"), ("sent", "<part1@example.org>"),
                      ("sending", "<part2@example.org>"), ("sent", "<part2@example.org>")]
    got = sorted((tmp_path / "sink").iterdir())
    assert [p.read_bytes().count(b"\r\n") > 0 for p in got] == [True, True]   # CRLF, as SMTP
    assert b"Subject: [PATCH 2/2] part 2" in got[1].read_bytes()


@needs_b4                   # the child connects as b4 does
def test_a_failing_mailer_leaves_the_sent_ones_and_the_uncertain_one(tmp_path):
    files = [_message(tmp_path / f"{n}.eml", n) for n in (1, 2)]
    sent = []
    d = deliver.run(files, _env(tmp_path, fail_at=2), tmp_path, on_sent=sent.append)
    assert d.sent == sent == ["<part1@example.org>"]
    assert d.uncertain == "<part2@example.org>"
    assert "exited 75" in d.error and "mail queue full" in d.error


@needs_b4                   # the child connects as b4 does
def test_no_connection_sends_nothing_and_says_why(tmp_path):
    config = tmp_path / "gitconfig"
    config.write_text("[sendemail]\n\tsmtpserver = 127.0.0.1\n\tsmtpserverport = 1\n"
                      "\tfrom = Porter <porter@example.org>\n")
    env = dict(os.environ, GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1")
    sending = []
    d = deliver.run([_message(tmp_path / "1.eml", 1)], env, tmp_path, on_sending=sending.append)
    assert d.sent == [] and sending == [] and d.uncertain == ""
    assert d.error.startswith("connecting: ") and "refused" in d.error.lower()
