"""Does KVM really work here?  A probe, with a short time-out, cached.

Takes the work directory; gives a ProbeResult (kvm or tcg, why), cached in
<workdir>/kvm-probe.json per host kernel, QEMU and /dev/kvm.  docs/ci.md,
"KVM or TCG".
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ktopic import stampcache

QEMU = "qemu-system-x86_64"

# 16-bit real-mode code loaded at 0x7c00 by the BIOS:
#   mov dx,0x3f8; mov al,'K'; out dx,al; mov al,10; out dx,al
#   mov dx,0xf4; mov al,0; out dx,al   (isa-debug-exit: QEMU exits with 1)
#   hlt; jmp $-1
_CODE = bytes.fromhex("fa" "baf803" "b04b" "ee" "b00a" "ee" "baf400" "b000" "ee" "f4" "ebfd")
BOOT_SECTOR = _CODE + b"\0" * (510 - len(_CODE)) + b"\x55\xaa"


@dataclass
class ProbeResult:
    accel: str                       # "kvm" or "tcg": what boots should use
    kvm_works: bool
    reason: str                      # one line
    seconds: float                   # how long the KVM attempt took
    key: str = ""


def _qemu_version() -> str:
    try:
        return subprocess.run([QEMU, "--version"], stdout=subprocess.PIPE,
                              text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "none"


def _key() -> str:
    try:
        st = os.stat("/dev/kvm")
        kvm = f"{st.st_rdev}:{st.st_mode:o}"
    except OSError:
        kvm = "absent"
    return f"probe2|{platform.release()}|{_qemu_version()}|{kvm}"


def run_probe(image: Path, accel: str, timeout: float) -> tuple[bool, str, float]:
    """Boot the probe sector once; (worked, why, seconds)."""
    # Under KVM the probe asks for what a test boot asks for (q35, the host
    # CPU model, two vCPUs): here a bare probe ran under KVM while a real
    # boot aborted setting IA32_ARCH_CAPABILITIES for -cpu host.
    machine = ["-machine", "q35", "-cpu", "host", "-smp", "2"] if accel == "kvm" else []
    cmd = [QEMU, *machine, "-accel", accel, "-nodefaults", "-display", "none", "-m", "32",
           "-no-reboot", "-serial", "stdio", "-monitor", "none",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
           "-drive", f"file={image},format=raw,if=ide,snapshot=on"]
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        return False, f"cannot run {QEMU}: {e.strerror}", 0.0
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return False, f"no output within {timeout:.0f}s (guest hangs)", time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    secs = time.monotonic() - t0
    if b"K" in out and p.returncode == 1:
        return True, f"probe guest ran in {secs:.2f}s", secs
    msg = err.decode(errors="replace").strip().splitlines()
    return False, (msg[-1] if msg else f"exit status {p.returncode}, no output"), secs


def probe(workdir_root: Path, timeout: float = 5.0, refresh: bool = False) -> ProbeResult:
    """Which accelerator to use; measured once per machine and cached."""
    cache = stampcache.Store(workdir_root, indent=2)
    key = _key()
    d = None if refresh else cache.get("kvm-probe")
    if isinstance(d, dict) and d.get("key") == key:
        try:
            return ProbeResult(**d)
        except TypeError:
            pass
    image = Path(workdir_root) / "kvm-probe.img"
    image.parent.mkdir(parents=True, exist_ok=True)
    image.write_bytes(BOOT_SECTOR)
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        res = ProbeResult("tcg", False, "/dev/kvm is missing or not accessible", 0.0, key)
    else:
        ok_tcg, why_tcg, _ = run_probe(image, "tcg", timeout * 4)
        ok, why, secs = run_probe(image, "kvm", timeout)
        if not ok_tcg:
            res = ProbeResult("tcg", False, f"probe unusable (under TCG: {why_tcg})", secs, key)
        elif ok:
            res = ProbeResult("kvm", True, f"KVM works: {why}", secs, key)
        else:
            res = ProbeResult("tcg", False, f"KVM does not work: {why}", secs, key)
    cache.put("kvm-probe", asdict(res))
    return res
