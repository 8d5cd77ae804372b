"""`ktopic trailers --mbox` given what is not a file of replies: a device
that never ends (/dev/zero), a FIFO, a file larger than any thread.  One
line, exit status 2, before anything is read; run in a child whose
address space is capped, so that a regression fails here instead of
taking the machine's memory."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from conftest import REPO

KTOPIC = [sys.executable, str(REPO / "tools" / "bin" / "ktopic")]


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _trailers(project, mbox) -> subprocess.CompletedProcess:
    return subprocess.run(KTOPIC + project.args("trailers", "counters", "--mbox", str(mbox)),
                          capture_output=True, text=True, timeout=60, preexec_fn=_capped)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "huge"])
def test_replies_that_are_no_file_of_replies(project, tmp_path, kind):
    if kind == "dev-zero":
        mbox, why = "/dev/zero", "not a regular file nor a maildir"
    elif kind == "fifo":
        mbox, why = tmp_path / "replies", "not a regular file nor a maildir"
        os.mkfifo(mbox)
    else:
        mbox, why = tmp_path / "replies.mbox", "larger than 256 MiB"
        with open(mbox, "wb") as f:
            f.truncate(300 << 20)           # sparse: nothing is written
    r = _trailers(project, mbox)
    assert r.returncode == 2, r
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"ktopic: {mbox}: "), r
    assert why in r.stderr, r
