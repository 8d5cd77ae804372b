"""The main job's order and the build directories' seeds, without a
kernel: `ktopic ci --main-job` (--bisect --warnings --mutate) works on
each tree once, back to back (the base, each topic's gates, build,
mutants and variants, the integration branch last), a new build directory
starts from its nearest finished relative (kernel/seeds.py), and one
branch's run (a pipeline job) gives the verdict the main job gives it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(Path(__file__).parent))

from ktopic.commands import cmd_ci  # noqa: E402
from ktopic.errors import KtopicError  # noqa: E402
from ktopic.gates import check, registry  # noqa: E402
from ktopic.kernel import boot as bootmod  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.kernel import seeds  # noqa: E402
from ktopic.model import results as R  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402
from ktopic.runner import runner as runmod  # noqa: E402
from ktopic.report import report as rep  # noqa: E402
from ktopic.runner import mutate as mut  # noqa: E402
from ktopic.runner.options import MAIN_JOB_GATES, Options  # noqa: E402

from conftest import variants_table  # noqa: E402
from test_ci import ENV, console, fake_kernel, manifest, topic  # noqa: E402
from test_ktap import parser  # noqa: E402,F401  (fixture)

MUTANT = """Breaks: f is 1 again
Caught-by: suite_a.c

diff --git a/f b/f
--- a/f
+++ b/f
@@ -1 +1 @@
-1
+0
"""


@pytest.fixture(scope="module")
def _seed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The job's branches as a bare repository, made once and copied by
    every test: its path and its heads (commit -> branch)."""
    src = tmp_path_factory.mktemp("mainjob") / "seed"
    src.mkdir()

    def git(*a):
        return subprocess.run(["git", *a], cwd=src, env=ENV, check=True, capture_output=True,
                              text=True).stdout.strip()

    def commit(**files):
        for k, v in files.items():
            (src / k).write_text(v)
        git("add", *files)
        git("commit", "-q", "-m", " ".join(files))
    git("init", "-q", "-b", "base")
    commit(f="0\n", g="0\n", h="0\n")
    git("checkout", "-q", "-b", "topic/a")
    commit(f="1\n")
    git("checkout", "-q", "-b", "topic/b")
    commit(g="1\n")
    git("checkout", "-q", "-b", "for-next")
    commit(h="1\n")
    git("checkout", "-q", "-b", "topic/c", "base")
    commit(h="1\n")
    bare = src.parent / "linux.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], env=ENV, check=True)
    return bare, {git("rev-parse", b): b for b in ("base", "topic/a", "topic/b", "topic/c",
                                                    "for-next")}


@pytest.fixture
def job(tmp_path, monkeypatch, parser, _seed):  # noqa: F811
    """base (files f g h: 0); topic/a: f=1; topic/b on a: g=1 (KCSAN
    variant); topic/c on base: h=1; for-next: all three.  Build, gates and
    boot are fakes that record what ran, in order."""
    bare, heads = _seed
    root = tmp_path / "work"
    root.mkdir()
    shutil.copytree(bare, root / "linux.git", symlinks=True)
    repo = tmp_path / "repo"
    for d in ("configs", "init", "tests", "mutants/a"):
        (repo / "qemu" / d).mkdir(parents=True)
    (repo / "qemu/configs/base.config").write_text("CONFIG_A=y\n")
    (repo / "qemu/configs/kcsan.config").write_text("CONFIG_KCSAN=y\n")
    variants_table(repo / "qemu")
    (repo / "qemu/init/init.c").write_text("int main(){}\n")
    (repo / "qemu/mutants/a/0001-f-again.patch").write_text(MUTANT)
    m = manifest(tmp_path, [topic("a", kunit=["suite_a"]),
                            topic("b", depends=["a"], sanitizers=["kcsan"]), topic("c")])
    events: list[tuple[str, str]] = []
    seeded: dict[str, str] = {}
    gate_fails: set[str] = set()

    def fake_build(root_, git_dir, req):
        what = heads.get(req.commit, "mutant")
        events.append(("build", req.name) if what != "mutant" else ("mutant", req.name))
        seeded.setdefault(req.name, req.seed.name if req.seed else "")
        out = root_ / "build" / req.name
        (out / "arch/x86/boot").mkdir(parents=True, exist_ok=True)
        (out / "arch/x86/boot/bzImage").write_text(req.commit)
        (out / ".config").write_text("CONFIG_A=y\n")
        (out / "ktopic-build.log").write_text("built\n")
        return buildmod.BuildResult(name=req.name, ok=True, out=out, seconds=1.0,
                                    bzimage=out / "arch/x86/boot/bzImage",
                                    log=out / "ktopic-build.log", toolchain={"gcc": "gcc 12"})

    def fake_boot(req):
        events.append(("boot", req.kernel.parents[3].name))
        # A mutant's kernel (its commit is no branch's head) fails suite_a.c: caught.
        text = console()
        if req.kernel.read_text() not in heads:
            text = text.replace("    ok 1 c", "    not ok 1 c").replace("] ok 1 suite_a",
                                                                     "] not ok 1 suite_a")
        req.console.write_text(text)
        return bootmod.BootResult("done", 1.0, req.console, "qemu-system-x86_64 ...")

    def fake_check(m_, wd_, name, out_dir=None, gates=(), jobs=0, steps=None):
        if gates:
            events.append(("gates", name))
        bad = name in gate_fails and bool(gates)
        st = R.StageResult("check", R.FAIL if bad else R.PASS, 0.0,
                           "bisect: abc does not build" if bad else "ok")
        return st, {"findings": [R.Finding("bisect", "abc does not build")] if bad else []}

    fake_kernel(monkeypatch, tmp_path, fake_build, fake_boot, parser)
    monkeypatch.setattr(check, "check_branch", fake_check)
    wd = Workdir(root)

    def run(names=(), **kw):
        opts = Options(accel="tcg", sanitizers=True, check=True)
        for k, v in kw.items():      # set one by one: a field an older Options lacks is ignored
            if k in registry.GATES:
                opts.gates += (k,) if v else ()
            else:
                setattr(opts, k, v)
        return runmod.run_targets(m, wd, opts, list(names), tmp_path / "out",
                                  write_report=False, use_live=False)
    return SimpleNamespace(run=run, events=events, seeded=seeded, gate_fails=gate_fails,
                           m=m, wd=wd, root=root)


def test_each_tree_is_worked_on_once_back_to_back(job):
    """Base first; per topic its gates, its build and boot, its mutants;
    the integration branch last, and its KCSAN variant, which covers b's."""
    report = job.run(bisect=True, warnings=True, mutate=True)
    builds = [e for e in job.events if e[0] != "boot"]
    assert builds == [
        ("build", "base"),
        ("gates", "a"), ("build", "topic_a"), ("mutant", "topic_a"),
        ("gates", "b"), ("build", "topic_b"),
        ("gates", "c"), ("build", "topic_c"),
        ("build", "for-next"), ("build", "for-next-kcsan")], builds
    # Each boot right after its own build.
    boots = [i for i, e in enumerate(job.events) if e == ("boot", "topic_a")]
    assert job.events[boots[0] - 1] == ("build", "topic_a")
    # The report keeps the manifest's order, the mutant is in it.
    assert [b.branch for b in report.branches] == [
        "base", "topic/a", "topic/b", "topic/c", "for-next", "for-next+kcsan"]
    assert [(x.topic, x.name) for x in report.mutants] == [("a", "0001-f-again")]
    a = report.branches[1]
    assert [s.stage for s in a.stages][:3] == ["generate", "check", "build"]


def test_a_failing_gate_keeps_its_topic_from_booting(job):
    job.gate_fails.add("a")
    report = job.run(bisect=True, warnings=True, mutate=True)
    assert ("build", "topic_a") not in job.events and ("boot", "topic_a") not in job.events
    assert not any(e[0] == "mutant" for e in job.events)
    a = next(b for b in report.branches if b.topic == "a")
    assert a.stage("check").status == R.FAIL and a.stage("boot").status == R.SKIP
    assert [f.kind for f in a.findings] == ["bisect"]
    assert not report.ok
    # The other topics go on.
    assert ("boot", "topic_b") in job.events and ("boot", "for-next") in job.events


def test_new_build_directories_start_from_the_nearest_finished_build(job):
    job.run()
    assert job.seeded["topic_a"] == "base"
    assert job.seeded["topic_b"] == "topic_a"              # its dependency's head build
    assert job.seeded["topic_c"] == "base"                 # a is no dependency of c
    assert job.seeded["for-next"] == "topic_b"             # 1 file differs (h), c: 2
    # Same variant only: none is built under it, so it starts empty.
    assert job.seeded["for-next-kcsan"] == "base-kcsan"


def test_seed_for(job):
    m, wd = job.m, job.wd

    def built(*names):
        for n in names:
            (wd.build_dir(n) / "arch/x86/boot").mkdir(parents=True, exist_ok=True)
            (wd.build_dir(n) / "arch/x86/boot/bzImage").write_text("k")
    assert seeds.seed_for(m, wd, "base") is None
    assert seeds.seed_for(m, wd, "b") == wd.build_dir("base")       # nothing built yet
    built("base", "topic_c")
    assert seeds.seed_for(m, wd, "b") == wd.build_dir("base")
    built("topic_a")
    assert seeds.seed_for(m, wd, "b") == wd.build_dir("topic_a")
    # a and c: 2 files each differ from for-next; on a tie the later topic.
    assert seeds.seed_for(m, wd, "integration") == wd.build_dir("topic_c")
    built("topic_b")
    assert seeds.seed_for(m, wd, "integration") == wd.build_dir("topic_b")
    assert seeds.seed_for(m, wd, "b", "kcsan") == wd.build_dir("base-kcsan")
    built("topic_a-kcsan")
    assert seeds.seed_for(m, wd, "b", "kcsan") == wd.build_dir("topic_a-kcsan")
    # A build directory that never finished is no seed.
    (wd.build_dir("topic_b") / "arch/x86/boot/bzImage").unlink()
    assert seeds.seed_for(m, wd, "integration") == wd.build_dir("topic_c")


@pytest.mark.parametrize("flags,msg", [
    (dict(gates_only=True, bisect=True), "--bisect builds kernels: not with --gates-only"),
    (dict(no_check=True, warnings=True), "--warnings is a gate of the check stage"),
])
def test_ci_gate_options_that_do_not_go_together(flags, msg):
    args = SimpleNamespace(gates_only=False, no_check=False, bisect=False, warnings=False,
                           mutate=False, main_job=False, first_verdict=False)
    for k, v in flags.items():
        setattr(args, k, v)
    with pytest.raises(KtopicError, match=msg):
        cmd_ci.run(args)


def test_a_topic_that_rewrites_widely_included_files_goes_last(job):
    """Among topics whose dependencies are done, the one whose files fewer
    of the base's objects depend on runs first: every build directory made
    after a switch over a file recompiles what depends on it."""
    base = job.wd.build_dir("base")
    (base / "lib").mkdir(parents=True)
    src = job.wd.src
    for i in range(5):   # five objects include f (a's file), one h (c's)
        deps = [f"{src}/f"] + ([f"{src}/h"] if i == 0 else [])
        (base / "lib" / f".o{i}.o.cmd").write_text(
            f"cmd_lib/o{i}.o := gcc\ndeps_lib/o{i}.o := \\\n" + "".join(f"  {d} \\\n"
                                                                     for d in deps))
    assert seeds.switch_costs(job.m, job.wd, ["a", "b", "c"]) == {}   # base never built
    job.run()
    assert seeds.switch_costs(job.m, job.wd, ["a", "b", "c"]) == {"a": 5, "b": 5, "c": 1}
    assert [e[1] for e in job.events if e[0] == "build"] == [
        "base", "topic_c", "topic_a", "topic_b", "for-next", "for-next-kcsan"]


def test_main_order_keeps_dependencies_first(job):
    ts = runmod.select(runmod.targets_from_manifest(job.m, job.m.root / "qemu",
                                                    sanitizers=True), [])
    order = runmod.main_order(ts, {"a": 9, "b": 0, "c": 5})
    assert [t.branch for t in order] == [
        "base", "base+kcsan", "topic/c", "topic/a", "topic/b", "topic/b+kcsan", "for-next",
        "for-next+kcsan"]


# ------------------------------------------- one branch's job, the main job's gates

def ci_args(*argv):
    """`ktopic ci ARGV` as the command line parses it."""
    p = argparse.ArgumentParser()
    cmd_ci.register(p.add_subparsers(dest="command"))
    return p.parse_args(["ci", *argv])


@pytest.mark.parametrize("argv,want", [
    ([], set()),
    (["--mutate"], {"mutate"}),
    (["--main-job"], {"bisect", "warnings", "coccicheck", "mutate"}),
    (["--main-job", "--no-sanitizers", "--kasan"], {"bisect", "warnings", "coccicheck", "mutate"}),
    # The pipeline's cheap variant (KTOPIC_CI_OPTIONS=--gates-only): nothing that builds.
    (["--main-job", "--gates-only"], set()),
    # A gate that builds nothing may be asked for with it.
    (["--main-job", "--gates-only", "--coccicheck"], {"coccicheck"}),
    # No check stage: no topic gate in it; the mutants still run.
    (["--main-job", "--no-check"], {"mutate"}),
])
def test_main_job_option_is_the_main_jobs_gates(argv, want):
    assert set(MAIN_JOB_GATES) == {"bisect", "warnings", "coccicheck", "mutate"}
    chosen = cmd_ci.gates_of(ci_args(*argv))
    assert {g for g, on in chosen.items() if on} == want


def test_main_job_leaves_an_explicit_gate_that_cannot_run_an_error():
    with pytest.raises(KtopicError, match="--bisect builds kernels: not with --gates-only"):
        cmd_ci.run(ci_args("--main-job", "--gates-only", "--bisect"))


def test_one_branchs_run_gives_the_main_jobs_verdict(job):
    """A pipeline job runs `ktopic ci BRANCH --main-job` (ci/run-branch):
    for its branch it does what the main job does, the same gates, builds,
    boots, mutants and variants, to the same verdict, a failing gate
    included.  --mutate runs nothing for a topic without mutants (b, c)
    nor for the integration branch; the variants come from the manifest.
    A topic's own variant (b's KCSAN) runs in its own job only, where no
    for-next+kcsan covers it."""
    gates = {g: True for g in MAIN_JOB_GATES}
    job.gate_fails.add("c")
    full = job.run(use_cache=False, base_cache=False, **gates)
    main_events = list(job.events)
    dirs = {"a": "topic_a", "b": "topic_b", "c": "topic_c", "integration": "for-next"}

    def own(events, name):
        return [e for e in events
                if e[1] in (name, dirs[name]) or e[1].startswith(dirs[name] + "-")]

    def verdict(report, name):
        return ([(b.branch, b.ok, [(s.stage, s.status) for s in b.stages])
                 for b in report.branches if b.topic == name],
                [(x.name, x.status) for x in report.mutants if x.topic == name])

    assert verdict(full, "a")[1] == [("0001-f-again", "caught")]
    for name in dirs:
        job.events.clear()
        one = job.run([name], use_cache=False, base_cache=False, **gates)
        mine = [e for e in own(job.events, name) if name == "integration" or "kcsan" not in e[1]]
        assert mine == own(main_events, name), name
        got = verdict(one, name)
        assert ([r for r in got[0] if name == "integration" or "+kcsan" not in r[0]], got[1]) \
            == verdict(full, name), name
        if name == "b":
            assert ("build", "topic_b-kcsan") in own(job.events, name)
        assert one.ok == (name != "c")
    assert [e for e in own(main_events, "a") if e[0] != "boot"] == [
        ("gates", "a"), ("build", "topic_a"), ("mutant", "topic_a")]
    assert [e for e in own(main_events, "b") if e[0] != "boot"] == [
        ("gates", "b"), ("build", "topic_b")]
    assert own(main_events, "c") == [("gates", "c")]
    assert [e for e in own(main_events, "integration") if e[0] != "boot"] == [
        ("build", "for-next"), ("build", "for-next-kcsan")]
    # What a job ran before: `ktopic ci BRANCH`, neither gates nor mutants.
    job.events.clear()
    job.run(["a"], use_cache=False, base_cache=False)
    assert own(job.events, "a") != own(main_events, "a")


def test_a_topics_mutants_end_with_their_verdict_line(job, capsys):
    """A log names each topic's mutation verdict as it names a build's."""
    opts = Options(accel="tcg", check=True, mutate=True)
    runmod.run_targets(job.m, job.wd, opts, ["a"], job.root / "out-live",
                       write_report=False, use_live=True)
    assert "topic/a: mutants pass (1/1 caught)" in capsys.readouterr().out


def test_a_mutation_verdict_names_the_survivor():
    def res(name, status):
        return R.MutantResult(topic="t", name=name, breaks="", caught_by="", status=status)
    got = mut.verdict([res("0001-a", R.CAUGHT), res("0002-b", R.SURVIVED)])
    assert got == (R.FAIL, "1/2 caught; survived: 0002-b")


# --- the main job in two tiers (runner/tiers.py) ---------------------------------

MAIN = {g: True for g in MAIN_JOB_GATES}


def test_tier_one_gives_every_branch_a_verdict_before_any_deep_gate(job):
    """Every plain build and boot first (the base first, the integration
    branch last); then per topic its build gates and mutants; then the
    sanitizer variant, the integration branch's alone."""
    report = job.run(tiers=True, **MAIN)
    builds = [e for e in job.events if e[0] != "boot"]
    assert builds == [
        ("build", "base"), ("build", "topic_a"), ("build", "topic_b"), ("build", "topic_c"),
        ("build", "for-next"),
        ("gates", "a"), ("mutant", "topic_a"), ("gates", "b"), ("gates", "c"),
        ("build", "for-next-kcsan")], builds
    assert report.ok and not any(b.pending for b in report.branches)
    assert [(x.name, x.status) for x in report.mutants] == [("0001-f-again", R.CAUGHT)]
    a = next(b for b in report.branches if b.topic == "a")
    assert a.stage("check").status == R.PASS


def test_the_first_verdict_stops_with_the_rest_pending(job, capsys):
    opts = Options(accel="tcg", sanitizers=True, check=True, tiers=True, first_verdict=True,
                   mutate=True, gates=tuple(g for g in MAIN if g in registry.GATES))
    out = job.root / "out-first"
    report = runmod.run_targets(job.m, job.wd, opts, [], out, write_report=True,
                                use_live=True)
    assert not any(e[0] in ("gates", "mutant") or e[1].endswith("-kcsan") for e in job.events)
    assert "first verdict: 5/5 branches pass" in capsys.readouterr().out
    saved = R.Report.from_json((out / "report.json").read_text())
    rows = {b.branch: b for b in saved.branches}
    assert rows["for-next+kcsan"].pending and rows["topic/a"].pending
    assert rows["topic/a"].stage("check").status == R.PENDING
    assert rows["base"].ok and rows["for-next"].ok
    assert [(x.name, x.status) for x in saved.mutants] == [("0001-f-again", R.PENDING)]
    html = (out / "index.html").read_text()
    assert 'class="st pending"' in html and "pending" in rep.mutation_lines(saved)[0]
    assert all(b.verdict_ok for b in report.branches) and not report.ok
    steps = json.loads((out / "steps.json").read_text())
    marks = [s for s in steps if s["stage"] == "mark"]
    assert [m["what"] for m in marks] == ["first verdict"]     # the bench's tier-1 line
    assert steps.index(marks[0]) > 0 and steps[0]["stage"] == "build"


def test_a_gate_failing_in_tier_two_fails_a_branch_that_booted(job):
    """The first verdict came before the gate: the topic was booted, and
    its final result is a failure with the gate's finding; its mutants
    do not run, as without tiers."""
    job.gate_fails.add("a")
    report = job.run(tiers=True, **MAIN)
    assert ("boot", "topic_a") in job.events and ("gates", "a") in job.events
    assert not any(e[0] == "mutant" for e in job.events)
    a = next(b for b in report.branches if b.topic == "a")
    assert a.stage("check").status == R.FAIL and a.stage("boot").status == R.PASS
    assert [f.kind for f in a.findings] == ["bisect"] and not report.ok
    assert not [x for x in report.mutants if x.topic == "a"]


def test_main_job_option_runs_in_tiers_and_first_verdict_needs_it(job):
    with pytest.raises(KtopicError, match="--first-verdict is the first tier of --main-job"):
        cmd_ci.run(ci_args("--first-verdict"))


def test_build_only_builds_each_tree_and_config_once(job):
    """`ktopic build`'s entry point: a target with the tree and config of one
    built before shares its build and says so; a missing branch is named,
    not built."""
    r = runmod.Runner(job.wd, job.m, job.root / "out-build", Options(accel="tcg"))
    ts = {t.branch: t for t in runmod.targets_from_manifest(job.m, job.m.root / "qemu")}
    br, res = r.build_only(ts["topic/a"])
    assert res.ok and br.stage("build").status == R.PASS and br.head
    again = dataclasses.replace(ts["topic/a"], branch="topic/a-again")
    br2, res2 = r.build_only(again)
    assert res2.ok and br2.stage("build").summary == "same tree and config as topic/a"
    assert [e for e in job.events if e[0] == "build"] == [("build", "topic_a")]
    subprocess.run(["git", f"--git-dir={job.root / 'linux.git'}", "update-ref", "-d",
                    "refs/heads/topic/c"], check=True)
    br3, res3 = r.build_only(ts["topic/c"])
    assert res3 is None and br3.stage("generate").status == R.FAIL
    assert "no branch topic/c" in br3.stage("generate").summary


def test_build_command_goes_through_the_runners_entry_point(job, monkeypatch, capsys):
    from ktopic.commands import cmd_build, common
    monkeypatch.setattr(common, "load_manifest", lambda args: job.m)
    monkeypatch.setattr(common, "workdir_of", lambda args: job.wd)
    monkeypatch.setattr(common, "variant_of", lambda args: "")
    args = SimpleNamespace(all=False, branches=["a", "c"], jobs=1)
    assert cmd_build.run_build(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split(":")[0] for ln in out] == ["topic/a", "topic/c"]
    assert all(": ok: " in ln for ln in out), out
    assert [e for e in job.events if e[0] == "build"] == [("build", "topic_a"),
                                                            ("build", "topic_c")]
