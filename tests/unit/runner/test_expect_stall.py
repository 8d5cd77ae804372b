"""An expectation boot that the guest stopped (silence, time-out) is booted
once more before it counts: a guest stuck in SMP bring-up says nothing about
the kernel, and its failure would otherwise be attributed to a commit."""

from __future__ import annotations

from types import SimpleNamespace

from ktopic.model.results import Finding
from ktopic.runner import runner as runmod

LOCKDEP = Finding("lockdep", "possible recursive locking detected", 40, [])
SILENCE = Finding("silence", "no console output for 30 s", 12, [])
ENTRY = SimpleNamespace(name="six-read-then-write", report="lockdep",
                        match="possible recursive locking detected",
                        module="six_lockdep_expect", args="case=read_write")


def fake_runner(boots):
    """A Runner whose guest() gives the findings in boots, one list a boot."""
    r = runmod.Runner.__new__(runmod.Runner)
    r.booted = []
    r.noted = []

    def guest(t, bzimage, initrd, console, args):
        r.booted.append(args)
        return None, "", boots[len(r.booted) - 1]

    r.guest = guest
    r.note = lambda t, stage, status, what: r.noted.append(what)
    return r


def test_a_stalled_expectation_boot_is_booted_again_and_the_second_decides():
    r = fake_runner([[SILENCE], [LOCKDEP]])
    v, findings = r._expect_boot(None, ENTRY, "bz", "initrd", "console", "a=1")
    assert v.seen and findings == [LOCKDEP]
    assert r.booted == ["a=1", "a=1"]
    assert r.noted == ["six-read-then-write again (the boot stalled)"]


def test_a_boot_that_stalls_twice_fails_the_expectation():
    r = fake_runner([[SILENCE], [SILENCE]])
    v, _ = r._expect_boot(None, ENTRY, "bz", "initrd", "console", "")
    assert not v.seen and len(r.booted) == 2


def test_a_boot_that_ran_to_its_end_without_the_report_is_not_retried():
    r = fake_runner([[Finding("warning", "WARNING: something else", 30, [])]])
    v, _ = r._expect_boot(None, ENTRY, "bz", "initrd", "console", "")
    assert not v.seen and len(r.booted) == 1


def test_a_report_seen_before_a_stall_is_not_booted_again():
    r = fake_runner([[LOCKDEP, SILENCE]])
    v, _ = r._expect_boot(None, ENTRY, "bz", "initrd", "console", "")
    assert v.seen and len(r.booted) == 1
