"""Import the packaged kernel tarball into the work repository as one commit.

Takes the manifest's tarball and the work directory; gives refs/heads/base
and refs/ktopic/bases/<debian-version>, or a refusal naming the member git
or tar would refuse.  docs/design.md, "Import".
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ktopic.errors import Failure, KtopicError, check_interrupted
from ktopic.plumbing import treenames
from ktopic.plumbing.gitutil import Git
from ktopic.model import debversion, manifest
from ktopic.model.manifest import Manifest
from ktopic.model.workdir import Workdir

IDENT = ("ktopic import-base", "ktopic@localhost")


@dataclass
class Imported:
    commit: str
    version: str
    created: bool          # False: it was there already (no-op)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def makefile_version(text: str) -> str | None:
    v = {}
    for key in ("VERSION", "PATCHLEVEL", "SUBLEVEL"):
        m = re.search(rf"^{key}\s*=\s*(\d+)\s*$", text, re.M)
        if not m:
            return None
        v[key] = m.group(1)
    return f"{v['VERSION']}.{v['PATCHLEVEL']}.{v['SUBLEVEL']}"


def init_repo(wd: Workdir) -> Git:
    wd.ensure()
    git = Git(wd.git_dir)
    if not (wd.git_dir / "HEAD").exists():
        git.run("init", "-q", "--bare")
        # What three `git config` would add, written at once (git reads a
        # section given twice as one).
        with open(wd.git_dir / "config", "a") as f:
            f.write("[core]\n\tlogAllRefUpdates = always\n"   # reflogs: nothing is lost
                    "[gc]\n\tauto = 0\n"                     # no surprise repacks mid-run
                    "[rerere]\n\tenabled = true\n")
    return git


def _base_ref(version: str) -> str:
    return debversion.base_ref(version)


def import_base(m: Manifest, wd: Workdir, parent: str | None = None,
                tarball: Path | None = None, version: str | None = None,
                debian_version: str | None = None, point_base: bool = True) -> Imported:
    """Import the tarball (the manifest's unless given); return the commit.

    With parent (a previous base commit) the new base continues that
    history, which is what a rebase onto a newer packaged tree wants.
    point_base=False only creates refs/ktopic/bases/<debian-version> and
    leaves refs/heads/base alone (ktopic rebase moves it later)."""
    tarball = Path(tarball or m.base.tarball)
    version = version or m.base.version
    debian_version = debian_version or m.base.debian_version
    name = m.display()
    if not tarball.is_file():
        why = "is not a file" if tarball.exists() else \
            f"not found (install {m.base.package}?)"
        raise KtopicError(f"base tarball {tarball} {why}", name, m.base.lines.get("tarball"))
    why = manifest.debian_version_problem(debian_version)     # before the tarball is read
    if why:
        ours = debian_version == m.base.debian_version
        raise KtopicError(why, name if ours else None,
                          m.base.lines.get("debian-version") if ours else None)
    git = init_repo(wd)
    digest = sha256_file(tarball)
    ref = _base_ref(debian_version)
    have = git.ref(ref)
    if have:
        msg = git.run("log", "-1", "--format=%B", have)
        if f"Tarball-SHA256: {digest}" in msg:
            if point_base:
                _point_base(git, have)
            return Imported(have, version, False)
        _other_tarball(tarball, ref, msg, digest, wd, (name, m.base.lines.get("tarball")))
    commit = _fast_import(git, tarball, digest, version, debian_version, m, parent)
    if point_base:
        _point_base(git, commit, new_ref=ref)
    else:
        git.update_refs([(ref, commit, None)], "ktopic import-base")
    return Imported(commit, version, True)


XZ_MAGIC = b"\xfd7zXZ\x00"


def _other_tarball(tarball: Path, ref: str, msg: str, digest: str, wd, where: tuple) -> None:
    """The version is imported, from another file: say which problem this
    is.  A file that is no xz archive is a wrong path, and the import is
    good; the same version packaged anew is the case for deleting it."""
    with open(tarball, "rb") as f:
        head = f.read(len(XZ_MAGIC))
    had = re.search(r"^Tarball-SHA256: ([0-9a-f]+)", msg, re.M)
    had = had.group(1)[:16] if had else "unknown"
    if head != XZ_MAGIC:
        raise KtopicError(f"base tarball {tarball} is not an xz-compressed tar, and {ref} "
                          f"already holds this version, imported from a tarball of SHA-256 "
                          f"{had}...: point base.tarball at that tarball", *where)
    raise Failure(f"{ref} was imported from a tarball of SHA-256 {had}..., and {tarball} "
                  f"({digest[:16]}...) is another with the same version (repackaged?): to "
                  f"import this one in its place, delete the old import with git update-ref "
                  f"-d {ref} in {wd.git_dir}")


def _point_base(git: Git, commit: str, new_ref: str | None = None) -> None:
    updates = []
    if new_ref:
        updates.append((new_ref, commit, None))
    old = git.ref("refs/heads/base")
    if old != commit:
        updates.append(("refs/heads/base", commit, old))
    if updates:
        git.update_refs(updates, "ktopic import-base")


@dataclass
class _Read:
    """What streaming the members found so far."""
    mtime: int = 0                  # the newest member's
    last: str | None = None         # the last member's name (for an error)
    makefile: bool = False          # a top-level Makefile, its version checked


def _blobs(tar, tree: "_Tree", out, m: Manifest, version: str, meter: "_Meter",
           read: _Read) -> None:
    """Stream the tarball's files to fast-import as blobs, recording each
    in tree and what was found in read."""
    for member in tar:
        check_interrupted()
        meter.files += 1
        read.last = member.name
        add = tree.member(member)
        if add is None:
            continue
        path, kind, target = add
        if kind == "link":
            tree.add(path, *target)
            continue
        f = None            # a file's rest, streamed after data
        if kind == "sym":
            data, mode = tree.link_text(member), b"120000"
        else:
            mode = b"100755" if member.mode & 0o111 else b"100644"
            f = tar.extractfile(member)
            data = f.read(_MAKEFILE_HEAD if path == "Makefile" else _CHUNK)
        if path == "Makefile":
            read.makefile = True
            found = makefile_version(data.decode(errors="replace"))
            if found != version:
                raise KtopicError(
                    f"the tarball's Makefile says {found}, the manifest says {version}",
                    m.display(), m.base.lines.get("version"))
        if 0 <= member.mtime < 1 << 63:     # a pax mtime is a float: inf, nan
            read.mtime = max(read.mtime, int(member.mtime))
        mark = tree.add(path, mode)
        size = member.size if f is not None else len(data)
        out.write(b"blob\nmark :%d\ndata %d\n" % (mark, size))
        out.write(data)
        while f is not None and (chunk := f.read(_CHUNK)):
            out.write(chunk)
        out.write(b"\n")


def _commit_base(out, tree: "_Tree", tmp_ref: str, tarball: Path, digest: str, version: str,
                 debian_version: str, m: Manifest, parent: str | None, mtime: int) -> None:
    """Write the import commit of tree's entries to fast-import, on tmp_ref."""
    message = (f"Import {m.base.package} {debian_version}\n\n"
               f"The kernel tree of Debian's {m.base.package} package, version\n"
               f"{debian_version} (upstream v{version}), imported unchanged.\n\n"
               f"Tarball: {tarball.name}\nTarball-SHA256: {digest}\n").encode()
    ident = f"{IDENT[0]} <{IDENT[1]}> {mtime} +0000".encode()
    out.write(b"commit %s\n" % tmp_ref.encode())
    out.write(b"author %s\ncommitter %s\n" % (ident, ident))
    out.write(b"data %d\n%s\n" % (len(message), message))
    if parent:
        out.write(b"from %s\n" % parent.encode())
    out.write(b"deleteall\n")
    for path in sorted(tree.entries):
        mode, mark = tree.entries[path]
        out.write(b"M %s :%d %s\n" % (mode, mark, _quote(path)))
    out.write(b"\ndone\n")


def _fast_import(git: Git, tarball: Path, digest: str, version: str,
                 debian_version: str, m: Manifest, parent: str | None) -> str:
    tmp_ref = "refs/ktopic/tmp/import-base"
    packs = git.git_dir / "objects" / "pack"
    tmp_packs = set(packs.glob("tmp_pack_*"))
    crashes = set(git.git_dir.glob("fast_import_crash_*"))
    where = (m.display(), m.base.lines.get("tarball"))
    fi_err = tempfile.TemporaryFile()
    cat_r, cat_w = os.pipe()
    proc = subprocess.Popen(["git", "fast-import", "--quiet", "--done", f"--cat-blob-fd={cat_w}"],
                            stdin=subprocess.PIPE, stderr=fi_err, pass_fds=(cat_w,),
                            env=git.process_env())
    os.close(cat_w)
    cat = os.fdopen(cat_r, "rb")
    out = proc.stdin
    tree = _Tree(tarball, where)
    xz = meter = None
    try:
        xz_err = tempfile.TemporaryFile()
        xz = subprocess.Popen(["xz", "-dc", "-T0", str(tarball)], stdout=subprocess.PIPE,
                              stderr=xz_err)
        meter = _Meter(_uncompressed_size(tarball))
        read = _Read()
        try:
            tar = tarfile.open(fileobj=_Counting(xz.stdout, meter), mode="r|",
                               tarinfo=_Header)
            with tar:
                _blobs(tar, tree, out, m, version, meter, read)
        except tarfile.TarError as e:
            _stream_error(xz, xz_err, tarball, e, read.last, where)
        meter.close()
        # Whatever follows the end-of-archive blocks: xz must not block on it.
        while xz.stdout.read(1 << 20):
            pass
        if xz.wait() != 0:
            raise KtopicError(f"base tarball {tarball}: xz cannot decompress it: "
                              f"{_xz_says(xz_err)}", *where)
        xz.stdout.close()
        if not read.makefile or "Makefile" not in tree.entries:
            raise KtopicError(f"{tarball} has no top-level Makefile: not a kernel tree", *where)
        _check_git_files(tree, out, cat, where)
        _commit_base(out, tree, tmp_ref, tarball, digest, version, debian_version, m, parent,
                     read.mtime)
        out.close()
        if proc.wait() != 0:
            raise Failure(f"git fast-import failed: {_fast_import_says(fi_err)}")
        commit = git.ref(tmp_ref)
    except BrokenPipeError:
        _abandon(proc, xz, meter, git, packs, tmp_packs, crashes)
        raise Failure(f"git fast-import failed: {_fast_import_says(fi_err)}") from None
    except BaseException:
        _abandon(proc, xz, meter, git, packs, tmp_packs, crashes)
        raise
    finally:
        cat.close()
        if git.ref(tmp_ref):
            git.run("update-ref", "-d", tmp_ref)
    return commit


# A file goes to fast-import a chunk at a time (with its length first):
# a small xz that expands to one huge member does not fill the memory.
_CHUNK = 1 << 20
# The version lines are at the top of the kernel's Makefile: its first MiB
# is read for them, the rest (if any) streamed as any file's.
_MAKEFILE_HEAD = 1 << 20


def _abandon(proc, xz, meter, git: Git, packs: Path, tmp_packs: set, crashes: set) -> None:
    """Stop an import that will not be committed; leave nothing of it behind."""
    if meter is not None:
        meter.close()
    proc.kill()
    proc.wait()
    if xz is not None:
        xz.kill()
        xz.wait()
        xz.stdout.close()
    # The pack fast-import was writing (tens of MB) is of no use now.
    for p in set(packs.glob("tmp_pack_*")) - tmp_packs:
        p.unlink(missing_ok=True)
    for p in set(git.git_dir.glob("fast_import_crash_*")) - crashes:
        p.unlink(missing_ok=True)


def _xz_says(err) -> str:
    err.seek(0)
    why = err.read().decode(errors="replace").strip().splitlines()
    return why[0].split(": ")[-1] if why else "xz failed"


def _fast_import_says(err) -> str:
    err.seek(0)
    lines = err.read().decode(errors="replace").strip().splitlines()
    return next((ln for ln in lines if ln.startswith("fatal: ")), lines[0] if lines else "")


def _stream_error(xz, xz_err, tarball: Path, e: tarfile.TarError, last: str | None,
                  where: tuple) -> None:
    """A tar stream that cannot be read on: say why in one line.  When the
    xz data ends early, xz's own complaint is the reason."""
    try:
        xz.wait(timeout=2)
    except subprocess.TimeoutExpired:          # xz is fine; it waits to write the rest
        xz.kill()
        xz.wait()
    if last is None:
        why = _xz_says(xz_err) if xz.returncode else f"not a tar archive ({e})"
        raise KtopicError(f"base tarball {tarball} is not an xz-compressed tar: {why}",
                          *where) from None
    if xz.returncode:
        raise KtopicError(f"base tarball {tarball}: xz cannot decompress it: "
                          f"{_xz_says(xz_err)}", *where) from None
    raise KtopicError(f"base tarball {tarball}: truncated or corrupt tar stream after "
                      f"member {treenames.show(last)}: {e}", *where) from None


class _Header(tarfile.TarInfo):
    """tarfile's member header, except that a stream which stops without
    the end-of-archive blocks, or at a bad header, is an error: tarfile
    takes either for the end of the archive, GNU tar does not."""

    @classmethod
    def fromtarfile(cls, tf):
        try:
            return super().fromtarfile(tf)
        except tarfile.EmptyHeaderError:
            if tf.offset == 0:
                raise
            raise tarfile.ReadError("it ends without the end-of-archive blocks") from None
        except (tarfile.TruncatedHeaderError, tarfile.InvalidHeaderError) as e:
            if tf.offset == 0:
                raise
            raise tarfile.ReadError(str(e)) from None


# --- member names: refused where git (fsck --strict, checkout) or tar would ---

_TYPES = {tarfile.CHRTYPE: "a character device", tarfile.BLKTYPE: "a block device",
          tarfile.FIFOTYPE: "a FIFO"}

class _Tree:
    """The tree a tar extraction of the tarball gives, built member by
    member: each path's (mode, mark); the directories that hold something.
    Every member name is checked here, in the pass that imports it."""

    def __init__(self, tarball: Path, where: tuple):
        self.tarball, self.where = tarball, where
        self.top: str | None = None
        self.entries: dict[str, tuple[bytes, int]] = {}
        self.dirs: set[str] = set()
        self.read_by_git: set[str] = set()     # .gitmodules, .gitattributes and aliases
        self.marks = 0
        self.name = ""

    def refuse(self, problem: str):
        raise KtopicError(f"base tarball {self.tarball}: member "
                          f"{treenames.show(self.name)}: {problem}", *self.where)

    def _utf8(self, text: str, what: str) -> None:
        try:
            text.encode()
        except UnicodeEncodeError:
            self.refuse(f"{what} is not UTF-8")
        if "\0" in text:
            self.refuse(f"{what} has a NUL byte")

    def _kind(self, member: tarfile.TarInfo) -> tuple[str, str]:
        """The member's kind ("dir", "sym", "link", "file") and name;
        refused when git cannot store it."""
        if member.isdir():
            return "dir", member.name.rstrip("/")
        if member.issym():
            return "sym", member.name
        if member.islnk():
            return "link", member.name
        if member.isreg():
            return "file", member.name
        if member.type in _TYPES:
            self.refuse(f"{_TYPES[member.type]}: git cannot store it")
        self.refuse(f"unknown member type '{member.type.decode('latin-1')}'")

    def _components(self, parts: list[str], kind: str, symlink: bool) -> None:
        """Refuse a path component (below the top directory) that git
        would not check out."""
        last = len(parts) - 1
        for i in range(1, len(parts)):
            c = parts[i]
            if c and c[0] not in treenames.CHECK_FIRST and c.isascii() and "\\" not in c:
                continue                    # the usual name (most of them): nothing to check
            why = treenames.refuses(c, i == last and kind != "dir", symlink)
            if why:
                self.refuse(why)

    def _parents(self, path: str) -> None:
        """The directories above path must be directories, as tar needs them."""
        d = path.rpartition("/")[0]
        while d and d not in self.dirs:
            if d in self.entries:
                self.refuse(f"{treenames.show(self.top + '/' + d)} is not a directory "
                            f"in the tarball")
            self.dirs.add(d)
            d = d.rpartition("/")[0]

    def member(self, member: tarfile.TarInfo) -> tuple[str, str, tuple | None] | None:
        """The member's path in the tree, its kind ("file", "sym", "link")
        and, for a hard link, its target's (mode, mark); None for a
        directory.  Refuses what git or tar would."""
        self.name = member.name
        kind, name = self._kind(member)
        self._utf8(name, "its name")
        if name.startswith("/"):
            self.refuse("an absolute name: only the kernel's top-level directory is imported")
        parts = name.split("/")
        if self.top is None:
            self.top = parts[0]
        elif parts[0] != self.top:
            self.refuse(f"outside the top-level directory {treenames.show(self.top)}: "
                        f"only the kernel's top-level directory is imported")
        if parts[0] in ("", ".", ".."):
            self.refuse(treenames.refuses(parts[0], False, False))
        if len(parts) == 1:
            if kind != "dir":
                self.refuse("not in a top-level directory: only the kernel's top-level "
                            "directory is imported")
            return None
        target = self.link_target(member) if kind == "link" else None
        symlink = kind == "sym" or (target is not None and target[0] == b"120000")
        self._components(parts, kind, symlink)
        path = "/".join(parts[1:])
        self._parents(path)
        if kind == "dir":
            self.entries.pop(path, None)                # tar replaces a file with the directory
            return None
        if path in self.dirs:
            self.refuse("a directory with files in it, earlier in the tarball")
        if treenames.reads(parts[-1]):
            self.read_by_git.add(path)
        return path, kind, target

    def link_target(self, member: tarfile.TarInfo) -> tuple[bytes, int]:
        """A hard link's target's (mode, mark): an earlier file or symbolic link."""
        target = member.linkname
        self._utf8(target, "its hard link target")
        parts = [c for c in target.split("/") if c not in ("", ".")]
        if target.startswith("/"):
            self.refuse(f"a hard link to an absolute name, {treenames.show(target)}")
        if ".." in parts:
            self.refuse(f"a hard link to {treenames.show(target)}: '..' in it")
        if not parts or parts[0] != self.top:
            self.refuse(f"a hard link to {treenames.show(target)}, outside the top-level directory "
                        f"{treenames.show(self.top)}")
        got = self.entries.get("/".join(parts[1:]))
        if got is None:
            self.refuse(f"a hard link to {treenames.show(target)}, which is not a file earlier "
                        f"in the tarball")
        return got

    def link_text(self, member: tarfile.TarInfo) -> bytes:
        """A symbolic link's target, the blob git stores for it."""
        self._utf8(member.linkname, "its symbolic link target")
        if not member.linkname:
            self.refuse("a symbolic link with an empty target: tar cannot make it")
        return member.linkname.encode()

    def add(self, path: str, mode: bytes, mark: int | None = None) -> int:
        if mark is None:
            self.marks += 1
            mark = self.marks
        self.entries[path] = (mode, mark)
        return mark


# Larger than git's limit for .gitattributes (gitattributesLarge); a
# .gitmodules this large is refused too, unread.
_GIT_READS_MAX = 100 << 20


def _check_git_files(tree: _Tree, out, cat, where: tuple) -> None:
    """Check the .gitmodules and .gitattributes files (and their aliases)
    the way git fsck --strict does: their blobs, fetched back from
    fast-import, go into a scratch repository that git fsck checks."""
    todo = [p for p in sorted(tree.read_by_git)
            if p in tree.entries and tree.entries[p][0] != b"120000"]
    if not todo:
        return
    blobs = []
    for path in todo:
        out.write(b"cat-blob :%d\n" % tree.entries[path][1])
        out.flush()
        head = cat.readline().split()
        if len(head) != 3 or head[1] != b"blob":
            raise BrokenPipeError
        size = int(head[2])
        if size > _GIT_READS_MAX:                 # fast-import is stopped, unread
            raise KtopicError(f"base tarball {tree.tarball}: member "
                              f"{treenames.show(tree.top + '/' + path)}: too large for git to read "
                              f"(over {_GIT_READS_MAX >> 20} MiB)", *where)
        data = cat.read(size)
        cat.read(1)
        blobs.append((path, data))
    with tempfile.TemporaryDirectory(prefix="ktopic-fsck-") as d:
        scratch = Git(d)
        scratch.run("init", "-q", "--bare")
        named = {}
        for path, data in blobs:
            oid = scratch.run("hash-object", "-w", "--stdin", input=data).decode().strip()
            name = path.rpartition("/")[2]
            tree_oid = scratch.run("mktree", "-z", input=f"100644 blob {oid}\t{name}\0".encode())
            named.setdefault(oid, path)
            named.setdefault(tree_oid.decode().strip(), path)
        r = scratch.try_run("fsck", "--strict", "--no-dangling", "--no-progress")
    for line in r.stderr.splitlines():
        found = re.match(r"error in (?:blob|tree) ([0-9a-f]+): (.*)", line)
        if found:
            path = named.get(found.group(1), todo[0])
            raise KtopicError(f"base tarball {tree.tarball}: member "
                              f"{treenames.show(tree.top + '/' + path)}: git fsck refuses it: "
                              f"{found.group(2)}", *where)
    if r.returncode != 0:
        raise Failure(f"git fsck of {', '.join(todo)} failed: {r.stderr.strip()}")


def _quote(path: str) -> bytes:
    if any(c in path for c in '"\\\n') or path.startswith('"'):
        return b'"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").encode() + b'"'
    return path.encode()


def _uncompressed_size(tarball: Path) -> int | None:
    """The tar stream's size, from the xz index (read in milliseconds)."""
    r = subprocess.run(["xz", "--robot", "--list", str(tarball)], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "totals" and len(f) > 4 and f[4].isdigit():
            return int(f[4])
    return None


class _Meter:
    """How far the import is, on stderr: a bar on a terminal; in a log, a
    line every INTERVAL seconds (a CI log is never silent for long)."""
    INTERVAL = 10.0

    def __init__(self, total: int | None, stream=None):
        self.total, self.done, self.files = total, 0, 0
        self.stream = stream or sys.stderr
        self.bar = None
        self.last = time.monotonic()
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
            self.bar = Progress(TextColumn("[bold]import-base"), BarColumn(), TaskProgressColumn(),
                                TextColumn("{task.fields[files]} files"),
                                console=Console(file=self.stream), transient=True)
            self.task = self.bar.add_task("", total=total, files=0)
            self.bar.start()

    def add(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, files=self.files)
        elif now - self.last >= self.INTERVAL:
            self.last = now
            mb = self.done >> 20
            what = f"{100 * self.done // self.total}% ({mb} of {self.total >> 20} MB" \
                if self.total else f"({mb} MB"
            print(f"ktopic: import-base: {what}, {self.files} files)", file=self.stream,
                  flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


class _Counting:
    """A file object that tells the meter how much was read through it."""

    def __init__(self, f, meter: _Meter):
        self.f, self.meter = f, meter

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.meter.add(len(data))
        return data
