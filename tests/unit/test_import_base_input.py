"""ktopic import-base on hostile tarballs: a broken tar or xz stream is
refused in one line naming the tarball, exit 2, and nothing moves."""

import io
import subprocess
import sys
import tarfile

import pytest

from conftest import REPO, TREE

TOP = "linux-source-6.1"
MTIME = 1_700_000_000
URL_BAD = b'[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwn\n'


def member(name, data=b"x\n", type=tarfile.REGTYPE, linkname="", mode=0o644):
    return dict(name=name, data=data, type=type, linkname=linkname, mode=mode)


def link(name, target):
    return member(name, type=tarfile.LNKTYPE, linkname=target)


def sym(name, target):
    return member(name, type=tarfile.SYMTYPE, linkname=target)


def tar_bytes(extra=(), first=(), fmt=tarfile.GNU_FORMAT) -> bytes:
    """The synthetic kernel tree (conftest's TREE and lib/link.c), with the
    members of first before it and those of extra after it."""
    members = list(first) + [member(TOP, type=tarfile.DIRTYPE, mode=0o755)]
    for name, text in sorted(TREE.items()):
        members.append(member(f"{TOP}/{name}", text.encode(),
                              mode=0o755 if name.endswith(".sh") else 0o644))
    members.append(sym(f"{TOP}/lib/link.c", "counter.c"))
    members += list(extra)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, encoding="utf-8",
                      errors="surrogateescape") as tar:
        for m in members:
            ti = tarfile.TarInfo(m["name"])
            ti.type, ti.linkname, ti.mode, ti.mtime = m["type"], m["linkname"], m["mode"], MTIME
            if m["type"] == tarfile.REGTYPE:
                ti.size = len(m["data"])
                tar.addfile(ti, io.BytesIO(m["data"]))
            else:
                tar.addfile(ti)
    return buf.getvalue()


def xz(path, data: bytes):
    path.write_bytes(subprocess.run(["xz", "-0", "-c"], input=data, check=True,
                                    capture_output=True).stdout)
    return path


def use_tarball(project, tb, debian_version=None):
    text = project.manifest.read_text().replace(str(project.tarball), str(tb))
    if debian_version:
        text = text.replace("debian-version: 6.1.192-3", f"debian-version: {debian_version}")
    project.manifest.write_text(text)
    return next(i for i, ln in enumerate(text.splitlines(), 1) if "tarball:" in ln)


def leftovers(project):
    """What a refused import must not leave in the work repository."""
    gd = project.workdir / "linux.git"
    return sorted(p.name for p in [*gd.glob("fast_import_crash_*"),
                                   *gd.glob("objects/pack/tmp_*")])


def refused(project, ktopic, tmp_path, data: bytes, name="hostile.tar.xz"):
    """Import the tarball; check it is refused cleanly; return the problem
    the one line gives after the tarball's name."""
    tb = xz(tmp_path / name, data)
    line = use_tarball(project, tb)
    r = ktopic(*project.args("import-base"))
    assert r.status == 2, r
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    prefix = f"ktopic: branches.yaml:{line}: base tarball {tb}"
    assert r.err.startswith(prefix), r.err
    assert "refs/heads/base" not in project.refs()
    assert leftovers(project) == []
    return r.err[len(prefix):].rstrip("\n")


def imports(project, ktopic, tmp_path, data: bytes):
    tb = xz(tmp_path / "ok.tar.xz", data)
    use_tarball(project, tb)
    r = ktopic(*project.args("import-base"))
    assert r.status == 0, r
    subprocess.run(["git", "--git-dir", str(project.workdir / "linux.git"), "fsck", "--strict",
                    "--no-progress"], check=True, capture_output=True)
    listed = project.git("ls-tree", "-r", "-z", "base").split("\0")
    return {ln.split("\t", 1)[1]: ln.split()[0] for ln in listed if ln}


# --- broken streams ------------------------------------------------------------------

def test_a_truncated_tar_is_refused(project, ktopic, tmp_path):
    data = tar_bytes()
    got = refused(project, ktopic, tmp_path, data[:len(data) // 2])
    assert got.startswith(": truncated or corrupt tar stream after member '"), got
    assert got.endswith("': unexpected end of data"), got


def test_a_tar_without_its_end_is_refused(project, ktopic, tmp_path):
    """Cut at a header: tarfile would take that for the end of the archive."""
    data = tar_bytes()
    end = data.rindex(b"counter.c") // 512 * 512 + 512    # the end of lib/link.c's header
    got = refused(project, ktopic, tmp_path, data[:end])
    assert got == (f": truncated or corrupt tar stream after member '{TOP}/lib/link.c': "
                   f"it ends without the end-of-archive blocks")


def test_a_bad_header_midway_is_refused(project, ktopic, tmp_path):
    data = bytearray(tar_bytes())
    at = data.index(b"lib/link.c") // 512 * 512
    data[at + 148:at + 156] = b"0000000\0"                 # its checksum
    got = refused(project, ktopic, tmp_path, bytes(data))
    assert got.startswith(": truncated or corrupt tar stream after member '"), got
    assert got.endswith(": bad checksum"), got


def test_a_truncated_xz_is_refused(project, ktopic, tmp_path):
    whole = xz(tmp_path / "whole.tar.xz", tar_bytes()).read_bytes()
    cut = tmp_path / "cut.tar.xz"
    cut.write_bytes(whole[:-200])
    line = use_tarball(project, cut)
    r = ktopic(*project.args("import-base"))
    assert r.status == 2
    assert r.err == (f"ktopic: branches.yaml:{line}: base tarball {cut}: xz cannot decompress "
                     f"it: Unexpected end of input\n")
    assert project.refs() == {} and leftovers(project) == []


def test_data_after_the_end_of_the_archive_is_ignored(project, tmp_path):
    """As tar ignores it; xz is not left blocked on writing it (in a process
    of its own: a hang fails the test)."""
    tb = xz(tmp_path / "ok.tar.xz", tar_bytes() + b"\1" * (1 << 20))
    use_tarball(project, tb)
    r = subprocess.run([sys.executable, str(REPO / "tools/bin/ktopic"),
                        *project.args("import-base")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert project.git("cat-file", "blob", "base:Makefile") == TREE["Makefile"]


# --- nothing moves ---------------------------------------------------------------------

def test_a_fast_import_failure_leaves_no_crash_report(project, ktopic, monkeypatch):
    from ktopic.plumbing import importbase
    monkeypatch.setattr(importbase, "_quote", lambda path: b"a//" + path.encode())
    r = ktopic(*project.args("import-base"))
    assert r.status == 1
    assert r.err == "ktopic: git fast-import failed: fatal: Empty path component found in input\n"
    assert project.refs() == {} and leftovers(project) == []
