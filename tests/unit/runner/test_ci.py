"""ktopic.runner.runner without a kernel: targets from the manifest, keys, same_as,
the result cache and in_base, with build and boot replaced by fakes that
replay recorded consoles."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(Path(__file__).parent))

from ktopic.kernel import boot as bootmod  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.model import targets as T  # noqa: E402
from conftest import variants_table  # noqa: E402
from ktopic.runner import cachekeys  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402
from ktopic.runner.runner import Runner  # noqa: E402
from ktopic.kernel import initramfs, ktap  # noqa: E402
from ktopic.errors import KtopicError  # noqa: E402
from ktopic.model.results import CACHED, FAIL, PASS  # noqa: E402
from ktopic.model.workdir import Workdir  # noqa: E402

from test_ktap import parser  # noqa: E402,F401  (fixture)

ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
           GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent")
WARN = ("[    1.5] ------------[ cut here ]------------\n"
        "[    1.5] WARNING: CPU: 0 PID: 1 at lib/{f}.c:{n} {f}_fn+0x1c/0x40\n"
        "[    1.5] ---[ end trace 0000000000000000 ]---\n")


def fake_kernel(monkeypatch, tmp_path, build, boot, parser):
    """The kernel stages replaced: build and boot by the given fakes, the
    initramfs by a name, the KTAP parser by the fixture's."""
    monkeypatch.setattr(buildmod, "build", build)
    monkeypatch.setattr(initramfs, "build_initramfs", lambda req: initramfs.InitramfsResult(
        tmp_path / "initrd", "0" * 64, []))
    monkeypatch.setattr(bootmod, "boot", boot)
    monkeypatch.setattr(bootmod, "speed_factor", lambda: 1.0)
    monkeypatch.setattr(ktap, "parser_dir", lambda *a: None)
    monkeypatch.setattr(ktap, "load_parser", lambda d: parser)


def console(*extra: str) -> str:
    return ("[    0.0] Linux version 6.1.192 (ktopic@ktopic) #1 SMP\n"
            "[    0.5] smp: Brought up 1 node, 2 CPUs\n" + "".join(extra) +
            "[    1.0] KTAP version 1\n[    1.0] 1..1\n[    1.0]     KTAP version 1\n"
            "[    1.0]     # Subtest: suite_a\n[    1.0]     1..1\n[    1.0]     ok 1 c\n"
            "[    1.0] ok 1 suite_a\nktopic-init: start\nktopic-init: 0 failures\n"
            "ktopic-init: done\n")


def topic(name, **kw):
    d = dict(name=name, branch=f"topic/{name}", depends=[], kunit=[], config=None,
             modules=[], programs=[], cmdline="", tested=False, smp=2, sanitizers=[],
             expect=[], patches=[], to=[], cc=[], upstream=[], superseded=[], dropped=[],
             description="", line=0)
    d.update(kw)
    return SimpleNamespace(**d)


def manifest(tmp_path, topics):
    ts = {t.name: t for t in topics}
    m = SimpleNamespace(root=tmp_path / "repo", topics=ts, order=list(ts),
                        base=SimpleNamespace(version="6.1.192", ref="refs/heads/base"),
                        integration=SimpleNamespace(branch="for-next", topics=list(ts), to=[],
                                                    cc=[], description="", line=0))
    m.closure = lambda n: [d for d in ts if d in ts[n].depends]
    return m


def test_targets_from_manifest(tmp_path):
    q = tmp_path / "qemu"
    m = manifest(tmp_path, [
        topic("locking", kunit=["six"], config=q / "configs/locking.config", modules=["six_mod"]),
        topic("fs", depends=["locking"], config=q / "configs/fs.config", programs=["tmpfile"],
              cmdline="x=1"),
        topic("compiler")])
    ts = T.targets_from_manifest(m, q)
    assert [t.topic for t in ts] == ["base", "locking", "fs", "compiler", "integration"]
    by = {t.topic: t for t in ts}
    base_cfg = q / "configs/base.config"
    assert by["base"].fragments == [base_cfg]
    # A topic is built with its dependencies' fragments before its own.
    assert by["fs"].fragments == [base_cfg, q / "configs/locking.config", q / "configs/fs.config"]
    assert by["integration"].kunit == ["six"] and by["integration"].programs == ["tmpfile"]
    assert by["integration"].modules == ["six_mod"] and by["integration"].cmdline == "x=1"
    kasan = T.targets_from_manifest(m, variants_table(q), "kasan")
    assert all(t.fragments[-1] == q / "configs/kasan.config" for t in kasan)


def test_select(tmp_path):
    ts = T.targets_from_manifest(manifest(tmp_path, [topic("a"), topic("b")]), tmp_path)
    assert [t.topic for t in T.select(ts, [])] == ["base", "a", "b", "integration"]
    assert [t.topic for t in T.select(ts, ["topic/b"])] == ["base", "b"]
    assert [t.topic for t in T.select(ts, ["integration", "a"])] == ["base", "integration", "a"]
    with pytest.raises(KtopicError, match=r"^no topic 'zz' \(topics: a, b\)$"):
        T.select(ts, ["zz"])


def test_keys_follow_inputs(tmp_path):
    q = tmp_path / "qemu"
    (q / "configs").mkdir(parents=True)
    (q / "init").mkdir()
    (q / "init/init.c").write_text("int main(){}\n")
    (q / "configs/base.config").write_text("CONFIG_A=y\n")
    (q / "tests").mkdir()
    (q / "tests/p.c").write_text("int main(){}\n")

    def keys(**kw):
        t = T.Target(T.BranchSpec("topic", "x", "topic/x", programs=["p"], **kw),
                     [q / "configs/base.config"], tree="t" * 40)
        cachekeys.compute_keys(t, q, Options())
        return t.build_key, t.key
    b0, k0 = keys()
    assert keys() == (b0, k0)
    assert keys(cmdline="y=1")[0] == b0 and keys(cmdline="y=1")[1] != k0
    (q / "tests/p.c").write_text("int main(){return 1;}\n")
    assert keys() == (b0, keys()[1]) and keys()[1] != k0
    (q / "configs/base.config").write_text("CONFIG_A=m\n")
    assert keys()[0] != b0


@pytest.fixture
def world(tmp_path, monkeypatch, parser):  # noqa: F811
    """A work repo (base; topic/a with a change; topic/same equal to base), a
    repository checkout, and fake build/initramfs/boot stages."""
    src = tmp_path / "seed"
    src.mkdir()
    run = lambda *a: subprocess.run(["git", *a], cwd=src, env=ENV, check=True,  # noqa: E731
                                    capture_output=True, text=True).stdout.strip()
    run("init", "-q", "-b", "base")
    (src / "f").write_text("1\n")
    run("add", "f")
    run("commit", "-q", "-m", "base")
    run("branch", "topic/same")
    run("checkout", "-q", "-b", "topic/a")
    (src / "f").write_text("2\n")
    run("commit", "-q", "-am", "a")
    run("branch", "for-next")
    root = tmp_path / "work"
    root.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(root / "linux.git")],
                   env=ENV, check=True)
    repo = tmp_path / "repo"
    for d in ("configs", "init", "tests"):
        (repo / "qemu" / d).mkdir(parents=True)
    (repo / "qemu/configs/base.config").write_text("CONFIG_A=y\n")
    (repo / "qemu/init/init.c").write_text("int main(){}\n")
    m = manifest(tmp_path, [topic("a", kunit=["suite_a"]), topic("same")])
    consoles = {}          # commit -> console text
    calls = {"build": [], "boot": []}

    def fake_build(root_, git_dir, req):
        calls["build"].append(req.name)
        out = root_ / "build" / req.name
        out.mkdir(parents=True, exist_ok=True)
        (out / ".config").write_text("CONFIG_A=y\n")
        (out / "ktopic-build.log").write_text("built\n")
        return buildmod.BuildResult(name=req.name, ok=True, out=out, seconds=1.0,
                                    bzimage=out / "bzImage", log=out / "ktopic-build.log",
                                    toolchain={"gcc": "gcc 12"})

    def fake_boot(req):
        commit = req.kernel.parent.name
        calls["boot"].append(commit)
        req.console.write_text(consoles[commit])
        return bootmod.BootResult("done", 1.0, req.console, "qemu-system-x86_64 ...")

    fake_kernel(monkeypatch, tmp_path, fake_build, fake_boot, parser)
    wd = Workdir(root)

    def runner(**opts):
        o = Options(accel="tcg", **opts)
        return Runner(wd, m, tmp_path / "out", o)

    def targets(*names):
        return T.select(T.targets_from_manifest(m, repo / "qemu"), list(names))
    return SimpleNamespace(runner=runner, targets=targets, consoles=consoles, calls=calls,
                           out=tmp_path / "out", root=root, m=m, wd=wd)


def run_all(w, runner, *names):
    return {b.topic: b for b in (runner.run(t) for t in w.targets(*names))}


def test_base_findings_are_in_base_and_same_tree_is_same_as(world):
    w = world
    w.consoles.update({"base": console(WARN.format(f="old", n=1)),
                       "topic_a": console(WARN.format(f="old", n=3), WARN.format(f="new", n=7))})
    res = run_all(w, w.runner())
    base, a, same, integ = res["base"], res["a"], res["same"], res["integration"]
    assert [f.in_base for f in base.findings] == [True]
    # topic/a: the base's warning (other line number) is the base's, the new one is a's.
    assert [(f.message.split(" at ")[1].split()[0], f.in_base) for f in a.findings] == [
        ("lib/old.c:3", True), ("lib/new.c:7", False)]
    assert not a.ok and a.stage("boot").status == FAIL
    assert a.stage("test").status == PASS and [s.name for s in a.suites] == ["suite_a"]
    # topic/same has the base's tree and config: not built or booted again.
    assert same.same_as == "base" and w.calls["build"].count("base") == 1
    assert integ.same_as == "topic/a"
    assert w.calls["boot"] == ["base", "topic_a"]
    assert (w.out / "topic_same" / "console.log").read_text() == w.consoles["base"]


def test_only_base_findings_pass(world):
    w = world
    w.consoles.update({"base": console(WARN.format(f="old", n=1)),
                       "topic_a": console(WARN.format(f="old", n=2))})
    res = run_all(w, w.runner(), "a")
    assert res["a"].ok and res["a"].stage("boot").status == PASS
    assert "base shows the same" in res["a"].stage("boot").summary


def test_result_cache(world):
    w = world
    w.consoles.update({"base": console(), "topic_a": console("[    2.0] Kernel panic - not syncing: x\n")})
    first = run_all(w, w.runner(), "a")
    assert first["a"].stage("boot").status == FAIL
    w.calls["boot"].clear()
    w.calls["build"].clear()
    again = run_all(w, w.runner(), "a")
    assert w.calls == {"build": [], "boot": []}
    assert again["a"].stage("build").status == CACHED
    assert again["a"].stage("boot").status == FAIL          # a cached failure stays one
    assert [f.kind for f in again["a"].findings] == ["panic"]
    assert (w.out / "topic_a" / "console.log").read_text() == w.consoles["topic_a"]
    forced = run_all(w, w.runner(use_cache=False, base_cache=False), "a")
    assert w.calls["boot"] == ["base", "topic_a"]
    assert forced["a"].stage("build").status == PASS


def test_missing_branch(world):
    w = world
    w.consoles["base"] = console()
    subprocess.run(["git", f"--git-dir={w.root / 'linux.git'}", "update-ref", "-d",
                    "refs/heads/topic/a"], check=True)
    res = run_all(w, w.runner(), "a")
    assert res["a"].stage("generate").status == FAIL
    assert "ktopic generate" in res["a"].stage("generate").summary


def test_expected_suite_missing_fails_test_stage(world):
    w = world
    w.consoles.update({"base": console(), "topic_a": console().replace("suite_a", "suite_b")})
    res = run_all(w, w.runner(), "a")
    assert res["a"].stage("boot").status == PASS
    assert res["a"].stage("test").status == FAIL
    assert [f.kind for f in res["a"].findings] == ["missing_suite"]


def test_run_branch_usage():
    p = subprocess.run([str(REPO / "ci" / "run-branch")], capture_output=True, text=True)
    assert p.returncode == 2 and "usage: ci/run-branch BRANCH" in p.stderr
    assert subprocess.run(["sh", "-n", str(REPO / "ci" / "run-branch")]).returncode == 0
