"""Session memos of runs whose result depends only on their input, for
the unit tests: the same patch mail goes through `git mailinfo` in most
tests of the synthetic project, and a process costs more than the work.

Each memo gives what the first run on the same input gave, in the same
form (the tool's own code reads it as it reads the process's result);
the first run on each input is a real one.  Nothing here is in the tool:
conftest.py installs the memos for the whole session."""

from __future__ import annotations

import os

from ktopic.plumbing import gitutil, patchfile


class Done:
    """A finished process as Popen shows one: communicate() gives what the
    real run printed, returncode its status."""

    def __init__(self, out: bytes, err: bytes, returncode: int):
        self.out, self.err, self.returncode = out, err, returncode

    def communicate(self, input=None, timeout=None):
        return self.out, self.err

    def poll(self):
        return self.returncode

    wait = poll

    def kill(self):
        pass


def _git_env_key() -> tuple:
    """What, in the environment of the tool's git, can change what git
    does: its configuration and locale, and the directory it starts in
    (a repository there has a configuration too)."""
    env = gitutil.env()
    return (os.getcwd(),) + tuple(sorted((k, v) for k, v in env.items()
                                         if k.startswith(("GIT_", "LC_", "LANG"))))


_MAILINFO: dict[tuple, tuple[bytes, bytes, int, bytes | None, bytes | None]] = {}


class MemoMailinfo(patchfile.Mailinfo):
    """patchfile.Mailinfo, run once per mail (and git environment): a later
    run on the same bytes writes what the first wrote (the message and
    the diff) and prints what it printed, without a process."""

    def __init__(self, path, display):
        data = patchfile.Path(path).read_bytes()
        self.key = (patchfile.as_mailsplit(data)[0], _git_env_key())
        got = _MAILINFO.get(self.key)
        if got is None:
            super().__init__(path, display)
            return
        out, err, status, msg, patch = got
        self.path, self.display, self.data = patchfile.Path(path), display, data
        self.mail, self.skipped = patchfile.as_mailsplit(data)
        self.tmp = patchfile.tempfile.TemporaryDirectory(prefix="ktopic-mailinfo-")
        self.msg, self.patch = (patchfile.Path(self.tmp.name, "msg"),
                                patchfile.Path(self.tmp.name, "patch"))
        for f, text in ((self.msg, msg), (self.patch, patch)):
            if text is not None:
                f.write_bytes(text)
        self.done = False
        self.p = Done(out, err, status)

    def result(self):
        if not isinstance(self.p, Done):
            out, err = self.p.communicate()
            def read(f):
                return f.read_bytes() if f.exists() else None
            self.p = Done(out, err, self.p.returncode)
            _MAILINFO[self.key] = (out, err, self.p.returncode, read(self.msg), read(self.patch))
        return super().result()


def install(mp) -> None:
    """Every memo, for as long as the monkeypatch context mp lasts."""
    mp.setattr(patchfile, "Mailinfo", MemoMailinfo)
    from ktopic.branches import generate
    mp.setattr(generate, "Mailinfo", MemoMailinfo)

