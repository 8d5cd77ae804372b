"""What every topic gate of `ktopic check` is: a name, how it runs on a
topic's Plan (bisectable.plan), what its verdict depends on (the cache
key), and a result with a summary, findings and a dict form.

Takes nothing; gives the Gate base class, the ResultBase of its results,
the GateRun a gate works in, Located (a finding at file:line), and
beyond(): what a topic's head shows more often than its start.  The
gates themselves are named in gates/registry.py; docs/gates.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import ClassVar, Protocol

from ktopic.kernel import kconfig


class GateResult(Protocol):
    """A gate's verdict on one topic (a dataclass)."""
    ok: bool
    error: str
    cached: bool

    def summary(self) -> str: ...
    def render(self) -> list[str]: ...
    def findings(self) -> list: ...        # [results.Finding]
    def to_dict(self) -> dict: ...


class ResultBase:
    """What the gates' result dataclasses share: the first line of their
    rendering and the dict form.  label: the gate's name in those lines;
    nested: field -> the dataclass of its items (a list of them, or one
    or None)."""
    label: ClassVar[str] = ""
    nested: ClassVar[dict[str, type]] = {}

    def head(self) -> list[str]:
        if self.error:
            return [f"{self.label}: FAIL: {self.error}"]
        return [f"{self.label}: {'ok' if self.ok else 'FAIL'}: {self.summary()}"
                + (" [cached]" if self.cached else "")]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict):
        d = dict(d)
        for name, item in cls.nested.items():
            v = d.get(name)
            if isinstance(v, list):
                d[name] = [item(**x) for x in v]
            elif v is not None:
                d[name] = item(**v)
        return cls(**d)


@dataclass
class Located:
    """A finding of a gate at a place in a file (Report, Diagnostic)."""
    file: str
    line: int

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def beyond(start: list, head: list, signature) -> list:
    """What head shows more often than start, by signature (a callable):
    of each signature the first ones are those start had already, so code
    that only moved brings nothing new."""
    left = Counter(signature(x) for x in start)
    new = []
    for x in head:
        sig = signature(x)
        if left[sig] > 0:
            left[sig] -= 1
        else:
            new.append(x)
    return new


@dataclass
class GateRun:
    """One topic's gates in one run: its Plan, the work directory and the
    run's choices.  built: whether the topic's head is built in its build
    directory (None: not known yet), shared by the gates that build."""
    plan: object
    wd: object
    m: object = None                 # the manifest (waivers, patches)
    jobs: int = 0
    progress: bool = False
    log: object = None               # callable(str) or None
    steps: object = None             # kernel/steplog.StepLog
    built: bool | None = None


class Gate:
    """One gate.  A subclass sets the class attributes and implements run();
    before() runs for every gate of a topic before any of them runs."""
    name = ""
    help = ""                        # the option's help in `ktopic check` and `ci`
    result: type = object            # the result class: from_dict(), result(ok=, error=)
    builds = True                    # builds kernels: under the lock, not with --gates-only
    main_job = True                  # one of the main job's gates (runner/options.py)
    rule_files: tuple[str, ...] = () # its code, relative to ktopic/: part of the cache key
    waiver_prefix = ""               # patches[].waivers types of this gate (TYPE_...)

    def key_parts(self, plan, tools: dict[str, str], wd=None, m=None) -> dict:
        """What the verdict depends on besides the gate's code (wd and m:
        the work directory and the manifest, for a gate that reads them)."""
        raise NotImplementedError

    def before(self, run: GateRun) -> None:
        """Work on the topic's start, before another gate moves the tree."""

    def run(self, run: GateRun) -> GateResult:
        raise NotImplementedError

    def failed(self, error: str) -> GateResult:
        """The verdict when the topic cannot be looked at (no branch)."""
        return self.result(ok=False, error=error)

    def from_dict(self, d: dict) -> GateResult:
        return self.result.from_dict(d)


class BuildGate(Gate):
    """A gate that builds the topic: its verdict depends on the commit
    range, the test configuration and the toolchain (gatecache.py)."""
    rule_files = ("gates/bisectable.py", "gates/new_warnings.py", "kernel/build.py",
                  "kernel/kconfig.py", "gates/gatecache.py")

    def key_parts(self, plan, tools: dict[str, str], wd=None, m=None) -> dict:
        return {"start": plan.start, "head": plan.head,
                "commits": [sha for sha, _ in plan.commits],
                "config": kconfig.fragment_hash(plan.fragments),
                "toolchain": dict(sorted(tools.items()))}
