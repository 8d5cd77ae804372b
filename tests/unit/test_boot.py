"""ktopic.kernel.boot and ktopic.kernel.qkvm with a fake QEMU: end of run, silence,
time-out, and that no process outlives a boot."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import boot, qkvm  # noqa: E402


def fake_qemu(tmp_path: Path, body: str) -> Path:
    """A stand-in for qemu-system-x86_64: a shell script; it records its pid
    and the pid of a child it leaves behind in pids."""
    script = tmp_path / "fake-qemu"
    script.write_text("#!/bin/sh\n"
                      f"sleep 300 & echo $$ $! > {tmp_path}/pids\n" + body)
    script.chmod(0o755)
    return script


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def run(tmp_path, monkeypatch, body, **kw) -> boot.BootResult:
    monkeypatch.setattr(boot, "QEMU", str(fake_qemu(tmp_path, body)))
    req = boot.BootRequest(kernel=tmp_path / "bzImage", initrd=tmp_path / "initrd",
                           console=tmp_path / "out" / "console.log", **kw)
    return boot.boot(req)


def no_leftovers(tmp_path):
    for pid in map(int, (tmp_path / "pids").read_text().split()):
        for _ in range(50):
            if not alive(pid):
                break
            time.sleep(0.02)
        assert not alive(pid), f"process {pid} outlived the boot"


def test_command_line_has_the_contract():
    req = boot.BootRequest(kernel=Path("/k"), initrd=Path("/i"), console=Path("/c"),
                           cmdline="foo=1", smp=3)
    cmd = boot.qemu_command(req)
    assert "-no-reboot" in cmd
    assert cmd[cmd.index("-smp") + 1] == "3"
    assert cmd[cmd.index("-accel") + 1] == "tcg"
    append = cmd[cmd.index("-append") + 1]
    for word in ("console=ttyS0", "panic=-1", "panic_on_warn=0", "rdinit=/init", "foo=1"):
        assert word in append.split()
    kvm = boot.qemu_command(boot.BootRequest(Path("/k"), Path("/i"), Path("/c"), accel="kvm"))
    assert kvm[kvm.index("-accel") + 1] == "kvm"
    icount = boot.qemu_command(boot.BootRequest(Path("/k"), Path("/i"), Path("/c"),
                                                qemu_args=("-icount", "shift=0")))
    assert icount[-2:] == ["-icount", "shift=0"]


def test_done_then_power_off(tmp_path, monkeypatch):
    r = run(tmp_path, monkeypatch, "echo 'Linux version 6.1'; echo 'ktopic-init: done'; exit 0\n",
            timeout=20, silence=10)
    assert r.status == "done", r
    assert "ktopic-init: done" in r.console.read_text()
    no_leftovers(tmp_path)


def test_done_but_no_power_off_is_killed_after_grace(tmp_path, monkeypatch):
    r = run(tmp_path, monkeypatch, "echo 'ktopic-init: done'; sleep 60\n",
            timeout=20, silence=10, grace=0.5)
    assert r.status == "done" and "did not power off" in r.message
    assert r.seconds < 5
    no_leftovers(tmp_path)


def test_exit_before_done(tmp_path, monkeypatch):
    r = run(tmp_path, monkeypatch, "echo 'Kernel panic - not syncing: x'; exit 0\n",
            timeout=20, silence=10)
    assert r.status == "exited"
    no_leftovers(tmp_path)


def test_silence(tmp_path, monkeypatch):
    r = run(tmp_path, monkeypatch, "echo hello; sleep 60\n", timeout=30, silence=0.7)
    assert r.status == "silence" and "no console output" in r.message
    assert r.seconds < 5
    no_leftovers(tmp_path)


def test_overall_timeout_with_chatty_guest(tmp_path, monkeypatch):
    r = run(tmp_path, monkeypatch, "while :; do echo tick; sleep 0.1; done\n",
            timeout=1.0, silence=10)
    assert r.status == "timeout"
    assert r.console.read_text().count("tick") >= 3
    no_leftovers(tmp_path)


def test_sigterm_kills_qemu(tmp_path, monkeypatch):
    """SIGTERM while QEMU runs: the boot unwinds and the group is gone."""
    monkeypatch.setattr(boot, "QEMU", str(fake_qemu(tmp_path, "echo up; sleep 60\n")))
    req = boot.BootRequest(kernel=tmp_path / "k", initrd=tmp_path / "i",
                           console=tmp_path / "console.log", timeout=30, silence=30)
    old = signal.signal(signal.SIGALRM, lambda *a: os.kill(os.getpid(), signal.SIGTERM))
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(SystemExit):
            boot.boot(req)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    no_leftovers(tmp_path)
    assert not boot._live


def test_missing_qemu(tmp_path, monkeypatch):
    monkeypatch.setattr(boot, "QEMU", str(tmp_path / "nope"))
    r = boot.boot(boot.BootRequest(tmp_path / "k", tmp_path / "i", tmp_path / "c.log"))
    assert r.status == "error" and "cannot run" in r.message


def test_speed_factor_is_at_least_one():
    assert boot.speed_factor(samples=1) >= 1.0


def test_kvm_probe_is_cached(tmp_path, monkeypatch):
    """The probe runs once; its answer is reused while the machine is the same."""
    calls = []

    def fake_probe(image, accel, timeout):
        calls.append(accel)
        assert image.read_bytes()[510:] == b"\x55\xaa"
        return (accel == "tcg", "ok" if accel == "tcg" else "hangs", 0.1)
    monkeypatch.setattr(qkvm, "run_probe", fake_probe)
    monkeypatch.setattr(qkvm.os, "access", lambda *a: True)
    r1 = qkvm.probe(tmp_path)
    r2 = qkvm.probe(tmp_path)
    assert r1.accel == r2.accel == "tcg" and not r1.kvm_works
    assert "KVM does not work" in r1.reason
    assert calls == ["tcg", "kvm"]
    r3 = qkvm.probe(tmp_path, refresh=True)
    assert calls == ["tcg", "kvm", "tcg", "kvm"] and r3.accel == "tcg"


def test_kvm_probe_prefers_kvm_when_it_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(qkvm, "run_probe", lambda image, accel, timeout: (True, "ran", 0.1))
    monkeypatch.setattr(qkvm.os, "access", lambda *a: True)
    assert qkvm.probe(tmp_path).accel == "kvm"


def test_qemu_dies_with_a_killed_ktopic(tmp_path):
    """Even SIGKILL of the process running the boot leaves no QEMU behind."""
    import subprocess as sp
    script = tmp_path / "fake-qemu"
    script.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/qpid\necho up\nexec sleep 300\n")
    script.chmod(0o755)
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'tools')!r})\n"
            "from pathlib import Path\nfrom ktopic.kernel import boot\n"
            f"boot.QEMU = {str(script)!r}\n"
            f"boot.boot(boot.BootRequest(Path('k'), Path('i'), Path({str(tmp_path / 'c.log')!r}),"
            " timeout=60, silence=60))\n")
    runner = sp.Popen([sys.executable, "-c", code])
    qpid_file = tmp_path / "qpid"
    for _ in range(200):
        if qpid_file.exists() and qpid_file.read_text().strip():
            break
        time.sleep(0.02)
    qpid = int(qpid_file.read_text())
    assert alive(qpid)
    runner.kill()
    runner.wait()
    for _ in range(100):
        if not alive(qpid):
            break
        time.sleep(0.02)
    assert not alive(qpid)
