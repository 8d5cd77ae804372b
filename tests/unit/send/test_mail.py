"""ktopic mail on the synthetic project: b4 output, cover letter, recipients,
revisions with range-diff, a real SMTP round trip on loopback, bad input."""

from __future__ import annotations

import contextlib
import email
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import needs_b4, path_without


pytestmark = pytest.mark.usefixtures("quiet_git")




def messages(d: Path) -> list[email.message.Message]:
    out = []
    for f in sorted(d.glob("*.eml")):
        with open(f, "rb") as fh:
            out.append(email.message_from_binary_file(fh))
    return out


def body(msg) -> str:
    return msg.get_payload(decode=True).decode().replace("\r\n", "\n")


def _edit_manifest(project, old: str, new: str) -> None:
    text = project.manifest.read_text()
    assert old in text
    project.manifest.write_text(text.replace(old, new, 1))


def _commit_project(root: Path, msg: str) -> None:
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=T", "-c", "user.email=t@e.org",
                    "commit", "-qm", msg], check=True)


@needs_b4
def test_reroll_in_a_fresh_clone_range_diff(generated, ktopic, tmp_path):
    """v1 mailed from one work directory; v2 from another that never had
    v1's commits: they are rebuilt from the patch files in the project's
    history, and the cover letter carries the changelog and range-diff."""
    root = generated.root
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    _commit_project(root, "v1")
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 0, r
    assert f"messages written to {root / 'out/mail/topic/counters/v1'}" in r.out
    v1 = messages(root / "out/mail/topic/counters/v1")
    assert [m["Subject"] for m in v1] == [
        "[PATCH 0/2] a test series (counters)", "[PATCH 1/2] lib/counter: return more",
        "[PATCH 2/2] lib/counter: return even more"]
    assert "counter changes" in body(v1[0])
    _commit_project(root, "mailed v1")
    v1_head = generated.refs()["refs/heads/topic/counters"]
    p2 = root / "patches/counters/0002-lib-counter-return-even-more.patch"
    p2.write_text(p2.read_text().replace("return 300;", "return 3000;"))
    wd2 = tmp_path / "work2"
    assert ktopic("-m", generated.manifest, "-w", wd2, "import-base").status == 0
    assert ktopic("-m", generated.manifest, "-w", wd2, "generate").status == 0
    assert subprocess.run(["git", "--git-dir", str(wd2 / "linux.git"), "cat-file", "-e",
                           v1_head]).returncode != 0
    r = ktopic("-m", generated.manifest, "-w", wd2, "mail", "counters", "--reroll",
               "--changes", "counter_30 returns 3000")
    assert r.status == 0, r
    v2 = messages(root / "out/mail/topic/counters/v2")
    assert [m["Subject"] for m in v2][1] == "[PATCH v2 1/2] lib/counter: return more"
    cov = body(v2[0])
    assert "Changes in v2:\n- Changed: lib/counter: return even more\n" \
           "- counter_30 returns 3000\n" in cov, cov
    rd = cov.split("Range-diff against v1\n---------------------\n")[1]
    assert rd.startswith("1:  "), rd
    assert " = 1:  " in rd.splitlines()[0]             # unchanged
    assert " ! 2:  " in rd.splitlines()[1]             # changed
    assert "-+int counter_30(void) { return 300; }" in rd
    assert "++int counter_30(void) { return 3000; }" in rd
    st = (root / "mail/counters.yaml").read_text()
    assert "\nrevision: 2\n" in st and st.count("head:") == 2
    cid = st.split("change-id: ")[1].split()[0]
    assert f"change-id: {cid}" in cov                    # the same series, continued
    # the rebuilt v1 is kept beside v2 in the new work directory
    refs2 = generated.refs(workdir=wd2)
    assert refs2["refs/ktopic/mail/counters/v1"] == v1_head
    assert refs2["refs/ktopic/mail/counters/v2"] == refs2["refs/heads/topic/counters"]


def test_range_diff_unavailable_is_said(generated, tmp_path):
    from ktopic.send import cover, revisions
    from ktopic.model import manifest
    from ktopic.plumbing.gitutil import Git
    m = manifest.load(generated.manifest)
    git = Git(generated.workdir / "linux.git")
    base = generated.refs()["refs/heads/base"]
    gone = revisions.Revision(1, "1" * 40, base, "2" * 40, base,
                              stack=[{"file": "patches/counters/x.patch", "blob": "3" * 40}], own=1)
    head, why = revisions.find_commits(git, generated.root, "counters", gone)
    assert head is None and why == "its commits are not in the work repository"
    text = cover.render(m, cover.CoverInput(
        subject="s", body="b", branch="topic/counters", head="4" * 40, tree="5" * 40,
        revision=2, base_commit=base, previous=1, range_diff_note=f"v1 cannot be found: {why}",
        changelog=[(2, ["Changed patch file: patches/counters/x.patch"])]))
    assert "Range-diff against v1\n---------------------\nNot available: " in text
    assert "v1 cannot be found: its commits are not in the work repository." in " ".join(text.split())
    # a state file that is not YAML of ours: one line naming it
    (generated.root / "mail").mkdir()
    (generated.root / "mail/counters.yaml").write_text("change-id: [\n")
    with pytest.raises(Exception) as e:
        revisions.load(generated.root, "counters")
    assert str(e.value).startswith("mail/counters.yaml:2: YAML syntax error")


def test_targets(generated):
    """A dependent topic is mailed as its own patches on top of its
    dependencies; integration without recipients takes every topic's."""
    from ktopic.send import mail
    from ktopic.model import manifest
    m = manifest.load(generated.manifest)
    t = m.series_branch("names")
    assert (mail.subject(m, t), t.topics, mail.applies_on(m, t), t.to) == (
        "a test series (names)", ["names"], ["topic/counters"], [])
    i = m.series_branch("integration")
    assert (mail.subject(m, i), i.topics, i.to) == (
        "a test series", ["compiler", "counters", "names"], ["A Maintainer <a@example.org>"])
    assert [c.subject for c in i.carried] == ["Compiler Attributes: add __flatten"]


def test_get_maintainer_from_the_branch_tree(tmp_path):
    """get_maintainer.pl is taken from the branch and run on the series."""
    from ktopic.send import mail
    from ktopic.plumbing.gitutil import Git
    repo = tmp_path / "k"
    (repo / "scripts").mkdir(parents=True)
    (repo / "scripts/get_maintainer.pl").write_text(
        'use strict; die "no MAINTAINERS\\n" unless -f "MAINTAINERS";\n'
        'die "want --no-tree\\n" unless grep { $_ eq "--no-tree" } @ARGV;\n'
        'for my $f (grep { -f $_ } @ARGV) { open(my $h, "<", $f) or die;\n'
        '  while (<$h>) { print "Lib Maint <lib\\@example.org>\\n" if m{^\\+\\+\\+ b/lib/} } }\n'
        'print "list\\@vger.example.org\\n";\n')
    (repo / "MAINTAINERS").write_text("LIB\nF: lib/\n")
    (repo / "lib").mkdir()
    (repo / "lib/a.c").write_text("int a;\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@e.org",
               GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@e.org")
    sh = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, env=env,
                                   capture_output=True, text=True).stdout.strip()
    sh("init", "-q")
    sh("add", "-A")
    sh("commit", "-qm", "base")
    start = sh("rev-parse", "HEAD")
    (repo / "lib/a.c").write_text("int a = 1;\n")
    sh("commit", "-qam", "lib: a is one")
    head = sh("rev-parse", "HEAD")
    git = Git(repo / ".git")
    found, note = mail.get_maintainers(git, start, head)
    assert note == "" and found == ["Lib Maint <lib@example.org>", "list@vger.example.org"]
    to, cc = mail.merge_addresses(["Lib Maint <LIB@example.org>"], ["x <x@e.org>"], found)
    assert to == ["Lib Maint <LIB@example.org>"]
    assert cc == ["x <x@e.org>", "list@vger.example.org"]
    sh("rm", "-q", "scripts/get_maintainer.pl")
    sh("commit", "-qm", "no script")
    found, note = mail.get_maintainers(git, start, sh("rev-parse", "HEAD"))
    assert found == [] and note == "the tree has no scripts/get_maintainer.pl"


# --- a real SMTP round trip on 127.0.0.1 ---------------------------------------

class Sink:
    """An SMTP server's mailbox; answers 550 to the fail_at-th message (1-based)."""

    def __init__(self, fail_at: int | None = None):
        self.got, self.seen, self.fail_at = [], 0, fail_at

    async def handle_DATA(self, server, session, envelope):
        self.seen += 1
        if self.seen == self.fail_at:
            return "550 5.7.1 Message rejected by policy"
        self.got.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


@contextlib.contextmanager
def smtp_sink(gitconfig: Path, fail_at: int | None = None):
    """A loopback SMTP server that git's sendemail.* configuration names."""
    from conftest import smtp_controller
    Controller = smtp_controller()

    class AnyPort(Controller):
        """Binds port 0 (the kernel picks a free one: no window in which
        another process can take it) and reads the port back."""

        def _trigger_server(self):
            self.port = self.server.sockets[0].getsockname()[1]
            super()._trigger_server()

    sink = Sink(fail_at)
    ctl = AnyPort(sink, hostname="127.0.0.1", port=0, ready_timeout=120)
    ctl.start()
    port = ctl.port
    assert port != 0
    try:
        gitconfig.write_text(f"[sendemail]\n\tsmtpserver = 127.0.0.1\n\tsmtpserverport = {port}\n")
        yield sink
    finally:
        ctl.stop()


@needs_b4
def test_send_round_trip_over_smtp(generated, ktopic, quiet_git, tmp_path):
    """The integration branch, sent for real to an SMTP server on 127.0.0.1:
    numbering, cover letter, recipients, and git am of what arrived gives
    the branch's tree."""
    head = generated.refs()["refs/heads/for-next"]
    tree = generated.git("rev-parse", "for-next^{tree}").strip()
    rep = {"base_version": "6.1.192", "branches": [{
        "branch": "for-next", "topic": "integration", "head": head, "tree": tree,
        "config_hash": "c0ffee", "stages": [
            {"stage": "build", "status": "pass", "seconds": 51.0, "summary": "bzImage", "log": ""},
            {"stage": "boot", "status": "pass", "seconds": 17.8, "summary": "17.8s tcg", "log": ""}],
        "suites": [{"name": "counters", "status": "pass",
                    "cases": [{"name": "a", "status": "pass", "log": []}]}],
        "findings": [], "repro": {}, "same_as": ""}]}
    (generated.root / "out").mkdir()
    (generated.root / "out/report.json").write_text(json.dumps(rep))
    subprocess.run(["git", "init", "-q", str(generated.root)], check=True)
    _commit_project(generated.root, "project")

    with smtp_sink(quiet_git) as sink:
        r = ktopic(*generated.args("mail", "integration", "--send"))
    assert r.status == 0, r
    assert "sent 4 messages" in r.out
    assert [frm for frm, _, _ in sink.got] == ["porter@example.org"] * 4
    # integration has no recipients of its own: every topic's
    assert all("a@example.org" in rcpt for _, rcpt, _ in sink.got)
    msgs = [email.message_from_bytes(c) for _, _, c in sink.got]
    msgs.sort(key=lambda m: m["Subject"])
    assert [m["Subject"] for m in msgs] == [
        "[PATCH 0/3] a test series", "[PATCH 1/3] lib/counter: return more",
        "[PATCH 2/3] lib/counter: return even more", "[PATCH 3/3] lib/names: rename"]
    for m in msgs:
        assert "A Maintainer <a@example.org>" in m["To"]
        assert m["From"] == "Test Porter <porter@example.org>"
    assert all(m["In-Reply-To"] == msgs[0]["Message-Id"] for m in msgs[1:])
    cov = body(msgs[0])
    # the base said in words, and as the reproducible import commit: the
    # full id in b4's footer, and how a recipient gets it
    base = generated.refs()["refs/heads/base"]
    assert "Debian's linux-source-6.1 6.1.192-3, that is upstream v6.1.192" in cov
    assert f"\nbase-commit: {base}\n" in cov
    assert "base: Debian linux-source-6.1 6.1.192-3 (upstream v6.1.192)" in cov
    assert f"Its import by `ktopic import-base` is commit {base}" in " ".join(cov.split())
    assert " lib/counter.c | 4 ++--\n lib/names.c   | 2 +-\n" in cov      # b4's diffstat
    assert "Already in the base (not carried)" in cov
    assert '- "Compiler Attributes: add __flatten": upstream in v5.12.' in cov
    assert f"PASS: for-next at {head[:12]} (tree {tree[:12]}, config c0ffee)" in cov
    assert "  build: pass (51 s), bzImage" in cov         # not taken for a trailer
    assert "  boot: pass, 17.8s tcg" in cov               # its time said once
    assert "1 suites, 1/1 cases passed" in cov
    assert cov.split("\n---\n")[0].endswith(f"\n\nThis series is for-next at {head[:12]}.\n"), cov
    st = (generated.root / "mail/integration.yaml").read_text()
    cid = st.split("change-id: ")[1].split()[0]
    assert f"change-id: {cid}" in cov
    assert "sent:" in st and f"message-id: {msgs[0]['Message-Id']}\n" in st
    assert generated.refs()["refs/ktopic/mail/integration/v1"] == head
    # the enrolled branch stays; the sparse worktree is gone
    assert "refs/heads/b4/integration" in generated.refs()
    assert not (generated.workdir / "mail-worktrees/integration").exists()
    # git am on the base gives exactly the branch's tree
    mbox = tmp_path / "sent.mbox"
    with open(mbox, "wb") as f:
        for m in msgs[1:]:
            f.write(b"From mailer@example.org Thu Dec  3 00:00:00 2026\n" + m.as_bytes() + b"\n")
    wt = tmp_path / "am"
    generated.git("worktree", "add", "-q", "--detach", str(wt), "refs/heads/base")
    env = dict(os.environ, GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@e.org")
    subprocess.run(["git", "-C", str(wt), "am", "-q", str(mbox)], check=True, env=env)
    am_tree = subprocess.run(["git", "-C", str(wt), "rev-parse", "HEAD^{tree}"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert am_tree == tree
    # a sent revision is not sent again, nor rewritten by a plain `mail`
    # (which used to erase `sent`, so that the next --send posted it twice)
    for again in ([], ["--send"], []):
        r = ktopic(*generated.args("mail", "integration", *again))
        assert r.status == 2 and "was sent on" in r.err and "--reroll" in r.err, r
        assert (generated.root / "mail/integration.yaml").read_text() == st
    # the messages that went out stay where they were written
    written = messages(generated.root / "out/mail/for-next/v1")
    assert [m["Message-Id"] for m in written] == [m["Message-Id"] for m in msgs]


@needs_b4
def test_send_stopped_mid_series_is_recorded_and_finished(generated, ktopic, quiet_git):
    """A server that takes the cover and 1/3 and answers 550 to 2/3: the
    two are recorded by Message-Id, ktopic says "2 of 4" in one line, a
    plain `mail` refuses to rewrite the revision, and `--send` again sends
    only the other two, with their Message-Ids, in the same thread."""
    subprocess.run(["git", "init", "-q", str(generated.root)], check=True)
    _commit_project(generated.root, "project")
    with smtp_sink(quiet_git, fail_at=3) as sink:
        r = ktopic(*generated.args("mail", "integration", "--send"))
    assert r.status == 1, r
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "2 of 4 messages of v1 of for-next sent, then: 550 5.7.1 Message rejected" in r.err
    assert "`ktopic mail integration --send` sends the other 2" in r.err
    first = [email.message_from_bytes(c) for _, _, c in sink.got]
    assert [m["Subject"] for m in first] == ["[PATCH 0/3] a test series",
                                             "[PATCH 1/3] lib/counter: return more"]
    state = yaml.safe_load((generated.root / "mail/integration.yaml").read_text())
    v1 = state["revisions"][1]
    assert "sent" not in v1 and v1["messages"] == 4
    assert v1["delivered"] == [m["Message-Id"] for m in first]
    r = ktopic(*generated.args("mail", "integration"))
    assert r.status == 2 and "partly sent (2 of 4 messages)" in r.err, r
    with smtp_sink(quiet_git) as sink:
        r = ktopic(*generated.args("mail", "integration", "--send"))
    assert r.status == 0, r
    assert "sent the other 2 messages of v1" in r.out
    rest = [email.message_from_bytes(c) for _, _, c in sink.got]
    assert [m["Subject"] for m in rest] == ["[PATCH 2/3] lib/counter: return even more",
                                            "[PATCH 3/3] lib/names: rename"]
    assert all(m["In-Reply-To"] == first[0]["Message-Id"] for m in rest)
    state = yaml.safe_load((generated.root / "mail/integration.yaml").read_text())
    v1 = state["revisions"][1]
    assert v1["sent"] and v1["message-id"] == first[0]["Message-Id"]
    assert v1["delivered"] == [m["Message-Id"] for m in first + rest]
    r = ktopic(*generated.args("mail", "integration", "--send"))
    assert r.status == 2 and "was sent on" in r.err, r


# --- bad input: one line, exit 2, nothing written or sent ---------------------------

def _nothing_written(project, before):
    assert not (project.root / "out").exists()
    assert not (project.root / "mail").exists()
    assert project.refs() == before


@pytest.mark.parametrize("edit,message", [
    (("    to: [\"A Maintainer <a@example.org>\"]\n", ""), "topic counters has no recipients"),
    (('  from: "Test Porter <porter@example.org>"', '  from: "<porter@example.org>"'),
     "is not a sender identity"),
    (("description: counter changes", "description: EDITME counter changes"),
     "placeholder text 'EDITME'"),
])
def test_bad_input(generated, ktopic, edit, message):
    _edit_manifest(generated, *edit)
    before = generated.refs()
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 2, r
    assert message in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert "branches.yaml:" in r.err
    _nothing_written(generated, before)


def test_bad_input_not_generated_and_no_smtp(imported, ktopic):
    before = imported.refs()
    r = ktopic(*imported.args("mail", "counters"))
    assert r.status == 2 and "does not exist in the work repository" in r.err, r
    r = ktopic(*imported.args("mail", "counters", "--send"))
    assert r.status == 2 and "--send needs an SMTP server" in r.err, r
    r = ktopic(*imported.args("mail", "counters", "--reroll"))
    assert r.status == 2, r
    _nothing_written(imported, before)


def test_bad_input_nothing_to_mail(generated, ktopic):
    _edit_manifest(generated, "    upstream:\n", "    to: [\"M <m@example.org>\"]\n    upstream:\n")
    r = ktopic(*generated.args("mail", "compiler"))
    assert r.status == 2 and "carries no patches of its own" in r.err, r


def test_without_b4_one_line(generated, ktopic, tmp_path, monkeypatch):
    """No b4 on PATH: one line naming it, nothing written (not a traceback)."""
    monkeypatch.setenv("PATH", path_without(tmp_path / "bin", "b4"))
    before = generated.refs()
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 1, r
    assert r.err.strip() == "ktopic: b4 is not installed (make deps installs it)", r.err
    assert not (generated.root / "out").exists() and not (generated.root / "mail").exists()
    # b4's working branch is recreated by every run; no other ref moved.
    assert {k: v for k, v in generated.refs().items() if not k.startswith("refs/heads/b4/")} == before


@needs_b4
def test_changelog_sees_a_message_only_change(mailed_v1, ktopic):
    """patch-id ignores the commit message: a v2 that only rewords a
    message is not "No change to the patches"."""
    generated = mailed_v1           # `mail counters` gave v1
    p2 = generated.root / "patches/counters/0002-lib-counter-return-even-more.patch"
    p2.write_text(p2.read_text().replace("Why: a test needs it.", "Why: a test needs it, twice."))
    assert ktopic(*generated.args("generate")).status == 0
    r = ktopic(*generated.args("mail", "counters", "--reroll"))
    assert r.status == 0, r
    cov = body(messages(generated.root / "out/mail/topic/counters/v2")[0])
    assert "Changes in v2:\n- Changed the commit message only: lib/counter: return even more\n" \
        in cov, cov
    assert "No change to the patches" not in cov


def test_cover_keeps_lists_and_urls():
    """series.cover's bullet list stays a list (cover letter, tag, pull
    request all wrap with cover.wrap); a URL is never broken."""
    from ktopic.send import cover
    url = "https://lore.kernel.org/r/20261204-test-series-integration-c1ef234ffbcf-v1-0-ab@example.org"
    text = ("What it does:\n- the first thing, said at such length that it has to wrap "
            "under its marker\n- the second\n\nLink: " + url)
    assert cover.wrap(text) == [
        "What it does:",
        "- the first thing, said at such length that it has to wrap under its",
        "  marker",
        "- the second",
        "",
        "Link:",
        url]
    assert cover.wrap(f"Link to v1: {url}", indent="  ", first="- ") == ["- Link to v1:", "  " + url]


@needs_b4
def test_a_branch_behind_the_manifest_is_not_mailed(generated, ktopic):
    """A patch changed, not regenerated: for-next (and the topic) are
    behind the manifest; mail refuses and names the topic."""
    p2 = generated.root / "patches/counters/0002-lib-counter-return-even-more.patch"
    p2.write_text(p2.read_text().replace("return 300;", "return 3000;"))
    before = generated.refs()
    for name in ("integration", "counters"):
        r = ktopic(*generated.args("mail", name))
        assert r.status == 2, r
        assert "behind the manifest: topic counters" in r.err and "ktopic generate" in r.err, r
    assert generated.refs() == before
    assert not (generated.root / "out").exists() and not (generated.root / "mail").exists()


@needs_b4
def test_branch_names_notes_on_v1_and_no_patches(generated, ktopic):
    """`mail for-next` is `mail integration`; --changes on v1 is shown (as
    notes); pull-request of a topic without patches says there is nothing
    to pull instead of suggesting a mail that refuses."""
    r = ktopic(*generated.args("mail", "topic/counters", "--changes", "first posting, RFC-ish"))
    assert r.status == 0, r
    cov = body(messages(generated.root / "out/mail/topic/counters/v1")[0])
    assert "Notes on v1:\n- first posting, RFC-ish\n" in cov, cov
    r = ktopic(*generated.args("mail", "for-next"))
    assert r.status == 0 and r.out.startswith("for-next v1:"), r
    r = ktopic(*generated.args("mail", "nothing-like-it"))
    assert r.status == 2 and "no topic 'nothing-like-it'" in r.err, r
    r = ktopic(*generated.args("pull-request", "compiler"))
    assert r.status == 2 and "nothing to pull" in r.err and "ktopic mail" not in r.err, r
