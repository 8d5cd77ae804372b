"""ktopic rebase on the real packaged tree: a newer tree made from the real
base plus an unrelated change plus one of our real patches already applied
(git archive of a commit on top of base, xz -0), imported and rebased onto;
the patch is found upstream, every other patch applies, generate agrees."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

pytestmark = pytest.mark.e2e
KTOPIC = [sys.executable, str(REPO / "tools/bin/ktopic")]
NEW_DV = "6.1.193-1"


def git(gd: Path, *args: str, **kw) -> str:
    env = {"GIT_DIR": str(gd), "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Debian", "GIT_AUTHOR_EMAIL": "debian@example.org",
           "GIT_COMMITTER_NAME": "Debian", "GIT_COMMITTER_EMAIL": "debian@example.org",
           **kw.pop("env", {})}
    return subprocess.run(["git", *args], env=env, capture_output=True, text=True, check=True,
                          **kw).stdout


def test_rebase_onto_a_newer_real_tree(real_workdir, tmp_path):
    # A copy of the project and a work directory sharing the real import's objects.
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(REPO / "branches.yaml", proj / "branches.yaml")
    shutil.copytree(REPO / "patches", proj / "patches")
    if (REPO / "qemu").exists():
        shutil.copytree(REPO / "qemu", proj / "qemu")
    wd = tmp_path / "work"
    wd.mkdir()
    gd = wd / "linux.git"
    subprocess.run(["git", "clone", "-q", "--mirror", "--shared", str(real_workdir / "linux.git"),
                    str(gd)], check=True)
    git(gd, "config", "rerere.enabled", "true")
    if (real_workdir / "index-cache").exists():
        shutil.copytree(real_workdir / "index-cache", wd / "index-cache")

    def ktopic(*a):
        return subprocess.run([*KTOPIC, "-m", str(proj / "branches.yaml"), "-w", str(wd), *a],
                              capture_output=True, text=True)
    r = ktopic("generate")
    assert r.returncode == 0, r.stderr
    m = yaml.safe_load((proj / "branches.yaml").read_text())
    carried = [(name, (p if isinstance(p, str) else p["file"])) for name, t in m["topics"].items()
               for p in t.get("patches", [])]
    assert carried, "the manifest carries no patch"
    up_topic, up_file = carried[0]
    patch = proj / "patches" / up_topic / up_file

    # The newer tree: base + our patch + an unrelated change + SUBLEVEL 193.
    old_refs = dict(ln.split() for ln in git(gd, "for-each-ref", "--format=%(refname) %(objectname)")
                    .splitlines())
    base = old_refs["refs/heads/base"]
    idx = {"GIT_INDEX_FILE": str(tmp_path / "index")}
    git(gd, "read-tree", base, env=idx)
    git(gd, "apply", "--cached", str(patch), env=idx)
    for path, edit in (("Makefile", lambda s: s.replace("SUBLEVEL = 192", "SUBLEVEL = 193", 1)),
                       ("README", lambda s: s + "\nA line a newer point release added.\n")):
        blob = subprocess.run(["git", "--git-dir", str(gd), "hash-object", "-w", "--stdin"],
                              input=edit(git(gd, "show", f"{base}:{path}")), text=True,
                              capture_output=True, check=True).stdout.strip()
        git(gd, "update-index", "--cacheinfo", f"100644,{blob},{path}", env=idx)
    tree = git(gd, "write-tree", env=idx).strip()
    newer = git(gd, "commit-tree", tree, "-p", base, "-m", "newer", env=idx).strip()
    tarball = tmp_path / "linux-source-6.1.tar.xz"
    with open(tarball, "wb") as out:
        a = subprocess.Popen(["git", "--git-dir", str(gd), "archive", "--format=tar",
                              "--prefix=linux-source-6.1/", newer], stdout=subprocess.PIPE)
        subprocess.run(["xz", "-0", "-T2", "-c"], stdin=a.stdout, stdout=out, check=True)
        assert a.wait() == 0

    r = ktopic("rebase", "--tarball", str(tarball), "--debian-version", NEW_DV)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {}
    for ln in r.stdout.splitlines():
        cells = [c.strip() for c in ln.split("│")[1:-1]]
        if len(cells) == 4 and cells[0] and cells[0] != "topic":
            rows[(cells[0], cells[1])] = cells[2]
    assert rows[(up_topic, up_file)] == "upstream", r.stdout
    others = {k: v for k, v in rows.items() if k != (up_topic, up_file) and k[1] != "-"}
    assert set(others.values()) <= {"applied"}, r.stdout
    assert len(others) == len(carried) - 1

    refs = dict(ln.split() for ln in git(gd, "for-each-ref", "--format=%(refname) %(objectname)")
                .splitlines())
    new_base = refs["refs/heads/base"]
    assert git(gd, "rev-parse", f"{new_base}^").strip() == base
    assert git(gd, "rev-parse", f"{new_base}^{{tree}}").strip() == tree    # the tarball, byte for byte
    for name, t in m["topics"].items():
        b = t["branch"]
        assert refs[f"refs/ktopic/old/6.1.192-3/{b}"] == old_refs[f"refs/heads/{b}"]
        git(gd, "merge-base", "--is-ancestor", new_base, b)
    m2 = yaml.safe_load((proj / "branches.yaml").read_text())
    assert m2["base"]["debian-version"] == NEW_DV and m2["base"]["version"] == "6.1.193"
    t2 = m2["topics"][up_topic]
    assert up_file not in [p if isinstance(p, str) else p["file"] for p in t2.get("patches", [])]
    entry = t2["upstream"][-1]
    assert "patch-id" in entry["evidence"]
    check = entry["checks"][0]
    assert re.search(check["contains"], git(gd, "show", f"base:{check['file']}"), re.M)
    if git(gd, "ls-tree", base, "--", check["file"]).strip():      # else a file the patch adds
        assert not re.search(check["contains"], git(gd, "show", f"{base}:{check['file']}"), re.M)
    g = ktopic("generate")
    assert g.returncode == 0 and "0 patches applied" in g.stdout, g.stdout + g.stderr
