"""ktopic import-base on a synthetic tarball."""

import subprocess
import tarfile

from conftest import TREE, make_tarball


def test_tree_is_the_tarball_byte_for_byte(imported, tmp_path):
    out = tmp_path / "x"
    out.mkdir()
    with tarfile.open(imported.tarball) as tar:
        tar.extractall(out)
    src = out / "linux-source-6.1"
    listed = imported.git("ls-tree", "-r", "base").splitlines()
    modes = {line.split("\t")[1]: line.split()[0] for line in listed}
    # Every file, including the ones Debian's .gitignore (and lib/.gitignore) hide.
    expected = set(TREE) | {"lib/link.c"}
    assert set(modes) == expected
    for name in TREE:
        assert imported.git("cat-file", "blob", f"base:{name}") == (src / name).read_text()
    assert modes["scripts/tool.sh"] == "100755"
    assert modes["lib/link.c"] == "120000"
    assert imported.git("cat-file", "blob", "base:lib/link.c") == "counter.c"


def test_commit_names_package_and_version(imported):
    msg = imported.git("log", "-1", "--format=%B", "base")
    assert msg.startswith("Import linux-source-6.1 6.1.192-3\n")
    assert "upstream v6.1.192" in msg


def test_second_run_is_a_no_op(imported, ktopic):
    before = imported.refs()
    r = ktopic(*imported.args("import-base"))
    assert r.status == 0 and "already imported" in r.out
    assert imported.refs() == before


def test_same_tarball_same_commit_anywhere(imported, ktopic, tmp_path):
    other = tmp_path / "elsewhere"
    assert ktopic(*imported.args("import-base", workdir=other)).status == 0
    assert imported.refs(other)["refs/heads/base"] == imported.refs()["refs/heads/base"]


def test_version_mismatch_is_refused(project, ktopic, tmp_path):
    tree = dict(TREE, Makefile=TREE["Makefile"].replace("SUBLEVEL = 192", "SUBLEVEL = 200"))
    make_tarball(project.tarball.parent / "other.tar.xz", tree)
    text = project.manifest.read_text().replace(str(project.tarball),
                                                str(project.tarball.parent / "other.tar.xz"))
    project.manifest.write_text(text)
    r = ktopic(*project.args("import-base"))
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.strip().startswith("version: 6"))
    assert r.status == 2
    assert r.err.strip() == (f"ktopic: branches.yaml:{line}: the tarball's Makefile says 6.1.200, "
                             f"the manifest says 6.1.192")
    assert "refs/heads/base" not in project.refs()


def test_missing_tarball(project, ktopic):
    text = project.manifest.read_text().replace(str(project.tarball), "/nonexistent/linux.tar.xz")
    project.manifest.write_text(text)
    r = ktopic(*project.args("import-base"))
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "tarball:" in ln)
    assert r.status == 2
    assert r.err.startswith(f"ktopic: branches.yaml:{line}: base tarball /nonexistent/linux.tar.xz not found")
    assert len(r.err.strip().splitlines()) == 1


def test_git_fsck_is_clean(imported):
    subprocess.run(["git", "--git-dir", str(imported.workdir / "linux.git"), "fsck", "--strict",
                    "--no-progress"], check=True, capture_output=True)
