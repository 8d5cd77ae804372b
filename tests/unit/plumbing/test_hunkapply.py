"""Patches applied in Python give the tree `git apply --cached` gives, or
are left to git: exact hunks, offsets (in git's search order), missing
newlines, new/deleted/renamed files, mode changes, symlinks; and what
git refuses or reads otherwise is never applied here."""

import os
import subprocess

import pytest

from ktopic.plumbing import hunkapply
from ktopic.plumbing.fastapply import FastApply, NotSimple
from ktopic.plumbing.gitutil import Git

ENV = dict(os.environ, GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="T",
           GIT_COMMITTER_EMAIL="t@x", GIT_AUTHOR_DATE="Thu, 3 Dec 2026 06:00:00 +0000",
           GIT_COMMITTER_DATE="Thu, 3 Dec 2026 06:00:00 +0000", GIT_CONFIG_NOSYSTEM="1")
FILLER = [f"filler line {i}\n" for i in range(60)]
BLOCK = ["a\n", "b\n", "c\n", "X\n", "d\n", "e\n", "f\n"]


def git_apply_full(git, path, n: int, tree: str, patch: bytes) -> str | None:
    """The tree `git apply --cached` gives on a full index of tree (None: it
    fails); the patch and the index are files number n under path."""
    f = path / f"p{n}.patch"
    f.write_bytes(patch)
    env = {"GIT_INDEX_FILE": str(path / f"full-{n}")}
    git.run("read-tree", tree, env=env)
    r = git.try_run("apply", "--cached", "--whitespace=nowarn", str(f), env=env)
    return git.run("write-tree", env=env).strip() if r.returncode == 0 else None


class Repo:
    """A repository whose trees are made from dicts: path -> text, or
    path -> (text, mode) for executables and symlinks."""

    def __init__(self, path):
        self.path = path
        path.mkdir()
        self.g("init", "-q")
        self.git = Git(path / ".git")
        self.n = 0

    def g(self, *args, **kw) -> str:
        return subprocess.run(["git", *args], cwd=self.path, env=ENV, check=True,
                              capture_output=True, text=True, **kw).stdout

    def raw(self, *args) -> bytes:
        return subprocess.run(["git", *args], cwd=self.path, env=ENV, check=True,
                              capture_output=True).stdout

    def tree(self, files: dict) -> str:
        self.g("read-tree", "--empty")
        for name, spec in files.items():
            text, mode = spec if isinstance(spec, tuple) else (spec, "100644")
            oid = self.g("hash-object", "-w", "--stdin", input=text).strip()
            self.g("update-index", "--add", "--cacheinfo", f"{mode},{oid},{name}")
        return self.g("write-tree").strip()

    def patch(self, before: dict, after: dict) -> bytes:
        """git format-patch of the change from before to after (renames found)."""
        a = self.g("commit-tree", self.tree(before), "-m", "before").strip()
        b = self.g("commit-tree", self.tree(after), "-p", a, "-m", "the change").strip()
        return self.raw("format-patch", "-1", "--stdout", "-M", b)

    def git_apply(self, tree: str, patch: bytes) -> str | None:
        """The tree git apply --cached gives on a full index (None: it fails)."""
        self.n += 1
        return git_apply_full(self.git, self.path, self.n, tree, patch)


@pytest.fixture
def repo(tmp_path):
    return Repo(tmp_path / "repo")


def both(repo: Repo, base: dict, patch: bytes) -> tuple[str | None, str | None]:
    """(git apply's tree, apply_exact's tree or None when it left it to git)."""
    tree = repo.tree(base)
    want = repo.git_apply(tree, patch)
    try:
        got = FastApply(repo.git).apply_exact(tree, patch).tree
    except NotSimple:
        got = None
    return want, got


def text(lines) -> str:
    return "".join(lines)


def test_exact_hunks_and_offsets(repo):
    before = text(FILLER)
    after = before.replace("filler line 5\n", "five\n").replace("filler line 50\n", "fifty\n")
    patch = repo.patch({"f.c": before}, {"f.c": after})
    for base in (before,                                   # where the header says
                 "extra\n" * 4 + before,                    # every hunk 4 lines further
                 before.replace("filler line 30\n", "")):   # the second one line back
        want, got = both(repo, {"f.c": base, "g.c": "other\n"}, patch)
        assert want is not None and got == want


@pytest.mark.parametrize("first,second,picked", [(12, 29, 12), (11, 28, 28)])
def test_two_places_match_and_git_s_search_order_decides(repo, first, second, picked):
    """The hunk's header says line 20 (0-based); its old lines are at
    first and second instead.  git tries +1, -1, +2, -2, ...: -8 comes
    before +9, +8 before -9."""
    before = FILLER[:20] + BLOCK + FILLER[20:40]
    after = [ln.replace("X", "Y") for ln in before]
    patch = repo.patch({"f.c": text(before)}, {"f.c": text(after)})
    base = FILLER[:first] + BLOCK + FILLER[first:first + second - first - 7] + BLOCK + \
        FILLER[second - 7:40]
    want, got = both(repo, {"f.c": text(base)}, patch)
    assert want is not None and got == want
    lines = repo.g("cat-file", "blob", f"{got}:f.c").splitlines()
    assert lines[picked + 3] == "Y"


def test_missing_newlines(repo):
    before = text(FILLER[:10]) + "last"
    for after in (before.replace("last", "LAST"),              # still none
                  before + "\n",                                # one added
                  before.replace("filler line 9\n", "nine\n")):  # context without one
        patch = repo.patch({"f.c": before}, {"f.c": after})
        assert b"\\ No newline at end of file" in patch
        want, got = both(repo, {"f.c": before}, patch)
        assert want is not None and got == want
    patch = repo.patch({"f.c": before + "\n"}, {"f.c": before})      # one removed
    want, got = both(repo, {"f.c": before + "\n"}, patch)
    assert want is not None and got == want


def test_files_made_deleted_renamed_and_moded(repo):
    base = {"README": "read me\n", "lib/a.c": text(FILLER), "scripts/tool.sh": ("echo\n", "100755"),
            "lib/link": ("a.c", "120000"), "lib/gone.c": "int gone;\n"}
    after = {"README": ("read me\n", "100755"),                       # a mode change only
             "lib/renamed.c": text(FILLER).replace("line 30", "line thirty"),  # rename + edit
             "scripts/tool.sh": ("echo\n", "100755"),
             "lib/link": ("renamed.c", "120000"),                     # a symlink retargeted
             "new/deep/dir/x.c": "int x;\n",                          # new directories
             "new/empty": "",                                         # an empty new file
             "include/alias.h": ("../lib/renamed.c", "120000")}       # a new symlink
    patch = repo.patch(base, after)                      # lib/gone.c deleted: lib/ stays
    assert b"rename from lib/a.c" in patch and b"new mode 100755" in patch
    want, got = both(repo, base, patch)
    assert want is not None and got == want
    patch = repo.patch({"only/one.c": "1\n", "top.c": "t\n"}, {"top.c": "t\n"})
    want, got = both(repo, {"only/one.c": "1\n", "top.c": "t\n"}, patch)   # only/ goes away
    assert want is not None and got == want


@pytest.mark.parametrize("case", ["context", "exists", "missing", "directory", "deleted-differs"])
def test_what_git_refuses_is_left_to_git(repo, case):
    patch = repo.patch({"f.c": text(FILLER)}, {"f.c": text(FILLER).replace("line 7\n", "seven\n")})
    base = {"f.c": text(FILLER).replace("line 6\n", "six\n")}
    if case == "exists":
        patch = repo.patch({"x": "1\n"}, {"x": "1\n", "new.c": "n\n"})
        base = {"x": "1\n", "new.c": "already\n"}
    elif case == "missing":
        base = {"other.c": "o\n"}
    elif case == "directory":
        base = {"f.c/inside": "i\n"}
    elif case == "deleted-differs":
        patch = repo.patch({"x": "1\n", "d.c": "one\n"}, {"x": "1\n"})
        base = {"x": "1\n", "d.c": "one\ntwo\n"}
    want, got = both(repo, base, patch)
    assert want is None and got is None


def test_unusual_patches_are_not_parsed_here(repo):
    crlf = repo.patch({"f.c": "a\r\nb\r\n"}, {"f.c": "a\r\nB\r\n"})
    binary = repo.patch({"x": "1\n"}, {"x": "1\n", "b.bin": "\0\1\2"})
    assert b"GIT binary patch" in binary
    for patch in (crlf, binary, b"no diff at all\n",
                  b"Subject: x\n\n@@ -1 +1 @@\n-a\n+b\n"):
        with pytest.raises(hunkapply.Unusual):
            hunkapply.parse(patch)
    want, got = both(repo, {"f.c": "a\r\nb\r\n"}, crlf)
    assert want is not None and got is None          # git applies it; not done here


def test_a_hunk_is_never_placed_over_lines_another_wrote():
    h1 = hunkapply.Hunk(1, 1, [b"a\n", b"b\n"], [b"a\n", b"b\n", b"b\n"], leading=2, trailing=1)
    h2 = hunkapply.Hunk(2, 3, [b"b\n", b"c\n"], [b"B\n", b"c\n"], leading=0, trailing=1)
    with pytest.raises(hunkapply.Unusual):
        # the second hunk's "b" is only found among the lines the first wrote
        hunkapply.apply(b"a\nb\nc\n", [h1, h2])
