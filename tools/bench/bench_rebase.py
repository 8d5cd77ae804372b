"""ktopic rebase (all topics) against the loop a maintainer would script

The new base is the real base plus an unrelated change (a line in README,
SUBLEVEL 193), made as a commit on top of base and registered as the
import of a (dummy) tarball: the import of a new tarball is excluded from
both sides (ktopic only hashes the tarball file and finds the import done).
The loop is `git rebase --onto NEW_START OLD_START branch` per topic (the
start being the base or the rebased dependency) and for the integration
branch, in an existing checkout of the old base (the checkout itself is
not counted).  ktopic is measured with every patch applied again (empty
stack cache), with the new base's index cached (as the loop keeps its
checkout) and without.  The series is the one committed (HEAD).  Target:
at least 5x faster than the loop.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import KTOPIC, REPO, sh, table, timed, verdict

sys.path.insert(0, str(REPO / "tools"))
from ktopic.model import manifest  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402

NEW_DV = "6.1.193-1"


def _new_base(gd: Path, tmp: Path, dummy: Path) -> str:
    """base + an unrelated change, registered as the import of dummy."""
    import hashlib
    env = dict(os.environ, GIT_DIR=str(gd), GIT_INDEX_FILE=str(tmp / "bench-index"))
    run = lambda *a, **kw: subprocess.run(["git", *a], env=env, check=True, capture_output=True,  # noqa: E731
                                          text=True, **kw).stdout.strip()
    base = run("rev-parse", "base")
    run("read-tree", base)
    for path, edit in (("Makefile", lambda s: s.replace("SUBLEVEL = 192", "SUBLEVEL = 193", 1)),
                       ("README", lambda s: s + "\nA line a newer point release added.\n")):
        blob = run("hash-object", "-w", "--stdin", input=edit(run("show", f"{base}:{path}") + "\n"))
        run("update-index", "--cacheinfo", f"100644,{blob},{path}")
    tree = run("write-tree")
    digest = hashlib.sha256(dummy.read_bytes()).hexdigest()
    msg = f"Import linux-source-6.1 {NEW_DV}\n\nbench\n\nTarball: {dummy.name}\nTarball-SHA256: {digest}\n"
    ident = dict(env, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
                 GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org")
    commit = subprocess.run(["git", "commit-tree", tree, "-p", base], input=msg, text=True,
                            check=True, capture_output=True, env=ident).stdout.strip()
    run("update-ref", f"refs/ktopic/bases/{NEW_DV}", commit)
    return commit


def _project(proj: Path) -> None:
    """The manifest, patches and qemu/ as committed (HEAD): a consistent
    series even while someone edits the checkout."""
    proj.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD", "branches.yaml", "patches",
                              "qemu"], capture_output=True)
    if archive.returncode == 0:
        subprocess.run(["tar", "-x", "-C", str(proj)], input=archive.stdout, check=True)
        return
    shutil.copy(REPO / "branches.yaml", proj / "branches.yaml")
    shutil.copytree(REPO / "patches", proj / "patches")
    if (REPO / "qemu").exists():
        shutil.copytree(REPO / "qemu", proj / "qemu")


def run(repeat: int) -> bool:
    main_wd = Workdir()
    with tempfile.TemporaryDirectory(prefix="ktopic-bench-rebase-") as tmp:
        tmp = Path(tmp)
        proj = tmp / "proj"
        _project(proj)
        m = manifest.load(proj / "branches.yaml")
        subprocess.run([*KTOPIC, "-m", str(proj / "branches.yaml"), "-w", str(main_wd.root),
                        "import-base"], check=True, stdout=subprocess.DEVNULL)
        wd = tmp / "work"
        wd.mkdir()
        gd = wd / "linux.git"
        sh("git", "clone", "-q", "--mirror", "--shared", str(main_wd.git_dir), str(gd))
        kt = [*KTOPIC, "-m", str(proj / "branches.yaml"), "-w", str(wd)]
        subprocess.run([*kt, "generate"], check=True, stdout=subprocess.DEVNULL)
        dummy = tmp / "linux-source-6.1_6.1.193.tar.xz"
        dummy.write_bytes(b"stands for the imported tarball\n")
        new = _new_base(gd, tmp, dummy)
        old = sh("git", "--git-dir", str(gd), "rev-parse", "base").strip()
        refs0 = sh("git", "--git-dir", str(gd), "for-each-ref",
                   "--format=%(refname) %(objectname)", "refs/heads", "refs/ktopic/made")
        saved = tmp / "saved"
        shutil.copytree(proj, saved)
        cache0 = (wd / "stack-cache.json").read_bytes()
        def index_files() -> set[str]:
            """generate makes index-cache/ only when a patch needs a full index"""
            d = wd / "index-cache"
            return set(os.listdir(d)) if d.is_dir() else set()
        index0 = index_files()

        def restore(index_cache: bool):
            shutil.rmtree(proj)
            shutil.copytree(saved, proj)
            lines = ["start"] + [f"update {ln}" for ln in refs0.splitlines()]
            for ref in sh("git", "--git-dir", str(gd), "for-each-ref", "--format=%(refname)",
                          "refs/ktopic/old").split():
                lines.append(f"delete {ref}")
            sh("git", "--git-dir", str(gd), "update-ref", "--stdin",
               input="\n".join(lines + ["commit", ""]))
            (wd / "stack-cache.json").write_bytes(cache0)
            shutil.rmtree(wd / "rebase", ignore_errors=True)
            if not index_cache:
                for f in index_files() - index0:
                    (wd / "index-cache" / f).unlink()
        rebase = lambda: subprocess.run([*kt, "rebase", "--tarball", str(dummy),  # noqa: E731
                                         "--debian-version", NEW_DV],
                                        check=True, stdout=subprocess.DEVNULL)
        cold = timed(rebase, repeat, before=lambda: restore(False))
        warm = timed(rebase, repeat, before=lambda: restore(True))
        restore(True)
        out = subprocess.run([*kt, "rebase", "--tarball", str(dummy), "--debian-version", NEW_DV],
                             capture_output=True, text=True)
        ok_run = out.returncode == 0
        if not ok_run:
            print(out.stdout + out.stderr)

        # The loop, in a checkout of the old base.
        checkout = tmp / "checkout"
        t0 = time.perf_counter()
        sh("git", "--git-dir", str(gd), "worktree", "add", "-q", "--detach", str(checkout), old)
        checkout_s = time.perf_counter() - t0
        env = dict(os.environ, GIT_COMMITTER_NAME="Maintainer", GIT_COMMITTER_EMAIL="m@example.org")
        env.pop("GIT_DIR", None)
        old_heads = {ref: oid for ref, oid in (ln.split() for ln in refs0.splitlines())}
        branches = [(n, m.topics[n].branch, m.topics[n].depends) for n in m.order]

        def reset_loop():
            sh("git", "checkout", "-q", "--detach", old, cwd=checkout, env=env)
            for n, b, _ in branches + [("integration", m.integration.branch, [])]:
                sh("git", "update-ref", f"refs/heads/bench/{b}", old_heads[f"refs/heads/{b}"],
                   cwd=checkout, env=env)

        def loop():
            for n, b, deps in branches:
                if deps:
                    dep = m.topics[deps[-1]].branch
                    onto, upstream = f"bench/{dep}", old_heads[f"refs/heads/{dep}"]
                else:
                    onto, upstream = new, old
                sh("git", "rebase", "-q", "--onto", onto, upstream, f"bench/{b}", cwd=checkout, env=env)
            sh("git", "rebase", "-q", "--onto", new, old, f"bench/{m.integration.branch}",
               cwd=checkout, env=env)
        loop_s = timed(loop, repeat, before=reset_loop)
        same = all(sh("git", "rev-parse", f"bench/{b}^{{tree}}", cwd=checkout, env=env) ==
                   sh("git", "--git-dir", str(gd), "rev-parse", f"{b}^{{tree}}")
                   for _, b, _ in branches + [("i", m.integration.branch, [])])
        sh("git", "--git-dir", str(gd), "worktree", "remove", "--force", str(checkout))
    npatches = sum(len(t.patches) for t in m.topics.values())
    table([("topics / patches", f"{len(m.topics)} / {npatches} (+ integration)"),
           ("import of the new tarball", "excluded from both sides"),
           ("git rebase --onto loop", f"{loop_s:.2f} s (plus {checkout_s:.1f} s for the first checkout)"),
           ("ktopic rebase, new base index cached", f"{warm:.2f} s"),
           ("  the same with no index cache", f"{cold:.2f} s"),
           ("same trees on both sides", "yes" if same else "NO"),
           ("ratio loop / rebase", f"{loop_s / warm:.1f}x (cold: {loop_s / cold:.1f}x)")])
    ok = verdict("rebase result", ok_run and same, "every topic rebased, same trees as the loop")
    return verdict("rebase vs git rebase --onto loop", loop_s / warm >= 5,
                   f"{loop_s / warm:.1f}x (target >= 5x)") and ok
