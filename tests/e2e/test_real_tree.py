"""End to end on Debian's real linux-source-6.1 tarball: import, generate,
hashes across work directories, no-op regeneration, export round trip,
refusal to overwrite a hand-made commit."""

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import git_rebuild
from conftest import REAL_TARBALL, REPO
from ktopic.model import manifest

pytestmark = pytest.mark.e2e
KTOPIC = [sys.executable, str(REPO / "tools/bin/ktopic")]


def ktopic(wd: Path, *args: str, manifest: Path = REPO / "branches.yaml") -> subprocess.CompletedProcess:
    return subprocess.run([*KTOPIC, "-m", str(manifest), "-w", str(wd), *args],
                          capture_output=True, text=True)


def refs(wd: Path) -> dict[str, str]:
    out = subprocess.run(["git", "--git-dir", str(wd / "linux.git"), "for-each-ref",
                          "--format=%(refname) %(objectname)", "refs/heads"],
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split() for line in out.splitlines())


@pytest.fixture(scope="module")
def generated(real_workdir) -> Path:
    r = ktopic(real_workdir, "generate")
    assert r.returncode == 0, r.stderr
    return real_workdir


def test_import_is_the_tarball(real_workdir, tmp_path):
    """Spot-check files Debian's .gitignore would hide, and the file count."""
    git = ["git", "--git-dir", str(real_workdir / "linux.git")]
    names = subprocess.run([*git, "ls-tree", "-r", "--name-only", "base"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    with tarfile.open(REAL_TARBALL) as tar:
        members = [m for m in tar.getmembers() if not m.isdir()]
        assert len(names) == len(members)
        for want in ("Makefile", ".gitignore", "MAINTAINERS", "scripts/checkpatch.pl"):
            m = tar.getmember(f"linux-source-6.1/{want}")
            blob = subprocess.run([*git, "cat-file", "blob", f"base:{want}"], capture_output=True,
                                  check=True).stdout
            assert blob == tar.extractfile(m).read()


def test_every_branch_and_the_proofs(generated):
    r = refs(generated)
    assert r["refs/heads/topic/compiler"] == r["refs/heads/base"]
    assert set(r) >= {"refs/heads/topic/locking", "refs/heads/topic/mm", "refs/heads/topic/fs",
                      "refs/heads/topic/closures", "refs/heads/for-next"}
    status = ktopic(generated, "status")
    assert status.returncode == 0
    assert status.stdout.count("in sync") == 6


def test_same_hashes_in_a_second_work_directory(generated, tmp_path):
    other = tmp_path / "work2"
    assert ktopic(other, "import-base").returncode == 0
    assert ktopic(other, "generate").returncode == 0
    assert refs(other) == refs(generated)


def test_every_branch_is_what_git_alone_makes(generated):
    """The Python fast path against git apply --cached on a full index,
    write-tree and commit-tree, patch by patch, on every branch."""
    m = manifest.load(REPO / "branches.yaml")
    assert git_rebuild.mismatches(m, generated / "linux.git") == {}


def test_regeneration_is_a_no_op(generated):
    before = refs(generated)
    r = ktopic(generated, "generate")
    assert r.returncode == 0 and "0 patches applied" in r.stdout
    assert refs(generated) == before


def test_export_generate_round_trip(generated, tmp_path):
    repo = tmp_path / "checkout"
    shutil.copytree(REPO / "patches", repo / "patches")
    shutil.copy(REPO / "branches.yaml", repo / "branches.yaml")
    for sub in ("qemu",):
        shutil.copytree(REPO / sub, repo / sub)
    before = refs(generated)
    manifest = repo / "branches.yaml"
    for topic in ("closures",):
        r = ktopic(generated, "export", topic, manifest=manifest)
        assert r.returncode == 0, r.stderr
    diff = subprocess.run(["diff", "-r", str(REPO / "patches"), str(repo / "patches")],
                          capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout
    assert manifest.read_text() == (REPO / "branches.yaml").read_text()
    assert ktopic(generated, "generate", manifest=manifest).returncode == 0
    assert refs(generated) == before


def test_hand_made_commit_is_refused(generated):
    gd = str(generated / "linux.git")

    def git(*a):
        return subprocess.run(["git", "--git-dir", gd, *a], capture_output=True, text=True,
                              check=True, env={"GIT_AUTHOR_NAME": "Someone", "GIT_AUTHOR_EMAIL": "s@x",
                                               "GIT_COMMITTER_NAME": "Someone",
                                               "GIT_COMMITTER_EMAIL": "s@x"}).stdout.strip()
    made = git("rev-parse", "topic/closures")
    hand = git("commit-tree", git("rev-parse", "topic/closures^{tree}"), "-p", made,
               "-m", "a hand-made commit")
    git("update-ref", "refs/heads/topic/closures", hand)
    try:
        r = ktopic(generated, "generate")
        assert r.returncode == 1
        assert "branch topic/closures holds commits ktopic did not make" in r.stderr
        assert refs(generated)["refs/heads/topic/closures"] == hand
    finally:
        git("update-ref", "refs/heads/topic/closures", made)
