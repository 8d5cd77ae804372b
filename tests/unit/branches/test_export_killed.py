"""An export killed (SIGKILL) while it moves files leaves the patches it
moved aside in patches/ktopic-export-*/old/.  Until the next export,
every command names where a missing patch is; the next export rolls the
interrupted one back (or forward, when it had finished) before it runs,
as git does with the lock files of a killed process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

# Runs `ktopic export counters`, killing itself at the Nth file move.
CHILD = """
import os, pathlib, signal, sys
sys.path.insert(0, sys.argv[1])
n = int(sys.argv[2])
real = pathlib.Path.replace
calls = []
def replace(self, target):
    calls.append(self)
    if len(calls) == n:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, target)
pathlib.Path.replace = replace
from ktopic import cli
sys.exit(cli.main(sys.argv[3:]))
"""


def _killed_export(project, n: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, str(REPO / "tools"), str(n),
                           *project.args("export", "counters")], capture_output=True, text=True)


def _patches(project) -> dict:
    return {str(p.relative_to(project.root)): p.read_bytes()
            for p in sorted((project.root / "patches").rglob("*")) if p.is_file()}


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_a_killed_export_is_recovered(generated, ktopic, n):
    before = _patches(generated)
    manifest = generated.manifest.read_text()
    r = _killed_export(generated, n)
    assert r.returncode == -9, r
    left = list((generated.root / "patches").glob("ktopic-export-*"))
    assert left, "the kill left nothing to recover"
    s = ktopic(*generated.args("status"))
    if s.status == 2:           # a listed patch is missing: say where it is
        assert s.err.count("\n") == 1, s
        assert "an interrupted export moved it to patches/ktopic-export-" in s.err, s
        assert "`ktopic export counters`" in s.err, s
    e = ktopic(*generated.args("export", "counters"))
    assert e.status == 0, e
    assert not list((generated.root / "patches").glob("ktopic-export-*"))
    assert _patches(generated) == before
    assert generated.manifest.read_text() == manifest
