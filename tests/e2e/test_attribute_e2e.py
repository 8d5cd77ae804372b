"""End to end: `ktopic ci` names the first bad commit of a failing branch,
and the two topics that break the integration branch together, on real
kernels (slow: one small rebuild and a boot per probe).

The topics exist only inside this test (a temporary manifest, refs
e2e/attr-* in the work repository, removed afterwards).  Every commit
appends to init/main.c, so a probe recompiles one file:

    e2e-attr-a   hooks, the bug (a KUnit case fails), a harmless comment:
                 the second of three commits is named
    e2e-attr-b   hooks, a commit that does not build, its fix, the bug, a
                 comment: the bug is named, the broken commit skipped
    e2e-attr-x   lowers a limit to 5 (a #define at the top of init/main.c)
    e2e-attr-y   hooks, then a case that needs the limit, 16 unless
                 defined, to be at least 10; x and y pass alone, stacked
                 they fail: the pair and y's second commit are named

(The limit is in init/main.c itself, not in a new header: kbuild does
not rebuild an object for a header that did not exist when it was
compiled, so a build directory seeded from y's would not see it.)

Needs the work directory with the base imported; skipped otherwise.
"""

from __future__ import annotations

import pytest
from e2e_support import MANIFEST_HEAD, commit_on, git, ktopic, project, work_repo

from ktopic.model import results as R

pytestmark = pytest.mark.e2e

HOOKS = r'''
/* ktopic end-to-end attribution test: never part of a real branch. */
#include <kunit/test.h>

static int ktopic_e2e_attr_value(void)
{
	return 1;
}

static void ktopic_e2e_attr_case(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ktopic_e2e_attr_value(), 1);
}

static struct kunit_case ktopic_e2e_attr_cases[] = {
	KUNIT_CASE(ktopic_e2e_attr_case),
	{}
};

static struct kunit_suite ktopic_e2e_attr_suite = {
	.name = "ktopic_e2e_attr",
	.test_cases = ktopic_e2e_attr_cases,
};
kunit_test_suite(ktopic_e2e_attr_suite);
'''

BUG = "return 1;\n}\n\nstatic void ktopic_e2e_attr_case"
BUGGY = "return 2;\n}\n\nstatic void ktopic_e2e_attr_case"
BROKEN = "\nstatic int ktopic_e2e_attr_broken(void) { return }\n"
COMMENT = "\n/* ktopic end-to-end attribution test: a harmless change. */\n"
LIMIT = "#define KTOPIC_E2E_LIMIT 5\n"
NEEDS_LIMIT = r'''
#ifndef KTOPIC_E2E_LIMIT
#define KTOPIC_E2E_LIMIT 16
#endif

static void ktopic_e2e_attr_limit(struct kunit *test)
{
	KUNIT_EXPECT_GE(test, KTOPIC_E2E_LIMIT, 10);
}

static struct kunit_case ktopic_e2e_limit_cases[] = {
	KUNIT_CASE(ktopic_e2e_attr_limit),
	{}
};

static struct kunit_suite ktopic_e2e_limit_suite = {
	.name = "ktopic_e2e_limit",
	.test_cases = ktopic_e2e_limit_cases,
};
kunit_test_suite(ktopic_e2e_limit_suite);
'''

# topic -> its commits' subjects; chain() says what each one changes.
STEPS = {
    "e2e-attr-a": ["attr-a: hooks", "attr-a: the bug", "attr-a: a comment"],
    "e2e-attr-b": ["attr-b: hooks", "attr-b: does not build", "attr-b: builds again",
                   "attr-b: the bug", "attr-b: a comment"],
    "e2e-attr-x": ["attr-x: lower the limit"],
    "e2e-attr-y": ["attr-y: hooks", "attr-y: a case that needs the limit"],
}


def chain(wd, base: str, main_c: str, topic: str, tmp, start: str | None = None,
          text: str | None = None) -> list[str]:
    """The topic's commits on start (default base), each from the one before."""
    text = main_c if text is None else text
    head, out = start or base, []
    for subject in STEPS[topic]:
        files: dict[str, str] = {}
        if subject.endswith("hooks"):
            text += HOOKS
        elif subject.endswith("the bug"):
            text = text.replace(BUG, BUGGY)
        elif subject.endswith("does not build"):
            text += BROKEN
        elif subject.endswith("builds again"):
            text = text.replace(BROKEN, "")
        elif subject.endswith("a comment"):
            text += COMMENT
        elif subject.endswith("needs the limit"):
            text += NEEDS_LIMIT
        elif subject.endswith("lower the limit"):
            text = LIMIT + text
        files["init/main.c"] = text
        head = commit_on(wd.git_dir, head, files, subject, tmp)
        out.append(head)
    return out


SUITES = {"e2e-attr-a": ["ktopic_e2e_attr"], "e2e-attr-b": ["ktopic_e2e_attr"],
          "e2e-attr-x": [], "e2e-attr-y": ["ktopic_e2e_attr", "ktopic_e2e_limit"]}


def manifest_text(names: list[str], integration: str) -> str:
    """The topics names, and an integration branch stacking them all."""
    lines = list(MANIFEST_HEAD)
    for name in names:
        lines += [f"  {name}:", f"    description: attribution test topic {name}",
                  f"    branch: e2e/{name[4:]}", "    patches:"]
        lines += [f"      - {i:04d}-{name}.patch" for i in range(1, len(STEPS[name]) + 1)]
        if SUITES[name]:
            lines.append(f"    kunit: [{', '.join(SUITES[name])}]")
    lines += ["integration:", f"  branch: e2e/{integration}", f"  topics: [{', '.join(names)}]",
              ""]
    return "\n".join(lines)


def write_patches(wd, root, name: str, commits: list[str]) -> None:
    d = root / "patches" / name
    d.mkdir(parents=True)
    for i, c in enumerate(commits, 1):
        text = git(wd.git_dir, "format-patch", "-1", "--stdout", c)
        (d / f"{i:04d}-{name}.patch").write_text(text.rstrip("\n") + "\n")


def run_ci(root, out, *names) -> tuple:
    p = ktopic(root, "ci", "--no-check", "--no-cache", *names, "-o", str(out),
               "--silence", "20", "--timeout", "180")
    assert (out / "report.json").is_file(), p.stdout[-3000:] + p.stderr[-3000:]
    report = R.Report.from_json((out / "report.json").read_text())
    return p, report


@pytest.fixture(scope="module")
def attributed(tmp_path_factory):
    """Two projects: topics a and b (their integration branch is not
    run), and topics x and y with the integration branch that stacks
    them."""
    wd, base = work_repo()
    tmp = tmp_path_factory.mktemp("e2e-attr")
    # git() strips its output; the file ends with a newline.
    main_c = git(wd.git_dir, "show", f"{base}:init/main.c") + "\n"
    heads = {name: chain(wd, base, main_c, name, tmp) for name in STEPS}
    # The stack of x and y: y's commits on x.
    stacked = chain(wd, base, main_c, "e2e-attr-y", tmp, start=heads["e2e-attr-x"][-1],
                    text=LIMIT + main_c)
    refs = {f"refs/heads/e2e/{n[4:]}": heads[n][-1] for n in STEPS}
    refs["refs/heads/e2e/attr-xy"] = stacked[-1]
    refs["refs/heads/e2e/attr-ab"] = heads["e2e-attr-a"][-1]    # never run
    for ref, commit in refs.items():
        git(wd.git_dir, "update-ref", ref, commit)
    projects = {}
    for label, names, integ in (("ab", ["e2e-attr-a", "e2e-attr-b"], "attr-ab"),
                                ("xy", ["e2e-attr-x", "e2e-attr-y"], "attr-xy")):
        root = project(tmp / label)
        for n in names:
            write_patches(wd, root, n, heads[n])
        (root / "branches.yaml").write_text(manifest_text(names, integ))
        projects[label] = root
    p1, r1 = run_ci(projects["ab"], tmp / "out-ab", "e2e-attr-a", "e2e-attr-b")
    p2, r2 = run_ci(projects["xy"], tmp / "out-xy")
    by = {b.topic: b for b in r1.branches + r2.branches if b.topic != "base"}
    yield {"log": p1.stdout + p2.stdout, "by": by, "heads": heads, "out": tmp / "out-ab",
           "out-xy": tmp / "out-xy", "wd": wd}
    for ref in refs:
        git(wd.git_dir, "update-ref", "-d", ref)


def test_the_second_of_three_commits_is_named(attributed):
    b = attributed["by"]["e2e-attr-a"]
    a = b.attribution
    assert not b.ok and a.get("commit") == attributed["heads"]["e2e-attr-a"][1], a
    assert (a["subject"], a["patch"]) == ("attr-a: the bug", "patches/e2e-attr-a/0002-e2e-attr-a.patch")
    junit = (attributed["out"] / "e2e_attr-a" / "junit.xml").read_text()
    assert "(first bad: patches/e2e-attr-a/0002-e2e-attr-a.patch)" in junit
    html = (attributed["out"] / "index.html").read_text()
    assert "first bad: patches/e2e-attr-a/0002-e2e-attr-a.patch" in html
    assert f'first bad commit {a["commit"][:12]} ("attr-a: the bug"' in attributed["log"]


def test_a_commit_that_does_not_build_is_skipped_and_said(attributed):
    a = attributed["by"]["e2e-attr-b"].attribution
    heads = attributed["heads"]["e2e-attr-b"]
    assert a.get("commit") == heads[3] and a["skipped"] == [heads[1]], a
    assert "skipped: they do not build" in attributed["log"]
    shown(attributed["out"], "e2e_attr-b", "patches/e2e-attr-b/0004-e2e-attr-b.patch")


def shown(out, branch_dir: str, patch: str) -> None:
    """The failing JUnit cases' message and the HTML cell name the patch."""
    assert f"(first bad: {patch})" in (out / branch_dir / "junit.xml").read_text()
    assert f"first bad: {patch}</a>" in (out / "index.html").read_text()


def test_the_pair_and_the_commit_are_named(attributed):
    by = attributed["by"]
    assert by["e2e-attr-x"].ok and by["e2e-attr-y"].ok
    a = by["integration"].attribution
    assert a.get("topics") == ["e2e-attr-x", "e2e-attr-y"], a
    assert (a["commit"], a["patch"]) == (attributed["heads"]["e2e-attr-y"][1],
                                        "patches/e2e-attr-y/0002-e2e-attr-y.patch")
    shown(attributed["out-xy"], "e2e_attr-xy", "patches/e2e-attr-y/0002-e2e-attr-y.patch")
    refs = git(attributed["wd"].git_dir, "for-each-ref", "refs/ktopic/probe/")
    assert refs == ""
    print(f"attribution boots: a {by['e2e-attr-a'].attribution['boots']}, "
          f"b {by['e2e-attr-b'].attribution['boots']}, pair {a['boots']}")
