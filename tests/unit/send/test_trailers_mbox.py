"""ktopic trailers on a mailbox with messages b4 cannot read: one without
From:, one whose Date: is not a date, one with a line that b4's trailer
parser would take for a trailer and that is longer than RFC 5322's 998
characters (b4 0.12 takes time that grows with the cube of such a line's
length: a 1 MB line never ends).  Such a message is not given to b4.  One
the run does not need (a reply to another series, or one without trailer
lines) is passed over with a line on stderr; a reply to the revision that
holds trailer lines is refused, exit 2, naming the mailbox, the message
and the problem, and nothing is written."""

from __future__ import annotations

import email.message
import email.utils
import mailbox
import time

import pytest

from conftest import COUNTERS_P1 as P1, COUNTERS_P2 as P2, mailed_state, needs_b4

pytestmark = [needs_b4, pytest.mark.usefixtures("quiet_git")]

RITA = "Rita Reviewer <rita@example.org>"
SOB = "Signed-off-by: Test Porter <porter@example.org>\n"
LONG = len(f"Reviewed-by: {RITA}") + 1_000_000       # the 1 MB line below

@pytest.fixture
def mailed(generated):
    (generated.root / "mail").mkdir(exist_ok=True)
    (generated.root / "mail/counters.yaml").write_text(mailed_state(generated))
    return generated


def msg(n: int, to: str, text: str, sender: str | None = RITA, date: str | None = None):
    m = email.message.Message()
    if sender is not None:
        m["From"] = sender
    m["To"] = "Test Porter <porter@example.org>"
    m["Subject"] = f"Re: [PATCH] reply {n}"
    m["Date"] = date or email.utils.formatdate(1796378400 + n * 60, usegmt=True)
    m["Message-Id"] = f"<reply-{n}@example.net>"
    m["In-Reply-To"] = to
    m["References"] = f"<cover@example.org> {to}" if "example.org" in to else to
    m.set_payload(text)
    return m


def write_mbox(path, msgs) -> list[int]:
    """The mbox, and the line of each message's From line."""
    box = mailbox.mbox(str(path))
    for m in msgs:
        box.add(m)
    box.close()
    lines = path.read_bytes().split(b"\n")
    return [i + 1 for i, x in enumerate(lines) if x.startswith(b"From ")]


def run(mailed, ktopic, mbox):
    files = {f: (mailed.root / f).read_bytes() for f in (P1, P2)}
    refs = mailed.refs()
    r = ktopic(*mailed.args("trailers", "counters", "--mbox", mbox))
    return r, files, refs


def test_unreadable_messages_the_run_does_not_need_are_passed_over(mailed, ktopic, tmp_path):
    mbox = tmp_path / "r.mbox"
    at = write_mbox(mbox, [
        msg(1, "<other-1@example.com>", f"Reviewed-by: {RITA}\n", sender=None),
        msg(2, "<other-2@example.com>", f"Reviewed-by: {RITA}\n", date="garbage"),
        msg(3, "<p1@example.org>", "Thanks, I will look at it.\n", date="garbage"),
        msg(4, "<other-4@example.com>", f"Reviewed-by: {RITA}" + " x" * 500_000 + "\n"),
        msg(5, "<p1@example.org>", f"Reviewed-by: {RITA}\n"),
    ])
    t0 = time.monotonic()
    r, files, _ = run(mailed, ktopic, mbox)
    assert time.monotonic() - t0 < 30
    assert r.status == 0, r
    assert r.err.splitlines() == [
        f"ktopic: skipped: {mbox}:{at[0]}: message 1 (<reply-1@example.net>): it has no From: "
        f"header: passed over (not a reply to v1 of topic/counters)",
        f"ktopic: skipped: {mbox}:{at[1]}: message 2 (<reply-2@example.net>): its Date: "
        f"'garbage' is not a date: passed over (not a reply to v1 of topic/counters)",
        f"ktopic: skipped: {mbox}:{at[2]}: message 3 (<reply-3@example.net>): its Date: "
        f"'garbage' is not a date: passed over (a reply to v1 of topic/counters without "
        f"trailers)",
        f"ktopic: skipped: {mbox}:{at[3]}: message 4 (<reply-4@example.net>): line 1 of its "
        f"text reads as a trailer and has {LONG} characters, more than the 998 b4 is given "
        f"(RFC 5322's limit for a line): passed over (not a reply to v1 of topic/counters)",
    ], r.err
    assert (mailed.root / P1).read_bytes() == files[P1].replace(
        SOB.encode(), f"Reviewed-by: {RITA}\n{SOB}".encode(), 1)


@pytest.mark.parametrize("kind", ["no-from", "bad-date", "long-line"])
def test_an_unreadable_reply_with_trailers_is_refused(mailed, ktopic, tmp_path, kind):
    reply = {
        "no-from": msg(2, "<p1@example.org>", f"Reviewed-by: {RITA}\n", sender=None),
        "bad-date": msg(2, "<p1@example.org>", f"Reviewed-by: {RITA}\n", date="garbage"),
        "long-line": msg(2, "<p2@example.org>", f"Looks right.\n\nReviewed-by: {RITA}" +
                         " x" * 500_000 + "\n"),
    }[kind]
    why = {
        "no-from": "it has no From: header",
        "bad-date": "its Date: 'garbage' is not a date",
        "long-line": f"line 3 of its text reads as a trailer and has {LONG} characters, more "
                     "than the 998 b4 is given (RFC 5322's limit for a line)",
    }[kind]
    mbox = tmp_path / "r.mbox"
    at = write_mbox(mbox, [msg(1, "<p1@example.org>", f"Acked-by: {RITA}\n"), reply])
    t0 = time.monotonic()
    r, files, refs = run(mailed, ktopic, mbox)
    assert time.monotonic() - t0 < 30
    assert r.status == 2, r
    assert r.err == (f"ktopic: {mbox}:{at[1]}: message 2 (<reply-2@example.net>): a reply to v1 "
                     f"of topic/counters with trailers, but {why}: mend or remove it (nothing "
                     f"was written)\n"), r.err
    assert {f: (mailed.root / f).read_bytes() for f in files} == files
    assert mailed.refs() == refs


def test_a_trailer_line_at_the_limit_is_read(mailed, ktopic, tmp_path):
    """998 characters: b4 reads it (in a few seconds at worst)."""
    line = f"Tested-by: {RITA} # " + "on x86_64 " * 200
    line = line[:998].rstrip()
    mbox = tmp_path / "r.mbox"
    write_mbox(mbox, [msg(1, "<p1@example.org>", line + "\n")])
    r, files, _ = run(mailed, ktopic, mbox)
    assert r.status == 0, r
    assert line.encode() in (mailed.root / P1).read_bytes()


def test_a_long_trailer_line_in_a_patch_file_is_refused(mailed, ktopic, tmp_path):
    p = mailed.root / P1
    long = "Fixes: " + "a" * 100_000
    p.write_text(p.read_text().replace(SOB, SOB + long + "\n", 1))
    mbox = tmp_path / "r.mbox"
    write_mbox(mbox, [msg(1, "<p1@example.org>", f"Reviewed-by: {RITA}\n")])
    before = p.read_bytes()
    t0 = time.monotonic()
    r = ktopic(*mailed.args("trailers", "counters", "--mbox", mbox))
    assert time.monotonic() - t0 < 30
    line = before[:before.index(b"Fixes: aaa")].count(b"\n") + 1
    assert r.status == 2, r
    assert r.err == (f"ktopic: {P1}:{line}: a trailer line of 100007 characters, more than the "
                     f"998 b4 is given (RFC 5322's limit for a line)\n"), r.err
    assert p.read_bytes() == before
