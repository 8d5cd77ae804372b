"""Results of the per-branch pipeline: the data every stage hands on.

One ``Report`` holds one ``BranchResult`` per branch; a branch result holds
the outcome of each stage (generate, check, build, boot, test), the KUnit /
KTAP results per suite and case, and the findings a console scan made
(panics, lockdep reports, ...).  Everything is plain data so that it can be
cached as JSON, rendered (terminal, HTML, JUnit) and compared.

Takes what the stages found; gives the Report, BranchResult ... dataclasses
and their JSON.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.fileio import write_atomic

# Stage and case status values; PENDING: the main job's second tier has
# not run it yet (runner/tiers.py).
PASS, FAIL, SKIP, CACHED, CRASH = "pass", "fail", "skip", "cached", "crash"
PENDING = "pending"
STAGES = ("generate", "check", "build", "boot", "test")


@dataclass
class CaseResult:
    name: str
    status: str                      # pass | fail | skip | crash
    log: list[str] = field(default_factory=list)


@dataclass
class SuiteResult:
    name: str
    status: str                      # pass | fail | skip | crash
    cases: list[CaseResult] = field(default_factory=list)


@dataclass
class Finding:
    """Something the console scan or the result check flagged."""
    kind: str                        # panic, oops, bug, warning, lockdep, kasan,
                                     # ubsan, lockup, hung_task, rcu_stall,
                                     # list_corruption, refcount, debug_objects,
                                     # reboot, init (a module or program of /init
                                     # failed), smp (fewer CPUs than asked for),
                                     # missing_suite, failed_case, unreported_case
                                     # (cases a crash or a time-out cut off),
                                     # silence, timeout,
                                     # incomplete (QEMU exited before the end),
                                     # qemu (QEMU could not run), build
                                     # (docs/ci.md has the list)
    message: str                     # one line: what and where
    line: int = 0                    # 1-based line in the console log (0: none)
    lines: list[str] = field(default_factory=list)   # the quoted lines
    in_base: bool = False            # the base kernel shows it too


@dataclass
class StageResult:
    stage: str                       # one of STAGES
    status: str                      # pass | fail | skip | cached
    seconds: float = 0.0
    summary: str = ""                # one line for tables
    log: str = ""                    # path of the stage's log, relative to out/


@dataclass
class BranchResult:
    branch: str
    topic: str                       # topic name, or "integration" / "base"
    head: str = ""                   # commit id
    tree: str = ""                   # tree id (what caches are keyed on)
    config_hash: str = ""
    stages: list[StageResult] = field(default_factory=list)
    suites: list[SuiteResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    repro: dict[str, str] = field(default_factory=dict)  # config, qemu, initramfs, toolchain
    same_as: str = ""                # branch whose results these are (same tree)
    variant: str = ""                # sanitizer build variant ("kcsan"), "" for the plain build
    attribution: dict = field(default_factory=dict)   # its failure's first bad commit:
                                     # commit, subject, patch, boots, skipped, other;
                                     # or range and stopped (runner/attribute.py)
    followups: list[dict] = field(default_factory=list)   # the integration branch under
                                     # a variant: per build that attributes its report
                                     # (runner/followup.py): branch, topic, kind, files,
                                     # reports, shows (that build shows it too)
    follows: dict = field(default_factory=dict)   # such a build: the branch whose report it
                                     # attributes, with kind, files, reports, shows

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.stage == name), None)

    @property
    def ok(self) -> bool:
        return all(s.status in (PASS, CACHED, SKIP) for s in self.stages) and \
            not any(not f.in_base for f in self.findings)

    @property
    def verdict_ok(self) -> bool:
        """Nothing failed so far (what is pending may still fail)."""
        return all(s.status in (PASS, CACHED, SKIP, PENDING) for s in self.stages) and \
            not any(not f.in_base for f in self.findings)

    @property
    def pending(self) -> bool:
        return self.verdict_ok and any(s.status == PENDING for s in self.stages)


@dataclass
class StageTime:
    """Where a run's time went: one stage of one branch (kernel/steplog.py)."""
    branch: str                      # "" for the whole run's rows (other, total)
    stage: str                       # checkpatch, bisect builds, warnings, build, boot+tests, ...
    seconds: float = 0.0             # wall
    cpu: float = 0.0                 # user + system seconds of the child processes
    load: float = 0.0                # 1-minute load average when its first step started
    runs: int = 0                    # steps summed in the row (bisect builds: commits)
    kbuild: int = 0                  # kbuild steps (CC, LD, ...) seen
    ccache_hits: int | None = None   # builds only, when ccache answers
    ccache_misses: int | None = None


# Mutant status values.
CAUGHT, SURVIVED, INVALID = "caught", "survived", "invalid"


@dataclass
class MutantResult:
    """One deliberate bug of qemu/mutants/<topic>/ and whether the topic's tests saw it."""
    topic: str
    name: str                        # file name without .patch
    breaks: str                      # its Breaks: line
    caught_by: str                   # its Caught-by: line (the test that must fail)
    status: str                      # caught | survived | invalid (does not apply or build,
                                     # or the unmutated branch fails: nothing to compare)
    summary: str = ""                # what failed (caught), or why it is invalid
    named_failed: bool = False       # the Caught-by test is among the failures
    seconds: float = 0.0
    cached: bool = False
    log: str = ""                    # console log of its boot, relative to out/
    on: str = ""                     # the branch it ran on, when not its topic's
                                     # (`ktopic mutate --on`): "for-next+kcsan"

    @property
    def ok(self) -> bool:
        return self.status == CAUGHT

    @property
    def group(self) -> str:
        """What its score is counted under: "locking", or "locking on
        for-next+kcsan" (never mixed with the topic's own)."""
        return f"{self.topic} on {self.on}" if self.on else self.topic


@dataclass
class Report:
    base_version: str
    branches: list[BranchResult] = field(default_factory=list)
    mutants: list[MutantResult] = field(default_factory=list)
    timing: list[StageTime] = field(default_factory=list)   # where the run's time went

    @property
    def ok(self) -> bool:
        return all(b.ok for b in self.branches) and all(m.ok for m in self.mutants)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Report":
        return report_from_dict(json.loads(text))

    def write(self, path: Path) -> None:
        write_atomic(path, self.to_json())


def branch_from_dict(d: dict) -> BranchResult:
    d = dict(d)
    d["stages"] = [StageResult(**s) for s in d.get("stages", [])]
    d["suites"] = [SuiteResult(name=s["name"], status=s["status"],
                               cases=[CaseResult(**c) for c in s.get("cases", [])])
                   for s in d.get("suites", [])]
    d["findings"] = [Finding(**f) for f in d.get("findings", [])]
    return BranchResult(**d)


def report_from_dict(d: dict) -> Report:
    return Report(base_version=d["base_version"],
                  branches=[branch_from_dict(b) for b in d.get("branches", [])],
                  mutants=[MutantResult(**x) for x in d.get("mutants", [])],
                  timing=[StageTime(**x) for x in d.get("timing", [])])


_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")


def branch_dir(branch: str) -> str:
    """The one path component under out/ that holds a branch's files.

    ``/`` (and anything else that is not a plain file-name character) becomes
    ``_``; the result never starts with a dot.  The mapping is deterministic
    and is used by every stage that writes per-branch files.
    """
    name = _UNSAFE.sub("_", branch).strip("_") or "_"
    if name.startswith("."):
        name = "_" + name
    return name
