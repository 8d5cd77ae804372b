"""End to end: `ktopic ci` catches broken kernels (slow: builds and boots).

The topics here exist only inside this test (a temporary manifest; refs
e2e/* in the work repository, removed afterwards), never in branches.yaml.
One small change to the base, appended to init/main.c, gives a kernel that
misbehaves on request (ktopic_e2e=warn,lockdep,... on the command line), so
the splat topics share one build (ccache and the base's build directory
keep it short) and differ only in how they are booted:

    e2e-clean     nothing requested: passes, and its suite runs
    e2e-panic     panic()
    e2e-oops      NULL write in PID 1: Oops, then "Attempted to kill init"
    e2e-warn      WARN(): reported, and the run goes on (panic_on_warn off)
    e2e-lockdep   an AB-BA mutex order: lockdep's circular dependency report
    e2e-many      warn + refcount + list corruption + atomic sleep in one run:
                  one run reports every splat
    e2e-kunit     a failing KUnit case, and a suite the manifest expects that
                  does not exist
    e2e-hang      an initcall that never returns: no output, silence
    e2e-kasan     an out-of-bounds write; with --kasan (only when
                  KTOPIC_E2E_KASAN=1: a KASAN build of the base is a full
                  rebuild) KASAN reports it; without, it boots clean
    e2e-orphan    a new .c that no Makefile builds: changed code never compiled
    e2e-badconfig a fragment value that cannot stick

Needs the work directory ($KTOPIC_WORKDIR or ~/.cache/ktopic) with the base
imported (`ktopic import-base`); skipped otherwise.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from e2e_support import MANIFEST_HEAD, commit_on, git, ktopic, project, work_repo

from ktopic.model import results as R

pytestmark = pytest.mark.e2e

E2E_CODE = r'''
/*
 * ktopic end-to-end test hooks (tests/e2e/test_ci_e2e.py): never part of a
 * real branch.  ktopic_e2e=<what>[,<what>...] makes this kernel misbehave.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/slab.h>

static char ktopic_e2e_mode[64];

static int __init ktopic_e2e_setup(char *str)
{
	strscpy(ktopic_e2e_mode, str, sizeof(ktopic_e2e_mode));
	return 1;
}
__setup("ktopic_e2e=", ktopic_e2e_setup);

static bool ktopic_e2e(const char *what)
{
	const char *p = ktopic_e2e_mode;
	size_t n = strlen(what);

	while (*p) {
		if (!strncmp(p, what, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchrnul(p, ',');
		if (*p)
			p++;
	}
	return false;
}

static DEFINE_MUTEX(ktopic_e2e_a);
static DEFINE_MUTEX(ktopic_e2e_b);

static int __init ktopic_e2e_run(void)
{
	if (ktopic_e2e("warn"))
		WARN(1, "ktopic-e2e: deliberate warning\n");
	if (ktopic_e2e("lockdep")) {
		mutex_lock(&ktopic_e2e_a);
		mutex_lock(&ktopic_e2e_b);
		mutex_unlock(&ktopic_e2e_b);
		mutex_unlock(&ktopic_e2e_a);
		mutex_lock(&ktopic_e2e_b);
		mutex_lock(&ktopic_e2e_a);
		mutex_unlock(&ktopic_e2e_a);
		mutex_unlock(&ktopic_e2e_b);
	}
	if (ktopic_e2e("refcount")) {
		refcount_t r = REFCOUNT_INIT(1);

		refcount_dec(&r);
	}
	if (ktopic_e2e("list")) {
		LIST_HEAD(head);
		struct list_head node;

		list_add(&node, &head);
		list_del(&node);
		list_del(&node);
	}
	if (ktopic_e2e("atomic")) {
		preempt_disable();
		msleep(1);
		preempt_enable();
	}
	if (ktopic_e2e("kasan")) {
		char *p = kmalloc(8, GFP_KERNEL);

		if (p)
			((volatile char *)p)[8] = 1;
		kfree(p);
	}
	if (ktopic_e2e("oops"))
		*(volatile int *)NULL = 1;
	if (ktopic_e2e("panic"))
		panic("ktopic-e2e: deliberate panic");
	if (ktopic_e2e("hang"))
		for (;;)
			msleep(1000);
	return 0;
}
late_initcall(ktopic_e2e_run);

static void ktopic_e2e_passes(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1, 1);
}

static void ktopic_e2e_fails_on_request(struct kunit *test)
{
	KUNIT_EXPECT_FALSE_MSG(test, ktopic_e2e("kunit"),
			       "ktopic-e2e: deliberate KUnit failure");
}

static struct kunit_case ktopic_e2e_cases[] = {
	KUNIT_CASE(ktopic_e2e_passes),
	KUNIT_CASE(ktopic_e2e_fails_on_request),
	{}
};

static struct kunit_suite ktopic_e2e_suite = {
	.name = "ktopic_e2e",
	.test_cases = ktopic_e2e_cases,
};
kunit_test_suite(ktopic_e2e_suite);
'''

E2E_MODULE = r'''// SPDX-License-Identifier: GPL-2.0
/* ktopic end-to-end test module: a KUnit suite that runs at insmod. */
#include <kunit/test.h>
#include <linux/module.h>

static void ktopic_e2e_module_case(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 2, 1 + 1);
}

static struct kunit_case ktopic_e2e_module_cases[] = {
	KUNIT_CASE(ktopic_e2e_module_case),
	{}
};

static struct kunit_suite ktopic_e2e_module_suite = {
	.name = "ktopic_e2e_module",
	.test_cases = ktopic_e2e_module_cases,
};
kunit_test_suite(ktopic_e2e_module_suite);

MODULE_LICENSE("GPL");
'''

E2E_PROGRAM = r'''/* ktopic end-to-end test program: one KTAP document on stdout. */
#include <stdio.h>

int main(void)
{
	printf("KTAP version 1\n1..2\nok 1 first\nok 2 second\n");
	return 0;
}
'''

ORPHAN = "// SPDX-License-Identifier: GPL-2.0\n/* No Makefile builds this file. */\nint ktopic_orphan;\n"

# topic -> (branch, cmdline, kunit suites expected, extra fragment text)
TOPICS = {
    "e2e-clean": ("e2e/clean", "", ["ktopic_e2e", "ktopic_e2e_module"], None),
    "e2e-panic": ("e2e/panic", "ktopic_e2e=panic", [], None),
    "e2e-oops": ("e2e/oops", "ktopic_e2e=oops", [], None),
    "e2e-warn": ("e2e/warn", "ktopic_e2e=warn", ["ktopic_e2e"], None),
    "e2e-lockdep": ("e2e/lockdep", "ktopic_e2e=lockdep", ["ktopic_e2e"], None),
    "e2e-many": ("e2e/many", "ktopic_e2e=warn,refcount,list,atomic", ["ktopic_e2e"], None),
    "e2e-kunit": ("e2e/kunit", "ktopic_e2e=kunit", ["ktopic_e2e", "ktopic_e2e_absent"], None),
    "e2e-hang": ("e2e/hang", "ktopic_e2e=hang", [], None),
    "e2e-kasan": ("e2e/kasan", "ktopic_e2e=kasan", [], None),
    "e2e-orphan": ("e2e/orphan", "", [], None),
    "e2e-badconfig": ("e2e/badconfig", "", [], "CONFIG_KTOPIC_E2E_NO_SUCH_OPTION=y\n"),
}

def manifest_text() -> str:
    lines = list(MANIFEST_HEAD)
    for name, (branch, cmdline, kunit, frag) in TOPICS.items():
        lines += [f"  {name}:", f"    description: end-to-end test topic {name}",
                  f"    branch: {branch}"]
        if cmdline:
            lines.append(f"    cmdline: '{cmdline}'")
        if kunit:
            lines.append(f"    kunit: [{', '.join(kunit)}]")
        if name == "e2e-clean":
            lines += ["    modules: [e2e_kunit_mod]", "    programs: [e2e_ktap]"]
        if frag:
            lines.append(f"    config: qemu/configs/{name}.config")
    lines += ["integration:", "  branch: e2e/all", f"  topics: [{', '.join(TOPICS)}]", ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    wd, base = work_repo()
    tmp = tmp_path_factory.mktemp("e2e")
    root = project(tmp)
    (root / "qemu/modules/e2e_kunit_mod").mkdir(parents=True)
    (root / "qemu/modules/e2e_kunit_mod/Kbuild").write_text("obj-m += e2e_kunit_mod.o\n")
    (root / "qemu/modules/e2e_kunit_mod/e2e_kunit_mod.c").write_text(E2E_MODULE)
    (root / "qemu/tests").mkdir(exist_ok=True)
    (root / "qemu/tests/e2e_ktap.c").write_text(E2E_PROGRAM)
    for name, (_, _, _, frag) in TOPICS.items():
        if frag:
            (root / "qemu/configs" / f"{name}.config").write_text(frag)
    (root / "branches.yaml").write_text(manifest_text())
    main_c = git(wd.git_dir, "show", f"{base}:init/main.c")
    splat = commit_on(wd.git_dir, base, {"init/main.c": main_c + E2E_CODE},
                      "e2e: misbehave on request", tmp)
    orphan = commit_on(wd.git_dir, base, {"lib/ktopic_orphan.c": ORPHAN},
                       "e2e: a file nothing builds", tmp)
    refs = []
    for name, (branch, *_rest) in TOPICS.items():
        refs.append(f"refs/heads/{branch}")
        git(wd.git_dir, "update-ref", refs[-1], orphan if name == "e2e-orphan" else splat)
    refs.append("refs/heads/e2e/all")
    git(wd.git_dir, "update-ref", refs[-1], splat)
    yield {"root": root, "out": tmp / "out", "wd": wd, "splat": splat}
    for ref in refs:
        git(wd.git_dir, "update-ref", "-d", ref)


@pytest.fixture(scope="module")
def run(setup):
    t0 = time.monotonic()
    # --no-cache: the work directory outlives a test run (CI machines keep
    # it), and a result cached by an earlier run would say "cached" where
    # these tests look for what a fresh build and boot reports.
    p = ktopic(setup["root"], "ci", "--no-check", "--no-cache",
               *[t for t in TOPICS if t != "e2e-kasan"], "-o", str(setup["out"]),
               "--silence", "10", "--timeout", "120")
    secs = time.monotonic() - t0
    report_path = setup["out"] / "report.json"
    assert report_path.is_file(), p.stdout[-3000:] + p.stderr[-3000:]
    report = R.Report.from_json(report_path.read_text())
    return {"proc": p, "report": report, "seconds": secs,
            "by": {b.topic: b for b in report.branches}, **setup}


def kinds(b: R.BranchResult) -> set[str]:
    return {f.kind for f in b.findings if not f.in_base}


def find(b: R.BranchResult, kind: str) -> R.Finding:
    hits = [f for f in b.findings if f.kind == kind]
    assert hits, f"{b.branch}: no {kind} finding in {[(f.kind, f.message) for f in b.findings]}"
    return hits[0]


def test_exit_status_and_report(run):
    assert run["proc"].returncode == 1, run["proc"].stderr[-2000:]
    for b in run["report"].branches:
        assert (run["out"] / b.branch.replace("/", "_") / "junit.xml").is_file() or \
            b.topic == "base"
    assert (run["out"] / "index.html").is_file()


def test_base_and_clean_pass(run):
    base, clean = run["by"]["base"], run["by"]["e2e-clean"]
    assert base.ok, [(f.kind, f.message) for f in base.findings]
    assert clean.ok, [(f.kind, f.message) for f in clean.findings]
    suites = {s.name: s for s in clean.suites}
    assert suites["ktopic_e2e"].status == "pass"
    # The module's suite ran at insmod, the program's KTAP was parsed too.
    assert suites["ktopic_e2e_module"].status == "pass"
    assert suites["e2e_ktap"].status == "pass"
    assert [c.name for c in suites["e2e_ktap"].cases] == ["first", "second"]
    console = (run["out"] / "e2e_clean" / "console.log").read_text()
    assert "ktopic-init: done" in console
    assert "smp: Brought up 1 node, 2 CPUs" in console


def test_one_build_for_the_same_tree(run):
    summaries = [run["by"][t].stage("build").summary for t in TOPICS
                 if t not in ("e2e-orphan", "e2e-badconfig", "e2e-kasan")]
    assert sum("same tree and config" in s for s in summaries) == len(summaries) - 1, summaries


def test_panic(run):
    b = run["by"]["e2e-panic"]
    assert not b.ok and b.stage("boot").status == "fail"
    f = find(b, "panic")
    assert "ktopic-e2e: deliberate panic" in f.message and f.line > 0 and f.lines
    assert not f.in_base


def test_oops(run):
    b = run["by"]["e2e-oops"]
    assert {"oops", "panic"} <= kinds(b) or {"bug", "panic"} <= kinds(b), kinds(b)
    assert any("Attempted to kill init" in f.message for f in b.findings if f.kind == "panic")


def test_warn_is_reported_and_the_run_goes_on(run):
    b = run["by"]["e2e-warn"]
    f = find(b, "warning")
    assert "WARNING:" in f.message and any("ktopic-e2e: deliberate warning" in l for l in f.lines)
    # panic_on_warn is off: the boot finished and KUnit ran after the WARN.
    assert {s.name for s in b.suites} >= {"ktopic_e2e"}
    assert b.stage("test").status == "pass"


def test_lockdep(run):
    b = run["by"]["e2e-lockdep"]
    f = find(b, "lockdep")
    assert "circular locking dependency" in f.message
    assert any("ktopic_e2e_a" in l or "ktopic_e2e_b" in l for l in f.lines)


def test_every_splat_of_one_run(run):
    b = run["by"]["e2e-many"]
    assert {"warning", "refcount", "list_corruption", "bug"} <= kinds(b), \
        [(f.kind, f.message) for f in b.findings]


def test_kunit_failure_and_missing_suite(run):
    b = run["by"]["e2e-kunit"]
    assert b.stage("boot").status == "pass"
    assert b.stage("test").status == "fail"
    msgs = [f.message for f in b.findings]
    assert "ktopic_e2e.ktopic_e2e_fails_on_request failed" in msgs, msgs
    assert any("ktopic_e2e_absent" in m and f.kind == "missing_suite"
               for f, m in zip(b.findings, msgs))
    failed = find(b, "failed_case")
    assert any("deliberate KUnit failure" in l for l in failed.lines), failed.lines


def test_hang_is_silence(run):
    b = run["by"]["e2e-hang"]
    assert kinds(b) & {"silence", "timeout", "hung_task"}, kinds(b)
    # QEMU was reaped: no process still runs the hanging kernel.
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            assert "ktopic_e2e=hang" not in p.read_text(errors="replace")
        except OSError:
            pass


def test_changed_code_never_compiled(run):
    b = run["by"]["e2e-orphan"]
    assert b.stage("build").status == "fail"
    assert "changed code never compiled" in b.stage("build").summary
    assert any("lib/ktopic_orphan.c" in l for f in b.findings for l in f.lines)


def test_config_that_does_not_stick(run):
    b = run["by"]["e2e-badconfig"]
    assert b.stage("build").status == "fail"
    assert "CONFIG_KTOPIC_E2E_NO_SUCH_OPTION" in b.stage("build").summary


def test_second_run_is_cached(run, setup):
    p = ktopic(setup["root"], "ci", "--no-check", "e2e-warn", "e2e-kunit", "-o", str(setup["out"]))
    report = R.Report.from_json((setup["out"] / "report.json").read_text())
    by = {b.topic: b for b in report.branches}
    # Nothing built or booted again: passed stages say cached, failed ones
    # stay failed (a cached failure is still a failure).
    assert by["e2e-warn"].stage("build").status == "cached", p.stdout[-2000:]
    assert by["e2e-warn"].stage("boot").status == "fail"
    assert by["e2e-kunit"].stage("boot").status == "cached"
    assert by["e2e-kunit"].stage("test").status == "fail"
    assert p.returncode == 1
    assert find(by["e2e-warn"], "warning")


@pytest.mark.optional
@pytest.mark.skipif(os.environ.get("KTOPIC_E2E_KASAN") != "1",
                    reason="KTOPIC_E2E_KASAN=1 runs it (a KASAN build of the base)")
def test_kasan_variant(setup):
    out = setup["out"].with_name("out-kasan")
    p = ktopic(setup["root"], "ci", "--no-check", "e2e-kasan", "--kasan", "-o", str(out),
               "--silence", "10", "--timeout", "120")
    report = R.Report.from_json((out / "report.json").read_text())
    by = {b.topic: b for b in report.branches}
    assert by["base"].ok, [(f.kind, f.message) for f in by["base"].findings]
    f = find(by["e2e-kasan"], "kasan")
    assert f.message.startswith("BUG: KASAN: slab-out-of-bounds in ktopic_e2e_run"), f.message
    assert p.returncode == 1
    assert "kasan.config" in (out / "e2e_kasan" / "build.log").read_text() or \
        "CONFIG_KASAN=y" in (out / "e2e_kasan" / "config").read_text()
