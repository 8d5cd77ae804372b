"""ktopic trailers: review trailers from replies to a sent series back into
the patch files, on the synthetic project with a loopback SMTP server."""

from __future__ import annotations

import email.message
import email.utils
import mailbox
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from test_mail import body, messages, smtp_sink

from conftest import COUNTERS_P1 as P1, COUNTERS_P2 as P2, mailed_state, needs_b4

pytestmark = [needs_b4, pytest.mark.usefixtures("quiet_git")]


def reply(n: int, sender: str, to, text: str, refs=()) -> email.message.Message:
    """A plain reply: In-Reply-To the message `to`, References refs + to."""
    msg = email.message.Message()
    msg["From"] = sender
    msg["To"] = "Test Porter <porter@example.org>"
    msg["Subject"] = "Re: " + str(to["Subject"] if hasattr(to, "get") else "[PATCH] something")
    msg["Date"] = email.utils.formatdate(1796378400 + n * 60, usegmt=True)
    msg["Message-Id"] = f"<reply-{n}@example.net>"
    parent = to["Message-Id"] if hasattr(to, "get") else to
    msg["In-Reply-To"] = parent
    msg["References"] = " ".join([*refs, parent])
    msg.set_payload(text)
    return msg


def write_mbox(path, msgs) -> None:
    box = mailbox.mbox(str(path))
    for m in msgs:
        box.add(m)
    box.close()


def by_subject(msgs) -> dict:
    return {m["Subject"].split("] ", 1)[-1] if "/" in m["Subject"] else m["Subject"]: m
            for m in msgs}


@pytest.fixture
def sent_twice(generated, ktopic, quiet_git):   # noqa: F811
    """counters sent as v1, then as v2, to a loopback SMTP server; the
    messages as the list got them (from the project, a git checkout)."""
    root = str(generated.root)
    subprocess.run(["git", "init", "-q", root], check=True)
    subprocess.run(["git", "-C", root, "add", "-A"], check=True)
    subprocess.run(["git", "-C", root, "-c", "user.name=T", "-c", "user.email=t@e.org",
                    "commit", "-qm", "project"], check=True)
    with smtp_sink(quiet_git) as sink:
        r = ktopic(*generated.args("mail", "counters", "--send"))
        assert r.status == 0, r
        v1 = [email.message_from_bytes(c) for _, _, c in sink.got]
        del sink.got[:]
        r = ktopic(*generated.args("mail", "counters", "--reroll", "--send"))
        assert r.status == 0, r
        v2 = [email.message_from_bytes(c) for _, _, c in sink.got]
    v1.sort(key=lambda m: m["Subject"])
    v2.sort(key=lambda m: m["Subject"])
    assert [m["Subject"] for m in v2] == [
        "[PATCH v2 0/2] a test series (counters)", "[PATCH v2 1/2] lib/counter: return more",
        "[PATCH v2 2/2] lib/counter: return even more"]
    return generated, v1, v2


def replies(v1, v2) -> list:
    cov, p1, p2 = v2
    quoted = "> Why: a test needs it.\n> Signed-off-by: Test Porter <porter@example.org>\n"
    ann = "Ann Acker <ann@example.org>"
    rita = "Rita Reviewer <rita@example.org>"
    r2 = reply(2, rita, p1, f"On Fri, Test Porter wrote:\n{quoted}\nLooks right to me.\n\n"
               f"Reviewed-by: {rita}\nTested-by: {rita} # on x86_64\n\n-- \nRita\n",
               refs=[cov["Message-Id"]])
    return [
        *v2,                                   # the series itself, as `b4 mbox` gives it
        reply(1, ann, cov, f"For the whole series:\n\nAcked-by: {ann}\n"),
        r2,
        # the same Reviewed-by again, deeper in patch 1's thread
        reply(3, rita, r2, f"Still:\n\nReviewed-by: {rita}\n",
              refs=[cov["Message-Id"], p1["Message-Id"]]),
        # v1 while v2 is the last sent
        reply(4, "Olga Old <olga@example.org>", v1[2],
              "Reviewed-by: Olga Old <olga@example.org>\n", refs=[v1[0]["Message-Id"]]),
        # malformed addresses: one b4 drops, one it would take
        reply(5, "Mal Formed <mal@example.org>", p2,
              "Reviewed-by: Mal Formed <mal at example.org>\n"
              "Tested-by: Mal Formed <mal@example.org\n", refs=[cov["Message-Id"]]),
        # the author restating the sign-off
        reply(6, "Test Porter <porter@example.org>", p2,
              "Signed-off-by: Test Porter <porter@example.org>\n", refs=[cov["Message-Id"]]),
        # another series altogether
        reply(7, rita, "<someone-else-0-1@example.com>",
              f"Reviewed-by: {rita}\n", refs=["<someone-else-0-0@example.com>"]),
        # someone else's trailer (b4 takes a person's own only)
        reply(8, "Eve <eve@example.org>", p2, "Acked-by: Ann Acker <ann@example.org>\n",
              refs=[cov["Message-Id"]]),
    ]


def message_of(path) -> str:
    return path.read_text().split("\n---\n", 1)[0]


def test_round_trip(sent_twice, ktopic, tmp_path):
    project, v1, v2 = sent_twice
    root = project.root
    mbox = tmp_path / "replies.mbox"
    write_mbox(mbox, replies(v1, v2))
    before = {f: (root / f).read_text() for f in (P1, P2)}
    refs = project.refs()

    # --dry-run: says it all, writes nothing
    dry = ktopic(*project.args("trailers", "counters", "--mbox", mbox, "--dry-run"))
    assert dry.status == 0, dry
    assert {f: (root / f).read_text() for f in (P1, P2)} == before
    assert project.refs() == refs
    assert "would add 4 trailers to 2 patch files" in dry.out, dry.out
    # the same replies from a maildir
    md = mailbox.Maildir(str(tmp_path / "replies.maildir"))
    for msg in mailbox.mbox(str(mbox)):
        md.add(msg)
    drymd = ktopic(*project.args("trailers", "counters", "--mbox", tmp_path / "replies.maildir",
                                 "--dry-run"))
    assert drymd.status == 0, drymd
    assert sorted(drymd.out.splitlines()) == sorted(dry.out.splitlines())

    r = ktopic(*project.args("trailers", "counters", "--mbox", mbox))
    assert r.status == 0, r
    assert "6 replies to v2 of topic/counters: added 4 trailers to 2 patch files" in r.out, r.out
    skipped = r.err.strip().splitlines()
    assert all(s.startswith("ktopic: skipped: ") for s in skipped), r.err
    why = {s.split("<")[1].split(">")[0]: s for s in skipped}
    assert "taken for " + P1 + " from an earlier reply" in why["reply-3@example.net"]
    assert "a reply to v1 of topic/counters, but v2 is the last sent revision" \
        in why["reply-4@example.net"]
    assert sum("reply-5@example.net" in s and "address does not parse" in s
               for s in skipped) == 2
    assert f"from the author of {P2}, whose Signed-off-by it carries already" \
        in why["reply-6@example.net"]
    assert "a reply to another series" in why["reply-7@example.net"]
    assert "names someone other than the reply's sender" in why["reply-8@example.net"]
    assert len(skipped) == 7, skipped

    # kernel order: after the message, before the applier's sign-off
    assert message_of(root / P1).endswith(
        "Why: a test needs it.\n"   # git took "Why:" for a trailer
        "Acked-by: Ann Acker <ann@example.org>\n"
        "Reviewed-by: Rita Reviewer <rita@example.org>\n"
        "Tested-by: Rita Reviewer <rita@example.org> # on x86_64\n"
        "Signed-off-by: Test Porter <porter@example.org>"), message_of(root / P1)
    assert message_of(root / P2).endswith(
        "Why: a test needs it.\n"   # git took "Why:" for a trailer
        "Acked-by: Ann Acker <ann@example.org>\n"
        "Signed-off-by: Test Porter <porter@example.org>")
    # the diffs are untouched
    for f in (P1, P2):
        assert (root / f).read_text().split("\n---\n", 1)[1] == before[f].split("\n---\n", 1)[1]

    # the branches are regenerated from the patch files
    log = project.git("log", "--format=%B", "-2", "topic/counters")
    assert "Reviewed-by: Rita Reviewer <rita@example.org>" in log
    assert log.count("Acked-by: Ann Acker <ann@example.org>") == 2
    assert "Acked-by: Ann" in project.git("log", "--format=%B", "for-next")
    assert project.git("merge-base", "--is-ancestor", "topic/counters", "topic/names") == ""

    # again: nothing more to add, nothing written
    after = {f: (root / f).read_text() for f in (P1, P2)}
    refs = project.refs()
    again = ktopic(*project.args("trailers", "counters", "--mbox", mbox))
    assert again.status == 0 and "added 0 trailers" in again.out, again
    assert f"Reviewed-by: Rita Reviewer <rita@example.org>': already in {P1}" in again.err
    assert {f: (root / f).read_text() for f in (P1, P2)} == after
    assert project.refs() == refs

    # the next revision carries them, and says what changed
    r = ktopic(*project.args("mail", "counters", "--reroll"))
    assert r.status == 0, r
    v3 = messages(root / "out/mail/topic/counters/v3")
    assert "Reviewed-by: Rita Reviewer <rita@example.org>" in body(v3[1])
    assert "rita@example.org" in v3[1]["Cc"]                 # b4: Cc whom the trailers name
    assert "Changed the commit message only: lib/counter: return more" in body(v3[0])
    # and so does the pull request's tag (of v3, written, not sent: said so)
    r = ktopic(*project.args("pull-request", "counters", "--unsent"))
    assert r.status == 0, r
    tagged = project.git("log", "--format=%B", "test-series/counters-v3")
    assert "Tested-by: Rita Reviewer <rita@example.org> # on x86_64" in tagged


def test_refusals_of_the_whole_run(generated, ktopic, tmp_path):
    """Nothing sent yet, or no such mailbox: one line, exit 2."""
    write_mbox(tmp_path / "r.mbox", [])
    r = ktopic(*generated.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    assert r.status == 2 and r.err.startswith("ktopic: mail/counters.yaml: ") \
        and "never mailed" in r.err and len(r.err.splitlines()) == 1, r
    assert ktopic(*generated.args("mail", "counters")).status == 0       # written, not sent
    r = ktopic(*generated.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    assert r.status == 2 and "no revision of topic/counters was sent yet" in r.err, r
    r = ktopic(*generated.args("trailers", "counters", "--mbox", tmp_path / "nothing"))
    assert r.status == 2 and "no such mbox file or maildir" in r.err, r


def test_trailers_take_a_series_by_any_of_its_names(generated, ktopic, tmp_path):
    """A topic's branch names its series as the topic does, the integration
    branch's name the integration series (as mail and pull-request take them)."""
    write_mbox(tmp_path / "r.mbox", [])
    for name, label in (("topic/counters", "counters"), ("for-next", "integration")):
        r = ktopic(*generated.args("trailers", name, "--mbox", tmp_path / "r.mbox"))
        assert r.status == 2 and r.err.startswith(f"ktopic: mail/{label}.yaml: ") \
            and "never mailed" in r.err and len(r.err.splitlines()) == 1, r


def test_insert_places():
    """Before the applier's sign-off; after others' trailers; a new
    paragraph where the message has none; a patch without `---` refused."""
    from ktopic.errors import KtopicError
    from ktopic.send.trailers import insert
    head = b"From: A <a@x.org>\nSubject: [PATCH] s\n\n"
    tail = b"---\n f | 1 +\n"
    new = ["Reviewed-by: R <r@x.org>"]
    chain = head + b"Text.\n\nSigned-off-by: A <a@x.org>\nSigned-off-by: M <m@x.org>\n" + tail
    assert insert(chain, new, "m@x.org", "p") == head + (
        b"Text.\n\nSigned-off-by: A <a@x.org>\nReviewed-by: R <r@x.org>\n"
        b"Signed-off-by: M <m@x.org>\n") + tail
    assert insert(chain, new, "z@x.org", "p") == head + (
        b"Text.\n\nSigned-off-by: A <a@x.org>\nSigned-off-by: M <m@x.org>\n"
        b"Reviewed-by: R <r@x.org>\n") + tail
    assert insert(head + b"Text.\n" + tail, new, "m@x.org", "p") == \
        head + b"Text.\n\nReviewed-by: R <r@x.org>\n" + tail
    with pytest.raises(KtopicError) as e:
        insert(head + b"Text.\n", new, "m@x.org", "p")
    assert str(e.value).startswith("p: no line ends the commit message")


def test_message_ids_of_a_partly_sent_revision():
    from ktopic.send.revisions import Revision, State, last_sent
    r1 = Revision(1, "h", "s", "t", "b", own=2, messages=3, delivered=["<c>", "<p1>"],
                  sent="")
    assert r1.message_ids() == ("<c>", ["<p1>", ""])
    one = Revision(2, "h", "s", "t", "b", own=1, messages=1, delivered=["<p>"], sent="x")
    assert one.message_ids() == ("", ["<p>"])
    written = Revision(3, "h", "s", "t", "b", own=1)
    st = State("counters", None, "cid", 3, {1: r1, 2: one, 3: written})
    assert last_sent(st) is one
    assert yaml.safe_dump(written.to_dict())      # unchanged format


@pytest.fixture
def mailed(generated):
    """counters recorded as sent (v1), its patches <p1@...> and <p2@...>."""
    (generated.root / "mail").mkdir(exist_ok=True)
    (generated.root / "mail/counters.yaml").write_text(mailed_state(generated))
    return generated


def reply_mbox(path, *replies) -> None:
    """An mbox of replies (sender, Message-Id it answers, body), in UTF-8."""
    msgs = []
    for n, (sender, to, text) in enumerate(replies):
        msg = email.message.Message()
        msg["From"] = sender
        msg["To"] = "Test Porter <porter@example.org>"
        msg["Subject"] = "Re: [PATCH] lib/counter"
        msg["Date"] = email.utils.formatdate(1796378400 + n * 60, usegmt=True)
        msg["Message-Id"] = f"<reply-{n}@example.net>"
        msg["In-Reply-To"] = to
        msg["References"] = f"<cover@example.org> {to}"
        msg.set_payload(text.encode(), "utf-8")
        msgs.append(msg)
    write_mbox(path, msgs)


RITA = "Rita Reviewer <rita@example.org>"


def test_trailers_keep_the_patch_bytes(mailed, ktopic, tmp_path):
    """A patch that adds a file with CRLF lines: the file is rewritten with
    the trailer added and every other byte as it was, and the regenerated
    branch still has the CRs."""
    p = mailed.root / P1
    data = p.read_bytes()
    add = (b"diff --git a/lib/dos.txt b/lib/dos.txt\nnew file mode 100644\n"
           b"index 0000000..1111111\n--- /dev/null\n+++ b/lib/dos.txt\n"
           b"@@ -0,0 +1,2 @@\n+line one\r\n+line two\r\n")
    at = data.index(b"diff --git")
    data = data[:at] + add + data[at:]
    p.write_bytes(data)
    assert ktopic(*mailed.args("generate")).status == 0
    reply_mbox(tmp_path / "r.mbox", (RITA, "<p1@example.org>", f"Reviewed-by: {RITA}\n"))
    r = ktopic(*mailed.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    assert r.status == 0, r
    sob = b"Signed-off-by: Test Porter <porter@example.org>\n"
    assert p.read_bytes() == data.replace(sob, f"Reviewed-by: {RITA}\n".encode() + sob, 1)
    blob = subprocess.run(["git", "--git-dir", str(mailed.workdir / "linux.git"), "show",
                           "topic/counters~1:lib/dos.txt"], capture_output=True, check=True)
    assert blob.stdout == b"line one\r\nline two\r\n"


def test_trailers_go_into_the_message_that_no_dashes_line_ends(mailed, ktopic, tmp_path):
    """A message that runs straight into its diff (git am takes it), whose
    hunk removes a line `--`: the trailer goes into the message, before the
    `diff --git` line where mailinfo ends it, not at the hunk's `---` line."""
    p1, p2 = mailed.root / P1, mailed.root / P2
    text = p1.read_text()
    at = text.index("diff --git")
    p1.write_text(text[:at] + "diff --git a/lib/sig.txt b/lib/sig.txt\nnew file mode 100644\n"
                  "index 0000000..1111111\n--- /dev/null\n+++ b/lib/sig.txt\n"
                  "@@ -0,0 +1,3 @@\n+a\n+--\n+b\n" + text[at:])
    head, rest = p2.read_text().split("\n---\n", 1)
    before = (head + "\n\ndiff --git a/lib/sig.txt b/lib/sig.txt\nindex 1111111..2222222 100644\n"
              "--- a/lib/sig.txt\n+++ b/lib/sig.txt\n@@ -1,3 +1,2 @@\n a\n---\n b\n"
              + rest[rest.index("diff --git"):])
    p2.write_text(before)
    assert ktopic(*mailed.args("generate")).status == 0
    reply_mbox(tmp_path / "r.mbox", (RITA, "<p2@example.org>", f"Reviewed-by: {RITA}\n"))
    r = ktopic(*mailed.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    assert r.status == 0, r
    sob = "Signed-off-by: Test Porter <porter@example.org>\n"
    assert p2.read_text() == before.replace(sob, f"Reviewed-by: {RITA}\n" + sob, 1)
    assert mailed.git("log", "-1", "--format=%b", "topic/counters").endswith(
        f"Reviewed-by: {RITA}\n{sob}\n")
    assert mailed.git("show", "topic/counters:lib/sig.txt") == "a\nb\n"


def latin1(p) -> bytes:
    """The patch file p declaring ISO-8859-1, with a latin-1 word in its message."""
    data = p.read_bytes().replace(
        b"Subject:", b"MIME-Version: 1.0\nContent-Type: text/plain; charset=ISO-8859-1\n"
        b"Content-Transfer-Encoding: 8bit\nSubject:", 1)
    data = data.replace(b"Why: a test needs it.", b"Why: a test needs it, caf\xe9.", 1)
    p.write_bytes(data)
    return data


def test_trailers_in_a_patch_in_another_charset(mailed, ktopic, tmp_path):
    """The trailer is written in the charset the patch declares, so that git
    am reads it as sent: no traceback on the patch's latin-1 bytes, no UTF-8
    bytes read as latin-1 in the commit."""
    p = mailed.root / P1
    data = latin1(p)
    assert ktopic(*mailed.args("generate")).status == 0
    rene = "René Reviewer <rene@example.org>"
    reply_mbox(tmp_path / "r.mbox", (rene, "<p1@example.org>", f"Reviewed-by: {rene}\n"))
    r = ktopic(*mailed.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    assert r.status == 0, r
    sob = b"Signed-off-by: Test Porter <porter@example.org>\n"
    assert p.read_bytes() == data.replace(sob, f"Reviewed-by: {rene}\n".encode("latin-1") + sob)
    assert mailed.git("log", "-1", "--format=%b", "topic/counters~1") == (
        f"Why: a test needs it, café.\nReviewed-by: {rene}\n{sob.decode()}\n")


def test_a_trailer_the_patch_charset_cannot_hold_is_refused(mailed, ktopic, tmp_path):
    p = mailed.root / P1
    data = latin1(p)
    li = "李 Reviewer <li@example.org>"
    reply_mbox(tmp_path / "r.mbox", (li, "<p1@example.org>", f"Reviewed-by: {li}\n"))
    refs = mailed.refs()
    r = ktopic(*mailed.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    assert r.status == 2, r
    line = data[:data.index(b"Signed-off-by:")].count(b"\n") + 1
    assert r.err == (f"ktopic: {P1}:{line}: the mail's charset iso-8859-1 cannot hold "
                     f"'Reviewed-by: {li}'; nothing was written (a patch file in UTF-8 could "
                     f"take it)\n"), r.err
    assert p.read_bytes() == data
    assert mailed.refs() == refs
    assert sorted(x.name for x in p.parent.iterdir()) == sorted([p.name, Path(P2).name])


def test_a_trailer_with_a_control_character_is_not_taken(mailed, ktopic, tmp_path):
    """A form feed or U+2028 inside a trailer line: a reader that splits
    lines there would see a second trailer (a forged sign-off) in the
    commit.  Not taken, and said so with the character escaped."""
    reply_mbox(tmp_path / "r.mbox",
               (RITA, "<p1@example.org>",
                "Reviewed-by: Rita\x0cSigned-off-by: Linus <rita@example.org>\n"),
               (RITA, "<p1@example.org>",
                f"Tested-by: {RITA}\u2028Signed-off-by: Linus <torvalds@example.org>\n"))
    before = (mailed.root / P1).read_bytes()
    r = ktopic(*mailed.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    assert r.status == 0, r
    assert "added 0 trailers" in r.out, r.out
    assert r.err.splitlines() == [
        f"ktopic: skipped: {tmp_path / 'r.mbox'}: <reply-0@example.net> from {RITA}: "
        "'Reviewed-by: Rita\\x0cSigned-off-by: Linus <rita@example.org>': it holds a control "
        "character (U+000C)",
        f"ktopic: skipped: {tmp_path / 'r.mbox'}: <reply-1@example.net> from {RITA}: "
        f"'Tested-by: {RITA}\\u2028Signed-off-by: Linus <torvalds@example.org>': it holds a "
        "control character (U+2028)"], r.err
    assert (mailed.root / P1).read_bytes() == before


def test_a_recorded_patch_path_outside_patches_is_refused(generated, ktopic, tmp_path):
    """mail/<label>.yaml is the project's, as untrusted as the manifest: a
    patch path in it that leads out of patches/ is refused with its line,
    and the file there is not written."""
    outside = tmp_path / "outside.patch"
    outside.write_bytes((generated.root / P1).read_bytes())
    (generated.root / "mail").mkdir(exist_ok=True)
    state = mailed_state(generated, p1=outside)
    (generated.root / "mail/counters.yaml").write_text(state)
    reply_mbox(tmp_path / "r.mbox", (RITA, "<p1@example.org>", f"Reviewed-by: {RITA}\n"))
    before = outside.read_bytes()
    r = ktopic(*generated.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    line = state[:state.index(str(outside))].count("\n") + 1
    assert r.status == 2, r
    assert r.err == (f"ktopic: mail/counters.yaml:{line}: patch 1 of v1 is recorded as "
                     f"'{outside}', which is not a file under patches/\n"), r.err
    assert outside.read_bytes() == before


def test_trailers_keep_to_the_work_directory_given(generated, ktopic, tmp_path):
    """-w names the work directory for the manifest's validation stamp too,
    as for every other command: the default one is not touched."""
    default = Path(os.environ["KTOPIC_WORKDIR"])
    write_mbox(tmp_path / "r.mbox", [])
    r = ktopic(*generated.args("trailers", "counters", "--mbox", tmp_path / "r.mbox"))
    assert r.status == 2, r
    assert not (default / "validated").exists(), sorted(default.rglob("*"))
