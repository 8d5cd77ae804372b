"""A `git update-ref --stdin` killed in the middle of ktopic's ref
transaction (SIGKILL after `prepare`) leaves a `.lock` file per ref.  The
next run clears the locks its own transaction left (its record names the
refs and the git process, which is gone); a lock that is another's stops
the run with one line that says which files to remove."""

from __future__ import annotations

import json
import signal
import subprocess
import time

REF = "refs/heads/topic/names"


def _change_names(project) -> None:
    p = project.root / "patches/names/0001-lib-names-rename.patch"
    p.write_text(p.read_text().replace("Why", "Because", 1))


def _killed_transaction(project, record: bool) -> None:
    gd = project.workdir / "linux.git"
    old = project.git("rev-parse", REF).strip()
    new = project.git("rev-parse", "base").strip()
    p = subprocess.Popen(["git", "--git-dir", str(gd), "update-ref", "--stdin"],
                         stdin=subprocess.PIPE, text=True)
    p.stdin.write(f"start\nupdate {REF} {new} {old}\nprepare\n")
    p.stdin.flush()
    lock = gd / (REF + ".lock")
    for _ in range(200):
        if lock.exists():
            break
        time.sleep(0.01)
    if record:
        (gd / "ktopic-update-ref.json").write_text(json.dumps({"pid": p.pid, "refs": [REF]}))
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert lock.exists()
    assert project.git("rev-parse", REF).strip() == old


def test_locks_of_a_killed_transaction_of_ours_are_cleared(generated, ktopic):
    _killed_transaction(generated, record=True)
    _change_names(generated)
    r = ktopic(*generated.args("generate"))
    assert r.status == 0, r
    gd = generated.workdir / "linux.git"
    assert not (gd / (REF + ".lock")).exists()
    assert not (gd / "ktopic-update-ref.json").exists()
    assert "Because" in generated.git("log", "-1", "--format=%B", REF)


def test_a_lock_that_is_not_ours_is_named_in_one_line(generated, ktopic):
    _killed_transaction(generated, record=False)
    _change_names(generated)
    before = generated.refs()
    r = ktopic(*generated.args("generate"))
    lock = generated.workdir / "linux.git" / (REF + ".lock")
    assert r.status == 1, r
    errs = [ln for ln in r.err.splitlines()]
    assert len(errs) == 1, r
    assert f"rm {lock}" in errs[0] and "lock file(s) of another git process" in errs[0], r
    assert generated.refs() == before
    assert lock.exists()
