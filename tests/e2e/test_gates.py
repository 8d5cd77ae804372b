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
    e2e-gates-clean    one commit that passes both: a second run comes
                       from the gate cache (nothing built); after its
                       commit is changed it is walked again

and checkpatch with codespell on the project's real patches.  The gate
cache's entries for these branches are removed before and after (the
commits are the same on every run: fixed dates and identities).  Needs the
work directory ($KTOPIC_WORKDIR or ~/.cache/ktopic) with the base imported
(`ktopic import-base`); a base build there (`ktopic ci` or `ktopic build
base`) makes every build here incremental.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from e2e_support import MANIFEST_HEAD, REPO, commit_on, git, ktopic, project, work_repo

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

TOPICS = {"e2e-gates-bisect": "e2e/gates-bisect", "e2e-gates-warn": "e2e/gates-warn",
          "e2e-gates-clean": "e2e/gates-clean"}


def manifest_text() -> str:
    lines = list(MANIFEST_HEAD)
    for name, branch in TOPICS.items():
        lines += [f"  {name}:", f"    description: gates end-to-end topic {name}",
                  f"    branch: {branch}"]
    lines += ["integration:", "  branch: e2e/gates-all", f"  topics: [{', '.join(TOPICS)}]", ""]
    return "\n".join(lines)


def forget_gate_verdicts(wd) -> None:
    """The gate cache's entries for this test's branches."""
    for f in (wd.root / "cache" / "check" / "gates").glob("*-*.json"):
        try:
            if json.loads(f.read_text()).get("branch", "").startswith("e2e/gates-"):
                f.unlink()
        except (OSError, ValueError):
            pass


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    wd, base = work_repo()
    tmp = tmp_path_factory.mktemp("gates")
    root = project(tmp)
    (root / "branches.yaml").write_text(manifest_text())
    main_c = git(wd.git_dir, "show", f"{base}:init/main.c") + "\n"
    uses = commit_on(wd.git_dir, base, {"init/main.c": main_c + ANSWER},
                     "init: call ktopic_gates_answer()", tmp)
    adds = commit_on(wd.git_dir, uses, {"init/main.c": main_c + DEFINE + ANSWER},
                     "init: add ktopic_gates_answer()", tmp)
    warn = commit_on(wd.git_dir, base, {"init/main.c": main_c + UNUSED},
                     "init: a function with an unused variable", tmp)
    clean = commit_on(wd.git_dir, base, {"init/main.c": main_c + DEFINE + ANSWER},
                      "init: ktopic_gates_answer() and its caller", tmp)
    refs = {"refs/heads/e2e/gates-bisect": adds, "refs/heads/e2e/gates-warn": warn,
            "refs/heads/e2e/gates-clean": clean, "refs/heads/e2e/gates-all": warn}
    for ref, sha in refs.items():
        git(wd.git_dir, "update-ref", ref, sha)
    forget_gate_verdicts(wd)
    yield {"root": root, "wd": wd, "tmp": tmp, "base": base, "uses": uses, "adds": adds,
           "warn": warn, "clean": clean, "main_c": main_c,
           "main_lines": main_c.count("\n")}
    for ref in refs:
        git(wd.git_dir, "update-ref", "-d", ref)
    for name in ("e2e_gates-bisect", "e2e_gates-warn", "e2e_gates-clean"):
        shutil.rmtree(wd.root / "build" / name, ignore_errors=True)
    forget_gate_verdicts(wd)


def test_bisect_names_the_first_commit_that_does_not_build(setup):
    out = setup["root"] / "bisect.json"
    p = ktopic(setup["root"], "check", "--bisect", "e2e-gates-bisect", "-j2", "--json", str(out))
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    v = json.loads(out.read_text())[0]
    b = v["gates"]["bisect"]
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
    assert v["gates"]["bisect"]["ok"] and len(v["gates"]["bisect"]["builds"]) == 1
    w = v["gates"]["warnings"]
    assert not w["ok"] and w["files"] == ["init/main.c"]
    new = w["new"]
    assert [d["message"] for d in new] == ["unused variable 'ktopic_unused' [-Wunused-variable]"]
    # the line of the declaration: the base's lines, a blank line, 3 more
    assert new[0]["file"] == "init/main.c" and new[0]["line"] == setup["main_lines"] + 4
    assert any("int ktopic_unused;" in ln for ln in new[0]["lines"])
    assert f"init/main.c:{setup['main_lines'] + 4}: unused variable 'ktopic_unused'" in p.stdout
    # W=1 and sparse find things in init/main.c on the base too: not the topic's
    assert w["base_count"] > 0 and w["head_count"] == w["base_count"] + 1


def test_unchanged_topic_is_cached_and_a_changed_commit_walked_again(setup):
    root, wd = setup["root"], setup["wd"]
    log = wd.root / "build" / "e2e_gates-clean" / "ktopic-build.log"

    def run(name: str):
        out = root / f"{name}.json"
        p = ktopic(root, "check", "--bisect", "--warnings", "e2e-gates-clean", "-j2",
                   "--json", str(out))
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        return p, json.loads(out.read_text())[0]

    p, v = run("clean1")
    assert not v["gates"]["bisect"]["cached"] and not v["gates"]["warnings"]["cached"]
    assert [b["commit"] for b in v["gates"]["bisect"]["builds"]] == [setup["clean"]]
    assert v["gates"]["warnings"]["ok"] and v["gates"]["warnings"]["files"] == ["init/main.c"]
    assert "gates e2e/gates-clean: bisect and warnings at " in p.stderr
    built = log.stat().st_mtime_ns

    # Unchanged: from the cache, one line, nothing built, no W=1 run.
    p, v = run("clean2")
    assert v["gates"]["bisect"]["cached"] and v["gates"]["warnings"]["cached"], p.stderr
    assert v["gates"]["bisect"]["builds"][0]["commit"] == setup["clean"]
    cached = [ln for ln in p.stderr.splitlines() if ln.startswith("gates e2e/gates-clean:")]
    assert len(cached) == 1 and ": cached: bisect and warnings passed at " in cached[0], p.stderr
    assert "bisect e2e/gates-clean" not in p.stderr and "W=1 C=1" not in p.stderr
    assert "bisect: ok: 1/1 commits build [cached]" in p.stdout
    assert log.stat().st_mtime_ns == built      # nothing was built: the cache answered

    # The commit changes (a comment at the end of init/main.c): walked again.
    changed = commit_on(wd.git_dir, setup["base"],
                        {"init/main.c": setup["main_c"] + DEFINE + ANSWER + "/* changed */\n"},
                        "init: ktopic_gates_answer() and its caller", setup["tmp"])
    git(wd.git_dir, "update-ref", "refs/heads/e2e/gates-clean", changed)
    p, v = run("clean3")
    assert not v["gates"]["bisect"]["cached"] and not v["gates"]["warnings"]["cached"]
    assert [b["commit"] for b in v["gates"]["bisect"]["builds"]] == [changed]
    assert "gates e2e/gates-clean: bisect and warnings at " in p.stderr
    assert log.stat().st_mtime_ns > built


def test_real_patches_with_codespell(setup, tmp_path):
    """The project's own manifest and patches, checkpatch with codespell:
    a verdict per patch, with the tool versions."""
    out = tmp_path / "real.json"
    p = subprocess.run([sys.executable, str(REPO / "tools/bin/ktopic"), "check", "--json",
                        str(out)], capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    check_real_verdicts(json.loads(out.read_text()))


def check_real_verdicts(verdicts: list[dict]) -> None:
    """Every topic of the manifest passes, a verdict per patch in order, no
    stale waiver (what `make gates` requires of main)."""
    from ktopic.model import manifest
    m = manifest.load(REPO / "branches.yaml")
    assert [v["topic"] for v in verdicts] == list(m.topics)
    for v in verdicts:
        assert v["ok"], (v["topic"], v["notes"])
        assert "codespell" in v["versions"]["codespell"] and v["versions"]["b4"]
        assert [pv["file"] for pv in v["patches"]] == \
            [f"patches/{v['topic']}/{p.rel}" for p in m.topics[v["topic"]].patches]
        for pv in v["patches"]:
            assert pv["ok"] and pv["total"].startswith("total: ") and not pv["unused_waivers"], pv
