"""ktopic import-base on hostile tarballs: what git (fsck --strict, checkout)
or GNU tar would refuse is refused in one line naming the tarball and the
member, exit 2, and nothing moves; what they take is imported as tar
would extract it."""

import io
import subprocess
import sys
import tarfile

import pytest

from conftest import REPO, TREE

TOP = "linux-source-6.1"
MTIME = 1_700_000_000
URL_BAD = b'[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwn\n'


def member(name, data=b"x\n", type=tarfile.REGTYPE, linkname="", mode=0o644, pax=None):
    return dict(name=name, data=data, type=type, linkname=linkname, mode=mode, pax=pax or {})


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
            ti.pax_headers = m["pax"]
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


# --- names git or tar refuses ------------------------------------------------------

GIT_REFUSES = [
    (member(f"{TOP}/../../../tmp/escaped"),
     f"member '{TOP}/../../../tmp/escaped': a '..' path component: git and tar refuse it"),
    (member(f"{TOP}/lib/../../evil"),
     f"member '{TOP}/lib/../../evil': a '..' path component: git and tar refuse it"),
    (member(f"{TOP}/./lib/./dot.c"),
     f"member '{TOP}/./lib/./dot.c': a '.' path component: git refuses it (hasDot)"),
    (member(f"{TOP}//lib//x.c"),
     f"member '{TOP}//lib//x.c': an empty path component: git refuses it (emptyName)"),
    (member(f"{TOP}/lib/trail/"),
     f"member '{TOP}/lib/trail/': an empty path component: git refuses it (emptyName)"),
    (member(f"{TOP}/.git/hooks/post-checkout", b"#!/bin/sh\n", mode=0o755),
     f"member '{TOP}/.git/hooks/post-checkout': a '.git' path component: "
     f"git refuses it (hasDotgit)"),
    (member(f"{TOP}/lib/.GIT/config"),
     f"member '{TOP}/lib/.GIT/config': path component '.GIT' is .git to git (in another case, "
     f"or an NTFS or HFS+ alias of it): git refuses it (hasDotgit)"),
    (member(f"{TOP}/lib/GIT~1/config"),
     f"member '{TOP}/lib/GIT~1/config': path component 'GIT~1' is .git to git"),
    (member(f"{TOP}/lib/.git. /config"),
     f"member '{TOP}/lib/.git. /config': path component '.git. ' is .git to git"),
    (member(f"{TOP}/lib/a\\.git"),
     f"member '{TOP}/lib/a\\.git': path component 'a\\.git' is .git to git"),
    (member(f"{TOP}/lib/.g\u200cit/config"),
     f"member '{TOP}/lib/.g\\u200cit/config': path component '.g\\u200cit' is .git to git"),
    (sym(f"{TOP}/.gitmodules", "lib/counter.c"),
     f"member '{TOP}/.gitmodules': path component '.gitmodules' is .gitmodules to git, "
     f"and a symbolic link: git refuses it (gitmodulesSymlink)"),
    (sym(f"{TOP}/lib/GITMOD~1", "counter.c"),
     f"member '{TOP}/lib/GITMOD~1': path component 'GITMOD~1' is .gitmodules to git, "
     f"and a symbolic link"),
    (member(f"{TOP}/lib/.gitmodules/x"),
     f"member '{TOP}/lib/.gitmodules/x': path component '.gitmodules' is .gitmodules to git, "
     f"and a directory: git refuses it (gitmodulesBlob)"),
    (member(f"{TOP}/lib/.gitattributes/x"),
     f"member '{TOP}/lib/.gitattributes/x': path component '.gitattributes' is "
     f".gitattributes to git, and a directory: git refuses it (gitattributesBlob)"),
]


@pytest.mark.parametrize("extra,problem", GIT_REFUSES, ids=[m["name"] for m, _ in GIT_REFUSES])
def test_a_name_git_or_tar_refuses_is_refused(project, ktopic, tmp_path, extra, problem):
    got = refused(project, ktopic, tmp_path, tar_bytes([extra]))
    assert got.startswith(": " + problem), got


def test_a_gitmodules_git_fsck_refuses_is_refused(project, ktopic, tmp_path):
    got = refused(project, ktopic, tmp_path, tar_bytes([member(f"{TOP}/.gitmodules", URL_BAD)]))
    assert got == (f": member '{TOP}/.gitmodules': git fsck refuses it: gitmodulesUrl: "
                   f"disallowed submodule url: --upload-pack=touch /tmp/pwn")


@pytest.mark.parametrize("extra", [
    [member(f"{TOP}/lib/gitmod~1", URL_BAD)],                         # an NTFS short name
    [member(f"{TOP}/lib/modules.txt", URL_BAD), link(f"{TOP}/lib/.gitmodules",
                                                     f"{TOP}/lib/modules.txt")],
], ids=["short-name", "hard-link"])
def test_a_gitmodules_under_another_name_is_checked_too(project, ktopic, tmp_path, extra):
    got = refused(project, ktopic, tmp_path, tar_bytes(extra))
    assert f"': git fsck refuses it: gitmodulesUrl: disallowed submodule url" in got, got
    assert got.startswith(f": member '{extra[-1]['name']}'"), got


def test_a_gitattributes_git_fsck_refuses_is_refused(project, ktopic, tmp_path):
    long_line = b"*.c " + b"x" * 3000 + b"\n"
    got = refused(project, ktopic, tmp_path,
                  tar_bytes([member(f"{TOP}/lib/.gitattributes", long_line)]))
    assert got == (f": member '{TOP}/lib/.gitattributes': git fsck refuses it: "
                   f"gitattributesLineLength: .gitattributes has too long lines to parse")


# --- only the kernel's top-level directory ------------------------------------------

def test_another_top_level_directory_is_refused(project, ktopic, tmp_path):
    got = refused(project, ktopic, tmp_path, tar_bytes([
        member("other-top/README", b"overwritten README\n"), member("other-top/evil.c")]))
    assert got == (f": member 'other-top/README': outside the top-level directory '{TOP}': "
                   f"only the kernel's top-level directory is imported")


def test_an_absolute_member_is_refused(project, ktopic, tmp_path):
    got = refused(project, ktopic, tmp_path, tar_bytes([member("/tmp/abs-escaped")]))
    assert got == (": member '/tmp/abs-escaped': an absolute name: "
                   "only the kernel's top-level directory is imported")


def test_a_file_beside_the_top_level_directory_is_refused(project, ktopic, tmp_path):
    got = refused(project, ktopic, tmp_path, tar_bytes(first=[member("README")]))
    assert got == (": member 'README': not in a top-level directory: "
                   "only the kernel's top-level directory is imported")


# --- hard links ----------------------------------------------------------------------

def test_a_hard_link_keeps_its_targets_mode(project, ktopic, tmp_path):
    modes = imports(project, ktopic, tmp_path, tar_bytes([
        link(f"{TOP}/scripts/tool2.sh", f"{TOP}/scripts/tool.sh"),
        link(f"{TOP}/lib/link2.c", f"{TOP}/lib/link.c"),
        link(f"{TOP}/lib/counter2.c", f"{TOP}//lib/counter.c")]))
    assert modes["scripts/tool.sh"] == modes["scripts/tool2.sh"] == "100755"
    assert modes["lib/link2.c"] == "120000"
    assert modes["lib/counter2.c"] == "100644"
    assert project.git("rev-parse", "base:scripts/tool2.sh") == \
        project.git("rev-parse", "base:scripts/tool.sh")


@pytest.mark.parametrize("extra,problem", [
    ([link(f"{TOP}/lib/hl", "etc-passwd")],
     f"a hard link to 'etc-passwd', outside the top-level directory '{TOP}'"),
    ([link(f"{TOP}/lib/hl", "/etc/passwd")], "a hard link to an absolute name, '/etc/passwd'"),
    ([link(f"{TOP}/lib/hl", f"{TOP}/lib/later.c"), member(f"{TOP}/lib/later.c")],
     f"a hard link to '{TOP}/lib/later.c', which is not a file earlier in the tarball"),
    ([link(f"{TOP}/lib/hl", f"{TOP}/lib")],
     f"a hard link to '{TOP}/lib', which is not a file earlier in the tarball"),
    ([link(f"{TOP}/lib/hl", f"{TOP}/lib/../README")],
     f"a hard link to '{TOP}/lib/../README': '..' in it"),
], ids=["no-slash", "absolute", "later", "directory", "dotdot"])
def test_a_hard_link_tar_cannot_make_is_refused(project, ktopic, tmp_path, extra, problem):
    got = refused(project, ktopic, tmp_path, tar_bytes(extra))
    assert got == f": member '{TOP}/lib/hl': {problem}"


# --- names, links and types --------------------------------------------------------

@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT], ids=["gnu", "pax"])
def test_a_name_not_in_utf8_is_refused(project, ktopic, tmp_path, fmt):
    got = refused(project, ktopic, tmp_path,
                  tar_bytes([member(f"{TOP}/lib/caf\udce9.c")], fmt=fmt))
    assert got == f": member '{TOP}/lib/caf\\xe9.c': its name is not UTF-8"


def test_a_symbolic_link_target_not_in_utf8_is_refused(project, ktopic, tmp_path):
    got = refused(project, ktopic, tmp_path, tar_bytes([sym(f"{TOP}/lib/l", "caf\udce9.c")]))
    assert got == f": member '{TOP}/lib/l': its symbolic link target is not UTF-8"


def test_a_symbolic_link_to_nothing_is_refused(project, ktopic, tmp_path):
    got = refused(project, ktopic, tmp_path, tar_bytes([sym(f"{TOP}/lib/l", "")]))
    assert got == (f": member '{TOP}/lib/l': a symbolic link with an empty target: "
                   f"tar cannot make it")


@pytest.mark.parametrize("type,what", [(tarfile.CHRTYPE, "a character device"),
                                       (tarfile.BLKTYPE, "a block device"),
                                       (tarfile.FIFOTYPE, "a FIFO")], ids=["chr", "blk", "fifo"])
def test_a_member_git_cannot_store_is_refused(project, ktopic, tmp_path, type, what):
    got = refused(project, ktopic, tmp_path, tar_bytes([member(f"{TOP}/dev/x", type=type)]))
    assert got == f": member '{TOP}/dev/x': {what}: git cannot store it"


@pytest.mark.parametrize("extra,problem", [
    ([member(f"{TOP}/README/x")], f"'{TOP}/README' is not a directory in the tarball"),
    ([member(f"{TOP}/lib/link.c/x")], f"'{TOP}/lib/link.c' is not a directory in the tarball"),
    ([member(f"{TOP}/lib")], "a directory with files in it, earlier in the tarball"),
], ids=["under-a-file", "under-a-symlink", "over-a-directory"])
def test_a_member_tar_cannot_extract_over_another_is_refused(project, ktopic, tmp_path,
                                                              extra, problem):
    got = refused(project, ktopic, tmp_path, tar_bytes(extra))
    assert got == f": member '{extra[0]['name']}': {problem}"


def test_what_tar_and_git_take_is_imported_as_tar_extracts_it(project, ktopic, tmp_path):
    modes = imports(project, ktopic, tmp_path, tar_bytes([
        member(f"{TOP}/README", b"second README\n"),               # the last one wins
        member(f"{TOP}/empty", type=tarfile.DIRTYPE, mode=0o755),
        member(f"{TOP}/empty", b"a file now\n"),                    # over an empty directory
        member(f"{TOP}/was-a-file"),
        member(f"{TOP}/was-a-file", type=tarfile.DIRTYPE, mode=0o755),
        member(f"{TOP}/lib/a\nb.c"),
        sym(f"{TOP}/.gitattributes", "/etc/passwd"),               # fsck: only a warning
        sym(f"{TOP}/lib/up", "../../../etc/passwd"),
        member(f"{TOP}/lib/git~2"), member(f"{TOP}/lib/.gitx"), member(f"{TOP}/lib/~1"),
        member(f"{TOP}/lib/.gitmodules", b'[submodule "x"]\n\tpath = x\n\turl = ../x.git\n'),
    ]))
    assert project.git("cat-file", "blob", "base:README") == "second README\n"
    assert project.git("cat-file", "blob", "base:empty") == "a file now\n"
    assert "was-a-file" not in modes
    assert modes["lib/a\nb.c"] == "100644" and modes[".gitattributes"] == "120000"
    assert {"lib/git~2", "lib/.gitx", "lib/~1", "lib/.gitmodules"} <= set(modes)


@pytest.mark.parametrize("mtime", ["inf", "nan", "1e30", "-5"])
def test_a_pax_mtime_out_of_range_is_not_the_commit_date(project, ktopic, tmp_path, mtime):
    imports(project, ktopic, tmp_path, tar_bytes(
        [member(f"{TOP}/lib/odd.c", pax={"mtime": mtime})], fmt=tarfile.PAX_FORMAT))
    assert project.git("log", "-1", "--format=%at", "base").strip() == str(MTIME)


def test_names_are_checked_as_git_fsck_checks_them(tmp_path):
    """The checks done while streaming against git fsck --strict itself,
    on a tree with one entry so named: a file, a symbolic link, a directory."""
    from ktopic.plumbing import treenames
    names = [".git", ".GIT", "git~1", "GIT~1", "git~2", "git~10", ".git.", ".git ", ".git. .",
             ".git:x", ".gitx", ".git~1", "a\\.git", "a\\git~1", "a\\.git\\b", "a\\.gitx",
             "\u200c.git", ".g\u200cit", ".git\u200d", ".g\u0131t", ".g\u0130t", "\ufeff.GIT",
             ".gitmodules", ".GITMODULES", "gitmod~1", "GITMOD~4", "gitmod~5", "gi7eba~1",
             "gi7eba~9", "gi7eb~12", "gi7e~123", "~1000000", "~1234567", "~123456", "~0123456",
             ".gitmodules.", ".gitmodules:x", ".gitmodules x", "a\\.gitmodules",
             "a\\.gitmodules\\b", ".gitmodules\u200c", "\u200c.gitmodules", ".gitattributes",
             "gitatt~1", "gi7d29~1", "a\\.gitattributes", ".gitattributes ", ".gitignore", "g",
             "gpio", "...", ".x", "~", "~1", "~x", "gitmodules", ".gitmodule", "gitmod~1x",
             "gi7ebb~1", "GI7EBA~1", "gi7eba~1 .", "gi7eba~1:x"]
    gd = tmp_path / "scratch.git"

    def git(*a, input=None):
        return subprocess.run(["git", "--git-dir", str(gd), *a], input=input,
                              capture_output=True, check=True).stdout.decode().strip()
    git("init", "-q", "--bare")
    x = git("hash-object", "-w", "--stdin", input=b"x")
    # A .gitmodules git refuses, and a directory: one of each for each
    # name, to tell git's errors apart.  Each kind of object is made by one
    # git process (hash-object --stdin-paths, mktree --batch).
    (tmp_path / "blobs").mkdir()
    for i in range(len(names)):
        (tmp_path / "blobs" / str(i)).write_bytes(URL_BAD + b"# %d\n" % i)
    blobs = git("hash-object", "-w", "--stdin-paths", input="".join(
        f"{tmp_path / 'blobs' / str(i)}\n" for i in range(len(names))).encode()).split()
    subs = git("mktree", "--batch", input="".join(
        f"100644 blob {x}\tf{i}\n\n" for i in range(len(names))).encode()).split()
    what = {}                        # object id -> (name, kind) git's error may name
    entries = []
    for name, blob, sub in zip(names, blobs, subs, strict=True):
        what[blob], what[sub] = (name, "file"), (name, "directory")
        for kind, entry in (("file", f"100644 blob {blob}"), ("symlink", f"120000 blob {blob}"),
                            ("directory", f"040000 tree {sub}")):
            entries.append((f"{entry}\t{name}\0\0", (name, kind)))
    trees = git("mktree", "-z", "--batch", input="".join(e for e, _ in entries).encode()).split()
    for tree, (_, named) in zip(trees, entries, strict=True):
        what[tree] = named
    r = subprocess.run(["git", "--git-dir", str(gd), "fsck", "--strict", "--no-dangling"],
                       capture_output=True, text=True)
    errors = {what[ln.split()[3].rstrip(":")] for ln in r.stderr.splitlines()
              if ln.startswith("error in ")}
    for name in names:
        for kind in ("file", "symlink", "directory"):
            ours = treenames.refuses(name, kind != "directory", kind == "symlink")
            if kind == "file" and not ours:
                # Its content is git's to check: it must be among those checked.
                assert ((name, kind) in errors) <= treenames.reads(name), name
            else:
                assert ((name, kind) in errors) == bool(ours), (name, kind, ours)
    assert len(errors) > 40


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

def test_a_refused_tarball_moves_nothing(imported, ktopic, tmp_path):
    before = imported.refs()
    pack = imported.workdir / "linux.git/objects/pack"
    packs = sorted(pack.iterdir())
    tb = xz(tmp_path / "hostile.tar.xz", tar_bytes([member(f"{TOP}/lib/GIT~1/config")]))
    use_tarball(imported, tb, debian_version="6.1.192-4")
    r = ktopic(*imported.args("import-base"))
    assert r.status == 2 and "GIT~1" in r.err
    assert imported.refs() == before
    assert sorted(pack.iterdir()) == packs
    assert leftovers(imported) == []


def test_a_fast_import_failure_leaves_no_crash_report(project, ktopic, monkeypatch):
    from ktopic.plumbing import importbase
    monkeypatch.setattr(importbase, "_quote", lambda path: b"a//" + path.encode())
    r = ktopic(*project.args("import-base"))
    assert r.status == 1
    assert r.err == "ktopic: git fast-import failed: fatal: Empty path component found in input\n"
    assert project.refs() == {} and leftovers(project) == []


def test_a_large_file_is_streamed_unchanged(imported, ktopic, monkeypatch, tmp_path):
    """Files larger than a chunk are copied to fast-import chunk by chunk:
    the same commit as reading each whole."""
    from ktopic.plumbing import importbase
    monkeypatch.setattr(importbase, "_CHUNK", 7)
    other = tmp_path / "elsewhere"
    assert ktopic(*imported.args("import-base", workdir=other)).status == 0
    assert imported.refs(other)["refs/heads/base"] == imported.refs()["refs/heads/base"]


def test_no_member_is_read_whole(project, ktopic, monkeypatch):
    """Every file, the Makefile too, is read a bounded piece at a time: a
    small xz that expands to one huge member does not fill the memory."""
    from ktopic.plumbing import importbase
    monkeypatch.setattr(importbase, "_CHUNK", 7)
    sizes = []

    class Recording(tarfile.ExFileObject):
        def read(self, size=-1):
            sizes.append(size)
            return super().read(size)
    monkeypatch.setattr(tarfile.TarFile, "fileobject", Recording)
    r = ktopic(*project.args("import-base"))
    assert r.status == 0, r
    assert sizes and all(0 <= s <= 1 << 20 for s in sizes), sizes
    assert project.git("cat-file", "blob", "base:Makefile") == TREE["Makefile"]
