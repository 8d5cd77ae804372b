"""branches/upstream_detect, function by function: the evidence that a
new base carries a patch (patch-id against the base-to-base diff, a
reverse apply) and the entry with the check it records.  How the rebase
uses them is in test_rebase.py; which line a check names is in
test_upstream_check.py."""

from __future__ import annotations

import re

import pytest

from conftest import git_in
from ktopic.branches import upstream_detect as ud
from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.patchfile import parse

OLD = "".join(f"int f{i}(void) {{ return {i}; }}\n" for i in range(30))


@pytest.fixture
def repo(tmp_path):
    """old: lib/a.c; new: the same change as the patch, after an unrelated
    one that moves its lines; the patch made on old."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "lib").mkdir()
    (work / "lib" / "a.c").write_text(OLD)
    (work / "lib" / "b.c").write_text("int b;\n")
    git_in(work, "init", "-q")
    git_in(work, "add", "-A")
    git_in(work, "commit", "-q", "-m", "old")
    (work / "lib" / "a.c").write_text(OLD.replace("return 20;", "return 2000;"))
    git_in(work, "commit", "-q", "-am", "lib/a: f20 returns more\n\nWhy: a test.")
    (tmp_path / "p.patch").write_text(git_in(work, "format-patch", "--stdout", "-1"))
    git_in(work, "tag", "patched")
    git_in(work, "reset", "-q", "--hard", "HEAD~1")
    (work / "lib" / "a.c").write_text("/* moved */\n\n" + OLD.replace("return 20;", "return 2000;"))
    git_in(work, "commit", "-q", "-am", "new")
    return Git(work / ".git"), parse(tmp_path / "p.patch"), work


def test_patch_id_ignores_where_the_lines_are(repo):
    git, p, work = repo
    ours = ud.patch_id(git, p.patch)
    # The same change two lines further down: the same patch-id.
    again = p.patch.replace(b"@@ -18,7 +18,7 @@", b"@@ -20,7 +20,7 @@")
    assert again != p.patch and ud.patch_id(git, again) == ours
    # A diff that also adds a comment: another one.
    shifted = git_in(work, "diff", "HEAD~1", "HEAD", "--", "lib/a.c")
    assert ours is not None and ud.patch_id(git, shifted) != ours
    assert ud.patch_id(git, "") is None


def test_same_as_base_diff_when_the_new_base_made_exactly_the_change(repo):
    git, p, work = repo
    # old..patched is the patch itself; old..new adds a comment besides.
    assert ud.same_as_base_diff(git, p, "HEAD~1", "patched") == ud.patch_id(git, p.patch)
    assert ud.same_as_base_diff(git, p, "HEAD~1", "HEAD") is None


def test_added_lines_per_file_and_the_removed_ones_apart(repo):
    _, p, _ = repo
    lines = ud.added_lines(p)
    assert lines["lib/a.c"] == ["int f20(void) { return 2000; }"]
    assert lines[("lib/a.c", "-")][0] == "int f20(void) { return 20; }"


def test_line_regex_is_anchored_and_tolerates_whitespace():
    rx = ud.line_regex("int f20(void) { return 2000; }")
    assert re.search(rx, "x\n  int  f20(void)\t{ return 2000; }  \ny", re.M)
    assert not re.search(rx, "int f20(void) { return 2000; } /* more */", re.M)
    assert not re.search(rx, "static int f20(void) { return 2000; }", re.M)
    assert ud.line_regex("  \t ") is None


def test_reverse_applies_where_the_change_is_there(repo):
    git, p, work = repo
    diff = p.patch
    tree = git_in(work, "rev-parse", "HEAD^{tree}").strip()
    old_tree = git_in(work, "rev-parse", "HEAD~1^{tree}").strip()
    assert ud.reverse_applies(git, tree, diff, ["lib/a.c"])
    assert not ud.reverse_applies(git, old_tree, diff, ["lib/a.c"])
    assert not ud.reverse_applies(git, tree, b"", ["lib/a.c"])
    assert not ud.reverse_applies(git, tree, diff, [])


def test_the_entry_records_the_version_the_evidence_and_the_check(repo):
    git, p, _ = repo
    check = ud.find_check(git, p, "HEAD~1", "HEAD")
    assert check == {"file": "lib/a.c", "contains": ud.line_regex("int f20(void) { return 2000; }")}
    e = ud.entry(p, check, "patch-id", "6.1.200", "linux-source-6.1", "6.1.200-1")
    assert e == {"subject": "lib/a: f20 returns more",
                 "upstream-in": "v6.1.200 (linux-source-6.1 6.1.200-1)",
                 "evidence": "found by ktopic rebase onto 6.1.200-1: patch-id",
                 "checks": [check]}
    assert ud.find_check(git, p, "HEAD", "HEAD~1") is None     # the old base lacks it
