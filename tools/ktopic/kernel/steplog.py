"""What a long step says while it runs, and where a run's time went.

Takes the steps of the gates and the runner (StepLog.step(): branch,
stage, kbuild progress); gives heartbeat log lines, results.StageTime rows
per (branch, stage) with an `other` and a `total` row, and a record per
step (out/steps.json).  docs/ci.md, "What a log shows, and where the time
went".
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import threading
import time
from pathlib import Path

from ktopic.model.results import StageTime

# Stages whose steps run other steps, which are rows of their own (the
# first-bad-commit search builds and boots its probes): `other` does not
# count them twice.
ENCLOSING = frozenset({"attribute"})
INTERVAL = 30.0      # the longest a log with a running step stays quiet
PERIOD = 1.0         # how often the heartbeat thread looks


def children_cpu() -> float:
    """User + system seconds of the child processes waited for so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def ccache_counter(ccache_dir: Path):
    """A function giving ccache's (hits, misses) so far in ccache_dir, or
    None without ccache.  One `ccache --print-stats` (a few milliseconds)."""
    exe = shutil.which("ccache")
    if not exe:
        return None
    env = dict(os.environ, CCACHE_DIR=str(ccache_dir))

    def counts() -> tuple[int, int] | None:
        try:
            out = subprocess.run([exe, "--print-stats"], env=env, capture_output=True,
                                 text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        v = {}
        for line in out.splitlines():
            k, _, n = line.partition("\t")
            if n.strip().isdigit():
                v[k] = int(n)
        if "cache_miss" not in v:
            return None
        return v.get("direct_cache_hit", 0) + v.get("preprocessed_cache_hit", 0), v["cache_miss"]
    return counts


def duration(seconds: float) -> str:
    """45s, 12m05s, 1h02m."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Step:
    """One running step; ``line`` is a build's on_line callback."""

    def __init__(self, log: "StepLog", branch: str, stage: str, what: str, commit: str,
                 subject: str, kbuild: bool):
        self.log = log
        self.branch, self.stage, self.what = branch, stage, what or stage
        self.commit, self.subject, self.kbuild = commit, subject, kbuild
        self.count = 0               # kbuild steps so far
        self.target = ""             # the last one's target
        self.outcome = ""
        self.t0 = 0.0
        self.cpu0 = 0.0
        self.cc0 = None

    def name(self) -> str:
        s = f"{self.branch}: {self.what}"
        if self.commit:
            s += f" {self.commit[:12]}" + (f" ({self.subject})" if self.subject else "")
        return s

    def line(self, count: int, target: str = "") -> None:
        """kbuild did one more step (count so far, its target)."""
        with self.log.lock:
            self.count, self.target = count, target
        self.log.tick()

    def result(self, text: str) -> None:
        """What the end line says instead of "done" (ok, FAILED: ...)."""
        self.outcome = text

    def __enter__(self) -> "Step":
        self.log._start(self)
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is not None and not self.outcome:
            self.outcome = "interrupted" if issubclass(kind, KeyboardInterrupt) else \
                f"failed: {exc}".splitlines()[0]
        self.log._end(self)
        return False


class StepLog:
    """Heartbeat lines for long steps in a log, and the run's time per stage.

    say: where lines go (None: nowhere, only timing).  heartbeat: a log
    quiet for `interval` seconds hears from its innermost running step.
    edges: a line when a step starts and ends.  clock, cpu, load, ccache:
    the sources (tests fake them).  ticker: run the thread that makes
    silent steps speak."""

    def __init__(self, say=None, *, heartbeat: bool = True, edges: bool = True,
                 interval: float = INTERVAL, period: float = PERIOD, clock=None, cpu=None,
                 load=None, ccache=None, ticker: bool = True):
        self.say = say
        self.heartbeat, self.edges = heartbeat and say is not None, edges and say is not None
        self.interval, self.period = interval, period
        self.clock = clock or (lambda: time.monotonic())
        self.cpu = cpu or (lambda: children_cpu())
        self.load = load or load_average
        self.ccache = ccache
        self.lock = threading.RLock()
        self.running: list[Step] = []
        self.rows: dict[tuple[str, str], StageTime] = {}
        self.records: list[dict] = []          # one per finished step (records())
        self.t0 = self.said = self.clock()      # said: this log's last line
        self.cpu0 = self.cpu()
        self.load0 = round(self.load(), 2)
        self._ticker = ticker and self.heartbeat
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # --- steps
    def step(self, branch: str, stage: str, what: str = "", commit: str = "",
             subject: str = "", kbuild: bool = False) -> Step:
        """A step of row (branch, stage); `what` names it in lines (default:
        the stage), `commit` and `subject` say what it builds, `kbuild`
        that it runs make (ccache is asked before and after)."""
        return Step(self, branch, stage, what, commit, subject, kbuild)

    def _emit(self, text: str) -> None:
        if self.say is not None:
            self.said = self.clock()
            self.say(f"[{self.said - self.t0:7.1f}s] {text}")

    def _start(self, s: Step) -> None:
        with self.lock:
            s.t0 = self.clock()
            s.cpu0 = self.cpu()
            s.cc0 = self.ccache() if self.ccache and s.kbuild else None
            key = (s.branch, s.stage)
            if key not in self.rows:
                self.rows[key] = StageTime(s.branch, s.stage, load=round(self.load(), 2))
            self.running.append(s)
            if self.edges:
                self._emit(f"{s.name()}: started")
        if self._ticker and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ktopic-steplog",
                                            daemon=True)
            self._thread.start()

    def _end(self, s: Step) -> None:
        with self.lock:
            now = self.clock()
            row = self.rows[(s.branch, s.stage)]
            row.seconds += now - s.t0
            row.cpu += self.cpu() - s.cpu0
            row.runs += 1
            row.kbuild += s.count
            rec = {"branch": s.branch, "stage": s.stage, "what": s.what, "commit": s.commit,
                   "seconds": round(now - s.t0, 2), "cpu": round(self.cpu() - s.cpu0, 2),
                   "kbuild": s.count, "outcome": s.outcome,
                   "end": round(now - self.t0, 2)}
            if s.cc0 is not None:
                cc = self.ccache()
                if cc is not None:
                    row.ccache_hits = (row.ccache_hits or 0) + cc[0] - s.cc0[0]
                    row.ccache_misses = (row.ccache_misses or 0) + cc[1] - s.cc0[1]
                    rec.update(ccache_hits=cc[0] - s.cc0[0], ccache_misses=cc[1] - s.cc0[1])
            self.records.append(rec)
            if s in self.running:
                self.running.remove(s)
            if self.edges:
                self._emit(f"{s.name()}: {s.outcome or 'done'} in {duration(now - s.t0)}"
                           + (f", {s.count} kbuild steps" if s.count else ""))

    # --- heartbeat
    def tick(self) -> None:
        """When the log was quiet for an interval (less one period: the
        thread looks once a period, so no gap exceeds it), the innermost
        running step says how far it is.  Quiet is the log's, not the
        step's: steps that end unannounced one after another (a bisect
        walk, the mutants) would otherwise leave gaps of nearly two
        intervals."""
        if not self.heartbeat:
            return
        with self.lock:
            now = self.clock()
            if not self.running or now - self.said < self.interval - self.period:
                return
            s = self.running[-1]
            text = f"{s.name()}: running {duration(now - s.t0)}"
            if s.count:
                text += f", {s.count} kbuild steps" + (f" ({s.target})" if s.target else "")
            self._emit(text)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.tick()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def __enter__(self) -> "StepLog":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    # --- where the time went
    def mark(self, what: str) -> None:
        """A record of a moment, not a step (stage "mark"): e.g. the main
        job's first verdict, so that a reader of steps.json can tell the
        steps before it from those after."""
        with self.lock:
            self.records.append({"branch": "", "stage": "mark", "what": what, "commit": "",
                                 "seconds": 0.0, "cpu": 0.0, "kbuild": 0, "outcome": "",
                                 "end": round(self.clock() - self.t0, 2)})

    def steps_done(self) -> list[dict]:
        """Every finished step, in the order they ended: branch, stage, what,
        commit, seconds, cpu, kbuild (its kbuild steps: how much it
        compiled), outcome, end (seconds from this log's start), and
        ccache_hits/misses for a build; and the marks (mark())."""
        with self.lock:
            return [dict(r) for r in self.records]

    def totals(self) -> list[StageTime]:
        """Every row in the order first started, then `other` (the run's time
        no step covered; an ENCLOSING row's steps are rows already) and
        `total` (the run, from this log's creation)."""
        with self.lock:
            rows = [StageTime(**vars(r)) for r in self.rows.values()]
            wall, cpu = self.clock() - self.t0, self.cpu() - self.cpu0
        for r in rows:
            r.seconds, r.cpu = round(r.seconds, 2), round(r.cpu, 2)
        inner = [r for r in rows if r.stage not in ENCLOSING]
        other = StageTime("", "other", round(wall - sum(r.seconds for r in inner), 2),
                          round(cpu - sum(r.cpu for r in inner), 2))
        total = StageTime("", "total", round(wall, 2), round(cpu, 2), self.load0,
                          runs=sum(r.runs for r in rows), kbuild=sum(r.kbuild for r in rows))
        return rows + [other, total]
