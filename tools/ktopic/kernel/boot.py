"""Boot a test kernel in QEMU and record its console.

Takes a BootRequest (kernel, initramfs, accelerator, time-outs, stop line);
gives a BootResult (the console log, how the run ended).  docs/ci.md,
"The guest".
"""

from __future__ import annotations

import atexit
import os
import re
import selectors
import shlex
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from ktopic.kernel import qkvm

QEMU = "qemu-system-x86_64"
DONE_MARK = b"ktopic-init: done"
BASE_CMDLINE = "console=ttyS0 panic=-1 panic_on_warn=0 rdinit=/init"

# Process groups of QEMUs still running; killed at interpreter exit.
_live: set[int] = set()


def _kill_all() -> None:
    for pgid in list(_live):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _live.discard(pgid)


atexit.register(_kill_all)

# Reference: the calibration loop below takes about this long on one core
# of the 2-core machines this project is measured on.
_CALIBRATION_REFERENCE = 0.2


def speed_factor(samples: int = 3) -> float:
    """How much slower than the reference machine this one is right now (>= 1).

    Two measurements multiplied: a fixed CPU-bound loop (best of a few runs:
    the speed of one host core, which is what TCG runs on) and the run-queue
    load per CPU (a short loop gets a core quickly even on a busy machine,
    a guest running for a minute shares the cores with everyone else).
    """
    best = None
    for _ in range(samples):
        t = time.perf_counter()
        x = 0
        for i in range(1_000_000):
            x += i * i
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        load = 1.0
    return max(1.0, best / _CALIBRATION_REFERENCE) * max(1.0, load)


class Host:
    """How the guests of one run boot on this machine, each measured once, on
    first use: the accelerator (the KVM probe's answer unless `forced`) and
    the speed factor that scales their time-outs."""

    def __init__(self, workdir_root: Path, forced: str = "auto"):
        self.root = Path(workdir_root)
        self.forced = forced
        self._accel: tuple[str, str] | None = None
        self._factor: float | None = None

    def accel(self) -> tuple[str, str]:
        """(accelerator, why)."""
        if self._accel is None:
            if self.forced != "auto":
                self._accel = (self.forced, f"{self.forced} (forced)")
            else:
                p = qkvm.probe(self.root)
                self._accel = (p.accel, p.reason)
        return self._accel

    def factor(self) -> float:
        if self._factor is None:
            self._factor = speed_factor()
        return self._factor


@dataclass
class BootRequest:
    kernel: Path                     # bzImage
    initrd: Path
    console: Path                    # where the serial console is written
    cmdline: str = ""                # extra kernel arguments
    smp: int = 2
    memory: str = "1G"
    accel: str = "tcg"
    timeout: float = 120.0           # overall, seconds (already scaled)
    silence: float = 30.0            # max seconds without console output (scaled)
    grace: float = 10.0              # after "done", seconds to wait for power-off
    qemu_args: tuple[str, ...] = ()  # appended to the command (benchmarks: -icount)
    stop_at: re.Pattern[bytes] | None = None   # a console line that ends the run


@dataclass
class BootResult:
    status: str                      # done | exited | silence | timeout | stopped | error
    seconds: float
    console: Path
    command: str                     # the QEMU command line (reproduce with it)
    returncode: int | None = None
    message: str = ""
    qemu_stderr: list[str] = field(default_factory=list)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when ktopic dies, even by SIGKILL
    (PR_SET_PDEATHSIG), the one way out no finally block sees."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def qemu_command(req: BootRequest) -> list[str]:
    accel = ["-accel", "kvm", "-cpu", "host"] if req.accel == "kvm" else ["-accel", "tcg"]
    append = " ".join(x for x in (BASE_CMDLINE, req.cmdline) if x)
    return [QEMU, "-machine", "q35", *accel, "-smp", str(req.smp), "-m", req.memory,
            "-nodefaults", "-display", "none", "-monitor", "none", "-serial", "stdio",
            "-no-reboot", "-kernel", str(req.kernel), "-initrd", str(req.initrd),
            "-append", append, *req.qemu_args]


class _SignalsToExit:
    """While QEMU runs, make SIGTERM/SIGHUP unwind (so the group is killed).

    A signal that comes before arm() (before the try whose finally kills
    the group) is kept and raised by arm(): blocking it in this thread is
    not enough, because another thread of the process (a test runner's,
    for one) may take it and Python then runs the handler here anyway,
    in the middle of starting QEMU."""

    def __enter__(self):
        self.saved = {}
        self.armed = False
        self.pending = 0
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if not self.armed:
            self.pending = self.pending or signum
            return
        raise SystemExit(128 + signum)

    def arm(self) -> None:
        """From here on a signal unwinds; one that came before does now."""
        self.armed = True
        if self.pending:
            raise SystemExit(128 + self.pending)

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        return False


def _stop_line(stop_at: re.Pattern[bytes] | None, partial: bytes,
               chunk: bytes) -> tuple[bytes | None, int, bytes]:
    """The first line completed by chunk (after partial, the unfinished
    line before it) that matches stop_at; how much of chunk goes to the
    console: up to that line's end, else all of it; and the unfinished
    line the next chunk continues (its last 4 KiB)."""
    if stop_at is None:
        return None, len(chunk), b""
    *lines, rest = (partial + chunk).split(b"\n")
    end = -len(partial)
    for line in lines:
        end += len(line) + 1
        line = line.rstrip(b"\r")
        if stop_at.search(line):
            return line, end, b""
    return None, len(chunk), rest[-4096:]


def _watch(req: BootRequest, p, log, t0: float) -> tuple[str, str, int | None]:
    """Copy QEMU's console to log until the run ends: the guest said done
    (and powered off, or not within the grace), a stop line, a time-out,
    silence, or QEMU exiting; gives the status, its message and QEMU's
    exit status when it exited."""
    status, message, rc = "error", "", None
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    tail = b""
    partial = b""                # the console's last, unfinished line
    last = t0
    done_at = None
    try:
        while True:
            now = time.monotonic()
            if done_at is not None and now - done_at > req.grace:
                status, message = "done", "guest did not power off after done; killed"
                break
            if now - t0 > req.timeout:
                status = "timeout"
                message = f"no end of run within the time-out of {req.timeout:.0f}s"
                break
            if done_at is None and now - last > req.silence:
                status = "silence"
                message = f"no console output for {req.silence:.0f}s"
                break
            wait = min(req.timeout - (now - t0), req.silence - (now - last), 0.5)
            if not sel.select(timeout=max(wait, 0.01)):
                if p.poll() is None:
                    continue
                # QEMU is gone but something still holds the pipe: no more output.
                chunk = b""
            else:
                chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:          # QEMU exited
                rc = p.wait()
                status = "done" if done_at is not None else "exited"
                if status == "exited":
                    message = f"QEMU exited (status {rc}) before ktopic-init: done"
                break
            # The console ends with the line that stops the run.
            stop, upto, partial = _stop_line(req.stop_at, partial, chunk)
            log.write(chunk[:upto])
            log.flush()
            last = time.monotonic()
            if stop is not None:
                status = "stopped"
                message = "stopped at: " + stop.decode(errors="replace")
                break
            if done_at is None:
                tail = (tail + chunk)[-4096:]
                if DONE_MARK in tail:
                    done_at = last
    finally:
        sel.close()
    return status, message, rc


def boot(req: BootRequest) -> BootResult:
    import subprocess

    cmd = qemu_command(req)
    req.console.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    status, message, rc = "error", "", None
    stderr_path = req.console.with_name(req.console.stem + ".qemu-stderr")
    with _SignalsToExit() as signals, open(req.console, "wb") as log, \
            open(stderr_path, "wb") as err:
        # SIGTERM/SIGHUP held from before QEMU starts until the try whose
        # finally kills its group: one arriving in between would unwind
        # past it and leave the group running.  QEMU gets the old mask.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGTERM, signal.SIGHUP))

        def child_setup():
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            _die_with_parent()
        try:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=err, start_new_session=True,
                                 preexec_fn=child_setup)
        except OSError as e:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            signals.arm()
            return BootResult("error", 0.0, req.console, shlex.join(cmd),
                              message=f"cannot run {QEMU}: {e.strerror}")
        _live.add(p.pid)
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            signals.arm()
            status, message, rc = _watch(req, p, log, t0)
        finally:
            # The whole group, even when QEMU itself has exited: nothing it
            # started may outlive the run.
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            p.stdout.close()
            _live.discard(p.pid)
    errs = stderr_path.read_text(errors="replace").splitlines()
    if errs and status in ("exited", "error") and not message:
        message = errs[-1]
    return BootResult(status=status, seconds=time.monotonic() - t0, console=req.console,
                      command=shlex.join(cmd), returncode=rc if rc is not None else p.returncode,
                      message=message, qemu_stderr=errs[-20:])
