"""What a long step says in a log, and where a run's time went
(kernel/steplog.py), without a kernel: builds that emit kbuild lines over
a faked clock, through the StepLog itself, `ktopic ci`'s runner and the
gates' bisect walk."""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(Path(__file__).parent))

from ktopic.gates import bisectable, gatecache  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.runner import runner as runner_mod  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402

from test_ci import console, world  # noqa: E402,F401  (fixture)
from test_check_gates import TOOLS, _gates  # noqa: E402
from test_ktap import parser  # noqa: E402,F401  (fixture)

LINE = re.compile(r"^\[\s*(\d+\.\d)s\] (.*)$")
# The kbuild lines of a faked 25-minute build: one every 1.5 s, as the
# runner's 1-second throttle let through, then a 2-minute silent link.
KBUILD_LINES, EVERY, LINK = 1000, 1.5, 120.0


class Clock:
    """time.monotonic() as the test says; the CPU time of the children
    grows at 1.8 seconds per second of it (two busy cores)."""

    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now

    def cpu(self) -> float:
        return 1.8 * self.now


def lines_of(text: str, *words: str) -> list[tuple[float, str]]:
    """(seconds, text) of the timed lines that contain every word."""
    out = []
    for ln in text.splitlines():
        m = LINE.match(ln.strip())
        if m and all(w in m.group(2) for w in words):
            out.append((float(m.group(1)), m.group(2)))
    return out


def gaps(times: list[float]) -> list[float]:
    return [round(b - a, 1) for a, b in zip(times, times[1:])]


# --- the StepLog alone ---------------------------------------------------------

def fake_build(clock: Clock, step, tick) -> None:
    """A 25-minute build: kbuild lines at uneven times, then a silent link;
    tick() once a second, as the heartbeat thread does."""
    t_end = clock.now + KBUILD_LINES * EVERY
    n = 0
    while clock.now < t_end:
        clock.now += 0.5
        if int(clock.now * 2) % 3 == 0:
            n += 1
            step.line(n, f"kernel/f{n}.o")
        if clock.now == int(clock.now):
            tick()
    for _ in range(int(LINK)):
        clock.now += 1.0
        tick()


def test_a_log_hears_from_a_long_build_every_30s_and_no_more():
    from ktopic.kernel.steplog import StepLog
    clock = Clock()
    said: list[str] = []
    log = StepLog(say=said.append, clock=clock, cpu=clock.cpu, load=lambda: 1.5, ticker=False)
    with log.step("topic/fs", "build", kbuild=True) as s:
        fake_build(clock, s, log.tick)
        s.result("ok")
    text = "\n".join(said)
    timed = lines_of(text, "topic/fs: build")
    assert timed[0][1] == "topic/fs: build: started"
    assert timed[-1][1] == f"topic/fs: build: ok in 27m00s, {KBUILD_LINES} kbuild steps"
    beats = [t for t, x in timed if ": running " in x]
    # At least every 30 s (start, heartbeats, end), and no more often than ~30 s.
    assert max(gaps([t for t, _ in timed])) <= 30.0
    assert min(gaps(beats)) >= 29.0 and beats[0] - timed[0][0] >= 29.0
    assert len(timed) == 2 + len(beats) and len(beats) <= (KBUILD_LINES * EVERY + LINK) / 29
    # A heartbeat says how long, how far and what (the link says no target
    # anew, but the count stands).
    assert re.fullmatch(r"topic/fs: build: running 14m3\ds, \d+ kbuild steps \(kernel/f\d+\.o\)",
                        next(x for t, x in timed if "running 14m3" in x))
    assert any("running 26m" in x for _, x in timed)


def test_steps_that_end_unannounced_leave_no_gap_over_30s():
    """A bisect walk or a mutant run in the main job's log (no start or
    end lines): 45-second steps one after another.  Counting quiet per
    step, each new one spoke first 29 s after it started: 58 s gaps."""
    from ktopic.kernel.steplog import StepLog
    clock = Clock()
    said: list[str] = []
    log = StepLog(say=said.append, edges=False, clock=clock, cpu=clock.cpu,
                  load=lambda: 1.5, ticker=False)
    for n in range(1, 5):
        with log.step("topic/locking", "bisect builds", f"bisect build {n} of 4"):
            for _ in range(45):
                clock.now += 1.0
                log.tick()
    timed = lines_of("\n".join(said), "topic/locking: bisect build")
    assert [x.split(":")[1].strip() for _, x in timed] == \
        ["bisect build 1 of 4", "bisect build 2 of 4", "bisect build 2 of 4",
         "bisect build 3 of 4", "bisect build 4 of 4", "bisect build 4 of 4"]
    assert timed[0][0] == 29.0 and max(gaps([t for t, _ in timed])) <= 30.0
    assert min(gaps([t for t, _ in timed])) >= 29.0


def test_the_heartbeat_thread_speaks_for_a_silent_step():
    """No kbuild line at all (a boot, a W=1 pass): the thread says it runs."""
    from ktopic.kernel.steplog import StepLog
    said: list[str] = []
    heard = threading.Event()

    def say(s: str) -> None:
        said.append(s)
        if ": running " in s:
            heard.set()
    with StepLog(say=say, interval=0.2, period=0.02) as log:
        with log.step("topic/mm", "boot+tests", "boot and tests"):
            assert heard.wait(10), said
    assert re.search(r"topic/mm: boot and tests: running \ds$", said[1]), said


def test_other_does_not_count_the_attribute_probes_twice():
    """The first-bad-commit search's probes are rows of their own inside
    its step: `other` is the time no step covered, never negative."""
    from ktopic.kernel.steplog import StepLog
    clock = Clock()
    log = StepLog(clock=clock, cpu=clock.cpu, load=lambda: 1.0)
    with log.step("topic/mm", "build"):
        clock.now += 100
    with log.step("topic/mm", "attribute", "first bad commit"):
        clock.now += 1
        with log.step("topic/mm@abc", "build"):
            clock.now += 40
        with log.step("topic/mm@abc", "boot+tests"):
            clock.now += 10
    clock.now += 4
    by = {(r.branch, r.stage): r for r in log.totals()}
    assert by[("topic/mm", "attribute")].seconds == 51.0
    assert by[("", "other")].seconds == 5.0
    assert by[("", "total")].seconds == 155.0


def test_records_say_when_each_step_ended_and_where_a_mark_was_made():
    """steps.json tells the steps before the main job's first verdict from
    those after it (tools/bench/bench_mainjob.py reads it): each record's
    end, from the log's start, and a mark between them that no stage
    total counts."""
    from ktopic.kernel.steplog import StepLog
    clock = Clock()
    log = StepLog(clock=clock, cpu=clock.cpu, load=lambda: 1.0, ticker=False)
    with log.step("base", "build"):
        clock.now += 100
    clock.now += 5
    log.mark("first verdict")
    with log.step("topic/a", "mutants"):
        clock.now += 20
    recs = log.steps_done()
    assert [(r["stage"], r["what"], r["end"]) for r in recs] == [
        ("build", "build", 100.0), ("mark", "first verdict", 105.0),
        ("mutants", "mutants", 125.0)]
    assert {r.stage for r in log.totals()} == {"build", "mutants", "other", "total"}


def test_totals_add_up_and_say_where_the_time_went():
    from ktopic.kernel.steplog import StepLog
    from ktopic.report import report as rep
    clock = Clock()
    cc = iter([(10, 5), (13, 105), (13, 105), (20, 106)])
    log = StepLog(clock=clock, cpu=clock.cpu, load=lambda: 2.5, ccache=lambda: next(cc))
    clock.now += 3                                  # git, caches: nobody's step
    for i, secs in enumerate((100.0, 50.0), 1):
        with log.step("topic/mm", "bisect builds", f"bisect build {i} of 2", kbuild=True) as s:
            clock.now += secs
            s.line(7, "mm/filemap.o")
    with log.step("topic/mm", "warnings"):
        clock.now += 20
    clock.now += 2
    rows = log.totals()
    by = {(r.branch, r.stage): r for r in rows}
    b = by[("topic/mm", "bisect builds")]
    assert (b.seconds, b.cpu, b.runs, b.kbuild, b.load) == (150.0, 270.0, 2, 14, 2.5)
    assert (b.ccache_hits, b.ccache_misses) == (3 + 7, 100 + 1)
    assert by[("topic/mm", "warnings")].ccache_hits is None      # not a build: not asked
    assert [r.stage for r in rows] == ["bisect builds", "warnings", "other", "total"]
    assert (by[("", "other")].seconds, by[("", "total")].seconds) == (5.0, 175.0)
    assert sum(r.seconds for r in rows[:-1]) == pytest.approx(rows[-1].seconds)
    assert sum(r.cpu for r in rows[:-1]) == pytest.approx(rows[-1].cpu) == 1.8 * 175
    text = "\n".join(rep.timing_lines(rows))
    assert text.startswith("where the time went:")
    assert re.search(r"topic/mm\s+bisect builds\s+2\s+150\.0\s+270\.0\s+2\.50\s+14\s+10/101",
                     text), text
    assert re.search(r"\(run\)\s+total\s+3\s+175\.0\s+315\.0", text), text


# --- ktopic ci: the runner in a log ------------------------------------------

@pytest.fixture
def ci_clock(world, monkeypatch):  # noqa: F811
    """world (test_ci.py) with a faked clock, and topic/a's build a faked
    25-minute one; the run's StepLog kept, its ticks made by the build."""
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    try:
        from ktopic.kernel import steplog
        monkeypatch.setattr(steplog, "children_cpu", clock.cpu)
    except ImportError:      # main before the StepLog: the run is still made, the log read
        pass
    logs = []
    made = getattr(runner_mod, "_steps", None)

    def steps(live, root):
        log = made(live, root)
        log._ticker = False              # its ticks come from the build, in step with the clock
        logs.append(log)
        return log
    monkeypatch.setattr(runner_mod, "_steps", steps, raising=False)
    built = buildmod.build

    def build(root, git_dir, req):
        res = built(root, git_dir, req)
        if req.name != "topic_a":
            return res

        class Step:
            def line(self, n, what):
                if req.on_line:
                    req.on_line(n, what)
        tick = logs[0].tick if logs else (lambda: None)
        fake_build(clock, Step(), tick)
        return res
    monkeypatch.setattr(buildmod, "build", build)
    world.consoles.update({"base": console(), "topic_a": console()})
    world.wd.lock = contextlib.nullcontext
    world.clock = clock
    return world


def test_ci_log_hears_from_a_long_build_every_30s_and_no_more(ci_clock, capsys):
    w = ci_clock
    report = runner_mod.run_targets(w.m, w.wd, Options(accel="tcg"), ["a"], w.out,
                                    write_report=True, use_live=True)
    assert report.ok
    out = capsys.readouterr().out
    timed = lines_of(out, "topic/a: build")
    assert timed[0][1] == "topic/a: build running"
    assert timed[-1][1].startswith("topic/a: build pass")
    # Before: one line every 1.5 s (about 1,000 for the build).
    assert len(timed) <= 2 + (KBUILD_LINES * EVERY + LINK) / 29, f"{len(timed)} lines"
    assert max(gaps([t for t, _ in timed])) <= 30.0
    assert min(gaps([t for t, _ in timed[:-1]])) >= 29.0
    assert re.fullmatch(r"topic/a: build: running 26m\d\ds, 1000 kbuild steps \(kernel/f1000\.o\)",
                        timed[-2][1]), timed[-2:]


def test_ci_report_says_where_the_time_went(ci_clock, capsys):
    w = ci_clock
    runner_mod.run_targets(w.m, w.wd, Options(accel="tcg"), ["a"], w.out,
                           write_report=True, use_live=True)
    rows = json.loads((w.out / "report.json").read_text()).get("timing")
    assert rows, "no timing in report.json"
    by = {(r["branch"], r["stage"]): r for r in rows}
    build = by[("topic/a", "build")]
    assert build["seconds"] == KBUILD_LINES * EVERY + LINK and build["kbuild"] == KBUILD_LINES
    assert build["cpu"] == pytest.approx(1.8 * build["seconds"])
    assert {("base", "build"), ("base", "boot+tests"), ("topic/a", "boot+tests")} <= set(by)
    total = by[("", "total")]
    assert [r["stage"] for r in rows[-2:]] == ["other", "total"]
    assert sum(r["seconds"] for r in rows[:-1]) == pytest.approx(total["seconds"], abs=0.05)
    assert sum(r["cpu"] for r in rows[:-1]) == pytest.approx(total["cpu"], abs=0.05)
    assert total["seconds"] >= build["seconds"]


def test_ci_command_prints_the_table(ci_clock, capsys, monkeypatch):
    from ktopic.commands import cmd_ci
    w = ci_clock
    monkeypatch.setattr(cmd_ci, "run_targets", lambda *a, **k: runner_mod.run_targets(
        w.m, w.wd, Options(accel="tcg"), ["a"], w.out, write_report=True, use_live=True))
    monkeypatch.setattr(cmd_ci.common, "load_manifest", lambda args: w.m)
    monkeypatch.setattr(cmd_ci.common, "workdir_of", lambda args: w.wd)
    monkeypatch.setattr(cmd_ci.common, "options_from_args", lambda args: Options(accel="tcg"))
    # The fake manifest has no base to compare branches with.
    monkeypatch.setattr(cmd_ci.common, "warn_stale", lambda *a: None)

    class Args:
        gates_only = no_check = no_sanitizers = main_job = first_verdict = no_attribute = False
        attribute_boots = 12
        out = w.out
        branches = ["a"]
        workdir = None
    assert cmd_ci.run(Args()) == 0
    out = capsys.readouterr().out
    table = out[out.index("where the time went:"):].splitlines()
    assert re.search(r"topic/a\s+build\s+1\s+1620\.0\s+2916\.0", "\n".join(table)), table


# --- the gates' bisect walk -------------------------------------------------------

def test_bisect_walk_says_which_commit_it_builds_and_that_it_still_runs(generated,
                                                                           monkeypatch):
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    monkeypatch.setattr(gatecache, "toolchain", lambda cache: dict(TOOLS))

    def build(root, git_dir, req):
        # 100 s per commit, a kbuild line every 2 s
        for n in range(1, 51):
            clock.now += 2.0
            if req.on_line:
                req.on_line(n, f"lib/x{n}.o")
        return buildmod.BuildResult(name=req.name, ok=True, out=root / "build" / req.name)
    monkeypatch.setattr(buildmod, "build", build)
    tvs, log = _gates(generated, bisect=True, warnings=False)
    commits = [(b.commit, b.subject) for b in tvs["counters"].gates["bisect"].builds]
    assert len(commits) == 2 and tvs["counters"].gates["bisect"].ok
    text = "\n".join(log)
    for i, (sha, subject) in enumerate(commits, 1):
        mine = lines_of(text, "topic/counters:", sha[:12])
        what = f"topic/counters: bisect build {i} of 2 {sha[:12]} ({subject})"
        assert mine[0][1] == f"{what}: started", mine
        assert mine[-1][1] == f"{what}: ok in 1m40s, 50 kbuild steps", mine
        beats = [x for _, x in mine if ": running " in x]
        assert len(beats) == 3 and re.fullmatch(
            re.escape(what) + r": running \d\ds, \d\d kbuild steps \(lib/x\d\d\.o\)", beats[0])
        assert max(gaps([t for t, _ in mine])) <= 30.0


def test_gate_steps_add_up_per_topic(generated, monkeypatch):
    """--bisect --warnings: every build and W=1/sparse pass is a step of its
    topic's row; the rows add up to the run."""
    from ktopic.gates import check, new_warnings
    from ktopic.kernel.steplog import StepLog
    from ktopic.model import manifest
    from ktopic.model.workdir import Workdir
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    monkeypatch.setattr(gatecache, "toolchain", lambda cache: dict(TOOLS))

    def build(root, git_dir, req):
        for n in range(1, 11):
            clock.now += 10.0
            req.on_line(n, f"lib/x{n}.o")
        return buildmod.BuildResult(name=req.name, ok=True, out=root / "build" / req.name)

    def collect(p, wd, at, jobs=0, log=None):
        clock.now += 40.0
        return new_warnings.Collected(at, p.start if at == "start" else p.head, ["lib/x.c"])
    monkeypatch.setattr(buildmod, "build", build)
    monkeypatch.setattr(new_warnings, "collect", collect)
    _gates(generated, bisect=False, warnings=False)          # writes qemu/configs/base.config
    m = manifest.load(generated.manifest)
    said: list[str] = []
    steps = StepLog(say=said.append, clock=clock, cpu=clock.cpu, load=lambda: 1.0, ticker=False)
    tvs = [check.TopicVerdict(t, m.topics[t].branch) for t in ("counters", "names")]
    wd = Workdir(generated.workdir)
    check._run_gates(m, wd, tvs,
                     check.Options(gates=("bisect", "warnings")), said.append, steps)
    rows = steps.totals()
    by = {(r.branch, r.stage): r for r in rows}
    for tv in tvs:
        n = len(tv.gates["bisect"].builds)
        b, w = by[(tv.branch, "bisect builds")], by[(tv.branch, "warnings")]
        assert (b.seconds, b.runs, b.kbuild, w.seconds, w.runs) == (100.0 * n, n, 10 * n, 80.0, 2)
        at = bisectable.plan(m, wd, tv.topic).start[:12]
        start = [x for _, x in lines_of("\n".join(said), f"{tv.branch}: W=1/sparse at the start")]
        assert start == [f"{tv.branch}: W=1/sparse at the start {at}: started",
                         f"{tv.branch}: W=1/sparse at the start {at}: "
                         "0 diagnostic(s) in 1 file(s) in 40s"], said
    assert sum(r.seconds for r in rows[:-1]) == pytest.approx(rows[-1].seconds)
    assert rows[-1].seconds == sum(100.0 * len(tv.gates["bisect"].builds) + 80.0 for tv in tvs)
