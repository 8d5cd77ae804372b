"""A patch's commit made in Python is byte for byte the one `git
commit-tree` makes; what git would rewrite (crud around names, dates of
other forms, messages it re-encodes) is left to git."""

import subprocess

import pytest

from ktopic.plumbing import commitobj
from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.objstore import ObjectStore


@pytest.fixture
def git(tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True)
    return Git(tmp_path / "r.git")


def commit_tree(git: Git, tree: str, parent: str | None, name, email, date, msg) -> str:
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": date}
    return git.run("commit-tree", tree, *(["-p", parent] if parent else []), input=msg,
                   env=env).strip()


@pytest.mark.parametrize("name,email,date", [
    ("Bcachefs Prereqs Port", "port@bcachefs-prereqs.example.org", "Thu, 3 Dec 2026 06:25:26 +0000"),
    ("Kent Overstreet", "kent.overstreet@gmail.com", "Mon, 10 Jun 2019 15:14:08 -0400"),
    ("Jürgen Groß", "jgross@suse.com", "Sat, 29 Feb 2020 23:59:59 +0545"),
    ("Rafał Miłecki", "rafal@milecki.pl", "Sun, 1 Jan 2099 00:00:00 -0000"),
    ("A", "a@b", "Tue, 31 Dec 1985 12:00:00 +1400"),
])
def test_the_same_bytes_as_git_commit_tree(git, name, email, date):
    tree = git.run("mktree", input="").strip()
    parent = commit_tree(git, tree, None, "P", "p@x", "Thu, 1 Jan 2015 00:00:00 +0000", "p\n")
    msg = "subsys: a change\n\nWith a body, UTF-8 too: naïve café.\n\nSigned-off-by: X <x@y>\n"
    want = commit_tree(git, tree, parent, name, email, date, msg)
    data = commitobj.commit_bytes(tree, parent, name, email, date, msg)
    assert data is not None
    assert git.run("cat-file", "commit", want, binary=True) == data
    store = ObjectStore(git)
    try:
        assert store.write_commit(data) == want
    finally:
        store.close()


@pytest.mark.parametrize("name,email,date,msg", [
    ("Name.", "a@b", "Thu, 3 Dec 2026 06:25:26 +0000", "m\n"),           # crud at an end
    (" Name", "a@b", "Thu, 3 Dec 2026 06:25:26 +0000", "m\n"),
    ("Na<me", "a@b", "Thu, 3 Dec 2026 06:25:26 +0000", "m\n"),           # stripped inside
    ("Name", "<a@b>", "Thu, 3 Dec 2026 06:25:26 +0000", "m\n"),
    ("Name", "a@b", "2026-12-03 06:25:26 +0000", "m\n"),                  # another date form
    ("Name", "a@b", "Thu, 3 Dec 2026 06:25:26", "m\n"),                   # no zone
    ("Name", "a@b", "Thu, 3 Dec 2026 06:25:26 +2400", "m\n"),             # a zone git ignores
    ("Name", "a@b", "Thu, 31 Feb 2026 06:25:26 +0000", "m\n"),            # no such day
    ("Name", "a@b", "Thu, 3 Dec 2026 06:25:26 +0000", "m \U0001F600\n"),  # beyond the first plane
    ("Name", "a@b", "Thu, 3 Dec 2026 06:25:26 +0000", "m\0\n"),
])
def test_what_git_would_rewrite_is_left_to_it(name, email, date, msg):
    assert commitobj.commit_bytes("0" * 40, "1" * 40, name, email, date, msg) is None


@pytest.mark.parametrize("date", [
    "Fri, 1 Jan 1971 00:00:00 +0000", "Wed, 1 Mar 2000 01:02:03 -1130",
    "Tue, 29 Feb 2000 12:00:00 +0000", "Sun, 1 Jan 2023 00:00:00 -0000",
    "Mon, 10 Jun 2019 15:14:08 -0400", "Thu, 3 Dec 2026 06:25:26 +0530",
    "Thu, 31 Dec 2099 23:59:59 +1400", "Sat, 31 Dec 2005 23:59:59 -0930",
])
def test_dates_as_git_reads_them(git, date):
    tree = git.run("mktree", input="").strip()
    got = commitobj.git_date(date)
    assert got is not None, date
    c = commit_tree(git, tree, None, "N", "n@x", date, "m\n")
    ident = git.run("cat-file", "commit", c).split("\nauthor ")[1].split("\n")[0]
    assert ident.endswith("> " + got)


@pytest.mark.parametrize("date", [
    "Fri, 9 Jan 1970 00:00:00 +0000", "Mon, 28 Feb 2100 00:00:00 +0000",   # out of range
    "Thu, 3 Dec 2026 24:00:00 +0000", "Thu, 3 Dec 2026 06:25:26 +0060",    # no such time
    "3 Dec 2026 06:25:26 +0000",                                            # no weekday
])
def test_other_dates_are_left_to_git(date):
    assert commitobj.git_date(date) is None
