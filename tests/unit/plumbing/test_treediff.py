"""changed_paths: for each pair of commits, the paths `git diff
--name-only --no-renames` lists, all pairs from one git; None for a pair
with a missing side."""

import subprocess

from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.treediff import changed_paths


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=A", "-c", "user.email=a@e.org",
                           *args], check=True, capture_output=True, text=True).stdout


def test_changed_paths_are_what_git_diff_lists(tmp_path):
    r = tmp_path / "r"
    _git(tmp_path, "init", "-q", str(r))
    (r / "a").write_text("a\n")
    (r / "d").mkdir()
    (r / "d" / "x y").write_text("x\n")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "one")
    _git(r, "branch", "one")
    (r / "a").write_text("a2\n")
    (r / "d" / "x y").rename(r / "d" / "z")
    (r / "b").write_text("b\n")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "two")
    _git(r, "branch", "two")
    pairs = [("one", "two"), ("two", "two"), ("one", "one"), ("two", "one"),
             ("refs/heads/nope", "two"), ("one", "two")]
    got = changed_paths(Git(r / ".git"), pairs)
    for (a, b), names in zip(pairs, got):
        if a == "refs/heads/nope":
            assert names is None
            continue
        listed = _git(r, "diff", "-z", "--name-only", "--no-renames", a, b, "--").split("\0")
        assert names == [n for n in listed if n], (a, b)
    assert got[0] == ["a", "b", "d/x y", "d/z"] and got[1] == []
    assert changed_paths(Git(r / ".git"), []) == []
