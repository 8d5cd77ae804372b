"""tools/bench/bench_editloop.py without kernels: the four edits found in
the real patches/ and kept well-formed, a missing anchor, the table, the
plan, and the branches put back after a run that failed (a fake ktopic)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools" / "bench"))

import bench_editloop as be  # noqa: E402
from bench_ci import Measure  # noqa: E402


def test_every_edit_is_one_added_line_of_the_real_patches():
    placed = be.place_all(REPO, list(be.EDITS))
    assert [pl.edit.name for pl in placed] == ["six-comment", "six-code", "filemap", "fs-h"]
    for pl in placed:
        e = pl.edit
        assert pl.patch.parent.name == e.topic and e.before != e.after
        old, new = pl.text.split("\n"), be.edited(pl).split("\n")
        assert len(old) == len(new)
        changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
        assert changed == [pl.index] and new[pl.index] == "+" + e.after
        # Same hunks, same counts: the patch applies where it applied.
        assert [(h.path, h.header, h.end - h.start) for h in be.hunks(pl.text)] == \
            [(h.path, h.header, h.end - h.start) for h in be.hunks(be.edited(pl))]
        assert any(h.path == e.path and h.start <= pl.index < h.end for h in be.hunks(pl.text))
        assert not be.conflicts(REPO, pl)
    by = {pl.edit.name: pl for pl in placed}
    # The comment edit stays inside a comment, and no line moves anywhere.
    assert by["six-comment"].edit.before.startswith(" * ")
    assert by["six-comment"].edit.after.startswith(" * ")
    assert by["fs-h"].edit.path == "include/linux/fs.h" and by["fs-h"].patch.parent.name == "mm"


PATCH = """From 0 Mon Sep 17 00:00:00 2001
Subject: [PATCH] locking/six: a lock

---
diff --git a/kernel/locking/six.c b/kernel/locking/six.c
new file mode 100644
index 000000000..2c2cb9498
--- /dev/null
+++ b/kernel/locking/six.c
@@ -0,0 +1,3 @@
+/*
+{line}
+ */
--{sig}
2.39.2
"""
ANCHOR = be.BY_NAME["six-comment"].before


def _root(tmp_path: Path, line: str = ANCHOR, mutant: str = "") -> Path:
    root = tmp_path / "root"
    (root / "patches" / "locking").mkdir(parents=True)
    (root / "patches" / "locking" / "0001-six.patch").write_text(
        PATCH.format(line=line, sig=" "))
    if mutant:
        (root / "qemu" / "mutants" / "locking").mkdir(parents=True)
        (root / "qemu" / "mutants" / "locking" / "0001-m.patch").write_text(mutant)
    return root


def test_a_missing_anchor_fails_with_one_line(tmp_path):
    root = _root(tmp_path, line=" * something else")
    with pytest.raises(SystemExit) as e:
        be.place_all(root, [be.BY_NAME["six-comment"]])
    msg = str(e.value)
    assert "\n" not in msg and "six-comment" in msg and "update EDITS" in msg


def test_a_line_another_patch_reads_is_refused(tmp_path):
    mutant = ("diff --git a/kernel/locking/six.c b/kernel/locking/six.c\n"
              "--- a/kernel/locking/six.c\n+++ b/kernel/locking/six.c\n"
              f"@@ -1,2 +1,2 @@\n-/*\n+/**\n {ANCHOR}\n")
    root = _root(tmp_path, mutant=mutant)
    with pytest.raises(SystemExit, match="qemu/mutants/locking/0001-m.patch read"):
        be.place_all(root, [be.BY_NAME["six-comment"]])


def test_hunks_reads_the_counts_and_refuses_a_short_body():
    text = PATCH.format(line=ANCHOR, sig=" ")
    (h,) = be.hunks(text)
    assert (h.path, h.end - h.start, h.new_start) == ("kernel/locking/six.c", 3, 1)
    with pytest.raises(ValueError):
        be.hunks(text.replace("@@ -0,0 +1,3 @@", "@@ -0,0 +1,4 @@"))
    with pytest.raises(ValueError):
        be.hunks(text.replace("@@ -0,0 +1,3 @@", "@@ -0,0 +1,2 @@"))


def test_selection_keeps_the_bench_order_and_names_unknown_edits():
    assert [e.name for e in be.selection("six-code,six-comment")] == ["six-comment", "six-code"]
    assert be.selection("all") == list(be.EDITS) == be.selection("")
    with pytest.raises(SystemExit, match="no edit fsh"):
        be.selection("six-code,fsh")


STEPS = [
    {"branch": "topic/locking", "stage": "bisect builds", "what": "bisect build 1 of 4",
     "kbuild": 40},
    {"branch": "topic/locking", "stage": "warnings", "what": "W=1/sparse at the head",
     "kbuild": 3},
    {"branch": "topic/locking", "stage": "build", "what": "build", "kbuild": 12},
    {"branch": "topic/locking", "stage": "build", "what": "build of the test modules",
     "kbuild": 2},
    {"branch": "topic/locking", "stage": "boot+tests", "what": "boot and tests", "kbuild": 0},
    {"branch": "topic/locking", "stage": "expect", "what": "2 expectation boot(s)"},
    {"branch": "topic/locking", "stage": "mutants", "what": "mutant 0001", "kbuild": 30},
    {"branch": "for-next+kcsan", "stage": "build", "what": "build", "kbuild": 50},
]
REPORT = {"branches": [{"branch": "topic/locking", "stages": [{"status": "pass"}]},
                       {"branch": "for-next", "stages": [{"status": "fail"}]}],
          "mutants": [{"topic": "locking", "name": "0001", "status": "caught", "cached": False},
                      {"topic": "locking", "name": "0002", "status": "caught", "cached": True},
                      {"topic": "locking", "name": "0003", "status": "survived",
                       "cached": True}]}


def test_what_ran_counts_the_steps_and_the_mutants():
    ran = be.what_ran(REPORT, STEPS)
    assert ran["builds"] == ["topic/locking", "for-next+kcsan"]
    assert (ran["bisect"], ran["warnings"], ran["kbuild"], ran["boots"], ran["expect"]) == \
        (1, 1, 137, 1, 2)
    assert (ran["mutants_run"], ran["mutants_cached"]) == (1, 2)
    assert ran["kcsan"] == ["for-next+kcsan"]
    assert ran["failed"] == ["for-next", "mutant locking/0003"]
    assert not be.warm(ran)
    text = be.ran_text(ran)
    assert "KCSAN build: for-next+kcsan" in text and "FAILED: for-next" in text
    quiet = be.what_ran({"branches": [], "mutants": REPORT["mutants"][1:2]}, [])
    assert be.warm(quiet)
    assert be.ran_text(quiet) == "nothing built or booted (1 mutants from the cache)"


def test_the_table_gives_ratios_to_the_baseline_and_the_target():
    placed = be.place_all(REPO, [be.BY_NAME["six-comment"], be.BY_NAME["fs-h"]])
    quiet = be.what_ran({"mutants": []}, [])
    busy = be.what_ran({"mutants": []}, STEPS[:3])
    base = be.Run("one run", Measure(wall=4.0, cpu=4.0), quiet)
    runs = [(placed[0], be.Run("six-comment", Measure(wall=90.0, cpu=150.0), busy),
             be.Run("six-comment-reverted", Measure(wall=6.0, cpu=5.0), quiet)),
            (placed[1], be.Run("fs-h", Measure(wall=2400.0, cpu=4500.0), busy, waited=True),
             None)]
    rows = be.rows(base, runs, catch_up=be.Run("warm", Measure(wall=60.0), busy))
    keys = [k for k, _ in rows]
    assert keys == ["catch-up (the first run was not warm; not counted)",
                    "warm baseline: nothing changed (one run)",
                    "six-comment: kernel/locking/six.c line 5",
                    "  six-comment reverted (not counted)",
                    "fs-h: include/linux/fs.h line 452"]
    v = dict(rows)
    assert "22.5x the baseline; 0.50 of the target (3 min 00 s)" in v[keys[2]]
    assert "1 kernel build(s) (topic/locking)" in v[keys[2]]
    assert "600.0x the baseline; no target" in v[keys[4]]
    assert v[keys[4]].endswith("WAITED for the lock: not a figure")


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KTOPIC_WORKDIR", str(tmp_path / "wd"))
    assert be.run(1, ["--dry-run", "--edits", "six-code"])
    out = capsys.readouterr().out
    assert f"work directory {tmp_path / 'wd'}" in out
    assert "edit six-code:" in out and "six-comment" not in out
    assert "kernel/locking/six.c line 658" in out
    assert "after:  if (unlikely(six_lock_seq(lock) != seq))" in out
    assert not (tmp_path / "wd").exists()


# ------------------------------------------------- a run that fails midway

FAKE = r'''
import hashlib, json, os, subprocess, sys
from pathlib import Path
a = sys.argv[1:]
wd, man, cmd = Path(a[1]), Path(a[3]), a[4]
patches = sorted((man.parent / "patches").glob("*/*.patch"))
if cmd == "generate":
    git = ["git", f"--git-dir={wd / 'linux.git'}"]
    env = dict(os.environ, GIT_AUTHOR_DATE="@0 +0000", GIT_COMMITTER_DATE="@0 +0000",
               GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@x", GIT_COMMITTER_NAME="a",
               GIT_COMMITTER_EMAIL="a@x")
    tree = subprocess.run([*git, "hash-object", "-w", "-t", "tree", "/dev/null"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for t in sorted({p.parent.name for p in patches}):
        h = hashlib.sha256(b"".join(p.read_bytes() for p in patches if p.parent.name == t))
        c = subprocess.run([*git, "commit-tree", tree, "-m", h.hexdigest()], env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
        for ref in (f"refs/heads/topic/{t}", f"refs/ktopic/made/topic/{t}"):
            subprocess.run([*git, "update-ref", ref, c], check=True)
elif cmd == "ci":
    if any(os.environ["FAKE_BREAKS_ON"] in p.read_text() for p in patches):
        print("Traceback: the fake ktopic breaks on the edit")
        sys.exit(2)
    out = Path(a[a.index("-o") + 1])
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps({"branches": [], "mutants": []}))
    (out / "steps.json").write_text("[]")
'''


def _setup(tmp_path):
    wd = tmp_path / "wd"
    subprocess.run(["git", "init", "-q", "--bare", str(wd / "linux.git")], check=True)
    (wd / "lock").write_text("")
    fake = tmp_path / "ktopic.py"
    fake.write_text(FAKE)
    scratch, checkout = _root(tmp_path / "s"), _root(tmp_path / "c")
    for r in (scratch, checkout):
        (r / "branches.yaml").write_text("")

    def ktopic(root):
        return [sys.executable, str(fake), "-w", str(wd), "-m", str(root / "branches.yaml")]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    subprocess.run([*ktopic(checkout), "generate"], check=True)
    return wd, scratch, checkout, ktopic, tmp


def test_the_branches_are_put_back_after_a_run_that_failed(tmp_path, monkeypatch, capsys):
    wd, scratch, checkout, ktopic, tmp = _setup(tmp_path)
    before = be.branch_refs(wd / "linux.git")
    assert list(before) == ["refs/heads/topic/locking", "refs/ktopic/made/topic/locking"]
    (pl,) = be.place_all(scratch, [be.BY_NAME["six-comment"]])
    original = pl.patch.read_text()
    monkeypatch.setenv("FAKE_BREAKS_ON", be.BY_NAME["six-comment"].after)
    loop = be.Loop(ktopic(scratch), ktopic(checkout), wd, tmp)
    with pytest.raises(SystemExit, match="ktopic ci failed"):
        be.measure(loop, [pl], repeat=1)
    out = capsys.readouterr().out
    assert "[warm]" in out and "branches restored: 2 refs as before the bench" in out
    assert "ERROR" not in out
    assert be.branch_refs(wd / "linux.git") == before
    assert pl.patch.read_text() == original          # the scratch copy's patch too


def test_branches_that_do_not_come_back_are_a_loud_error(tmp_path, monkeypatch, capsys):
    wd, scratch, checkout, ktopic, tmp = _setup(tmp_path)
    before = be.branch_refs(wd / "linux.git")
    (checkout / "patches" / "locking" / "0002-more.patch").write_text("a patch made since\n")
    (pl,) = be.place_all(scratch, [be.BY_NAME["six-comment"]])
    monkeypatch.setenv("FAKE_BREAKS_ON", "nothing breaks")
    loop = be.Loop(ktopic(scratch), ktopic(checkout), wd, tmp)
    baseline, catch_up, results, restored = be.measure(loop, [pl], repeat=1)
    assert not restored and catch_up is None and [r.label for _, r, _ in results] == \
        ["six-comment"]
    out = capsys.readouterr().out
    assert "ERROR: the branches are NOT as before the bench" in out
    assert "ERROR:   refs/heads/topic/locking: " in out
    assert be.branch_refs(wd / "linux.git") != before


def test_a_run_waits_for_the_work_directorys_lock_first(tmp_path, capsys):
    import threading
    import time
    from ktopic.model.workdir import Workdir
    held, freed = threading.Event(), []

    def hold():
        with Workdir(tmp_path).lock():
            held.set()
            time.sleep(0.3)
            freed.append(time.monotonic())
    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    be.wait_for_lock(tmp_path)
    assert freed and time.monotonic() >= freed[0]
    t.join()
    assert "waiting for another run to finish" in capsys.readouterr().err
