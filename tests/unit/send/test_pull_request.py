"""ktopic pull-request: a (signed) tag on the mailed revision and the
git request-pull text, on the synthetic project; bad input."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import missing


@pytest.fixture(autouse=True)
def gitconfig(tmp_path, monkeypatch):
    cfg = tmp_path / "gitconfig"
    cfg.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    return cfg


def mailed(project, topic: str = "counters", sent: str = "2026-12-04 09:00:00 UTC") -> str:
    """Record v1 of the topic as mailed (sent, unless sent=""), as `ktopic
    mail` would (without b4)."""
    from ktopic.send import revisions
    refs = project.refs()
    head = refs[f"refs/heads/topic/{topic}"]
    st = revisions.new_state(project.root, "test-series", topic)
    st.revisions[1] = revisions.Revision(
        1, head, refs["refs/heads/base"], project.git("rev-parse", head + "^{tree}").strip(),
        refs["refs/heads/base"], message_id="<v1-0@example.org>", sent=sent)
    st.save()
    return head


URL = "https://git.example.org/test.git"


def public_repo(tmp_path, gitconfig) -> Path:
    """The manifest's public URL, served by a local bare repository (git's
    url.insteadOf): git request-pull's ls-remote never leaves the machine."""
    pub = tmp_path / "public.git"
    subprocess.run(["git", "init", "-q", "--bare", str(pub)], check=True)
    with open(gitconfig, "a") as f:
        f.write(f'[url "{pub}"]\n\tinsteadOf = {URL}\n')
    return pub


def test_signed_tag_and_request_pull(generated, ktopic, tmp_path, gitconfig, monkeypatch):
    if shutil.which("gpg") is None:
        missing("gpg", "apt-get install gnupg (make deps)")
    gnupg = tmp_path / "gnupg"
    gnupg.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(gnupg))
    try:
        subprocess.run(["gpg", "--batch", "--quiet", "--passphrase", "", "--quick-gen-key",
                        "Test Porter <porter@example.org>", "ed25519", "sign", "never"],
                       check=True, capture_output=True)
        fpr = [ln.split(":")[9] for ln in subprocess.run(
            ["gpg", "--batch", "--with-colons", "--list-secret-keys"], capture_output=True,
            text=True, check=True).stdout.splitlines() if ln.startswith("fpr:")][0]
        gitconfig.write_text(f"[user]\n\tsigningkey = {fpr}\n")
        head = mailed(generated)
        public_repo(tmp_path, gitconfig)
        (generated.root / "out").mkdir()
        r = ktopic(*generated.args("pull-request", "counters"))
        assert r.status == 0, r
        tag = "test-series/counters-v1"
        assert f"tag {tag} (signed)" in r.out
        assert "the tag is not at" in r.err               # not pushed yet: said, not fatal
        gd = str(generated.workdir / "linux.git")
        v = subprocess.run(["git", "--git-dir", gd, "tag", "-v", tag], capture_output=True,
                           text=True)
        assert v.returncode == 0 and "Good signature" in v.stderr, v.stderr
        assert generated.git("rev-parse", tag + "^{commit}").strip() == head
        # published: the text names the public repository and the tag
        subprocess.run(["git", "--git-dir", gd, "push", "-q", URL, tag,
                        "topic/counters"], check=True)
        r = ktopic(*generated.args("pull-request", "counters"))
        assert r.status == 0, r
        assert "the tag is not at" not in r.err
        text = (generated.root / "out/pull/topic/counters-v1.txt").read_text()
        assert r.out.startswith(text)
        assert "The following changes since commit " in text
        assert f"  {URL} tags/{tag}\n" in text
        assert f"for you to fetch changes up to {head}:" in text
        assert "a test series (counters) v1" in text            # the tag message
        assert "- counters (topic/counters, 2 patches): counter changes" in text
        assert "Debian's linux-source-6.1 6.1.192-3, that is upstream v6.1.192" in text
        assert "No CI results for tree" in text
        assert "Test Porter (2):\n      lib/counter: return more\n" in text
        assert "lib/counter.c | 4 ++--" in text
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], capture_output=True)


def test_unsigned_tag_without_a_key(generated, ktopic, tmp_path, gitconfig):
    mailed(generated)
    public_repo(tmp_path, gitconfig)
    r = ktopic(*generated.args("pull-request", "counters"))
    assert r.status == 0, r
    assert "tag test-series/counters-v1 (annotated, not signed)" in r.out
    raw = generated.git("cat-file", "tag", "test-series/counters-v1")
    assert "tagger Test Porter <porter@example.org>" in raw
    assert "BEGIN PGP SIGNATURE" not in raw


def _nothing_written(project, before):
    assert not (project.root / "out/pull").exists()
    assert project.refs() == before


def test_bad_input_missing_public_url(generated, ktopic):
    mailed(generated)
    text = generated.manifest.read_text()
    generated.manifest.write_text(text.replace('  public-url: "https://git.example.org/test.git"\n', ""))
    before = generated.refs()
    r = ktopic(*generated.args("pull-request", "counters"))
    assert r.status == 2 and "branches.yaml:3: series.public-url is not set" in r.err, r
    _nothing_written(generated, before)


def test_bad_input_not_enrolled_moved_and_sender(generated, ktopic):
    before = generated.refs()
    r = ktopic(*generated.args("pull-request", "counters"))
    assert r.status == 2, r
    assert r.err.strip() == ("ktopic: mail/counters.yaml: topic/counters is not enrolled: no "
                             "revision of it was mailed (run `ktopic mail counters` first)")
    mailed(generated)
    generated.git("update-ref", "refs/heads/topic/counters", before["refs/heads/base"])
    r = ktopic(*generated.args("pull-request", "counters"))
    assert r.status == 2 and "not at" in r.err and "--reroll" in r.err, r
    generated.git("update-ref", "refs/heads/topic/counters", before["refs/heads/topic/counters"])
    text = generated.manifest.read_text()
    generated.manifest.write_text(text.replace('"Test Porter <porter@example.org>"',
                                               '"<porter@example.org>"'))
    r = ktopic(*generated.args("pull-request", "counters"))
    assert r.status == 2 and "is not a sender identity" in r.err, r
    assert len(r.err.strip().splitlines()) == 1
    _nothing_written(generated, before)


def test_only_a_sent_revision_is_quoted_and_a_stale_tag_replaced(generated, ktopic, tmp_path,
                                                                   gitconfig):
    """v1 written, not sent: the tag quotes no Message-Id.  After a real
    send the tag would be stale: it is replaced (the old one kept) and
    quotes the id; an unsigned tag is said to be unsigned."""
    from ktopic.send import revisions
    head = mailed(generated, sent="")
    public_repo(tmp_path, gitconfig)
    tag = "test-series/counters-v1"
    r = ktopic(*generated.args("pull-request", "counters", "--unsent"))
    assert r.status == 0, r
    assert "Mailed as" not in generated.git("cat-file", "tag", tag)
    assert f"tag {tag} is not signed" in r.err
    first = generated.git("rev-parse", f"refs/tags/{tag}").strip()
    st = revisions.load(generated.root, "counters")
    st.revisions[1].sent, st.revisions[1].message_id = "2026-12-04 10:00:00 UTC", "<sent@example.org>"
    st.save()
    r = ktopic(*generated.args("pull-request", "counters"))
    assert r.status == 0, r
    assert "Mailed as v1: <sent@example.org>" in generated.git("cat-file", "tag", tag)
    assert "stale" in r.err and "replaced" in r.err, r.err
    assert generated.refs()[f"refs/ktopic/replaced-tags/{tag}/{first[:12]}"] == first
    assert generated.git("rev-parse", tag + "^{commit}").strip() == head
    # the same again: reused; --retag replaces it anyway
    second = generated.git("rev-parse", f"refs/tags/{tag}").strip()
    r = ktopic(*generated.args("pull-request", "counters"))
    assert r.status == 0 and "reused" in r.err, r
    assert generated.git("rev-parse", f"refs/tags/{tag}").strip() == second
    r = ktopic(*generated.args("pull-request", "counters", "--retag"))
    assert r.status == 0 and "--retag" in r.err, r
    assert generated.refs()[f"refs/ktopic/replaced-tags/{tag}/{second[:12]}"] == second


def test_a_revision_never_sent_is_refused_unless_asked(generated, ktopic, tmp_path, gitconfig):
    """v1 sent, v2 only written: refused in one line naming v1, no tag;
    --unsent tags v2 and its text says that v2 was never sent."""
    from ktopic.send import revisions
    head = mailed(generated)
    public_repo(tmp_path, gitconfig)
    st = revisions.load(generated.root, "counters")
    v1 = st.revisions[1]
    v1.sent = "2026-12-04 10:00:00 UTC"
    st.revisions[2] = revisions.Revision(2, head, v1.start, v1.tree, v1.base)
    st.revision = 2
    st.save()
    before = generated.refs()
    r = ktopic(*generated.args("pull-request", "counters"))
    assert r.status == 2, r
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "v2 of topic/counters was never sent" in r.err and "last sent revision is v1" in r.err
    assert "--unsent" in r.err
    _nothing_written(generated, before)
    r = ktopic(*generated.args("pull-request", "counters", "--unsent"))
    assert r.status == 0, r
    text = (generated.root / "out/pull/topic/counters-v2.txt").read_text()
    assert "v2 was not sent to the list" in text, text
    assert "not sent" in generated.git("cat-file", "tag", "test-series/counters-v2")
