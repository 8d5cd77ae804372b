"""ktopic rebase on the real packaged tree, every case at once.

One newer tree is made from the real base (git archive of a commit on top
of it, xz -0) with, in topics that do not depend on one another:

- locking 0001 applied exactly: `upstream`, found by its patch-id;
- locking 0003 applied with its added lines indented with spaces, and
  another line of the same file changed: `upstream`, found because it
  reverse-applies with whitespace ignored;
- mm 0001 applied, and a line next to one of its hunks changed (other
  context): `upstream`, found because a three-way merge leaves the tree
  as it is;
- a line in the context of fs 0001 changed: `3-way`, the patch rewritten;
- the line fs 0004 removes changed: `conflict`;
- unrelated changes (Makefile's SUBLEVEL, README); every other patch
  `applied`.

The rebase stops fs at 0004 with a sparse worktree, listing the file and
the hunk; the other topics, closures after it too, are rebased and
committed.  `--abort` puts refs, manifest, patches, stack cache and
worktrees back exactly.  The rebase runs again; a scripted resolution and
`--continue` finish it: the resolved patch and the 3-way one are written
back to patches/fs/, the upstream ones leave patches/ for the topics'
`upstream:` lists with checks that hold on the new base and fail on the old
one, the old branches stay under refs/ktopic/old/6.1.192-3/, and
`generate` then applies nothing.  Everything happens on a copy of the
project and a mirror of the real work repository, under tmp_path."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, Project
from ktopic.plumbing.patchfile import parse
from rebase_support import header, outcomes, resolve_conflicts, snapshot

pytestmark = pytest.mark.e2e
KTOPIC = [sys.executable, str(REPO / "tools/bin/ktopic")]
OLD_DV, NEW_DV = "6.1.192-3", "6.1.193-1"

# The real patches each case uses, as topic/file.
EXACT = "locking/0001-locking-six-add-SIX-locks-shared-intent-exclusive.patch"
WHITESPACE = "locking/0003-locking-locktorture-add-six_lock-and-six_lock_pcpu.patch"
CONTEXT = "mm/0001-mm-pagecache-add-lock.patch"
THREE_WAY = "fs/0001-fs-insert_inode_locked2.patch"
CONFLICT = "fs/0004-block-export-the-bio-page-dirtying-helpers-and-blk_s.patch"
# ... and the evidence each upstream one is found by.
EVIDENCE = {EXACT: "patch-id", WHITESPACE: "reverse-applies", CONTEXT: "three-way"}

BLK_STATUS_TO_STR = "\nconst char *blk_status_to_str(blk_status_t status);\n"

# (file, old text, new text) on top of the patches the newer tree contains.
EDITS = [
    ("Makefile", "SUBLEVEL = 192\n", "SUBLEVEL = 193\n"),
    ("README", "", "\nA line a newer point release added.\n"),            # appended
    # WHITESPACE: elsewhere in its file, so that its patch-id differs.
    ("kernel/locking/locktorture.c", "MODULE_AUTHOR(\"Paul E. McKenney <paulmck@linux.ibm.com>\");",
     "MODULE_AUTHOR(\"Paul E. McKenney <paulmck@kernel.org>\");"),
    # CONTEXT: a comment on a line of the context of page_cache_ra_unbounded()'s
    # hunk, two lines below what mm 0001 adds (not next to it: git takes
    # changes that touch for a conflict).
    ("mm/readahead.c", "\tpagecache_add_put(&mapping->add_lock);\nout:\n"
     "\tfilemap_invalidate_unlock_shared(mapping);\n\tmemalloc_nofs_restore(nofs);\n}\n",
     "\tpagecache_add_put(&mapping->add_lock);\nout:\n"
     "\tfilemap_invalidate_unlock_shared(mapping);\n"
     "\tmemalloc_nofs_restore(nofs);\t/* after the unlock */\n}\n"),
    # THREE_WAY: a line of its context, two lines above what fs 0001 adds.
    ("fs/inode.c", "EXPORT_SYMBOL(insert_inode_locked);\n",
     "EXPORT_SYMBOL_GPL(insert_inode_locked);\n"),
    # CONFLICT: the declaration fs 0004 removes from block/blk.h, changed.
    ("block/blk.h", BLK_STATUS_TO_STR, BLK_STATUS_TO_STR.replace(");", ") __cold;")),
]


def git(gd: Path, *args: str, **kw) -> str:
    env = {"GIT_DIR": str(gd), "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Debian", "GIT_AUTHOR_EMAIL": "debian@example.org",
           "GIT_COMMITTER_NAME": "Debian", "GIT_COMMITTER_EMAIL": "debian@example.org",
           **kw.pop("env", {})}
    return subprocess.run(["git", *args], env=env, capture_output=True, text=True, check=True,
                          **kw).stdout


def copy_of_project(real_workdir: Path, tmp_path: Path) -> Project:
    """The project's manifest, patches and qemu/ in tmp_path/proj, and a work
    directory tmp_path/proj-work whose repository shares the real import's
    objects (nothing is written to the real one)."""
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copy(REPO / "branches.yaml", root / "branches.yaml")
    shutil.copytree(REPO / "patches", root / "patches")
    if (REPO / "qemu").exists():
        shutil.copytree(REPO / "qemu", root / "qemu")
    project = Project(root, tmp_path / "linux-source-6.1.tar.xz")     # made by tarball_of()
    project.workdir.mkdir()
    gd = project.workdir / "linux.git"
    subprocess.run(["git", "clone", "-q", "--mirror", "--shared", str(real_workdir / "linux.git"),
                    str(gd)], check=True)
    git(gd, "config", "rerere.enabled", "true")
    if (real_workdir / "index-cache").exists():
        shutil.copytree(real_workdir / "index-cache", project.workdir / "index-cache")
    return project


def ktopic(project: Project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*KTOPIC, *project.args(*args)], capture_output=True, text=True)


def patch_text(project: Project, rel: str) -> str:
    return (project.root / "patches" / rel).read_text()


def indented_with_spaces(patch: str) -> str:
    """The patch with the tabs that indent its added lines made spaces."""
    return re.sub(r"^\+(\t+)", lambda m: "+" + " " * 8 * len(m.group(1)), patch, flags=re.M)


def newer_tree(project: Project, base: str, tmp_path: Path) -> str:
    """A commit on base with the tree the docstring describes."""
    gd = project.workdir / "linux.git"
    idx = {"GIT_INDEX_FILE": str(tmp_path / "newer.index")}
    git(gd, "read-tree", base, env=idx)
    for patch in (patch_text(project, EXACT), indented_with_spaces(patch_text(project, WHITESPACE)),
                  patch_text(project, CONTEXT)):
        git(gd, "apply", "--cached", "-", input=patch, env=idx)
    for path, old, new in EDITS:
        text = git(gd, "show", f":{path}", env=idx)
        assert not old or text.count(old) == 1, (path, old)
        text = text.replace(old, new) if old else text + new
        blob = git(gd, "hash-object", "-w", "--stdin", input=text).strip()
        git(gd, "update-index", "--cacheinfo", f"100644,{blob},{path}", env=idx)
    tree = git(gd, "write-tree", env=idx).strip()
    return git(gd, "commit-tree", tree, "-p", base, "-m", "newer", env=idx).strip()


def tarball_of(project: Project, commit: str) -> Path:
    """The packaged tree of commit, as a tarball: git archive, xz -0."""
    with open(project.tarball, "wb") as out:
        a = subprocess.Popen(["git", "--git-dir", str(project.workdir / "linux.git"), "archive",
                              "--format=tar", "--prefix=linux-source-6.1/", commit],
                             stdout=subprocess.PIPE)
        subprocess.run(["xz", "-0", "-T2", "-c"], stdin=a.stdout, stdout=out, check=True)
        assert a.wait() == 0
    return project.tarball


def carried(project: Project) -> list[str]:
    """topic/file of every patch the manifest carries, in order."""
    m = yaml.safe_load(project.manifest.read_text())
    return [f"{name}/{p if isinstance(p, str) else p['file']}" for name, t in m["topics"].items()
            for p in t.get("patches", [])]


def expected_outcomes(patches: list[str], stopped: bool) -> dict[tuple[str, str], str]:
    """The table, while the rebase is stopped at CONFLICT (the patches of
    its topic after it are not reached) or once it is resolved."""
    want = {("compiler", "-"): "done"}
    stopped_topic = None
    for rel in patches:
        topic, file = rel.split("/")
        if topic == stopped_topic:              # not reached: listed as pending
            want[(topic, file)] = "pending"
            continue
        want[(topic, file)] = "upstream" if rel in EVIDENCE else \
            "3-way" if rel == THREE_WAY else \
            ("conflict" if stopped else "resolved") if rel == CONFLICT else "applied"
        if stopped and rel == CONFLICT:
            stopped_topic = topic
    return want


def check_stopped_at_the_conflict(project: Project, r, before: dict, patches: list[str]) -> None:
    """fs stops in a sparse worktree with the conflict in place; the other
    topics are rebased and committed, fs and the integration branch wait."""
    assert r.returncode == 1, r.stdout + r.stderr
    assert outcomes(r.stdout) == expected_outcomes(patches, stopped=True), r.stdout
    wt = project.workdir / "rebase" / "wt-fs"
    assert f"topic fs: {Path(CONFLICT).name}" in r.stdout and f"worktree {wt}" in r.stdout
    assert re.search(r"^  block/blk.h: hunk #1 \(@@ -249,7 \+249,6 @@\); "
                     r"conflict markers at line\(s\) \d+$", r.stdout, re.M), r.stdout
    text = (wt / "block/blk.h").read_text()
    assert "<<<<<<<" in text and "blk_status_to_str(blk_status_t status) __cold;" in text
    checked_out = {str(p.relative_to(wt)) for p in wt.rglob("*")
                   if p.is_file() and p.name != ".git"}
    assert "block/blk.h" in checked_out         # sparse: only (some of) the patch's files
    assert checked_out <= set(parse(project.root / "patches" / CONFLICT).paths), checked_out
    gd = project.workdir / "linux.git"
    refs = project.refs()
    new_base = refs["refs/heads/base"]
    assert new_base != before["refs"]["refs/heads/base"]
    m = yaml.safe_load(project.manifest.read_text())
    for name, t in m["topics"].items():
        b = t["branch"]
        if name == "fs":
            assert refs[f"refs/heads/{b}"] == before["refs"][f"refs/heads/{b}"], b
        else:
            assert refs[f"refs/heads/{b}"] != before["refs"][f"refs/heads/{b}"], b
            assert git(gd, "merge-base", "--is-ancestor", new_base, b) == ""
    assert refs["refs/heads/for-next"] == before["refs"]["refs/heads/for-next"]
    now = snapshot(project)["patches"]
    assert {k: v for k, v in now.items() if k.startswith("patches/fs/")} == \
        {k: v for k, v in before["patches"].items() if k.startswith("patches/fs/")}


def the_patch_side(ours: str, theirs: str) -> str:
    """The resolution: blk_status_to_str()'s declaration leaves block/blk.h
    as fs 0003 wants (it moves to include/linux/blkdev.h)."""
    return theirs


def test_rebase_onto_a_newer_real_tree(real_workdir, tmp_path):
    project = copy_of_project(real_workdir, tmp_path)
    gd = project.workdir / "linux.git"
    r = ktopic(project, "generate")
    assert r.returncode == 0, r.stderr
    patches = carried(project)
    for rel in (*EVIDENCE, THREE_WAY, CONFLICT):
        assert rel in patches, f"the manifest no longer carries {rel}: choose another patch"
    subjects = {rel: parse(project.root / "patches" / rel).subject for rel in EVIDENCE}
    before = snapshot(project)
    base = before["refs"]["refs/heads/base"]
    newer = newer_tree(project, base, tmp_path)
    tarball = tarball_of(project, newer)

    def rebase():
        return ktopic(project, "rebase", "--tarball", str(tarball), "--debian-version", NEW_DV)

    # The conflict stops fs only; --abort puts everything back.
    check_stopped_at_the_conflict(project, rebase(), before, patches)
    a = ktopic(project, "rebase", "--abort")
    assert a.returncode == 0, a.stdout + a.stderr
    after = snapshot(project)
    for key in before:
        assert after[key] == before[key], key

    # Again, then resolved by script: --continue finishes the rebase.
    check_stopped_at_the_conflict(project, rebase(), before, patches)
    resolve_conflicts(project.workdir / "rebase/wt-fs/block/blk.h", the_patch_side)
    c = ktopic(project, "rebase", "--continue")
    assert c.returncode == 0, c.stdout + c.stderr
    assert outcomes(c.stdout) == expected_outcomes(patches, stopped=False), c.stdout
    assert not (project.workdir / "rebase").exists()
    assert len(git(gd, "worktree", "list").splitlines()) == 1

    # Refs: the new base is the tarball, on the old one; every branch on it,
    # its previous head kept.
    refs = project.refs()
    new_base = refs["refs/heads/base"]
    assert git(gd, "rev-parse", f"{new_base}^").strip() == base
    assert git(gd, "rev-parse", f"{new_base}^{{tree}}").strip() == \
        git(gd, "rev-parse", f"{newer}^{{tree}}").strip()          # the tarball, byte for byte
    m = yaml.safe_load(project.manifest.read_text())
    for b in [t["branch"] for t in m["topics"].values()] + [m["integration"]["branch"]]:
        assert refs[f"refs/ktopic/old/{OLD_DV}/{b}"] == before["refs"][f"refs/heads/{b}"], b
        assert refs[f"refs/ktopic/made/{b}"] == refs[f"refs/heads/{b}"], b
        assert git(gd, "merge-base", "--is-ancestor", new_base, b) == ""
    assert m["base"]["debian-version"] == NEW_DV and m["base"]["version"] == "6.1.193"

    # patches/: the upstream ones gone, the 3-way and the resolved one
    # rewritten, the others as they were.
    files = snapshot(project)["patches"]
    assert carried(project) == [p for p in patches if p not in EVIDENCE]
    assert set(files) == {f"patches/{p}" for p in patches if p not in EVIDENCE}
    for rel in set(carried(project)) - {THREE_WAY, CONFLICT}:
        assert files[f"patches/{rel}"] == before["patches"][f"patches/{rel}"], rel
    for rel in (THREE_WAY, CONFLICT):       # the diff changed, not the mail ([PATCH n/3])
        assert files[f"patches/{rel}"] != before["patches"][f"patches/{rel}"], rel
        assert header(files[f"patches/{rel}"]) == header(before["patches"][f"patches/{rel}"]), rel
    assert " EXPORT_SYMBOL_GPL(insert_inode_locked);\n" in files[f"patches/{THREE_WAY}"]
    resolved = files[f"patches/{CONFLICT}"]
    assert "-const char *blk_status_to_str(blk_status_t status) __cold;\n" in resolved
    assert "<<<<<<<" not in resolved
    # ... and the branch has the resolution.
    assert "blk_status_to_str" not in git(gd, "show", "topic/fs:block/blk.h")
    assert "\nconst char *blk_status_to_str(blk_status_t status);\n" in \
        git(gd, "show", "topic/fs:include/linux/blkdev.h")

    # The upstream entries: subject, evidence, and a check that holds on the
    # new base and fails on the old one (unless the patch adds the file).
    for rel, how in EVIDENCE.items():
        topic = rel.split("/")[0]
        (entry,) = [e for e in m["topics"][topic]["upstream"] if e["subject"] == subjects[rel]]
        assert entry["upstream-in"] == f"v6.1.193 (linux-source-6.1 {NEW_DV})"
        assert how in entry["evidence"], entry
        (check,) = entry["checks"]
        assert re.search(check["contains"], git(gd, "show", f"base:{check['file']}"), re.M)
        if git(gd, "ls-tree", base, "--", check["file"]).strip():    # else the patch adds it
            old_text = git(gd, "show", f"{base}:{check['file']}")
            assert not re.search(check["contains"], old_text, re.M)

    g = ktopic(project, "generate")
    assert g.returncode == 0 and "0 patches applied" in g.stdout, g.stdout + g.stderr
    assert project.refs() == refs


# --- a series upstreamed together; an empty resolution -----------------------------

SERIES = ["fs/0002-fs-KUnit-tests-for-insert_inode_locked2.patch",
          "fs/0003-fs-factor-out-d_mark_tmpfile.patch"]
MM = "mm/0001-mm-pagecache-add-lock.patch"
# A line right next to what mm 0001 adds to fs/inode.c: a conflict.
MM_EDIT = ("fs/inode.c", '\t\t\t\t   "mapping.invalidate_lock");\n',
           '\t\t\t\t   "mapping.invalidate_lock");\t/* newer */\n')


def test_series_upstream_and_empty_resolution(real_workdir, tmp_path):
    """fs 0002 and 0003 upstream together, their added lines indented with
    spaces (0003's Kconfig and Makefile lines sit in 0002's context, so 0003
    alone conflicts); a conflict in mm 0001 resolved by taking the new
    base's side of every file.  The fs pair is found upstream, each with a
    check the old base fails; the empty resolution is not taken for
    "upstream": --continue refuses until --drop gives a reason."""
    project = copy_of_project(real_workdir, tmp_path)
    gd = project.workdir / "linux.git"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = ktopic(project, "generate")
    assert r.returncode == 0, r.stderr
    for rel in (*SERIES, MM):
        assert rel in carried(project), f"the manifest no longer carries {rel}"
    base = project.refs()["refs/heads/base"]
    idx = {"GIT_INDEX_FILE": str(tmp_path / "newer.index")}
    git(gd, "read-tree", base, env=idx)
    for rel in SERIES:
        git(gd, "apply", "--cached", "--ignore-whitespace", "-",
            input=indented_with_spaces(patch_text(project, rel)),
            env=idx)
    for path, old, new in (EDITS[0], MM_EDIT):         # the Makefile's SUBLEVEL, mm's conflict
        text = git(gd, "show", f":{path}", env=idx)
        assert text.count(old) == 1
        blob = git(gd, "hash-object", "-w", "--stdin", input=text.replace(old, new)).strip()
        git(gd, "update-index", "--cacheinfo", f"100644,{blob},{path}", env=idx)
    tree = git(gd, "write-tree", env=idx).strip()
    newer = git(gd, "commit-tree", tree, "-p", base, "-m", "newer", env=idx).strip()
    tarball = tarball_of(project, newer)

    def run(*args):
        return subprocess.run([*KTOPIC, *project.args(*args)], capture_output=True, text=True,
                              cwd=cwd)

    r = run("rebase", "--tarball", str(tarball), "--debian-version", NEW_DV)
    assert r.returncode == 1, r.stdout + r.stderr
    got = outcomes(r.stdout)
    for rel in SERIES:
        assert got[tuple(rel.split("/"))] == "upstream", r.stdout
    assert got[tuple(MM.split("/"))] == "conflict", r.stdout
    assert sorted(p.name for p in cwd.iterdir()) == []           # nothing in the cwd
    m = yaml.safe_load(project.manifest.read_text())
    old_base = f"refs/ktopic/bases/{OLD_DV}"
    for e in m["topics"]["fs"]["upstream"]:
        assert "together" in e["evidence"], e
        (check,) = e["checks"]
        assert re.search(check["contains"], git(gd, "show", f"{newer}:{check['file']}"), re.M)
        if git(gd, "ls-tree", old_base, "--", check["file"]).strip():
            assert not re.search(check["contains"],
                                 git(gd, "show", f"{old_base}:{check['file']}"), re.M), check

    # mm: every file of the patch resolved to the new base's side (what the
    # patch adds, dropped; what merged cleanly, undone).
    wt = project.workdir / "rebase" / "wt-mm"

    def in_wt(*args):
        return subprocess.run(["git", "-C", str(wt), *args], capture_output=True, text=True,
                              check=True).stdout
    assert in_wt("diff", "--name-only", "--diff-filter=U").split()
    for f in parse(project.root / "patches" / MM).paths:
        if in_wt("ls-tree", "HEAD", "--", f).strip():
            in_wt("checkout", "HEAD", "--", f)
        else:
            in_wt("rm", "-q", "-f", "--ignore-unmatch", "--", f)
            (wt / f).unlink(missing_ok=True)
    assert in_wt("status", "--porcelain", "--untracked-files=no").strip() == ""
    mm_before = patch_text(project, MM)
    mm_subject = parse(project.root / "patches" / MM).subject
    c = run("rebase", "--continue")
    assert c.returncode == 1 and "--drop" in c.stderr, c.stdout + c.stderr
    assert patch_text(project, MM) == mm_before
    m = yaml.safe_load(project.manifest.read_text())
    assert not m["topics"]["mm"].get("upstream"), m["topics"]["mm"]
    c = run("rebase", "--continue", "--drop", "pagecache add lock no longer wanted on 6.1.193")
    got = outcomes(c.stdout)
    assert got[tuple(MM.split("/"))] == "dropped", c.stdout + c.stderr
    if c.returncode == 0:       # mm finished (else mm 0002 stops it: its own conflict)
        m = yaml.safe_load(project.manifest.read_text())
        assert [d["subject"] for d in m["topics"]["mm"]["dropped"]] == [mm_subject]
        assert not (project.root / "patches" / MM).exists()
    else:
        assert run("rebase", "--abort").returncode == 0
    assert sorted(p.name for p in cwd.iterdir()) == []
