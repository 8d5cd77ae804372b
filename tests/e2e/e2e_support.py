"""What the end-to-end tests share: the work repository (skipped without
one), commits made there with git plumbing (no checkout of the 78,000-file
tree), a throw-away project checkout with its own manifest, and the ktopic
runner.  The topics and refs are each test's own; see the tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from ktopic.model.workdir import Workdir  # noqa: E402

from conftest import missing  # noqa: E402

# Fixed identities and dates: the same test makes the same commit ids.
GIT_ENV = {"GIT_AUTHOR_NAME": "ktopic e2e", "GIT_AUTHOR_EMAIL": "e2e@example.org",
           "GIT_COMMITTER_NAME": "ktopic e2e", "GIT_COMMITTER_EMAIL": "e2e@example.org",
           "GIT_AUTHOR_DATE": "1546300800 +0000", "GIT_COMMITTER_DATE": "1546300800 +0000"}

MANIFEST_HEAD = ["version: 1",
                 "series: {name: e2e, subject: e2e, from: 'E2E <e2e@example.org>'}",
                 "base:",
                 "  package: linux-source-6.1",
                 "  tarball: /usr/src/linux-source-6.1.tar.xz",
                 "  version: 6.1.192",
                 "  debian-version: 6.1.192-3",
                 "topics:"]


def git(git_dir: Path, *args: str, input: str | None = None, env: dict | None = None) -> str:
    e = dict(os.environ, **GIT_ENV, **(env or {}))
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], input=input, env=e,
                          check=True, capture_output=True, text=True).stdout.strip()


def commit_on(git_dir: Path, parent: str, files: dict[str, str], msg: str,
              tmp: Path) -> str:
    """A commit on parent with files replaced, made with plumbing (no checkout)."""
    env = {"GIT_INDEX_FILE": str(tmp / f"index.{os.getpid()}")}
    git(git_dir, "read-tree", parent, env=env)
    for path, text in files.items():
        blob = git(git_dir, "hash-object", "-w", "--stdin", input=text)
        git(git_dir, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = git(git_dir, "write-tree", env=env)
    return git(git_dir, "commit-tree", tree, "-p", parent, "-m", msg)


def work_repo() -> tuple[Workdir, str]:
    """The default work directory and its base commit; the test is skipped
    when there is no work repository."""
    wd = Workdir(None)
    if not wd.git_dir.is_dir():
        missing(f"work repository {wd.git_dir}", "make import (ktopic import-base) makes it")
    return wd, git(wd.git_dir, "rev-parse", "--verify", "-q", "refs/heads/base")


def project(tmp: Path) -> Path:
    """A project checkout in tmp/repo with the real qemu/ (no build
    leftovers) and an empty patches/; the caller writes branches.yaml."""
    root = tmp / "repo"
    shutil.copytree(REPO / "qemu", root / "qemu",
                    ignore=shutil.ignore_patterns("*.o", "*.ko", ".*.cmd"))
    (root / "patches").mkdir()
    return root


def ktopic(root: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    """tools/bin/ktopic with root/branches.yaml as the manifest."""
    return subprocess.run(
        ["/usr/bin/python3", str(REPO / "tools" / "bin" / "ktopic"),
         "-m", str(root / "branches.yaml"), *args],
        capture_output=True, text=True, timeout=timeout)
