"""ktopic import-mbox on untrusted mboxes: what git am and b4 take as a
series is imported, what they refuse is refused in one line, and a
refusal or an interrupt leaves the checkout as it was."""

from __future__ import annotations

import base64
import os
import quopri

import pytest

from conftest import TREE, make_patch
from ktopic.errors import KtopicError
from ktopic.model import manifest, manifest_edit

STEPS = [('"n1"', '"one"', "lib/names: one"), ('"n2"', '"two"', "lib/names: two"),
         ('"n3"', '"three"', "lib/names: three")]


@pytest.fixture(scope="session")
def series(tmp_path_factory) -> list[str]:
    """A three-patch series [PATCH n/3] on top of topic/names."""
    tmp = tmp_path_factory.mktemp("series")
    tree = dict(TREE, **{"lib/names.c": TREE["lib/names.c"].replace('"n7"', '"seven"')})
    out = []
    for i, (old, new, subject) in enumerate(STEPS, 1):
        p = make_patch(tmp, tree, [("lib/names.c", old, new)], subject,
                       f"Thu, 3 Dec 2026 07:0{i}:00 +0000")
        out.append(p.replace("[PATCH]", f"[PATCH {i}/3]", 1))
        tree = dict(tree, **{"lib/names.c": tree["lib/names.c"].replace(old, new)})
    return out


def _checkout(project) -> dict:
    """Every path under the checkout: its bytes, or where a link points."""
    out = {}
    for p in sorted(project.root.rglob("*")):
        rel = str(p.relative_to(project.root))
        out[rel] = ("link", os.readlink(p)) if p.is_symlink() else \
            ("dir", None) if p.is_dir() else ("file", p.read_bytes())
    return out

def _refused(project, ktopic, mbox, topic: str = "names"):
    """import-mbox refuses mbox: one line, exit 2, the checkout as it was."""
    before = _checkout(project)
    r = ktopic(*project.args("import-mbox", str(mbox), "--topic", topic))
    assert r.status == 2 and r.err.count("\n") == 1, r
    assert _checkout(project) == before
    return r



def _subjects(project, branch: str = "topic/names") -> list[str]:
    return project.git("log", "--reverse", "--format=%s", branch).splitlines()


def _encoded(mail: str, cte: str) -> str:
    """mail with its body in cte (as a mailer may send it)."""
    head, body = mail.split("\n\n", 1)
    if cte == "base64":
        data = base64.encodebytes(body.encode()).decode()
    else:
        data = quopri.encodestring(body.encode()).decode()
    return (head + "\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
            f"Content-Transfer-Encoding: {cte}\n\n" + data)


REPLY = """\
From rita@example.org Thu Dec  3 08:00:00 2026
From: Rita R <rita@example.org>
Date: Thu, 3 Dec 2026 08:00:00 +0000
Subject: Re: [PATCH 2/3] lib/names: two
In-Reply-To: <p2@example.org>

How about this instead (untested):

diff --git a/lib/names.c b/lib/names.c
--- a/lib/names.c
+++ b/lib/names.c
@@ -1,3 +1,3 @@
 const char *name_0 = "n0";
-const char *name_1 = "n1";
+const char *name_1 = "uno";
 const char *name_2 = "n2";
"""

COVER = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test Porter <porter@example.org>
Date: Thu, 3 Dec 2026 07:00:00 +0000
Subject: [PATCH{v} 0/3] lib/names: three more names

Three more.

Test Porter (3):
  lib/names: one
  lib/names: two
  lib/names: three

 lib/names.c | 6 +++---
 1 file changed, 3 insertions(+), 3 deletions(-)

Interdiff against v1:
diff --git a/lib/names.c b/lib/names.c
index 1111111..2222222 100644
--- a/lib/names.c
+++ b/lib/names.c
@@ -1,3 +1,3 @@
 const char *name_0 = "n0";
-const char *name_1 = "uno";
+const char *name_1 = "one";
 const char *name_2 = "n2";
--
2.39.5

"""


def test_replies_are_not_patches(generated, ktopic, tmp_path, series):
    """A thread mbox (b4 mbox) holds the reviewers' replies; a diff in one
    is a suggestion, not a patch of the series, and does not go first."""
    mbox = tmp_path / "thread.mbox"
    mbox.write_text("".join(series) + REPLY)
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "names"))
    assert r.status == 0, r
    assert r.out.splitlines()[:3] == ["patches/names/0002-lib-names-one.patch",
                                      "patches/names/0003-lib-names-two.patch",
                                      "patches/names/0004-lib-names-three.patch"]
    assert r.err == (f"ktopic: skipped: {mbox}: mail 4: a reply "
                     f"('Re: [PATCH 2/3] lib/names: two')\n"), r.err
    assert ktopic(*generated.args("generate", "names")).status == 0
    assert _subjects(generated)[-3:] == ["lib/names: one", "lib/names: two", "lib/names: three"]


def test_interdiff_cover_letter_is_not_a_patch(generated, ktopic, tmp_path, series):
    """git format-patch --cover-letter --interdiff puts a diff in the 0/N mail."""
    mbox = tmp_path / "v2.mbox"
    mbox.write_text(COVER.format(v=" v2") +
                    "".join(s.replace("[PATCH ", "[PATCH v2 ", 1) for s in series))
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "names"))
    assert r.status == 0, r
    assert r.out.splitlines()[0] == "patches/names/0002-lib-names-one.patch"
    assert r.err == (f"ktopic: skipped: {mbox}: mail 1: a cover letter "
                     f"('[PATCH v2 0/3] lib/names: three more names')\n"), r.err
    assert not list((generated.root / "patches/names").glob("*SUBJECT*"))
    assert len(list((generated.root / "patches/names").iterdir())) == 4


@pytest.mark.parametrize("cte", ["base64", "quoted-printable"])
def test_encoded_patch_is_imported(generated, ktopic, tmp_path, series, cte):
    """git am decodes the body; so does import-mbox, and generate applies it."""
    mbox = tmp_path / "encoded.mbox"
    two = _encoded(series[1], cte)
    assert "diff --git" not in two or cte != "base64"
    mbox.write_text(series[0] + two + series[2])
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "names"))
    assert r.status == 0, r
    assert len(r.out.splitlines()) == 4, r.out
    written = (generated.root / "patches/names/0003-lib-names-two.patch").read_text()
    assert '+const char *name_2 = "two";\n' in written
    r = ktopic(*generated.args("generate", "names"))
    assert r.status == 0, r
    assert _subjects(generated)[-3:] == ["lib/names: one", "lib/names: two", "lib/names: three"]


def test_patch_without_subject_is_not_dropped(generated, ktopic, tmp_path, series):
    """git am takes the message's first line as the subject; ktopic refuses a
    patch without a Subject: (as generate does), naming the mail."""
    mbox = tmp_path / "nosubj.mbox"
    two = series[1].replace("Subject: [PATCH 2/3] lib/names: two\n", "")
    mbox.write_text(series[0] + two + series[2])
    r = _refused(generated, ktopic, mbox)
    assert r.err.startswith(f"ktopic: {mbox}: mail 2: "), r.err
    assert "Subject" in r.err


def test_numbered_mail_without_a_diff_is_refused(generated, ktopic, tmp_path, series):
    mbox = tmp_path / "nodiff.mbox"
    two = series[1].split("\ndiff --git")[0] + "\n"
    mbox.write_text(series[0] + two + series[2])
    r = _refused(generated, ktopic, mbox)
    assert r.err.startswith(f"ktopic: {mbox}: mail 2: ") and "diff" in r.err, r.err


def test_series_with_a_missing_part_is_refused(generated, ktopic, tmp_path, series):
    mbox = tmp_path / "gap.mbox"
    mbox.write_text(series[0] + series[2])
    r = _refused(generated, ktopic, mbox)
    assert r.err.startswith(f"ktopic: {mbox}: ") and "2/3" in r.err, r.err


def test_two_revisions_in_one_mbox_are_refused(generated, ktopic, tmp_path, series):
    mbox = tmp_path / "two.mbox"
    mbox.write_text("".join(series) +
                    "".join(s.replace("[PATCH ", "[PATCH v2 ", 1) for s in series))
    r = _refused(generated, ktopic, mbox)
    assert r.err.startswith(f"ktopic: {mbox}: mail 1 ") and "mail 4 " in r.err, r.err


def test_two_series_in_one_mbox_are_refused(generated, ktopic, tmp_path, series):
    """Two unrevised series of three: the same numbers twice."""
    mbox = tmp_path / "two.mbox"
    other = [s.replace("lib/names: ", "lib/names: other ") for s in series]
    mbox.write_text("".join(series) + "".join(other))
    r = _refused(generated, ktopic, mbox)
    assert "mail 1 " in r.err and "mail 4 " in r.err, r.err


def test_unnumbered_and_numbered_mixed_are_refused(generated, ktopic, tmp_path, series,
                                                   patches_text):
    mbox = tmp_path / "mixed.mbox"
    mbox.write_text("".join(series) + patches_text["counters/0001-lib-counter-return-more.patch"]
                    .replace("[PATCH 1/2]", "[PATCH]"))
    r = _refused(generated, ktopic, mbox)
    assert "mail 4 " in r.err, r.err


def test_dangling_symlink_in_the_topic_directory_is_not_written_through(
        generated, ktopic, tmp_path, series):
    victim = tmp_path / "victim"
    link = generated.root / "patches/names/0002-lib-names-one.patch"
    link.symlink_to(victim)
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(series))
    r = _refused(generated, ktopic, mbox)
    assert "patches/names/0002-lib-names-one.patch" in r.err, r.err
    assert not os.path.lexists(victim)


def test_topic_directory_that_is_a_symlink_is_refused(generated, ktopic, tmp_path, series):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (generated.root / "patches/compiler").symlink_to(elsewhere)
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(series))
    r = _refused(generated, ktopic, mbox, "compiler")
    assert "patches/compiler" in r.err and "symbolic link" in r.err, r.err
    assert list(elsewhere.iterdir()) == []


def test_a_refused_mail_leaves_nothing_behind(generated, ktopic, tmp_path, series):
    """Every mail is checked before any file is written: the mbox, once
    corrected, is imported."""
    mbox = tmp_path / "bad.mbox"
    mbox.write_text(series[0] + series[1].replace("From: Test Porter <porter@example.org>\n", "")
                    + series[2])
    r = _refused(generated, ktopic, mbox)
    assert r.err == f"ktopic: {mbox}: mail 2: patch mail has no Author\n"
    mbox.write_text("".join(series))
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "names"))
    assert r.status == 0, r


def test_an_interrupt_leaves_nothing_behind(generated, ktopic, tmp_path, series, monkeypatch):
    """Ctrl-C while the manifest is edited: no patch file, no new directory,
    no temporary directory is left."""
    def interrupted(*a, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(manifest_edit, "set_patches", interrupted)
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(series))
    before = _checkout(generated)
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "compiler"))
    assert r.status == 130, r
    assert _checkout(generated) == before


def test_directory_of_crlf_mails(generated, ktopic, tmp_path, series):
    """git am (git mailsplit) strips the CR of CRLF mails; so does a
    directory import, and generate applies the patches."""
    mails = tmp_path / "mails"
    mails.mkdir()
    for i, s in enumerate(series, 1):
        (mails / f"{i:04d}.patch").write_bytes(s.replace("\n", "\r\n").encode())
    r = ktopic(*generated.args("import-mbox", str(mails), "--topic", "names"))
    assert r.status == 0, r
    assert b"\r" not in (generated.root / "patches/names/0002-lib-names-one.patch").read_bytes()
    r = ktopic(*generated.args("generate", "names"))
    assert r.status == 0, r


def test_directory_file_holding_an_mbox(generated, ktopic, tmp_path, series):
    """A file of a directory that is an mbox of several mails is split as
    git am splits it, not written as one patch with several diffs."""
    mails = tmp_path / "mails"
    mails.mkdir()
    (mails / "all.mbox").write_text("".join(series))
    r = ktopic(*generated.args("import-mbox", str(mails), "--topic", "names"))
    assert r.status == 0, r
    assert len(r.out.splitlines()) == 4, r.out
    one = (generated.root / "patches/names/0002-lib-names-one.patch").read_text()
    assert one.count("\ndiff --git ") == 1, one


def test_an_empty_mbox_is_refused_in_one_line(generated, ktopic, tmp_path):
    """git mailsplit complains in two lines; the error is one."""
    mbox = tmp_path / "empty.mbox"
    mbox.write_text("")
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "names"))
    assert r.status == 2, r
    assert r.err.startswith(f"ktopic: {mbox}: not an mbox: empty mbox"), r.err


def test_an_encoded_subject_is_known_the_second_time(generated, ktopic, tmp_path, series):
    """A patch written from a quoted-printable mail has an RFC 2047
    Subject:; importing the series again is refused all the same."""
    mbox = tmp_path / "qp.mbox"
    one = _encoded(series[0], "quoted-printable").replace(
        "Subject: [PATCH 1/3] lib/names: one",
        "Subject: =?UTF-8?q?=5BPATCH_1/3=5D_lib/names:_=C3=A9one?=")
    mbox.write_text(one + series[1] + series[2])
    assert ktopic(*generated.args("import-mbox", str(mbox), "--topic", "names")).status == 0
    r = _refused(generated, ktopic, mbox)
    assert r.err == (f"ktopic: {mbox}: mail 1: 'lib/names: \u00e9one' is already in topic names as "
                     f"patches/names/0002-lib-names-one.patch\n"), r.err


def test_a_flow_style_patches_list_is_written_as_a_block_list(generated, ktopic, tmp_path, series):
    """`patches: [...]` is valid YAML: the import writes the list again as
    a block list (a comment after it kept), not a YAML error blamed on the
    user's file; the rest of the file stays as it was."""
    text = generated.manifest.read_text()
    block = "    patches:\n      - 0001-lib-names-rename.patch\n"
    flow = "    patches: [0001-lib-names-rename.patch,\n      ]  # the names\n"
    generated.manifest.write_text(text.replace(block, flow))
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(series))
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "names"))
    assert r.status == 0, r
    assert generated.manifest.read_text() == text.replace(block, (
        "    patches:  # the names\n      - 0001-lib-names-rename.patch\n"
        "      - 0002-lib-names-one.patch\n      - 0003-lib-names-two.patch\n"
        "      - 0004-lib-names-three.patch\n"))


def test_a_flow_mapping_topic_is_refused_in_one_line(generated, ktopic, tmp_path, series):
    """A topic written `names: {...}` cannot be edited line by line: one
    line says so, with the topic's line, and nothing is written."""
    text = generated.manifest.read_text()
    block = ("  names:\n    description: name changes, on top of counters\n"
             "    branch: topic/names\n    depends: [counters]\n"
             "    patches:\n      - 0001-lib-names-rename.patch\n")
    assert block in text
    generated.manifest.write_text(text.replace(block, (
        '  names: {description: "name changes", branch: topic/names, depends: [counters],\n'
        "          patches: [0001-lib-names-rename.patch]}\n")))
    line = text[:text.index(block)].count("\n") + 1
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(series))
    r = _refused(generated, ktopic, mbox)
    assert r.err == (f"ktopic: branches.yaml:{line}: topic names is written as a flow mapping "
                     f"({{...}}): ktopic cannot edit its patches: list there; write the topic "
                     f"as a block mapping, one key a line\n"), r.err
    # The edits of a rebase say the same.
    with pytest.raises(KtopicError) as e:
        manifest_edit.add_upstream(manifest.load(generated.manifest), "names",
                                   {"subject": "lib/names: rename", "upstream-in": "v6.2"})
    assert str(e.value) == r.err[len("ktopic: "):-1].replace("its patches:", "its upstream:")


DOTGIT = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test Porter <porter@example.org>
Date: Thu, 3 Dec 2026 07:00:00 +0000
Subject: [PATCH] add a hook

Why: hostile.
---
diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout
new file mode 100755
index 0000000..1111111
--- /dev/null
+++ b/.git/hooks/post-checkout
@@ -0,0 +1 @@
+touch /tmp/pwned
"""


@pytest.mark.parametrize("kind", ["hunk", "dotgit", "date"])
def test_a_series_git_am_would_not_apply_is_refused(generated, ktopic, tmp_path, series, kind):
    """git apply --check of the series, in order, on the topic: a hunk that
    does not fit, a path git refuses, a date git cannot read are refused
    before anything is written, naming the mail; no ref moves."""
    mbox = tmp_path / "bad.mbox"
    if kind == "hunk":
        mbox.write_text(series[0] + series[1].replace('-const char *name_2 = "n2";',
                                                      '-const char *name_2 = "n22";') + series[2])
        want = ": mail 2: lib/names.c: hunk #1 (@@ -1,6 +1,6 @@): does not apply; "
    elif kind == "dotgit":
        mbox.write_text(DOTGIT)
        want = ": mail 1: .git/hooks/post-checkout: path: invalid path: git refuses it; "
    else:
        mbox.write_text(series[0] + series[1].replace("Date: Thu, 3 Dec 2026 07:02:00 +0000",
                                                      "Date: not a date") + series[2])
        want = ": mail 2: git commit-tree refuses its commit: fatal: invalid date format: "
    refs = generated.refs()
    r = _refused(generated, ktopic, mbox)
    assert r.err.startswith(f"ktopic: {mbox}{want}"), r.err
    assert generated.refs() == refs
    if kind != "date":
        assert r.err.endswith("; git am would stop at it on top of topic names\n"), r.err
