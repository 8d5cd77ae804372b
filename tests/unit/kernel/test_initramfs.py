"""ktopic.kernel.initramfs: a reproducible newc archive with the guest contract's layout."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import initramfs  # noqa: E402
from ktopic.errors import Failure  # noqa: E402

from conftest import missing, needs_gcc  # noqa: E402

INIT = REPO / "qemu" / "init" / "init.c"


def read_newc(data: bytes) -> list[dict]:
    """Parse a newc archive (independently of the writer)."""
    out, pos = [], 0
    while True:
        assert data[pos:pos + 6] == b"070701", f"bad magic at {pos}"
        f = [int(data[pos + 6 + 8 * i: pos + 14 + 8 * i], 16) for i in range(13)]
        namesize, filesize = f[11], f[6]
        name = data[pos + 110: pos + 110 + namesize - 1].decode()
        pos += 110 + namesize
        pos += -pos % 4
        body = data[pos: pos + filesize]
        pos += filesize
        pos += -pos % 4
        if name == "TRAILER!!!":
            return out
        out.append({"name": name, "mode": f[1], "uid": f[2], "gid": f[3], "mtime": f[5],
                    "data": body, "rdev": (f[9], f[10])})


@pytest.fixture
def parts(tmp_path):
    prog = tmp_path / "zz_prog.c"
    prog.write_text('#include <stdio.h>\nint main(void){puts("KTAP version 1");'
                    'puts("1..1");puts("ok 1 x");return 0;}\n')
    prog2 = tmp_path / "aa_prog.c"
    prog2.write_text("int main(void){return 0;}\n")
    mod = tmp_path / "m" / "test_mod.ko"
    mod.parent.mkdir()
    mod.write_bytes(b"\x7fELF fake module")
    kmod = tmp_path / "k" / "locktorture.ko"
    kmod.parent.mkdir()
    kmod.write_bytes(b"\x7fELF fake kernel module")
    return [prog, prog2], [mod], [kmod]


def build(tmp_path, cache, parts):
    progs, mods, kmods = parts
    return initramfs.build_initramfs(initramfs.InitramfsRequest(
        init_src=INIT, cache=tmp_path / cache, programs=progs, test_modules=mods,
        kernel_modules=kmods))


@needs_gcc
def test_layout_and_reproducibility(tmp_path, parts):
    r1 = build(tmp_path, "c1", parts)
    r2 = build(tmp_path, "c2", parts)          # separate caches: built twice
    assert r1.sha256 == r2.sha256
    assert r1.path.read_bytes() == r2.path.read_bytes()
    ents = read_newc(r1.path.read_bytes())
    names = [e["name"] for e in ents]
    assert names == sorted(names)
    for want in ("init", "dev/console", "proc", "sys", "tests/aa_prog", "tests/zz_prog",
                 "lib/modules/test/test_mod.ko", "lib/modules/kernel/locktorture.ko"):
        assert want in names
    by = {e["name"]: e for e in ents}
    assert all(e["mtime"] == 0 and e["uid"] == 0 and e["gid"] == 0 for e in ents)
    assert stat.S_ISCHR(by["dev/console"]["mode"]) and by["dev/console"]["rdev"] == (5, 1)
    assert by["init"]["mode"] & 0o111 and by["init"]["data"][:4] == b"\x7fELF"
    assert by["lib/modules/test/test_mod.ko"]["data"] == b"\x7fELF fake module"


@needs_gcc
def test_cpio_tool_agrees(tmp_path, parts):
    r = build(tmp_path, "c", parts)
    try:
        p = subprocess.run(["cpio", "-it"], input=r.path.read_bytes(), capture_output=True)
    except FileNotFoundError:
        missing("cpio", "apt-get install cpio (make deps)")
    assert b"tests/zz_prog" in p.stdout and p.returncode == 0


@needs_gcc
def test_cached_by_content(tmp_path, parts):
    r1 = build(tmp_path, "c", parts)
    mtime = r1.path.stat().st_mtime_ns
    r2 = build(tmp_path, "c", parts)
    assert r2.path == r1.path and r2.path.stat().st_mtime_ns == mtime
    parts[1][0].write_bytes(b"\x7fELF changed")
    r3 = build(tmp_path, "c", parts)
    assert r3.sha256 != r1.sha256


@needs_gcc
def test_compile_error_is_a_failure(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return }\n")
    with pytest.raises(Failure, match="bad.c"):
        initramfs.compile_static(bad, tmp_path / "cache")


@needs_gcc
def test_two_files_for_one_path(tmp_path, parts):
    progs, mods, kmods = parts
    dup = tmp_path / "other" / "test_mod.ko"
    dup.parent.mkdir()
    dup.write_bytes(b"x")
    with pytest.raises(Failure, match="two files"):
        initramfs.build_initramfs(initramfs.InitramfsRequest(
            init_src=INIT, cache=tmp_path / "c", test_modules=[mods[0], dup]))
