"""The long-lived name look-ups: they answer as `git rev-parse` does, see
the refs and objects written after they started, leave to a git of the
caller's own the names a running git could answer from an old view, and
are never shared with a forked child."""

import os
import shutil
import subprocess

import pytest

from ktopic.plumbing import namelookup
from ktopic.plumbing.gitutil import Git, ZERO


def _git(repo, *args, **kw):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, **kw).stdout.strip()


def _commit(repo, msg, parent=None):
    tree = _git(repo, "write-tree")
    return _git(repo, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", msg)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    r = tmp_path / "r"
    _git(tmp_path, "init", "-q", str(r))
    for k, v in (("GIT_AUTHOR_NAME", "A"), ("GIT_AUTHOR_EMAIL", "a@example.org"),
                 ("GIT_COMMITTER_NAME", "A"), ("GIT_COMMITTER_EMAIL", "a@example.org")):
        monkeypatch.setenv(k, v)
    yield r
    namelookup.close_all()


def _rev_parse(git, *args):
    p = git.try_run("rev-parse", "-q", "--verify", *args)
    return p.stdout.strip() if p.returncode == 0 else None


def test_answers_as_rev_parse_and_sees_later_writes(repo):
    git = Git(repo / ".git")
    one = _commit(repo, "one")
    git.update_refs([("refs/heads/main", one, None)], "t")
    assert git.rev_parse("refs/heads/main") == one
    assert git.ref("refs/heads/nope") is None
    # Written after the look-up process started: a new object, a moved ref,
    # a new ref, the refs packed, a ref deleted.
    two = _commit(repo, "two", one)
    git.update_refs([("refs/heads/main", two, one), ("refs/heads/other", one, None)], "t")
    assert git.rev_parse("refs/heads/main") == two == git.ref("refs/heads/main")
    assert git.ref("refs/heads/other") == one
    _git(repo, "pack-refs", "--all", "--prune")
    assert git.ref("refs/heads/other") == one and git.exists("refs/heads/other")
    git.update_refs([("refs/heads/other", ZERO, one)], "t")
    assert git.ref("refs/heads/other") is None and not git.exists("refs/heads/other")
    assert git.tree_of("refs/heads/main") == _rev_parse(git, "refs/heads/main^{tree}")
    assert git.rev_parse("refs/heads/main~1") == one
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    # None: "ask git" (rev-parse --verify takes any 40 hex digits).
    for name in ("refs/heads/main", "main", "HEAD", "refs/heads/main^{tree}", "main~1", two,
                 "refs/heads/main:"):
        assert git.resolve(name) == _rev_parse(git, name) is not None, name
    for name in ("nope", "refs/heads/main~5", "0" * 40, "0" * 40 + "^{commit}"):
        assert git.resolve(name) is None, name


def test_a_ref_to_a_missing_object_is_still_named(repo):
    git = Git(repo / ".git")
    (repo / ".git/refs/heads/lost").write_text("1" * 40 + "\n")
    with pytest.raises(Exception, match="missing"):
        git.ref("refs/heads/lost")
    assert git.exists("refs/heads/lost")
    # What git takes refs/heads/x for, when that is not a ref: refs/heads/refs/heads/x.
    one = _commit(repo, "one")
    git.update_refs([("refs/heads/refs/heads/x", one, None)], "t")
    assert git.exists("refs/heads/x") and not namelookup.ref_absent(str(git.git_dir), "refs/heads/x")


def test_names_a_running_git_may_answer_from_an_old_view_are_left_to_a_new_one(repo):
    for name in ("abc1234", "abc1234^{commit}", ":path", ":/message", "main@{upstream}",
                 "", " main", "main\n", "-x"):
        assert not namelookup.cacheable(name), name
    for name in ("main", "refs/heads/feed-cafe", "0" * 40 + "^{tree}", "HEAD~2:Makefile"):
        assert namelookup.cacheable(name), name
    # An id abbreviated to loose objects written after git listed their directory.
    git = Git(repo / ".git")
    one = _commit(repo, "one")
    assert git.rev_parse(one) == one
    two = _commit(repo, "two", one)
    assert git.rev_parse(two[:12]) == two


def test_a_removed_pack_is_not_read_from_a_running_git(repo):
    git = Git(repo / ".git")
    one = _commit(repo, "one")
    git.update_refs([("refs/heads/main", one, None)], "t")
    _git(repo, "repack", "-adq")
    assert git.rev_parse(one) == one
    # The repository made again at the same place, without that commit.
    shutil.rmtree(repo / ".git")
    _git(repo.parent, "init", "-q", str(repo))
    assert git.rev_parse(one) is None
    assert git.ref("refs/heads/main") is None


def test_a_forked_child_starts_its_own_and_the_parents_goes_on(repo):
    git = Git(repo / ".git")
    one = _commit(repo, "one")
    assert git.rev_parse(one) == one
    parent = dict(namelookup._procs)
    pid = os.fork()
    if pid == 0:
        ok = not namelookup._procs and git.rev_parse(one) == one
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert namelookup._procs == parent and git.rev_parse(one) == one


def test_processes_end_when_closed(repo):
    git = Git(repo / ".git")
    one = _commit(repo, "one")
    assert git.rev_parse(one) == one
    procs = [b.p for b in namelookup._procs.values()]
    namelookup.close_all()
    assert procs and all(p.returncode == 0 for p in procs) and not namelookup._procs
    assert git.rev_parse(one) == one          # and start again when asked
