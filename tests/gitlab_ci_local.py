"""What the pipeline tests share: the pinned gitlab-ci-local that ci/deps
installs (unit/runner/test_gitlab_ci_local.py, e2e/test_pipeline_job.py), a git
repository for it to run in, and its job list read back.

A missing binary is a missing part (tests/conftest.py): skipped, saying
so, when run by hand; a failure that names it under `make test` and CI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import missing

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "tools" / "gitlab-ci-local"
BINARY = PACKAGE / "node_modules" / ".bin" / "gitlab-ci-local"
# An origin like a GitLab project's: without one gitlab-ci-local warns and
# makes up CI_PROJECT_PATH and the URLs.
ORIGIN = "https://gitlab.example.org/bcachefs/prereqs.git"
GIT_ENV = {"GIT_AUTHOR_NAME": "ktopic test", "GIT_AUTHOR_EMAIL": "test@example.org",
           "GIT_COMMITTER_NAME": "ktopic test", "GIT_COMMITTER_EMAIL": "test@example.org",
           "GIT_CONFIG_NOSYSTEM": "1"}


def pinned_version() -> str:
    return json.loads((PACKAGE / "package.json").read_text())["dependencies"]["gitlab-ci-local"]


def binary(path: Path = BINARY) -> Path:
    """The installed gitlab-ci-local, or a missing part saying how to get it."""
    if not os.access(path, os.X_OK):
        missing(f"gitlab-ci-local {pinned_version()} at {path}",
                "run make deps (ci/deps installs it from npm)")
    return path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=dict(os.environ, **GIT_ENV),
                          check=True, capture_output=True, text=True).stdout


def repository(root: Path, files: dict[str, Path | str]) -> Path:
    """A one-commit repository at root holding files (relative path ->
    source file or text), with an origin remote and its default branch."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, src in files.items():
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(src, Path):
            dst.write_bytes(src.read_bytes())
            dst.chmod(src.stat().st_mode & 0o777)
        else:
            dst.write_text(src)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "snapshot")
    git(root, "remote", "add", "origin", ORIGIN)
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(root, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    return root


def checkout_files() -> dict[str, Path]:
    """The project as it stands in this checkout: tracked files and new ones
    git does not ignore (what a commit of the working tree would hold)."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                         check=True, capture_output=True, text=True).stdout
    return {rel: REPO / rel for rel in out.split("\0") if rel and (REPO / rel).is_file()}


def run(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary()), "--no-color", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def list_jobs(cwd: Path) -> list[dict]:
    """`gitlab-ci-local --list-json`: the jobs as it parsed them (after
    validating the file against GitLab's JSON schema)."""
    r = run(cwd, "--list-json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)
