"""The content-keyed store every cache in the work directory uses, and the
programs' versions remembered by their executables' stamp."""

from __future__ import annotations

import os

import pytest

from ktopic import fileio, stampcache


def test_key_depends_on_every_part_and_its_order():
    k = stampcache.key("a", b"b", {"c": 1, "d": 2})
    assert k == stampcache.key("a", b"b", {"d": 2, "c": 1})     # JSON with sorted keys
    assert k != stampcache.key("b", b"a", {"c": 1, "d": 2})
    assert k != stampcache.key("a", b"b", {"c": 1, "d": 3})
    assert stampcache.key("ab", "c") != stampcache.key("a", "bc")      # parts stay apart
    assert len(k) == 64 and len(stampcache.key("a", length=16)) == 16


def test_store_hit_and_miss(tmp_path):
    s = stampcache.Store(tmp_path / "c", "x-{key}.json")
    assert s.get("k1") is None and not s.has("k1")
    assert s.put("k1", {"v": [1, 2]}) == {"v": [1, 2]}
    assert s.path("k1") == tmp_path / "c" / "x-k1.json"
    assert s.get("k1") == {"v": [1, 2]} and s.has("k1")
    assert s.get("k2") is None


def test_a_corrupt_entry_is_a_miss_and_is_rewritten(tmp_path):
    s = stampcache.Store(tmp_path)
    s.path("k").write_text('{"v": 1')                  # cut short
    assert s.get("k") is None
    s.path("k").write_bytes(b"\xff\xfe\x00")            # not text at all
    assert s.get("k") is None
    s.put("k", {"v": 2})
    assert s.get("k") == {"v": 2}


def test_an_unreadable_entry_is_a_miss(tmp_path):
    s = stampcache.Store(tmp_path)
    s.path("k").mkdir()                                 # read_text fails with OSError
    assert s.get("k") is None


def test_a_failed_write_keeps_the_old_entry_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    s = stampcache.Store(tmp_path)
    s.put("k", {"v": 1})

    def broken_replace(self, target):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(fileio.Path, "replace", broken_replace)
    with pytest.raises(OSError):
        s.put("k", {"v": 2})
    monkeypatch.undo()
    assert s.get("k") == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.json"]
    with pytest.raises(TypeError):                      # not JSON: nothing written
        s.put("other", {"v": object()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.json"]


def _program(bindir, name, text):
    exe = bindir / name
    exe.write_text(f"#!/bin/sh\necho '{text}'\n")
    exe.chmod(0o755)
    return exe


def test_tool_versions_are_asked_again_only_when_a_program_changed(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    gcc = _program(bindir, "fakegcc", "fakegcc 1.0")
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    calls = []

    def ask(cmd):
        calls.append(cmd)
        return stampcache.first_line(cmd)
    programs = {"gcc": ("fakegcc", "--version"), "none": ("no-such-program-here", "-v")}
    path = tmp_path / "cache" / "versions.json"
    v = stampcache.tool_versions(path, programs, ask)
    assert v == {"gcc": "fakegcc 1.0", "none": "not installed"} and len(calls) == 1
    assert stampcache.tool_versions(path, programs, ask) == v and len(calls) == 1
    # A new build of the program: same path, other size and mtime.
    _program(bindir, "fakegcc", "fakegcc 2.0.1")
    os.utime(gcc, ns=(1, 1))
    assert stampcache.tool_versions(path, programs, ask)["gcc"] == "fakegcc 2.0.1"
    assert len(calls) == 2
    # A corrupt cache file is asked again and rewritten.
    path.write_text("{")
    assert stampcache.tool_versions(path, programs, ask)["gcc"] == "fakegcc 2.0.1"
    assert len(calls) == 3 and stampcache.read(path)["versions"]["gcc"] == "fakegcc 2.0.1"
