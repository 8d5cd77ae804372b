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
def test_reroll_with_nothing_changed_says_so(mailed_v1, ktopic):
    generated = mailed_v1           # `mail counters` gave v1
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
    _git_project(generated.root)
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
    from conftest import smtp_controller
    Controller = smtp_controller()
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
    _git_project(generated.root)
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


# --- a lost state file never re-posts ---------------------------------------------

def _sh(root, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=T", "-c", "user.email=t@e.org",
                           *args], check=True, capture_output=True, text=True)


@needs_b4
def test_send_keeps_the_state_file_tracked(project, generated, ktopic, quiet_git):
    """A project that is no git checkout: --send refused (nothing would keep
    the record); in a checkout the state file is added to git's index, so
    `git clean -fdx` leaves it and no second v1 goes out (3 -> 3)."""
    with smtp_sink(quiet_git) as sink:
        r = ktopic(*generated.args("mail", "counters", "--send"))
        assert r.status == 2 and "not a git checkout" in r.err, r
        assert len(r.err.strip().splitlines()) == 1
        _git_project(generated.root)
        r = ktopic(*generated.args("mail", "counters", "--send"))
        assert r.status == 0, r
        assert "mail/counters.yaml" in r.err and "git add" in r.err, r.err
        assert len(sink.got) == 3
        _sh(generated.root, "clean", "-fdxq")
        assert (generated.root / "mail/counters.yaml").exists()
        for again in ([], ["--send"]):
            r = ktopic(*generated.args("mail", "counters", *again))
            assert r.status == 2 and "was sent on" in r.err, r
        assert len(sink.got) == 3


@needs_b4
def test_a_lost_state_file_is_named_not_mailed_again(generated, ktopic, quiet_git, tmp_path):
    """v1 sent (3 messages), then the state file lost: stashed away, or a
    fresh clone of the project that has the file as committed before the
    send.  The work repository's record says v1 was sent: refused in one
    line saying how to restore it (3 -> 3); restored, the reroll goes."""
    _git_project(generated.root)
    assert ktopic(*generated.args("mail", "counters")).status == 0
    _git_project(generated.root, "mail: counters v1")          # committed, not sent yet
    with smtp_sink(quiet_git) as sink:
        assert ktopic(*generated.args("mail", "counters", "--send")).status == 0
        assert len(sink.got) == 3
        sent = (generated.root / "mail/counters.yaml").read_text()
        _sh(generated.root, "stash", "-u", "-q")            # back to the unsent v1
        assert "sent:" not in (generated.root / "mail/counters.yaml").read_text()
        for again in ([], ["--send"]):
            r = ktopic(*generated.args("mail", "counters", *again))
            assert r.status == 2, r
            assert len(r.err.strip().splitlines()) == 1, r.err
            assert "records v1 of topic/counters as sent" in r.err, r.err
            assert "cat-file blob refs/ktopic/mail-state/counters > mail/counters.yaml" in r.err
        (generated.root / "mail/counters.yaml").unlink()      # gone altogether
        r = ktopic(*generated.args("mail", "counters", "--send"))
        assert r.status == 2 and "mail/counters.yaml is missing" in r.err, r
        assert not (generated.root / "mail/counters.yaml").exists()
        # a fresh clone (the file as committed) with the same work directory
        clone = tmp_path / "clone"
        subprocess.run(["git", "clone", "-q", str(generated.root), str(clone)], check=True)
        r = ktopic("-m", clone / "branches.yaml", "-w", generated.workdir, "mail", "counters",
                   "--send")
        assert r.status == 2 and "records v1 of topic/counters as sent" in r.err, r
        assert len(sink.got) == 3
        # restored as the line says: the reroll is v2, in the same series
        restore = r.err.split("`")[1]
        subprocess.run(restore, shell=True, cwd=clone, check=True)
        assert (clone / "mail/counters.yaml").read_text() == sent
        r = ktopic("-m", clone / "branches.yaml", "-w", generated.workdir, "mail", "counters",
                   "--reroll", "--send")
        assert r.status == 0, r
        assert len(sink.got) == 6
    assert _state(generated.__class__(clone, generated.tarball), "counters")["revision"] == 2


@needs_b4
def test_a_new_work_directory_learns_from_the_state_file(generated, ktopic, quiet_git, tmp_path):
    """The project's state file says v1 was sent; a new work directory has
    no record: it takes the file's, and nothing is mailed again (3 -> 3)."""
    _git_project(generated.root)
    with smtp_sink(quiet_git) as sink:
        assert ktopic(*generated.args("mail", "counters", "--send")).status == 0
        wd2 = tmp_path / "work2"
        assert ktopic(*generated.args("import-base", workdir=wd2)).status == 0
        assert ktopic(*generated.args("generate", workdir=wd2)).status == 0
        for again in ([], ["--send"]):
            r = ktopic(*generated.args("mail", "counters", *again, workdir=wd2))
            assert r.status == 2 and "was sent on" in r.err, r
        assert len(sink.got) == 3
    blob = generated.git("rev-parse", "refs/ktopic/mail-state/counters", workdir=wd2).strip()
    assert generated.git("cat-file", "blob", blob, workdir=wd2) == \
        (generated.root / "mail/counters.yaml").read_text()


# --- the sign-off chain ---------------------------------------------------------------

PH = "Port Placeholder <port@placeholder.example.org>"
KENT = "Kent Overstreet <kent.overstreet@example.org>"
MAE = "Mae Maintainer <mae@example.org>"
C1 = "patches/counters/0001-lib-counter-return-more.patch"
N1 = "patches/names/0001-lib-names-rename.patch"


def _as_the_real_project(project, ktopic) -> None:
    """The placeholder as series.from, author and sign-off of every patch,
    but one patch that keeps its original author (Kent's, signed off by
    him, then by the placeholder)."""
    root = project.root
    text = project.manifest.read_text().replace('"Test Porter <porter@example.org>"', f'"{PH}"')
    project.manifest.write_text(text.replace("  public-url:", f'  placeholder: "{PH}"\n'
                                             "  public-url:", 1))
    for f in root.glob("patches/*/*.patch"):
        t = f.read_text().replace("Test Porter <porter@example.org>", PH)
        if f.name.startswith("0001-lib-names"):
            t = t.replace(f"From: {PH}", f"From: {KENT}").replace(
                f"Signed-off-by: {PH}", f"Signed-off-by: {KENT}\nSigned-off-by: {PH}")
        f.write_text(t)
    assert ktopic(*project.args("generate")).status == 0


@needs_b4
def test_the_sign_off_chain_ends_with_the_sender(generated, ktopic, quiet_git):
    """Nothing with the placeholder is sent: refused naming the patch file
    and line (0 accepted); `ktopic signoff` puts the maintainer in (their
    sign-off last, authorship of the port, Kent's authorship kept); then
    the series goes out (0 -> 4), the placeholder nowhere in it."""
    _as_the_real_project(generated, ktopic)
    _git_project(generated.root)
    root = generated.root
    r = ktopic(*generated.args("mail", "integration"))        # a dry run still works
    assert r.status == 0, r
    with smtp_sink(quiet_git) as sink:
        r = ktopic(*generated.args("mail", "integration", "--send"))
        assert r.status == 2 and "placeholder" in r.err and "user.email" in r.err, r
        with open(quiet_git, "a") as f:
            f.write("[user]\n\tname = Mae Maintainer\n\temail = mae@example.org\n")
        r = ktopic(*generated.args("mail", "integration", "--send"))
        assert r.status == 2, r
        assert len(r.err.strip().splitlines()) == 1, r.err
        assert f"{C1}:2: --send: its author is the placeholder {PH}" in r.err, r.err
        assert "`ktopic signoff integration`" in r.err
        r = ktopic(*generated.args("pull-request", "integration", "--unsent"))
        assert r.status == 2 and "placeholder" in r.err, r
        assert sink.got == []
        r = ktopic(*generated.args("signoff"))
        assert r.status == 0, r
        assert f"3 patch file(s) signed off by {MAE}" in r.out, r.out
        c1, n1 = (root / C1).read_text(), (root / N1).read_text()
        assert PH not in c1 and PH not in n1
        assert f"From: {MAE}\n" in c1
        assert c1.split("\n---\n")[0].endswith(f"\nSigned-off-by: {MAE}"), c1
        assert f"From: {KENT}\n" in n1
        assert f"Signed-off-by: {KENT}\nSigned-off-by: {MAE}\n---\n" in n1, n1
        assert ktopic(*generated.args("signoff")).out.startswith("0 patch file(s)")   # again: none
        _git_project(root, "signed off")
        r = ktopic(*generated.args("mail", "integration", "--send"))
        assert r.status == 0, r
    assert len(sink.got) == 4
    assert all(PH.split("<")[1].rstrip(">").encode() not in c for _, _, c in sink.got)
    import email as em
    msgs = {em.message_from_bytes(c)["Subject"]: em.message_from_bytes(c) for _, _, c in sink.got}
    assert all(m["From"] == MAE for m in msgs.values())
    kent = msgs["[PATCH 3/3] lib/names: rename"].get_payload(decode=True).decode().replace("\r\n", "\n")
    assert kent.startswith(f"From: {KENT}\n"), kent        # his authorship, in the body


def test_last_sign_off_not_the_senders_is_named(generated, monkeypatch):
    from ktopic.model import manifest
    from ktopic.send import signoffs
    m = manifest.load(generated.manifest)
    t = m.series_branch("counters")
    probs = signoffs.check(m, t, MAE)
    assert [(p.file, p.placeholder) for p in probs] == [(C1, False), (C1.replace(
        "0001-lib-counter-return-more", "0002-lib-counter-return-even-more"), False)]
    line = (generated.root / C1).read_text().splitlines()[probs[0].line - 1]
    assert line == "Signed-off-by: Test Porter <porter@example.org>"
    assert "its last Signed-off-by is Test Porter" in probs[0].text
    assert signoffs.check(m, t, "Test Porter <porter@example.org>") == []
