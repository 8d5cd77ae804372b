"""ktopic mail --output DIR: the messages go into DIR without losing what
was there.  A new DIR is made whole (written beside it, renamed into
place); an existing one keeps every file ktopic did not write: one holding
such a file is refused in one line, exit status 2.  A relative DIR and `.`
are the directory the command was run in."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import needs_b4

pytestmark = [needs_b4, pytest.mark.usefixtures("quiet_git")]


def emls(d: Path) -> list[str]:
    return sorted(p.name for p in d.glob("*.eml"))


COUNTERS = ["0000-a-test-series-counters.eml", "0001-lib-counter-return-more.eml",
            "0002-lib-counter-return-even-more.eml"]


def test_a_directory_with_files_of_its_own_is_refused_and_kept(generated, ktopic, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious\n")
    (out / "0001-lib-counter-return-more.eml").write_text("my own draft\n")
    before = generated.refs()
    r = ktopic(*generated.args("mail", "counters", "--output", out))
    assert r.status == 2, r
    assert r.err == (f"ktopic: {out}: holds '0001-lib-counter-return-more.eml', which ktopic mail "
                     f"did not write: give --output a new or empty directory, or one ktopic mail "
                     f"wrote before\n"), r.err
    assert (out / "notes.txt").read_text() == "precious\n"
    assert (out / "0001-lib-counter-return-more.eml").read_text() == "my own draft\n"
    assert sorted(p.name for p in out.iterdir()) == ["0001-lib-counter-return-more.eml",
                                                     "notes.txt"]
    assert generated.refs() == before
    assert not (generated.root / "mail").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_file_is_not_a_directory(generated, ktopic, tmp_path):
    out = tmp_path / "file"
    out.write_text("a file\n")
    r = ktopic(*generated.args("mail", "counters", "--output", out))
    assert r.status == 2, r
    assert r.err == f"ktopic: {out}: not a directory: --output names the directory to write to\n"
    assert out.read_text() == "a file\n"


def test_relative_and_dot(generated, ktopic, tmp_path, monkeypatch):
    """A relative DIR is taken from the directory ktopic runs in, not from
    b4's worktree; `.` is that directory itself, which stays where it is."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    r = ktopic(*generated.args("mail", "counters", "--output", "rel"))
    assert r.status == 0, r
    assert emls(here / "rel") == COUNTERS
    assert f"messages written to {here / 'rel'}\n" in r.out
    # again: its own messages are replaced
    r = ktopic(*generated.args("mail", "counters", "--output", "rel"))
    assert r.status == 0, r
    assert emls(here / "rel") == COUNTERS

    dot = here / "dot"
    dot.mkdir()
    inode = dot.stat().st_ino
    monkeypatch.chdir(dot)
    for _ in range(2):
        r = ktopic(*generated.args("mail", "counters", "--output", "."))
        assert r.status == 0, r
        assert f"messages written to {dot}\n" in r.out
        assert Path.cwd() == dot and dot.stat().st_ino == inode
        assert emls(dot) == COUNTERS
    (dot / "todo.txt").write_text("mine\n")
    r = ktopic(*generated.args("mail", "counters", "--output", "."))
    assert r.status == 2 and "holds 'todo.txt'" in r.err, r
    assert emls(dot) == COUNTERS and (dot / "todo.txt").read_text() == "mine\n"


def test_its_own_earlier_messages_are_replaced_not_edited_ones(generated, ktopic, tmp_path):
    """What ktopic mail wrote into DIR is replaced (messages of another
    series too); a message changed since is not."""
    out = tmp_path / "out"
    r = ktopic(*generated.args("mail", "integration", "--output", out))
    assert r.status == 0, r
    assert len(emls(out)) == 4
    r = ktopic(*generated.args("mail", "counters", "--output", out))
    assert r.status == 0, r
    assert emls(out) == COUNTERS
    cover = out / COUNTERS[0]
    cover.write_text(cover.read_text().replace("counter changes", "counter changes, edited"))
    edited = cover.read_text()
    r = ktopic(*generated.args("mail", "counters", "--output", out))
    assert r.status == 2, r
    assert r.err == (f"ktopic: {out}: holds '{COUNTERS[0]}', which was changed since ktopic mail "
                     f"wrote it: give --output a new or empty directory, or one ktopic mail "
                     f"wrote before\n"), r.err
    assert cover.read_text() == edited


def test_the_default_directory_from_before_is_replaced(generated, ktopic):
    """out/mail/<branch>/v<N> as earlier versions left it (b4's messages,
    nothing else) is ktopic's own: it is rewritten."""
    out = generated.root / "out/mail/topic/counters/v1"
    out.mkdir(parents=True)
    for n in COUNTERS[:2]:
        (out / n).write_text("old\n")
    r = ktopic(*generated.args("mail", "counters"))
    assert r.status == 0, r
    assert emls(out) == COUNTERS
    assert all((out / n).read_text() != "old\n" for n in COUNTERS)
