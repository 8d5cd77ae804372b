"""End to end: `ktopic check` on the real tree (slow: kernel builds).

Topics made only inside this test (refs e2e/gates-* in the work
repository, build directories build/e2e_gates-*, all removed afterwards),
in the small test configuration (qemu/configs/base.config), with ccache;
each change is to init/main.c, so every build recompiles one file:

    e2e-gates-bisect   commit 1 calls ktopic_gates_answer(), commit 2 adds
                       it: --bisect names commit 1 with the compiler error
    e2e-gates-warn     one commit adds a function with an unused variable:
                       --bisect passes, --warnings fails on that line, and
                       the W=1 warnings init/main.c already has are not
                       the topic's

and checkpatch with codespell on the project's real patches.  Needs the
work directory ($KTOPIC_WORKDIR or ~/.cache/ktopic) with the base imported
(`ktopic import-base`); a base build there (`ktopic ci` or `ktopic build
base`) makes every build here incremental.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from ktopic.workdir import Workdir  # noqa: E402

pytestmark = pytest.mark.e2e

ANSWER = """
static int __init ktopic_gates_init(void)
{
	return ktopic_gates_answer() == 42 ? 0 : -EINVAL;
}
late_initcall(ktopic_gates_init);
"""

DEFINE = """
static int ktopic_gates_answer(void)
{
	return 42;
}
"""

UNUSED = """
static int __init ktopic_gates_unused(void)
{
	int ktopic_unused;

	return 0;
}
late_initcall(ktopic_gates_unused);
"""

GIT_ENV = {"GIT_AUTHOR_NAME": "ktopic e2e", "GIT_AUTHOR_EMAIL": "e2e@example.org",
           "GIT_COMMITTER_NAME": "ktopic e2e", "GIT_COMMITTER_EMAIL": "e2e@example.org",
           "GIT_AUTHOR_DATE": "1546300800 +0000", "GIT_COMMITTER_DATE": "1546300800 +0000"}

TOPICS = {"e2e-gates-bisect": "e2e/gates-bisect", "e2e-gates-warn": "e2e/gates-warn"}


def git(git_dir: Path, *args: str, input: str | None = None, env: dict | None = None) -> str:
    e = dict(os.environ, **GIT_ENV, **(env or {}))
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], input=input, env=e,
                          check=True, capture_output=True, text=True).stdout.strip()


def commit_on(git_dir: Path, parent: str, path: str, text: str, msg: str, tmp: Path) -> str:
    env = {"GIT_INDEX_FILE": str(tmp / f"index.{os.getpid()}")}
    git(git_dir, "read-tree", parent, env=env)
    blob = git(git_dir, "hash-object", "-w", "--stdin", input=text)
    git(git_dir, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = git(git_dir, "write-tree", env=env)
    return git(git_dir, "commit-tree", tree, "-p", parent, "-m", msg)


def manifest_text() -> str:
    lines = ["version: 1",
             "series: {name: e2e, subject: e2e, from: 'E2E <e2e@example.org>'}",
             "base:", "  package: linux-source-6.1",
             "  tarball: /usr/src/linux-source-6.1.tar.xz",
             "  version: 6.1.192", "  debian-version: 6.1.192-3", "topics:"]
    for name, branch in TOPICS.items():
        lines += [f"  {name}:", f"    description: gates end-to-end topic {name}",
                  f"    branch: {branch}"]
    lines += ["integration:", "  branch: e2e/gates-all", f"  topics: [{', '.join(TOPICS)}]", ""]
    return "\n".join(lines)


def ktopic(root: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "tools"))
    return subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; from ktopic.cli import main; "
         "sys.exit(main(sys.argv[1:]))", "-m", str(root / "branches.yaml"), *args],
        env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    wd = Workdir(None)
    if not wd.git_dir.is_dir():
        pytest.skip(f"no work repository at {wd.git_dir} (run ktopic import-base)")
    base = git(wd.git_dir, "rev-parse", "--verify", "-q", "refs/heads/base")
    tmp = tmp_path_factory.mktemp("gates")
    root = tmp / "repo"
    shutil.copytree(REPO / "qemu", root / "qemu",
                    ignore=shutil.ignore_patterns("*.o", "*.ko", ".*.cmd"))
    (root / "patches").mkdir()
    (root / "branches.yaml").write_text(manifest_text())
    main_c = git(wd.git_dir, "show", f"{base}:init/main.c") + "\n"
    uses = commit_on(wd.git_dir, base, "init/main.c", main_c + ANSWER,
                     "init: call ktopic_gates_answer()", tmp)
    adds = commit_on(wd.git_dir, uses, "init/main.c", main_c + DEFINE + ANSWER,
                     "init: add ktopic_gates_answer()", tmp)
    warn = commit_on(wd.git_dir, base, "init/main.c", main_c + UNUSED,
                     "init: a function with an unused variable", tmp)
    refs = {"refs/heads/e2e/gates-bisect": adds, "refs/heads/e2e/gates-warn": warn,
            "refs/heads/e2e/gates-all": warn}
    for ref, sha in refs.items():
        git(wd.git_dir, "update-ref", ref, sha)
    yield {"root": root, "wd": wd, "uses": uses, "adds": adds, "warn": warn,
           "main_lines": main_c.count("\n")}
    for ref in refs:
        git(wd.git_dir, "update-ref", "-d", ref)
    for name in ("e2e_gates-bisect", "e2e_gates-warn"):
        shutil.rmtree(wd.root / "build" / name, ignore_errors=True)


def test_bisect_names_the_first_commit_that_does_not_build(setup):
    out = setup["root"] / "bisect.json"
    p = ktopic(setup["root"], "check", "--bisect", "e2e-gates-bisect", "-j2", "--json", str(out))
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    v = json.loads(out.read_text())[0]
    b = v["bisect"]
    assert not b["ok"] and b["total"] == 2
    assert b["first_bad"]["commit"] == setup["uses"]           # the first, not the second
    assert len(b["builds"]) == 1                               # the walk stopped there
    assert b["start_ok"] is True                               # the base itself builds
    err = [ln for ln in b["first_bad"]["details"] if "ktopic_gates_answer" in ln]
    # gcc's quotes are typographic in a UTF-8 locale
    assert err and re.search(r"init/main\.c:\d+:\d+: error: implicit declaration of function "
                             r"[\u2018']ktopic_gates_answer", err[0]), b["first_bad"]["details"]
    assert "(init: call ktopic_gates_answer()) does not build" in p.stdout
    assert re.search(r"error: implicit declaration of function [\u2018']ktopic_gates_answer",
                     p.stdout)


def test_unused_variable_fails_the_warnings_gate(setup):
    out = setup["root"] / "warn.json"
    p = ktopic(setup["root"], "check", "--bisect", "--warnings", "e2e-gates-warn", "-j2",
               "--json", str(out))
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    v = json.loads(out.read_text())[0]
    assert v["bisect"]["ok"] and len(v["bisect"]["builds"]) == 1
    w = v["warnings"]
    assert not w["ok"] and w["files"] == ["init/main.c"]
    new = w["new"]
    assert [d["message"] for d in new] == ["unused variable 'ktopic_unused' [-Wunused-variable]"]
    # the line of the declaration: the base's lines, a blank line, 3 more
    assert new[0]["file"] == "init/main.c" and new[0]["line"] == setup["main_lines"] + 4
    assert any("int ktopic_unused;" in ln for ln in new[0]["lines"])
    assert f"init/main.c:{setup['main_lines'] + 4}: unused variable 'ktopic_unused'" in p.stdout
    # W=1 and sparse find things in init/main.c on the base too: not the topic's
    assert w["base_count"] > 0 and w["head_count"] == w["base_count"] + 1


def test_real_patches_with_codespell(setup, tmp_path):
    """The project's own manifest and patches, checkpatch with codespell:
    a verdict per patch, with the tool versions."""
    out = tmp_path / "real.json"
    p = subprocess.run([sys.executable, str(REPO / "tools/bin/ktopic"), "check", "--json",
                        str(out)], capture_output=True, text=True, timeout=1800)
    assert p.returncode in (0, 1), p.stderr
    verdicts = json.loads(out.read_text())
    assert {v["topic"] for v in verdicts} >= {"closures"}
    for v in verdicts:
        assert "codespell" in v["versions"]["codespell"] and v["versions"]["b4"]
        for pv in v["patches"]:
            assert pv["total"].startswith("total: ")
