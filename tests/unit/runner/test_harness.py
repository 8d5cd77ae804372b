"""The concurrency harness without a kernel: per-topic smp, the KCSAN
variant and expected reports (the mutation gate: test_mutate.py)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))
DATA = REPO / "tests" / "data" / "consoles"

from ktopic.errors import Failure, KtopicError  # noqa: E402
from ktopic.kernel import console_scan, initramfs  # noqa: E402
from ktopic.model import manifest  # noqa: E402
from ktopic.model import results as R  # noqa: E402
from ktopic.model import targets as T  # noqa: E402
from ktopic.model import variants  # noqa: E402
from conftest import variants_table  # noqa: E402
from ktopic.runner import cachekeys  # noqa: E402
from ktopic.runner import expect as X  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402
from ktopic.runner.runner import Runner  # noqa: E402

ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t",
           GIT_COMMITTER_EMAIL="t@e", GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent")


# ------------------------------------------------------------------ the manifest

def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def project(tmp_path, edit=None) -> Path:
    """A copy of this repository's manifest, patches and qemu/ (edited)."""
    root = tmp_path / "proj"
    root.mkdir()
    shutil.copytree(REPO / "qemu", root / "qemu")
    (root / "patches").symlink_to(REPO / "patches")
    text = (REPO / "branches.yaml").read_text()
    if edit:
        text = edit(text)
    (root / "branches.yaml").write_text(text)
    return root


@pytest.fixture(autouse=True)
def _own_workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("KTOPIC_WORKDIR", str(tmp_path / "wd"))


def test_smp_and_sanitizers_of_the_real_manifest():
    m = manifest.load(REPO / "branches.yaml")
    assert m.topics["locking"].smp == 4 and m.topics["closures"].smp == 4
    assert m.topics["fs"].smp == 2 and m.topics["compiler"].smp == 2   # the default
    assert {n for n, t in m.topics.items() if "kcsan" in t.sanitizers} == \
        {"locking", "closures", "mm"}


def _add_to_fs(extra: str):
    return lambda text: text.replace("    programs: [fs_tmpfile]\n",
                                     "    programs: [fs_tmpfile]\n" + extra, 1)


EXPECT_OK = ("    expect:\n      - name: read-then-write\n        module: fs_block_exports\n"
             "        args: \"case=read_write mode=2\"\n        report: lockdep\n"
             "        match: \"possible recursive locking detected\"\n")


def test_expect_entries_load(tmp_path):
    m = manifest.load(project(tmp_path, _add_to_fs(EXPECT_OK)) / "branches.yaml")
    (e,) = m.topics["fs"].expect
    assert (e.name, e.module, e.args, e.report) == ("read-then-write", "fs_block_exports",
                                                    "case=read_write mode=2", "lockdep")
    assert e.line > 0


@pytest.mark.parametrize("extra,line,message", [
    ("    smp: 0\n", "    smp: 0", "smp: 0 is less than the minimum of 1"),
    ("    smp: 16\n", "    smp: 16", "smp: 16 is greater than the maximum of 8"),
    ("    sanitizers: [kasan2]\n", "    sanitizers: [kasan2]", "sanitizers.0"),
    (EXPECT_OK.replace("lockdep\n", "lockdepp\n"), "        report: lockdepp", "report"),
    (EXPECT_OK.replace("fs_block_exports", "no_such_module"), "        module: no_such",
     "expect module 'no_such_module' not found"),
    (EXPECT_OK.replace('"possible recursive locking detected"', '"(unclosed"'),
     "        match: \"(unclosed\"", "expect match is not a regular expression"),
    (EXPECT_OK + EXPECT_OK.replace("    expect:\n", ""), "      - name: read-then-write",
     "expect name 'read-then-write' is used twice"),
    (EXPECT_OK.replace("        report: lockdep\n", ""), "      - name: read-then-write",
     "'report' is a required property"),
])
def test_bad_harness_keys_name_their_line(tmp_path, extra, line, message):
    root = project(tmp_path, _add_to_fs(extra))
    text = (root / "branches.yaml").read_text().splitlines()
    with pytest.raises(KtopicError) as ei:
        manifest.load(root / "branches.yaml")
    e = ei.value
    assert message in e.message, e.message
    assert e.file == "branches.yaml"
    # The line named is the offending entry's (or for a duplicate, the second one's).
    assert e.line is not None and text[e.line - 1].startswith(line.split(":")[0]), \
        (e.line, text[e.line - 1])
    if "twice" in message:
        assert text.index(text[e.line - 1]) < e.line - 1      # the second entry


# ------------------------------------------------------------------ targets

from test_ci import manifest as fake_manifest, topic  # noqa: E402  (the same fakes)


def scan(console: Path, allow=None, expect_cpus=None) -> list[R.Finding]:
    return console_scan.scan_text(console_scan.read(console), allow, expect_cpus)


def test_integration_takes_the_largest_smp(tmp_path):
    m = fake_manifest(tmp_path, [topic("a", smp=4), topic("b"), topic("c", smp=3)])
    ts = {t.branch: t for t in T.targets_from_manifest(m, tmp_path)}
    assert ts["base"].smp == 2 and ts["topic/a"].smp == 4 and ts["topic/b"].smp == 2
    assert ts["for-next"].smp == 4


def test_smp_is_part_of_the_result_key_and_cli_overrides(tmp_path):
    (tmp_path / "init").mkdir()
    t2 = T.Target(T.BranchSpec("topic", "a", "topic/a", smp=2), [], tree="t")
    t4 = T.Target(T.BranchSpec("topic", "a", "topic/a", smp=4), [], tree="t")
    cachekeys.compute_keys(t2, tmp_path, Options())
    cachekeys.compute_keys(t4, tmp_path, Options())
    assert t2.build_key == t4.build_key and t2.key != t4.key
    over = T.Target(T.BranchSpec("topic", "a", "topic/a", smp=2), [], tree="t")
    cachekeys.compute_keys(over, tmp_path, Options(smp=4))
    assert over.key == t4.key
    r = SimpleNamespace(opts=Options())
    assert Runner.smp(r, t4) == 4
    r.opts.smp = 3
    assert Runner.smp(r, t4) == 3


def test_sanitizer_variants(tmp_path):
    e = SimpleNamespace(name="e", module="mod", args="", report="lockdep", match="x")
    m = fake_manifest(tmp_path, [topic("a", sanitizers=["kcsan"], expect=[e]), topic("b")])
    plain = T.targets_from_manifest(m, tmp_path)
    assert [t.branch for t in plain] == ["base", "topic/a", "topic/b", "for-next"]
    ts = T.targets_from_manifest(m, variants_table(tmp_path), sanitizers=True)
    assert [t.branch for t in ts] == ["base", "topic/a", "topic/b", "for-next",
                                      "base+kcsan", "topic/a+kcsan", "for-next+kcsan"]
    v = {t.branch: t for t in ts}
    assert v["topic/a+kcsan"].ref == "refs/heads/topic/a"
    assert v["base+kcsan"].ref == "refs/heads/base"
    assert v["topic/a+kcsan"].fragments[-1] == tmp_path / "configs" / "kcsan.config"
    assert v["topic/a+kcsan"].variant == "kcsan" and v["topic/a"].variant == ""
    # Expectations are boots of the plain kernel only.
    assert v["topic/a"].expect == [e] and v["topic/a+kcsan"].expect == []
    assert Runner.build_name(v["topic/a+kcsan"]) == "topic_a-kcsan"
    assert Runner.build_name(v["base+kcsan"]) == "base-kcsan"
    assert Runner.build_name(v["topic/a"]) == "topic_a"
    # Selecting a topic keeps the base of each variant it runs, and only those.
    assert [t.branch for t in T.select(ts, ["b"])] == ["base", "topic/b"]
    assert [t.branch for t in T.select(ts, ["a"])] == ["base", "base+kcsan", "topic/a",
                                                       "topic/a+kcsan"]
    # The variant's result key differs from the plain one's.
    (tmp_path / "init").mkdir()
    for name in ("base", "kcsan"):
        write(tmp_path / "configs" / f"{name}.config", "CONFIG_X=y\n")
    write(tmp_path / "modules" / "mod" / "mod.c", "")
    for t in (v["topic/a"], v["topic/a+kcsan"]):
        t.tree = "x"
        cachekeys.compute_keys(t, tmp_path, Options())
    assert v["topic/a"].key != v["topic/a+kcsan"].key


def test_a_branch_is_selected_by_any_of_its_names(tmp_path):
    """The integration branch's name runs what "integration" runs (its
    sanitizer variants too), a topic's branch what the topic runs."""
    m = fake_manifest(tmp_path, [topic("a", sanitizers=["kcsan"]), topic("b")])
    ts = T.targets_from_manifest(m, variants_table(tmp_path), sanitizers=True)

    def sel(*names):
        return [t.branch for t in T.select(ts, list(names))]
    assert sel("for-next") == sel("integration") == \
        ["base", "base+kcsan", "for-next", "for-next+kcsan"]
    assert sel("topic/a") == sel("a") == ["base", "base+kcsan", "topic/a", "topic/a+kcsan"]
    assert sel("base") == ["base", "base+kcsan"]
    with pytest.raises(KtopicError, match=r"^no topic 'topic/a\+kcsan' \(topics: a, b\)$"):
        sel("topic/a+kcsan")


def test_whole_run_kcsan(tmp_path):
    m = fake_manifest(tmp_path, [topic("a", sanitizers=["kcsan"])])
    ts = T.targets_from_manifest(m, variants_table(tmp_path), "kcsan", sanitizers=True)
    assert [t.branch for t in ts] == ["base", "topic/a", "for-next"]
    assert all(t.variant == "kcsan" and t.fragments[-1].name == "kcsan.config" for t in ts)
    with pytest.raises(KtopicError, match="--kasan and --kcsan cannot be combined"):
        variants.check_together(tmp_path, ["kasan", "kcsan"])
    with pytest.raises(KtopicError, match=r"no variant 'kasan2' \(variants: kasan, kcsan, ubsan"):
        T.targets_from_manifest(m, tmp_path, "kasan2")


def test_kcsan_config_asks_for_no_kasan():
    text = (REPO / "qemu" / "configs" / "kcsan.config").read_text()
    assert "CONFIG_KCSAN=y" in text and "KASAN=y" not in text
    # allnoconfig would turn KCSAN's own defaults off: they are set back.
    for opt in ("SELFTEST", "REPORT_VALUE_CHANGE_ONLY", "ASSUME_PLAIN_WRITES_ATOMIC"):
        assert f"CONFIG_KCSAN_{opt}=y" in text


# ------------------------------------------------------------------ KCSAN scan

def test_kcsan_report_is_its_own_kind_with_the_quote():
    fs = scan(DATA / "synth-kcsan.log", [], expect_cpus=4)
    assert [f.kind for f in fs] == ["kcsan", "kcsan"]
    f = fs[0]
    assert f.message == "BUG: KCSAN: data-race in six_lock_ip_read / six_unlock_ip_write"
    assert f.lines[0] == f.message and f.lines[-1].startswith("=====")
    assert any("value changed" in x for x in f.lines)
    assert any(x.startswith("read to 0x") for x in f.lines)
    assert f.line == 8


def test_kcsan_allowlist_by_kind(tmp_path):
    p = tmp_path / "allow.yaml"
    p.write_text("- pattern: 'data-race in tick_nohz_next_event / tick_nohz_stop_tick'\n"
                 "  kind: kcsan\n  reason: a 6.1 race the base shows\n")
    fs = scan(DATA / "synth-kcsan.log", console_scan.load_allowlist(p))
    assert [f.message for f in fs] == [
        "BUG: KCSAN: data-race in six_lock_ip_read / six_unlock_ip_write"]


def test_the_repository_allowlist_names_kcsan_races_with_reasons():
    entries = console_scan.load_allowlist(REPO / "qemu" / "allowlist.yaml")
    for e in entries:
        assert e.reason


# ------------------------------------------------------------------ expect

LOCKDEP = scan(DATA / "real-lockdep.log")
EXP = SimpleNamespace(name="circ", module="mod", args="case=1", report="lockdep",
                      match="circular locking")


def test_expected_report_seen_does_not_fail():
    v = X.judge(EXP, LOCKDEP)
    assert v.seen and v.other == [] and v.expected == LOCKDEP


def test_missing_expected_report_fails_and_says_what_was_there():
    warn = scan(DATA / "real-warn.log")
    v = X.judge(EXP, warn)
    assert not v.seen and v.other == warn
    assert "expected a lockdep report matching /circular locking/ from mod case=1" in v.message
    assert "warning" in v.message
    v = X.judge(EXP, [])
    assert not v.seen and "no report" in v.message


def test_expected_kind_must_match_and_the_regex_too():
    assert not X.judge(dataclass_like(EXP, report="warning"), LOCKDEP).seen
    assert not X.judge(dataclass_like(EXP, match="recursive locking"), LOCKDEP).seen
    # The match may be in the quoted lines, not only the title.
    quoted = LOCKDEP[0].lines[3]
    assert X.judge(dataclass_like(EXP, match=quoted[:20].replace("(", r"\(")), LOCKDEP).seen


def test_other_reports_in_an_expect_boot_still_fail():
    many = scan(DATA / "real-many.log")
    v = X.judge(dataclass_like(EXP, report="refcount", match="refcount_t"), many)
    assert v.seen and len(v.other) == len(many) - 1


def test_expected_panic_is_not_incomplete():
    pan = scan(DATA / "real-panic.log") + [R.Finding("incomplete", "exited")]
    v = X.judge(dataclass_like(EXP, report="panic", match="not syncing"), pan)
    assert v.seen and v.other == []


def dataclass_like(ns, **kw):
    d = dict(vars(ns))
    d.update(kw)
    return SimpleNamespace(**d)


def test_module_args_reach_the_initramfs(tmp_path):
    init, ko = tmp_path / "init", tmp_path / "m.ko"
    init.write_bytes(b"x")
    ko.write_bytes(b"ko")
    ents = {e.name: e for e in initramfs.entries_for(init, [], [ko], [], {"m.ko": "case=2"})}
    assert ents["etc/ktopic/modargs/m.ko"].data == b"case=2\n"
    assert "etc/ktopic/modargs/m.ko" not in {
        e.name for e in initramfs.entries_for(init, [], [ko], [])}
    with pytest.raises(Failure):
        initramfs.entries_for(init, [], [ko], [], {"../x": "y"})


def test_init_passes_module_args():
    src = (REPO / "qemu" / "init" / "init.c").read_text()
    assert '"/etc/ktopic/modargs"' in src and "SYS_finit_module, fd, args, 0" in src


# ------------------------------------------------------------------ the expect stage

from test_ci import console, world  # noqa: E402,F401  (fixtures)
from test_ktap import parser  # noqa: E402,F401  (fixture)
from ktopic.kernel import boot as bootmod  # noqa: E402
from ktopic.kernel import build as buildmod  # noqa: E402
from ktopic.model.results import FAIL, PASS  # noqa: E402


def test_expect_stage_one_boot_per_entry(world, monkeypatch, tmp_path):  # noqa: F811
    w = world
    (tmp_path / "repo" / "qemu" / "modules" / "exp").mkdir(parents=True)
    monkeypatch.setattr(buildmod, "build_modules",
                        lambda root, res, mods, jobs: ([tmp_path / f"{m.name}.ko" for m in mods],
                                                       None, None))
    initrds = []

    def fake_initramfs(req):
        initrds.append(req)
        return initramfs.InitramfsResult(tmp_path / "initrd", "0" * 64, [])
    monkeypatch.setattr(initramfs, "build_initramfs", fake_initramfs)
    plain_boot = bootmod.boot
    expect_consoles = {"expect-seen.log": (DATA / "real-lockdep.log").read_text(),
                       "expect-missing.log": console(),
                       "expect-extra.log": console(WARN_LINE)}

    cmdlines = {}

    def boot(req):
        cmdlines[req.console.name] = req.cmdline
        if req.console.name.startswith("expect-"):
            req.console.write_text(expect_consoles[req.console.name])
            return bootmod.BootResult("done", 1.0, req.console, "qemu ...")
        return plain_boot(req)
    monkeypatch.setattr(bootmod, "boot", boot)
    w.consoles.update({"base": console(), "topic_a": console()})
    seen = manifest.Expect("seen", "exp", "case=1", "lockdep", "circular locking", 1)
    missing = manifest.Expect("missing", "exp", "case=2", "lockdep", "recursive locking", 2)

    def run(*entries):
        ts = w.targets("a")
        for t in ts:
            if t.topic == "a":
                t.spec.expect = list(entries)
        r = w.runner(use_cache=False, base_cache=False)
        return [r.run(t) for t in ts][-1]

    a = run(seen)
    assert a.ok and a.stage("expect").status == PASS
    assert a.stage("expect").summary == "1/1 expected report(s) seen"
    # The module alone, with its parameters for /init.
    assert [p.name for p in initrds[-1].test_modules] == ["exp.ko"]
    assert initrds[-1].module_args == {"exp.ko": "case=1"}
    assert (w.out / "topic_a" / "expect-seen.log").is_file()
    # No KUnit suite in it: they ran in the branch's own boot.
    assert "kunit.enable=0" in cmdlines["expect-seen.log"].split(), cmdlines
    tests_boots = [c for n, c in cmdlines.items() if not n.startswith("expect-")]
    assert tests_boots and not [c for c in tests_boots if "kunit.enable" in c], cmdlines

    a = run(seen, missing)
    st = a.stage("expect")
    assert not a.ok and st.status == FAIL
    assert st.summary == "1/2 expected report(s) seen; failed: missing"
    (f,) = [f for f in a.findings if not f.in_base]
    assert f.kind == "expect" and "missing: expected a lockdep report matching " \
        "/recursive locking/ from exp case=2" in f.message
    assert "expect-missing.log" in f.message

    # Another report in an expectation boot fails it, named by the entry.
    extra = manifest.Expect("extra", "exp", "", "lockdep", "circular", 3)
    expect_consoles["expect-extra.log"] = expect_consoles["expect-seen.log"].replace(
        "ktopic-init: done", WARN_LINE + "ktopic-init: done")
    a = run(extra)
    assert not a.ok and [x.kind for x in a.findings if not x.in_base] == ["warning"]
    assert a.stage("expect").status == FAIL
    assert a.stage("expect").summary == "1/1 expected report(s) seen; failed: extra (other reports too)"
    assert a.findings[-1].message.startswith("extra: ")


WARN_LINE = ("[    9.5] ------------[ cut here ]------------\n"
             "[    9.5] WARNING: CPU: 0 PID: 1 at lib/x.c:3 x_fn+0x1c/0x40\n"
             "[    9.5] ---[ end trace 0000000000000000 ]---\n")


def test_kasan_and_kcsan_together_is_bad_input(generated, ktopic):
    p = generated
    for cmd in (("build", "--all"), ("ci",), ("boot", "--all")):
        r = ktopic(*p.args(*cmd, "--kasan", "--kcsan"))
        assert r.status == 2 and "--kasan and --kcsan cannot be combined" in r.err, (cmd, r)


def test_expect_logs_come_back_from_the_cache(world, monkeypatch, tmp_path):  # noqa: F811
    w = world
    (tmp_path / "repo" / "qemu" / "modules" / "exp").mkdir(parents=True)
    monkeypatch.setattr(buildmod, "build_modules",
                        lambda root, res, mods, jobs: ([tmp_path / "exp.ko"], None, None))
    plain_boot = bootmod.boot

    def boot(req):
        if req.console.name == "expect-seen.log":
            req.console.write_text((DATA / "real-lockdep.log").read_text())
            return bootmod.BootResult("done", 1.0, req.console, "qemu ...")
        return plain_boot(req)
    monkeypatch.setattr(bootmod, "boot", boot)
    w.consoles.update({"base": console(), "topic_a": console()})
    seen = manifest.Expect("seen", "exp", "", "lockdep", "circular locking", 1)

    def run():
        ts = w.targets("a")
        for t in ts:
            if t.topic == "a":
                t.spec.expect = [seen]
        r = w.runner()
        return [r.run(t) for t in ts][-1]
    assert run().ok
    log = w.out / "topic_a" / "expect-seen.log"
    log.unlink()
    again = run()
    assert again.stage("expect").status == "cached" and log.is_file()
