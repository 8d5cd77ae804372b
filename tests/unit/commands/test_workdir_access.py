"""A work directory ktopic cannot write (a read-only mount, another
user's): each command says so in one line, exit status 2, instead of a
traceback, and `status` writes nothing there.  The read-only mount is
made in a user namespace of the test's own (`unshare -rm`)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

KTOPIC = [sys.executable, str(REPO / "tools" / "bin" / "ktopic")]


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


needs_unshare = pytest.mark.skipif(not _unshare_works(),
                                   reason="missing unshare -rm: apt-get install util-linux "
                                          "(and user namespaces enabled)")


def _read_only(project, *args: str) -> subprocess.CompletedProcess:
    wd = str(project.workdir)
    cmd = " ".join(f"'{a}'" for a in KTOPIC + project.args(*args))
    return subprocess.run(["unshare", "-rm", "sh", "-c",
                           f"mount --bind -o ro '{wd}' '{wd}' && exec {cmd}"],
                          capture_output=True, text=True, env=dict(os.environ, COLUMNS="200"))


def _objects(project) -> set[str]:
    return {str(p) for p in (project.workdir / "linux.git" / "objects").rglob("*")}


@needs_unshare
@pytest.mark.parametrize("cmd", [["generate"], ["export", "counters"]])
def test_a_command_that_writes_says_the_work_directory_is_read_only(generated, cmd):
    r = _read_only(generated, *cmd)
    assert r.returncode == 2, r
    assert r.stderr.count("\n") == 1 and "read-only" in r.stderr, r


@needs_unshare
def test_status_on_a_read_only_work_directory(generated):
    (generated.root / "patches/names/0001-lib-names-rename.patch").write_text(
        (generated.root / "patches/names/0001-lib-names-rename.patch").read_text()
        .replace("Why", "Because", 1))
    before = _objects(generated)
    r = _read_only(generated, "status")
    assert r.returncode == 1, r
    assert r.stderr == "ktopic: not in sync with branches.yaml: topic/names, for-next\n", r
    assert "behind the manifest" in r.stdout, r
    assert _objects(generated) == before


def test_a_lock_file_that_cannot_be_opened(generated, ktopic, monkeypatch):
    real = os.open

    def refuse(path, *a, **kw):
        if str(path).endswith("/lock"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *a, **kw)
    monkeypatch.setattr(os, "open", refuse)
    r = ktopic(*generated.args("generate"))
    assert r.status == 2, r
    assert r.err == (f"ktopic: {generated.workdir / 'lock'}: cannot open the work directory's "
                     "lock (Permission denied): run as its owner, or give another one "
                     "with -w DIR\n"), r
