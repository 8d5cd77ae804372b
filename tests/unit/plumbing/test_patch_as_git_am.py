"""A patch file is the commit `git am` makes of it, whatever the mail's
encoding: quoted-printable and base64 bodies are applied as git mailinfo
decodes them, a CRLF file as git mailsplit leaves it (without the CRs), a
message in Latin-1 (no charset said) is committed as git commit-tree
re-encodes it, and the message is cleaned up as git am cleans it.

Each case writes a variant of topic names' patch, generates, and compares
topic/names with the commit `git am --committer-date-is-author-date`
makes of the same file on topic/counters, in a worktree of the work
repository: the same commit id (tree, author, committer, message)."""

from __future__ import annotations

import base64
import os
import quopri
import subprocess

import pytest

from conftest import TREE, git_in, make_patch
from ktopic.plumbing import commitobj

NAMES = "patches/names/0001-lib-names-rename.patch"
MIME = ("MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
        "Content-Transfer-Encoding: {}\n")


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> bytes:
    """names' patch, plus a new file whose lines hold '=' and a line longer
    than quoted-printable's 76 columns."""
    tmp = tmp_path_factory.mktemp("am-patch")
    long = "/* " + "a long line " * 10 + "*/"
    return make_patch(tmp, dict(TREE), [
        ("lib/names.c", '"n7"', '"seven"'),
        ("lib/x.c", "", f"int x = 1;\nint y =\t2;  \n{long}\n")],
        "lib/names: rename", "Thu, 3 Dec 2026 06:02:00 +0000").encode()


def _split(mail: bytes) -> tuple[bytes, bytes]:
    head, _, body = mail.partition(b"\n\n")
    return head + b"\n", body


def qp(mail: bytes) -> bytes:
    head, body = _split(mail)
    return head + MIME.format("quoted-printable").encode() + b"\n" + quopri.encodestring(body)


def b64(mail: bytes) -> bytes:
    head, body = _split(mail)
    return head + MIME.format("base64").encode() + b"\n" + base64.encodebytes(body)


def crlf(mail: bytes) -> bytes:
    return mail.replace(b"\n", b"\r\n")


def latin1(mail: bytes) -> bytes:
    """No charset declared; Latin-1 in the author, subject and body, and a
    body git am cleans up (trailing blanks, runs of empty lines)."""
    return (mail.replace(b"From: Test Porter", b"From: Andr\xe9 Porter")
                .replace(b"Subject: [PATCH] lib/names: rename",
                         b"Subject: [PATCH] lib/names: caf\xe9 rename")
                .replace(b"Why: a test needs it.",
                         b"Why: the caf\xe9 needs it.  \n\n\n\nAnd\t\n\xa0more."))


VARIANTS = {"plain": lambda m: m, "quoted-printable": qp, "base64": b64, "crlf": crlf,
            "crlf-quoted-printable": lambda m: crlf(qp(m)), "latin1": latin1}


def _git_am(project, patch, tmp_path, *options: str) -> str:
    wt = tmp_path / "wt"
    subprocess.run(["git", "--git-dir", str(project.workdir / "linux.git"), "worktree", "add",
                    "-q", "--detach", str(wt), "topic/counters"], check=True)
    r = subprocess.run(["git", "am", "-q", "--committer-date-is-author-date", *options,
                        str(patch)], cwd=wt,
                       capture_output=True, env=dict(os.environ, GIT_CONFIG_NOSYSTEM="1",
                                                     GIT_CONFIG_GLOBAL=os.devnull,
                                                     GIT_COMMITTER_NAME="x",
                                                     GIT_COMMITTER_EMAIL="x@example.org"))
    assert r.returncode == 0, r
    # The committer is the author, as ktopic makes it.
    who = git_in(wt, "log", "-1", "--format=%an%x00%ae").rstrip("\n").split("\0")
    git_in(wt, "reset", "-q", "--hard", "HEAD~")
    git_in(wt, "am", "-q", "--committer-date-is-author-date", *options, str(patch),
           env={"GIT_COMMITTER_NAME": who[0], "GIT_COMMITTER_EMAIL": who[1],
                "GIT_CONFIG_GLOBAL": os.devnull})
    head = git_in(wt, "rev-parse", "HEAD").strip()
    subprocess.run(["git", "--git-dir", str(project.workdir / "linux.git"), "worktree", "remove",
                    "--force", str(wt)], check=True)
    return head


@pytest.mark.parametrize("variant", VARIANTS)
def test_generate_makes_the_commit_git_am_makes(generated, ktopic, plain, variant, tmp_path):
    patch = generated.root / NAMES
    patch.write_bytes(VARIANTS[variant](plain))
    r = ktopic(*generated.args("generate"))
    assert r.status == 0, r
    theirs = _git_am(generated, patch, tmp_path)
    ours = generated.git("rev-parse", "topic/names").strip()
    assert ours == theirs, (generated.git("cat-file", "-p", ours),
                            generated.git("cat-file", "-p", theirs),
                            generated.git("diff", theirs, ours))
    assert "int x = 1;" in generated.git("show", "topic/names:lib/x.c")


def test_the_crs_of_a_diff_in_a_plain_mail_are_kept(generated, ktopic, plain, tmp_path):
    """A mail whose diff adds CRLF lines, the other lines LF: the CRs are
    the file's (no transport added them), kept as `git am --keep-cr`
    keeps them; plain git am would drop them."""
    patch = generated.root / NAMES
    patch.write_bytes(plain.replace(b"+int x = 1;\n", b"+int x = 1;\r\n"))
    assert ktopic(*generated.args("generate")).status == 0
    assert generated.git("rev-parse", "topic/names").strip() == \
        _git_am(generated, patch, tmp_path, "--keep-cr")
    blob = subprocess.run(["git", "--git-dir", str(generated.workdir / "linux.git"), "show",
                           "topic/names:lib/x.c"], capture_output=True, check=True).stdout
    assert blob.startswith(b"int x = 1;\r\nint y")


@pytest.mark.parametrize("variant", ["quoted-printable", "base64"])
def test_an_error_in_a_decoded_diff_names_its_line_there(generated, ktopic, plain, variant):
    """git apply's line numbers are those of the decoded diff, not of
    the file: said so."""
    broken = plain.replace(b"+int x = 1;\n", b"+int x = 1;\n@@ garbage\n")
    (generated.root / NAMES).write_bytes(VARIANTS[variant](broken))
    r = ktopic(*generated.args("generate", "names"))
    assert r.status == 1, r
    assert len(r.err.strip().splitlines()) == 1, r
    assert "of the diff git mailinfo decodes" in r.err, r


def test_an_error_in_a_plain_patch_names_the_line_of_the_file(generated, ktopic, plain):
    broken = plain.replace(b"+int x = 1;\n", b"+int x = 1;\n@@ garbage\n")
    (generated.root / NAMES).write_bytes(crlf(broken))
    r = ktopic(*generated.args("generate", "names"))
    assert r.status == 1, r
    want = broken.split(b"\n").index(b"@@ garbage") + 1
    assert f"corrupt patch at line {want}\n" in r.err, r


BYTES = [b"caf\xe9", b"ok \xc3\xa9", b"\xef\xb7\x90 U+FDD0", b"\xef\xbf\xbe U+FFFE",
         b"\xf0\x9f\xbf\xbe U+1FFFE", b"\xed\xa0\x80 surrogate", b"\xc0\xaf overlong",
         b"\xe2\x82 cut", b"cut at the end \xe2\x82", b"\xf8\x88\x80\x80\x80 five",
         b"\xf4\x90\x80\x80 beyond", b"\xf0\x9f\x98\x80 emoji", b"\x80\xbf lone",
         b"\xe0\xa0\x80 U+0800"]


def test_git_utf8_is_what_git_commit_tree_writes(tmp_path):
    gd = tmp_path / "g.git"
    subprocess.run(["git", "init", "-q", "--bare", str(gd)], check=True)
    env = dict(os.environ, GIT_DIR=str(gd), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b", GIT_COMMITTER_NAME="a",
               GIT_COMMITTER_EMAIL="a@b", GIT_AUTHOR_DATE="@1 +0000", GIT_COMMITTER_DATE="@1 +0000")
    tree = subprocess.run(["git", "mktree"], input=b"", env=env, capture_output=True,
                          check=True).stdout.decode().strip()
    for raw in BYTES:
        c = subprocess.run(["git", "commit-tree", tree], input=b"x " + raw + b"\n", env=env,
                           capture_output=True, check=True).stdout.decode().strip()
        body = subprocess.run(["git", "cat-file", "commit", c], env=env, capture_output=True,
                              check=True).stdout.split(b"\n\n", 1)[1]
        assert commitobj.git_utf8(b"x " + raw + b"\n").encode() == body, raw
