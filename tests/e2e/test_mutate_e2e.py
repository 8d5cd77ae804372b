"""End to end: `ktopic mutate` on the real tree reports a survivor (slow:
two incremental builds and two boots of the closures kernel).

tests/data/mutants/closures/ holds two mutants of topic/closures (a test
fixture, not qemu/mutants/): 0001 makes closure_wake_up() wake waiters
newest first, which closures.closure_test_wait_fifo must catch; 0002
only rewords a comment, a planted survivor that the gate must name and
fail on.  closures is the cheapest topic to mutate: lib/closure.c is one
object, so each mutant costs one small incremental build.

Needs the work directory ($KTOPIC_WORKDIR or ~/.cache/ktopic) with the
base imported; skipped otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from e2e_support import REPO, work_repo

pytestmark = pytest.mark.e2e

FIXTURE = REPO / "tests" / "data" / "mutants"


def ktopic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "tools" / "bin" / "ktopic"), *args],
                          capture_output=True, text=True, timeout=7200)


def test_mutate_reports_the_planted_survivor(tmp_path):
    wd, base = work_repo()
    r = ktopic("generate", "closures")
    assert r.returncode == 0, r.stderr
    branch_before = subprocess.run(["git", f"--git-dir={wd.git_dir}", "rev-parse",
                                    "refs/heads/topic/closures"], capture_output=True,
                                   text=True).stdout.strip()
    out = tmp_path / "out"
    r = ktopic("mutate", "closures", "--mutants", str(FIXTURE), "--no-cache", "-o", str(out))
    text = r.stdout + r.stderr
    assert r.returncode == 1, text
    assert "mutation score closures: 1/2 caught" in text, text
    assert "closures: mutant 0002-planted-survivor SURVIVED" in text, text
    report = json.loads((out / "report.json").read_text())
    got = {m["name"]: m for m in report["mutants"]}
    assert got["0001-wake-up-lifo"]["status"] == "caught", got
    assert got["0001-wake-up-lifo"]["named_failed"], got      # by closure_test_wait_fifo
    assert got["0002-planted-survivor"]["status"] == "survived", got
    # The caught mutant's boot ended at its Caught-by case's failure; the
    # survivor's ran to the end.
    logs = out / "mutants"
    caught = (logs / got["0001-wake-up-lifo"]["log"]).read_text().rstrip().splitlines()
    assert caught[-1].endswith(" closure_test_wait_fifo") and "not ok" in caught[-1], caught[-3:]
    assert "ktopic-init: done" in (logs / got["0002-planted-survivor"]["log"]).read_text()
    assert 'failures="1"' in (out / "mutants" / "junit.xml").read_text()
    assert "Mutation gate" in (out / "index.html").read_text()
    # No ref moved.
    after = subprocess.run(["git", f"--git-dir={wd.git_dir}", "rev-parse",
                            "refs/heads/topic/closures"], capture_output=True,
                           text=True).stdout.strip()
    assert after == branch_before
    # A second run comes from the cache, with the same verdicts.
    r = ktopic("mutate", "closures", "--mutants", str(FIXTURE), "-o", str(out))
    assert r.returncode == 1 and r.stdout.count("(cached)") == 2, r.stdout
