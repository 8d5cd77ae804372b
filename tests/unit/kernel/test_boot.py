"""ktopic.kernel.boot and ktopic.kernel.qkvm with a fake QEMU: end of run, silence,
time-out, and that no process outlives a boot."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
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


def gone(pid: int, within: float = 30.0) -> bool:
    """Whether pid dies within `within` seconds (generous: only a process
    that is never killed takes that long, not a slow machine)."""
    end = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def no_leftovers(tmp_path):
    for pid in map(int, (tmp_path / "pids").read_text().split()):
        assert gone(pid), f"process {pid} outlived the boot"


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
            timeout=120, silence=100, grace=1)
    assert r.status == "done" and "did not power off" in r.message
    assert r.seconds < 50           # the guest sleeps 60 s: not waited for
    no_leftovers(tmp_path)


def test_exit_before_done(tmp_path, monkeypatch):
    r = run(tmp_path, monkeypatch, "echo 'Kernel panic - not syncing: x'; exit 0\n",
            timeout=20, silence=10)
    assert r.status == "exited"
    no_leftovers(tmp_path)


def test_silence(tmp_path, monkeypatch):
    r = run(tmp_path, monkeypatch, "echo hello; sleep 60\n", timeout=120, silence=1)
    assert r.status == "silence" and "no console output" in r.message
    assert r.seconds < 50           # the guest sleeps 60 s: not waited for
    no_leftovers(tmp_path)


def test_overall_timeout_with_chatty_guest(tmp_path, monkeypatch):
    r = run(tmp_path, monkeypatch, "echo tick; while :; do echo tick; sleep 0.1; done\n",
            timeout=1.5, silence=100)
    assert r.status == "timeout"
    assert r.console.read_text().count("tick") >= 1
    no_leftovers(tmp_path)


def test_sigterm_kills_qemu(tmp_path, monkeypatch):
    """SIGTERM while QEMU runs: the boot unwinds and the group is gone.
    QEMU itself sends it, once running (a timer could fire before)."""
    monkeypatch.setattr(boot, "QEMU", str(fake_qemu(
        tmp_path, f"echo up; kill -TERM {os.getpid()}; sleep 60\n")))
    req = boot.BootRequest(kernel=tmp_path / "k", initrd=tmp_path / "i",
                           console=tmp_path / "console.log", timeout=120, silence=100)
    with pytest.raises(SystemExit):
        boot.boot(req)
    no_leftovers(tmp_path)
    assert not boot._live


def test_missing_qemu(tmp_path, monkeypatch):
    monkeypatch.setattr(boot, "QEMU", str(tmp_path / "nope"))
    r = boot.boot(boot.BootRequest(tmp_path / "k", tmp_path / "i", tmp_path / "c.log"))
    assert r.status == "error" and "cannot run" in r.message


@pytest.mark.parametrize("dts,load,want", [
    ((0.1,), 0.5, 1.0),            # faster than the reference machine, idle: never below 1
    ((0.4,), 0.5, 2.0),            # one core half as fast as the reference's
    ((0.1,), 3.0, 3.0),            # a fast core, but three runnable tasks per CPU
    ((0.5, 0.4, 0.6), 3.0, 6.0),   # the best of the samples, times the load
    ((0.4,), None, 2.0),           # no load average: the speed alone
])
def test_speed_factor_is_core_speed_times_load(monkeypatch, dts, load, want):
    """The loop's time against the reference (0.2 s), times the run-queue
    load per CPU; both with fakes, so the figures are exact."""
    ticks = iter([t for i, dt in enumerate(dts) for t in (10.0 * i, 10.0 * i + dt)])
    monkeypatch.setattr(boot, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    monkeypatch.setattr(boot.os, "cpu_count", lambda: 4)

    def loadavg():
        if load is None:
            raise OSError("no /proc/loadavg")
        return (4 * load, 0.0, 0.0)
    monkeypatch.setattr(boot.os, "getloadavg", loadavg)
    assert boot.speed_factor(samples=len(dts)) == pytest.approx(want)


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
    end = time.monotonic() + 60
    while not (qpid_file.exists() and qpid_file.read_text().strip()):
        assert time.monotonic() < end and runner.poll() is None, "the fake QEMU never started"
        time.sleep(0.02)
    qpid = int(qpid_file.read_text())
    assert alive(qpid)
    runner.kill()
    runner.wait()
    assert gone(qpid)


def test_stop_at_ends_the_run_at_the_deciding_line(tmp_path, monkeypatch):
    """The first console line that matches stop_at ends the run, even when
    it arrives in two pieces, and the console ends with it: the rest of its
    piece, the guest's minute of sleep and its done mark are neither waited
    for nor recorded, and nothing outlives the run.  A line that only
    begins like it does not stop anything."""
    r = run(tmp_path, monkeypatch,
            "echo '[    1.2]     not ok 1 the_case_two'; printf '[    1.5]     not ok 2 the_'\n"
            "sleep 0.3; printf 'case\\r\\n    KTAP after it\\n'; sleep 60\n"
            "echo 'ktopic-init: done'\n",
            timeout=120, silence=100, stop_at=re.compile(rb"not ok \d+ the_case(?:\s|$)"))
    assert r.status == "stopped", r
    assert r.message == "stopped at: [    1.5]     not ok 2 the_case"
    assert r.seconds < 50           # the guest sleeps 60 s: not waited for
    assert r.console.read_bytes().endswith(b"     not ok 2 the_case\r\n")
    no_leftovers(tmp_path)
