"""ktopic.kernel.build without a kernel: the tool-managed worktree, the
changed-code-never-compiled check, module lists, directory names."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import build  # noqa: E402

ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
           GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent")


def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A bare repository with base and a topic that changes a.c, adds new.c,
    changes a header and a tools/ file."""
    src = tmp_path / "seed"
    src.mkdir()
    git("init", "-q", "-b", "base", cwd=src)
    (src / "lib").mkdir()
    (src / "lib/a.c").write_text("int a;\n")
    (src / "lib/b.c").write_text("int b;\n")
    (src / "lib/a.h").write_text("#define A 1\n")
    (src / "tools").mkdir()
    (src / "tools/t.c").write_text("int t;\n")
    git("add", ".", cwd=src)
    git("commit", "-q", "-m", "base", cwd=src)
    git("checkout", "-q", "-b", "topic", cwd=src)
    (src / "lib/a.c").write_text("int a = 2;\n")
    (src / "lib/new.c").write_text("int n;\n")
    (src / "lib/a.h").write_text("#define A 2\n")
    (src / "tools/t.c").write_text("int t = 1;\n")
    git("add", ".", cwd=src)
    git("commit", "-q", "-m", "topic", cwd=src)
    bare = tmp_path / "linux.git"
    git("clone", "-q", "--bare", str(src), str(bare))
    return bare


def test_changed_c_files(repo):
    files = build.changed_c_files(repo, "base", "topic")
    assert files == ["lib/a.c", "lib/new.c"]       # no header, nothing under tools/


def test_uncompiled(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    (src / "lib").mkdir(parents=True)
    (out / "lib").mkdir(parents=True)
    for n in ("a", "b", "c"):
        (src / f"lib/{n}.c").write_text("x")
    (out / "lib/a.o").write_text("o")             # up to date
    old = time.time() - 100
    (out / "lib/b.o").write_text("o")             # older than its source
    os.utime(out / "lib/b.o", (old, old))
    bad = build.uncompiled(src, out, ["lib/a.c", "lib/b.c", "lib/c.c"])
    assert len(bad) == 2
    assert bad[0].startswith("lib/b.c:") and "older" in bad[0]
    assert bad[1] == "lib/c.c: no lib/c.o was built"


def test_worktree_switch_rewrites_only_changed_files(repo, tmp_path):
    wt = build.Worktree(repo, tmp_path / "src")
    base = git("--git-dir", str(repo), "rev-parse", "base")
    topic = git("--git-dir", str(repo), "rev-parse", "topic")
    wt.checkout(base)
    assert (wt.path / "lib/a.c").read_text() == "int a;\n"
    old = time.time() - 1000
    for f in ("lib/a.c", "lib/b.c"):
        os.utime(wt.path / f, (old, old))
    wt.checkout(topic)
    assert (wt.path / "lib/a.c").read_text() == "int a = 2;\n"
    assert (wt.path / "lib/new.c").exists()
    assert (wt.path / "lib/a.c").stat().st_mtime > old + 500      # rewritten
    assert (wt.path / "lib/b.c").stat().st_mtime == pytest.approx(old)   # untouched
    # A stray edit in the worktree is thrown away on the next checkout.
    (wt.path / "lib/b.c").write_text("edited\n")
    wt.checkout(topic)
    assert (wt.path / "lib/b.c").read_text() == "int b;\n"
    wt.checkout(base)
    assert not (wt.path / "lib/new.c").exists()


def test_worktree_recreated_when_removed(repo, tmp_path):
    import shutil
    wt = build.Worktree(repo, tmp_path / "src")
    base = git("--git-dir", str(repo), "rev-parse", "base")
    wt.checkout(base)
    shutil.rmtree(wt.path)
    wt.checkout(base)
    assert (wt.path / "lib/a.c").exists()


def test_worktree_of_a_recreated_repository(repo, tmp_path):
    import shutil
    wt = build.Worktree(repo, tmp_path / "src")
    base = git("--git-dir", str(repo), "rev-parse", "base")
    wt.checkout(base)
    copy = tmp_path / "copy.git"
    shutil.copytree(repo, copy)
    shutil.rmtree(repo)
    shutil.copytree(copy, repo)
    shutil.rmtree(repo / "worktrees")          # the new repository knows no worktree
    wt.checkout(base)
    assert (wt.path / "lib/a.c").read_text() == "int a;\n"


def test_kernel_modules_from_modules_order(tmp_path):
    out = tmp_path
    (out / "kernel/locking").mkdir(parents=True)
    (out / "kernel/locking/locktorture.ko").write_bytes(b"x")
    (out / "lib").mkdir()
    (out / "lib/stale.ko").write_bytes(b"x")        # not in modules.order: not this config's
    (out / "modules.order").write_text("kernel/locking/locktorture.ko\n")
    assert build.kernel_modules(out) == [out / "kernel/locking/locktorture.ko"]
    (out / "modules.order").write_text("kernel/locking/locktorture.o\n")   # older format
    assert build.kernel_modules(out) == [out / "kernel/locking/locktorture.ko"]


def test_build_dir_name():
    assert build.build_dir_name("topic/mm") == "topic_mm"
    assert build.build_dir_name("for-next", "kasan") == "for-next-kasan"
    assert build.build_dir_name("topic/mm", "kcsan") == "topic_mm-kcsan"


def test_pinned_environment(tmp_path):
    env = build.make_env(tmp_path)
    assert env["CCACHE_DIR"] == str(tmp_path / "ccache")
    for k in ("KBUILD_BUILD_TIMESTAMP", "KBUILD_BUILD_USER", "KBUILD_BUILD_HOST"):
        assert env[k]
    assert "MAKEFLAGS" not in env


def test_the_config_targets_use_the_builds_host_compiler(tmp_path, monkeypatch):
    """kconfig's make and the build's make name the same HOSTCC: with two,
    each rebuilt fixdep for the other, in every build."""
    from ktopic.kernel import kconfig
    seen = []

    def configure(req):
        seen.append(req)
        return kconfig.ConfigResult(config=tmp_path / ".config", fragment_hash="",
                                    config_hash="", missing=["CONFIG_X=y (got: not set)"])
    monkeypatch.setattr(build.Worktree, "checkout", lambda self, commit: None)
    monkeypatch.setattr(kconfig, "configure", configure)
    res = build.build(tmp_path, tmp_path / "git", build.BuildRequest(
        name="b", commit="c", base=None, fragments=[]))
    assert not res.ok and [getattr(r, "make_args", []) for r in seen] == [["HOSTCC=ccache gcc"]]
    assert build.HOSTCC == "HOSTCC=ccache gcc"
