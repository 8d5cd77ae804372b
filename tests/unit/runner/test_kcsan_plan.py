"""KCSAN where it pays (model/sanitizerplan.py), without a kernel: the
main job builds one kernel under KCSAN, the integration branch's, and
nothing more while it is clean; a topic's own run, or a whole run's
--variant, plans as before.  The fixture serves test_kcsan_followup.py
too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO, variants_table  # noqa: E402
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(Path(__file__).parent))

from ktopic.kernel import boot as bootmod  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.model import sanitizerplan  # noqa: E402
from ktopic.model import targets as T  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402
from ktopic.runner import runner as runmod  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402

from test_ci import ENV, console, fake_kernel, manifest, topic  # noqa: E402
from test_ktap import parser  # noqa: E402,F401  (fixture)

def race(a: str, b: str) -> str:
    """A KCSAN report of a data race between functions a and b."""
    lines = ["=" * 66, f"BUG: KCSAN: data-race in {a} / {b}", "",
             "write to 0xffff88800a1b2c30 of 4 bytes by task 97 on cpu 1:",
             f" {a}+0x4d/0x90", " kthread+0x10e/0x130", "",
             "read to 0xffff88800a1b2c30 of 4 bytes by task 96 on cpu 0:",
             f" {b}+0x2b/0x120", " kthread+0x10e/0x130", "",
             "Reported by Kernel Concurrency Sanitizer on:",
             "CPU: 0 PID: 96 Comm: t Not tainted 6.1.192 #1", "=" * 66]
    return "".join(f"[    2.0] {ln}\n" for ln in lines)


@pytest.fixture(scope="module")
def _seed(tmp_path_factory) -> Path:
    """base: kernel/base.c (base_fn); topic/a: lib/a.c (a_race); topic/b:
    lib/b.c (b_fn); topic/c: kernel/c.c; for-next: all three."""
    src = tmp_path_factory.mktemp("kcsan") / "seed"
    src.mkdir()

    def git(*a):
        subprocess.run(["git", *a], cwd=src, env=ENV, check=True, capture_output=True)

    def commit(branch, start, path, text):
        git("checkout", "-q", "-b", branch, start)
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(text)
        git("add", path)
        git("commit", "-q", "-m", path)
    git("init", "-q", "-b", "base")
    (src / "kernel").mkdir()
    (src / "kernel/base.c").write_text("int base_fn(int x)\n{\n\treturn x;\n}\n")
    git("add", "kernel")
    git("commit", "-q", "-m", "base")
    commit("topic/a", "base", "lib/a.c", "void a_race(int *p);\n\nvoid a_race(int *p)\n{\n}\n")
    commit("topic/b", "base", "lib/b.c", "static int\nb_fn(void)\n{\n\treturn 0;\n}\n")
    commit("topic/c", "base", "kernel/c.c", "int c_fn(void)\n{\n\treturn 1;\n}\n")
    git("checkout", "-q", "-b", "for-next", "base")
    git("merge", "-q", "--no-edit", "topic/a", "topic/b", "topic/c")
    bare = src.parent / "linux.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], env=ENV, check=True)
    return bare


@pytest.fixture
def world(tmp_path, monkeypatch, parser, _seed):  # noqa: F811
    """Topics a and b ask for KCSAN, c does not.  races: build directory
    -> the KCSAN report its boot prints; builds and seeds are recorded."""
    root = tmp_path / "work"
    root.mkdir()
    shutil.copytree(_seed, root / "linux.git", symlinks=True)
    repo = tmp_path / "repo"
    for d in ("configs", "init", "tests"):
        (repo / "qemu" / d).mkdir(parents=True)
    (repo / "qemu/configs/base.config").write_text("CONFIG_A=y\n")
    (repo / "qemu/configs/kcsan.config").write_text("CONFIG_KCSAN=y\n")
    variants_table(repo / "qemu")
    (repo / "qemu/init/init.c").write_text("int main(){}\n")
    m = manifest(tmp_path, [topic("a", sanitizers=["kcsan"]), topic("b", sanitizers=["kcsan"]),
                            topic("c")])
    built: list[str] = []
    seeded: dict[str, str] = {}
    races: dict[str, str] = {}

    def fake_build(root_, git_dir, req):
        built.append(req.name)
        seeded.setdefault(req.name, req.seed.name if req.seed else "")
        out = root_ / "build" / req.name
        (out / "arch/x86/boot").mkdir(parents=True, exist_ok=True)
        (out / "arch/x86/boot/bzImage").write_text(req.commit)
        (out / "ktopic-build.log").write_text("built\n")
        return buildmod.BuildResult(name=req.name, ok=True, out=out, seconds=1.0,
                                    bzimage=out / "arch/x86/boot/bzImage",
                                    log=out / "ktopic-build.log", toolchain={"gcc": "gcc 12"})

    def fake_boot(req):
        req.console.write_text(console(races.get(req.kernel.parents[3].name, "")))
        return bootmod.BootResult("done", 1.0, req.console, "qemu-system-x86_64 ...")

    fake_kernel(monkeypatch, tmp_path, fake_build, fake_boot, parser)
    wd = Workdir(root)
    out = tmp_path / "out"

    def run(names=(), live=False, **kw):
        opts = Options(accel="tcg", sanitizers=True, attribute=0, **kw)
        return runmod.run_targets(m, wd, opts, list(names), out, write_report=True,
                                  use_live=live)
    return SimpleNamespace(run=run, built=built, seeded=seeded, races=races, m=m,
                           qemu=repo / "qemu", out=out)


def planned(w, names=(), variant=""):
    every = T.targets_from_manifest(w.m, w.qemu, variant, sanitizers=True)
    return sanitizerplan.plan(T.select(every, list(names)), every)


def rows(report):
    return {b.branch: b for b in report.branches}


# --- the plan -------------------------------------------------------------------

def test_the_main_job_plans_one_kcsan_build_the_integration_branchs(world):
    p = planned(world)
    assert [t.branch for t in p.targets] == [
        "base", "topic/a", "topic/b", "topic/c", "for-next", "for-next+kcsan"]
    assert p.lines() == ["kcsan: for-next+kcsan covers a, b"]
    # Several branches with the integration branch among them: the same.
    p = planned(world, ["a", "for-next"])
    assert [t.branch for t in p.targets] == ["base", "topic/a", "for-next", "for-next+kcsan"]
    assert p.lines() == ["kcsan: for-next+kcsan covers a, b"]


def test_a_topics_own_run_plans_its_variant_and_the_base_as_before(world):
    p = planned(world, ["a"])
    assert [t.branch for t in p.targets] == ["base", "base+kcsan", "topic/a", "topic/a+kcsan"]
    assert p.lines() == [] and not p.covering
    world.run(["a"])
    assert world.built == ["base", "base-kcsan", "topic_a", "topic_a-kcsan"]


def test_a_whole_run_variant_plans_every_branch_under_it_and_follows_nothing(world, capsys):
    p = planned(world, variant="kcsan")
    assert [t.branch for t in p.targets] == ["base", "topic/a", "topic/b", "topic/c",
                                             "for-next"]
    assert all(t.variant == "kcsan" and not t.beside for t in p.targets) and not p.lines()
    world.races["for-next-kcsan"] = race("a_race", "a_race")
    report = world.run(variant="kcsan", live=True)
    assert world.built == ["base-kcsan", "topic_a-kcsan", "topic_b-kcsan", "topic_c-kcsan",
                           "for-next-kcsan"]
    assert not rows(report)["for-next"].ok and not rows(report)["for-next"].followups
    assert "report in" not in capsys.readouterr().out


@pytest.mark.parametrize("tiers", [True, False])
def test_nothing_follows_a_green_kcsan_build(world, capsys, tiers):
    report = world.run(live=True, tiers=tiers)
    assert world.built == ["base", "topic_a", "topic_b", "topic_c", "for-next",
                           "for-next-kcsan"]
    assert report.ok and not any(b.followups or b.follows for b in report.branches)
    out = capsys.readouterr().out
    assert "kcsan: for-next+kcsan covers a, b" in out and "report in" not in out
