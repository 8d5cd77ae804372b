"""Import the packaged kernel tarball into the work repository as one commit.

The tarball is streamed through git fast-import: no extraction to disk, one
pack instead of 80,000 loose objects.  Every file goes in whatever Debian's
.gitignore says (it ignores every top-level path), so the commit's tree is
the tarball byte for byte.  The commit is deterministic: identity, date and
message depend only on the manifest and the tarball, so two machines get
the same base commit id.

Takes the manifest's tarball and the work directory; gives refs/heads/base
and refs/ktopic/bases/<version>.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ktopic.errors import Failure, KtopicError, check_interrupted
from ktopic.plumbing.gitutil import Git
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
        for k, v in (("core.logAllRefUpdates", "always"),   # reflogs: nothing is lost
                     ("gc.auto", "0"),                      # no surprise repacks mid-run
                     ("rerere.enabled", "true")):
            git.run("config", k, v)
    return git


def _base_ref(version: str) -> str:
    return f"refs/ktopic/bases/{version}"


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
        raise Failure(f"{ref} exists but was imported from a different tarball; "
                      f"delete it with git update-ref -d {ref} in {wd.git_dir} to re-import")
    commit = _fast_import(git, tarball, digest, version, debian_version, m, parent)
    if point_base:
        _point_base(git, commit, new_ref=ref)
    else:
        git.update_refs([(ref, commit, None)], "ktopic import-base")
    return Imported(commit, version, True)


def _point_base(git: Git, commit: str, new_ref: str | None = None) -> None:
    updates = []
    if new_ref:
        updates.append((new_ref, commit, None))
    old = git.ref("refs/heads/base")
    if old != commit:
        updates.append(("refs/heads/base", commit, old))
    if updates:
        git.update_refs(updates, "ktopic import-base")


def _fast_import(git: Git, tarball: Path, digest: str, version: str,
                 debian_version: str, m: Manifest, parent: str | None) -> str:
    tmp_ref = "refs/ktopic/tmp/import-base"
    packs = git.git_dir / "objects" / "pack"
    tmp_packs = set(packs.glob("tmp_pack_*"))
    crashes = set(git.git_dir.glob("fast_import_crash_*"))
    where = (m.display(), m.base.lines.get("tarball"))
    fi_err = tempfile.TemporaryFile()
    proc = subprocess.Popen(["git", "fast-import", "--quiet", "--done"],
                            stdin=subprocess.PIPE, stderr=fi_err, env=git._env(None))
    out = proc.stdin
    files: list[tuple[str, int, str]] = []      # (mode, mark, path)
    marks: dict[str, int] = {}
    mtime = 0
    makefile_seen = False
    xz = meter = None
    try:
        xz_err = tempfile.TemporaryFile()
        xz = subprocess.Popen(["xz", "-dc", "-T0", str(tarball)], stdout=subprocess.PIPE,
                              stderr=xz_err)
        meter = _Meter(_uncompressed_size(tarball))
        last = None
        try:
            tar = tarfile.open(fileobj=_Counting(xz.stdout, meter), mode="r|",
                               tarinfo=_Header)
            with tar:
                for member in tar:
                    check_interrupted()
                    meter.files += 1
                    last = member.name
                    parts = member.name.split("/", 1)
                    if len(parts) < 2 or not parts[1] or member.isdir():
                        continue
                    path = parts[1].rstrip("/")
                    if member.issym():
                        data, mode = member.linkname.encode(), "120000"
                    elif member.islnk():
                        target = member.linkname.split("/", 1)[1]
                        files.append(("100644", marks[target], path))
                        continue
                    elif member.isfile():
                        data = tar.extractfile(member).read()
                        mode = "100755" if member.mode & 0o111 else "100644"
                    else:
                        continue
                    if path == "Makefile":
                        makefile_seen = True
                        found = makefile_version(data.decode(errors="replace"))
                        if found != version:
                            raise KtopicError(
                                f"the tarball's Makefile says {found}, the manifest says {version}",
                                m.display(), m.base.lines.get("version"))
                    mtime = max(mtime, int(member.mtime))
                    mark = len(marks) + 1
                    marks[path] = mark
                    out.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
                    out.write(data)
                    out.write(b"\n")
                    files.append((mode, mark, path))
        except tarfile.TarError as e:
            _stream_error(xz, xz_err, tarball, e, last, where)
        meter.close()
        # Whatever follows the end-of-archive blocks: xz must not block on it.
        while xz.stdout.read(1 << 20):
            pass
        if xz.wait() != 0:
            raise KtopicError(f"base tarball {tarball}: xz cannot decompress it: "
                              f"{_xz_says(xz_err)}", *where)
        xz.stdout.close()
        if not makefile_seen:
            raise KtopicError(f"{tarball} has no top-level Makefile: not a kernel tree", *where)
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
        for mode, mark, path in sorted(files, key=lambda f: f[2]):
            out.write(b"M %s :%d %s\n" % (mode.encode(), mark, _quote(path)))
        out.write(b"\ndone\n")
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
        if git.ref(tmp_ref):
            git.run("update-ref", "-d", tmp_ref)
    return commit


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
                      f"member {last!r}: {e}", *where) from None


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
