"""fastapply gives the tree a full index gives: new nested directories, a
directory emptied by a deletion, a mode change, a rename, a symlink."""

import os
import subprocess

import pytest

from conftest import TREE, make_patch
from ktopic.plumbing.fastapply import FastApply, NotSimple
from ktopic.plumbing.gitutil import Git


def full_index_tree(git: Git, tree: str, patch, tmp_path, *args) -> str | None:
    env = {"GIT_INDEX_FILE": str(tmp_path / "full-index")}
    git.run("read-tree", tree, env=env)
    r = git.try_run("apply", "--cached", *args, str(patch), env=env)
    return git.run("write-tree", env=env).strip() if r.returncode == 0 else None


@pytest.fixture
def repo(imported):
    return Git(imported.workdir / "linux.git")


def _patch_text(tmp_path, script, subject):
    """A patch made with git in a checkout of TREE after script(work) runs."""
    work = tmp_path / f"w-{abs(hash(subject))}"
    work.mkdir()
    for name, text in TREE.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    (work / "lib/link.c").symlink_to("counter.c")
    env = dict(os.environ, GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="T",
               GIT_COMMITTER_EMAIL="t@x", GIT_CONFIG_NOSYSTEM="1", HOME=str(work))

    def g(*a):
        return subprocess.run(["git", *a], cwd=work, env=env, check=True, capture_output=True,
                              text=True).stdout
    g("init", "-q")
    g("add", "-f", "-A")
    g("commit", "-q", "-m", "base")
    script(work, g)
    g("add", "-f", "-A")
    g("commit", "-q", "-m", subject)
    return g("format-patch", "--stdout", "-1", "-M")


def test_tree_surgery_matches_a_full_index(repo, tmp_path):
    def script(work, g):
        (work / "drivers/new/deep").mkdir(parents=True)
        (work / "drivers/new/deep/file.c").write_text("int x;\n")
        g("rm", "-q", "scripts/tool.sh")                     # scripts/ becomes empty
        g("mv", "lib/names.c", "lib/renamed_names.c")        # a rename
        (work / "README").chmod(0o755)                        # a mode change
        (work / "lib/counter.c").write_text((work / "lib/counter.c").read_text().replace(
            "return 7;", "return 77;"))
        os.symlink("names.c", work / "include/linux/alias.h")
    text = _patch_text(tmp_path, script, "many kinds of change")
    patch = tmp_path / "p.patch"
    patch.write_text(text)
    base = repo.tree_of("base")
    paths = ["drivers/new/deep/file.c", "scripts/tool.sh", "lib/names.c",
             "lib/renamed_names.c", "README", "lib/counter.c", "include/linux/alias.h"]
    got = FastApply(repo).apply(base, patch, paths)
    assert got.ok, got.stderr
    want = full_index_tree(repo, base, patch, tmp_path)
    assert got.tree == want
    names = repo.run("ls-tree", "-r", "--name-only", got.tree).split()
    assert "scripts/tool.sh" not in names and not any(n.startswith("scripts/") for n in names)
    assert "drivers/new/deep/file.c" in names and "lib/renamed_names.c" in names


def test_failures_and_checks_are_reported(repo, tmp_path, patches_text):
    base = repo.tree_of("base")
    patch = tmp_path / "p.patch"
    patch.write_text(patches_text["counters/0002-lib-counter-return-even-more.patch"].replace(
        "-int counter_30(void) { return 30; }", "-int counter_30(void) { return 31; }"))
    fa = FastApply(repo)
    # A patch whose preimage is not there fails, as with a full index.
    got = fa.apply(base, patch, ["lib/counter.c"])
    assert not got.ok and "patch does not apply" in got.stderr
    assert full_index_tree(repo, base, patch, tmp_path) is None
    first = tmp_path / "first.patch"
    first.write_text(patches_text["counters/0001-lib-counter-return-more.patch"])
    assert fa.apply(base, first, ["lib/counter.c"], "--check").ok
    assert not fa.apply(base, first, ["lib/counter.c"], "--check", "--reverse").ok


def test_a_directory_where_a_file_goes_is_not_simple(repo, tmp_path):
    patch = tmp_path / "p.patch"
    patch.write_text(make_patch(tmp_path, TREE, [("lib/counter.c", "return 3;", "return 4;")], "x"))
    with pytest.raises(NotSimple):
        FastApply(repo).apply(repo.tree_of("base"), patch, ["lib"])
