"""Deliver written messages over SMTP, one at a time, saying which went out.

Takes the message files b4 wrote (b4's SMTP settings, from git's
sendemail.*); gives a Delivery (the Message-Ids sent, an error or the one
perhaps sent), with a call back before and after each message; the SMTP
conversation runs in a child process.  docs/mail.md, "Mail a topic".
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

TOOLS = Path(__file__).resolve().parents[2]


def message_id(path: Path) -> str:
    with open(path, "rb") as f:
        msg = email.message_from_binary_file(f)
    mid = (msg.get("Message-Id") or "").strip()
    return f"<{mid.strip('<>')}>" if mid else ""


def one_line(e: BaseException) -> str:
    """An SMTP (or connection) error as one line: the server's code and text."""
    import smtplib
    if isinstance(e, smtplib.SMTPResponseException):
        text = e.smtp_error.decode(errors="replace") if isinstance(e.smtp_error, bytes) \
            else str(e.smtp_error)
        why = f"{e.smtp_code} {text}"
    elif isinstance(e, smtplib.SMTPRecipientsRefused):
        why = "recipients refused: " + ", ".join(
            f"{a} ({c} {m.decode(errors='replace') if isinstance(m, bytes) else m})"
            for a, (c, m) in e.recipients.items())
    else:
        why = f"{type(e).__name__}: {e}"
    return " ".join(why.split())


def _certain(e: BaseException) -> bool:
    """The server answered: the message was refused, not perhaps taken."""
    import smtplib
    return isinstance(e, (smtplib.SMTPResponseException, smtplib.SMTPRecipientsRefused))


def _send_one(smtp, env_from: str, name: str) -> None:
    import re
    data = Path(name).read_bytes()
    msg = email.message_from_bytes(data)
    dests = email.utils.getaddresses(msg.get_all("to", []) + msg.get_all("cc", []))
    rcpts = sorted({a for _, a in dests if a})
    data = re.sub(rb"\r\n|\n|\r(?!\n)", b"\r\n", data)
    if isinstance(smtp, list):          # a local sendmail command
        p = subprocess.run(smtp + rcpts, input=data, capture_output=True)
        if p.returncode:
            raise RuntimeError(f"{' '.join(smtp)} exited {p.returncode}: "
                               f"{p.stderr.decode(errors='replace').strip()}")
    else:
        smtp.sendmail(env_from, rcpts, data)


def _child(files: list[str]) -> int:
    """Runs in the child: READY once connected, then for each line the
    parent writes (after recording that the message is being sent) the
    next file, answered SENT, ERROR (refused) or UNCERTAIN (the
    connection failed while the server had it)."""
    import logging
    import b4
    b4.logger.setLevel(logging.CRITICAL)
    try:
        smtp, fromaddr = b4.get_smtp()
    except BaseException as e:          # noqa: BLE001 - reported as one line
        print("ERROR connecting: " + one_line(e), flush=True)
        return 1
    print("READY", flush=True)
    env_from = email.utils.parseaddr(fromaddr)[1] or fromaddr
    for name in files:
        if not sys.stdin.readline():    # the parent is gone: hand over nothing more
            return 1
        try:
            _send_one(smtp, env_from, name)
        except BaseException as e:      # noqa: BLE001
            print(("ERROR " if _certain(e) else "UNCERTAIN ") + one_line(e), flush=True)
            return 1
        print("SENT " + message_id(Path(name)), flush=True)
    if not isinstance(smtp, list):
        try:
            smtp.quit()
        except Exception:               # noqa: BLE001 - everything was accepted
            pass
    return 0


@dataclass
class Delivery:
    sent: list[str] = field(default_factory=list)    # Message-Ids, in order
    error: str = ""
    uncertain: str = ""          # the Message-Id the server may or may not have taken


def run(files: list[Path], env: dict, cwd: Path,
        on_sent: Callable[[str], None] = lambda mid: None,
        on_sending: Callable[[str], None] = lambda mid: None) -> Delivery:
    """Send files in order: on_sending(message_id) before each is handed
    over, on_sent(message_id) after each accepted one."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from ktopic.send import deliver; sys.exit(deliver._child(sys.argv[2:]))")
    out = Delivery()
    with subprocess.Popen([sys.executable, "-c", code, str(TOOLS), *map(str, files)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, cwd=cwd, stdin=subprocess.PIPE) as p:
        word, _, rest = p.stdout.readline().rstrip("\n").partition(" ")
        if word == "ERROR":
            out.error = rest
        for f in files if word == "READY" else []:
            mid = message_id(f)
            on_sending(mid)
            try:
                p.stdin.write("send\n")
                p.stdin.flush()
            except BrokenPipeError:
                pass
            word, _, rest = p.stdout.readline().rstrip("\n").partition(" ")
            if word != "SENT":
                out.error = rest
                out.uncertain = "" if word == "ERROR" else mid
                break
            out.sent.append(rest)
            on_sent(rest)
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
        err = p.stderr.read()
    if p.returncode and not out.error:
        tail = err.strip().splitlines()
        out.error = tail[-1] if tail else f"the mailer exited with status {p.returncode}"
    return out
