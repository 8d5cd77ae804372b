"""ktopic.runner.pipeline: the generated GitLab CI YAML and its structure."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.model import manifest  # noqa: E402
from ktopic.commands import cmd_pipeline  # noqa: E402
from ktopic.runner import pipeline  # noqa: E402
from ktopic.errors import Failure, KtopicError  # noqa: E402

TINY = REPO / "tests" / "data" / "reports" / "manifest.yaml"


def fake_manifest(deps: dict[str, list[str]], version="6.1.192", integration="for-next",
                  root=REPO, patches=None, sanitizers=None):
    """A Manifest-like object: topics in the given order, branch topic/<name>;
    patches: topic -> how many, sanitizers: topic -> its variants (default
    none)."""
    patches, sanitizers = patches or {}, sanitizers or {}
    topics = {n: SimpleNamespace(name=n, branch=f"topic/{n}", depends=list(d), tested=True,
                                 patches=[f"{i:04d}.patch" for i in range(patches.get(n, 0))],
                                 sanitizers=list(sanitizers.get(n, [])))
              for n, d in deps.items()}
    return SimpleNamespace(root=root, base=SimpleNamespace(version=version), topics=topics,
                           integration=SimpleNamespace(branch=integration, topics=list(topics)))


RESERVED = {"stages", "variables", "default", "workflow", "include", "image", "services",
            "cache", "before_script", "after_script"}


def jobs(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in RESERVED}


def needs_of(job: dict) -> list[str]:
    return [n["job"] if isinstance(n, dict) else n for n in job["needs"]]


def check_structure(doc: dict, m) -> None:
    """What every generated pipeline must satisfy."""
    js = jobs(doc)
    expected = [f"topic:{n}" for n in m.topics] + ["integration"]
    assert list(js) == expected
    for name, job in js.items():
        assert job["stage"] in doc["stages"]
        branch = m.integration.branch if name == "integration" else \
            m.topics[name.split(":", 1)[1]].branch
        d = branch.replace("/", "_")
        assert job["script"] == [f"ci/run-branch {branch} $KTOPIC_CI_OPTIONS"]
        art = job["artifacts"]
        assert art["when"] == "always"
        assert art["reports"]["junit"] == f"out/{d}/junit.xml"
        assert f"out/{d}/" in art["paths"]
        cache = job["cache"]
        assert "/" not in cache["key"] and m.base.version in cache["key"]
        assert cache["paths"] == [".ktopic/ccache/"]
        for n in needs_of(job):
            assert n in js, f"{name} needs unknown job {n}"
            # A needed job is in an earlier stage (works on any GitLab).
            assert doc["stages"].index(js[n]["stage"]) < doc["stages"].index(job["stage"])
        assert all(n.get("artifacts") is False for n in job["needs"])
        assert re.fullmatch(r"(\d+h)?( ?\d+m)?", job["timeout"]) and job["timeout"]
    assert doc["variables"]["CCACHE_DIR"].endswith("/.ktopic/ccache")
    assert doc["variables"]["KTOPIC_CI_OPTIONS"]["value"] == ""
    assert doc["default"]["before_script"] == ["ci/deps --runner"]
    assert "timeout" not in doc["default"]          # each job has its own


def test_needs_follow_dependencies():
    m = fake_manifest({"a": [], "b": ["a"], "c": [], "d": ["b", "c"]})
    doc = yaml.safe_load(pipeline.render(m))
    check_structure(doc, m)
    js = jobs(doc)
    assert needs_of(js["topic:a"]) == [] and needs_of(js["topic:c"]) == []
    assert needs_of(js["topic:b"]) == ["topic:a"]
    assert needs_of(js["topic:d"]) == ["topic:b", "topic:c"]
    assert needs_of(js["integration"]) == ["topic:a", "topic:b", "topic:c", "topic:d"]
    assert doc["stages"] == ["topics", "topics-2", "topics-3", "integration"]
    assert [js[f"topic:{n}"]["stage"] for n in "abcd"] == ["topics", "topics-2", "topics", "topics-3"]


def test_independent_topics_share_one_stage():
    m = fake_manifest({"x": [], "y": []})
    doc = yaml.safe_load(pipeline.render(m))
    check_structure(doc, m)
    assert doc["stages"] == ["topics", "integration"]


def test_cache_keys():
    m = fake_manifest({"a": [], "b": ["a"]})
    js = jobs(yaml.safe_load(pipeline.render(m)))
    assert js["topic:a"]["cache"]["key"] == "ccache-6.1.192-topic_a"
    assert js["topic:a"]["cache"]["fallback_keys"] == ["ccache-6.1.192-for-next"]
    assert js["integration"]["cache"]["key"] == "ccache-6.1.192-for-next"
    assert "fallback_keys" not in js["integration"]["cache"]


def test_output_is_deterministic():
    m = fake_manifest({"a": [], "b": ["a"], "c": ["a"]})
    text = pipeline.render(m)
    assert text == pipeline.render(fake_manifest({"a": [], "b": ["a"], "c": ["a"]}))
    assert text.startswith("# GitLab CI pipeline")


def test_branch_names_are_shell_quoted():
    m = fake_manifest({"a": []}, integration="next$(id)")
    js = jobs(yaml.safe_load(pipeline.render(m)))
    assert js["integration"]["script"] == ["ci/run-branch 'next$(id)' $KTOPIC_CI_OPTIONS"]


def test_bad_dependencies_are_errors():
    with pytest.raises(KtopicError, match="cycle"):
        pipeline.build(fake_manifest({"a": ["b"], "b": ["a"]}))
    with pytest.raises(KtopicError, match="unknown topic 'z'"):
        pipeline.build(fake_manifest({"a": ["z"]}))


def test_colliding_output_directories_are_errors():
    m = fake_manifest({"a": []}, integration="topic_a")
    with pytest.raises(KtopicError, match="share"):
        pipeline.build(m)


def test_from_a_real_manifest_file():
    m = manifest.load(TINY)
    doc = yaml.safe_load(pipeline.render(m))
    check_structure(doc, m)
    js = jobs(doc)
    assert needs_of(js["topic:top"]) == ["topic:left", "topic:right"]
    assert js["topic:left"]["stage"] == js["topic:right"]["stage"] == "topics-2"
    assert js["topic:top"]["stage"] == "topics-3"


def test_project_manifest():
    m = manifest.load(REPO / "branches.yaml")
    doc = yaml.safe_load(pipeline.render(m))
    check_structure(doc, m)


# -------------------------------------------------------------- time-outs

def minutes(timeout: str) -> int:
    """GitLab's "2h 15m" in minutes."""
    h = re.search(r"(\d+)h", timeout)
    m = re.search(r"(\d+)m", timeout)
    return (int(h.group(1)) * 60 if h else 0) + (int(m.group(1)) if m else 0)


def mutants(root: Path, topic: str, n: int) -> None:
    d = root / "qemu" / "mutants" / topic
    d.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (d / f"{i + 1:04d}-bug.patch").write_text("Breaks: x\nCaught-by: y\n\ndiff --git a/x b/x\n")


def test_timeouts_follow_the_rule(tmp_path):
    """60 min, +3 per commit (the bisect walk), +3 per mutant, +20 per
    sanitizer variant, rounded up to 15 min; the integration job counts
    each variant of its topics once, and neither commits nor mutants."""
    mutants(tmp_path, "gated", 10)
    (tmp_path / "qemu" / "mutants" / "gated" / "README").write_text("not a mutant\n")
    mutants(tmp_path, "empty", 0)
    m = fake_manifest({"plain": [], "gated": [], "nomut": [], "empty": []}, root=tmp_path,
                      patches={"gated": 4, "nomut": 2, "empty": 1},
                      sanitizers={"gated": ["kcsan"], "nomut": ["kcsan"]})
    doc = yaml.safe_load(pipeline.render(m))
    check_structure(doc, m)
    got = {name: job["timeout"] for name, job in jobs(doc).items()}
    assert got == {
        "topic:plain": "1h",             # 60
        "topic:gated": "2h 15m",         # 60 + 4*3 + 10*3 + 20 = 122
        "topic:nomut": "1h 30m",         # 60 + 2*3 + 20 = 86
        "topic:empty": "1h 15m",         # 60 + 3 = 63
        "integration": "1h 30m",         # 60 + 20 (kcsan once) = 80
    }
    assert pipeline.job_minutes(0, 0, 0) == 60 and pipeline.job_minutes(0, 0, 1) == 90
    assert pipeline.job_minutes(5, 0, 0) == 75 and pipeline.job_minutes(0, 5, 0) == 75
    assert [pipeline.duration(x) for x in (45, 60, 135, 120)] == ["45m", "1h", "2h 15m", "2h"]


# The upper ends of what each piece of a job takes on a cold 2-core
# machine (minutes): deps and import, the base's and the branch's first
# build, the W=1/sparse passes, checkpatch and boots; an incremental build
# of a commit; a mutant's build and boot; a KCSAN variant's two builds and
# boots.
UPPER = {"fixed": 5 + 10 + 10 + 5 + 5, "commit": 2.5, "mutant": 2.5, "variant": 2 * 8 + 1}


def test_project_timeouts_cover_each_jobs_work():
    """Each job of the project's pipeline: the rule applied to its branch's
    patches, qemu/mutants/<topic>/ and sanitizers, and at least the upper
    ends of that work.  locking (4 commits, 10 mutants, KCSAN) needs more
    than the 1 h every job had."""
    m = manifest.load(REPO / "branches.yaml")
    js = jobs(yaml.safe_load(pipeline.render(m)))
    for name, t in m.topics.items():
        n_mut = len(list((REPO / "qemu" / "mutants" / name).glob("*.patch")))
        got = minutes(js[f"topic:{name}"]["timeout"])
        assert got == pipeline.job_minutes(len(t.patches), n_mut, len(t.sanitizers)), name
        need = UPPER["fixed"] + UPPER["commit"] * len(t.patches) + \
            UPPER["mutant"] * n_mut + UPPER["variant"] * len(t.sanitizers)
        assert got >= need, (name, got, need)
    variants = {v for t in m.topics.values() for v in t.sanitizers}
    assert minutes(js["integration"]["timeout"]) >= UPPER["fixed"] + UPPER["variant"] * len(
        variants)
    assert minutes(js["topic:locking"]["timeout"]) > 60


# ------------------------------------------------- what a job runs: the main job

FAKE_KTOPIC = """\
import json, os, sys
with open(os.environ["FAKE_KTOPIC_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
sys.exit(int(os.environ["FAKE_KTOPIC_STATUS"]) if "ci" in sys.argv else 0)
"""


def run_branch(tmp_path: Path, *args: str, status: int = 0):
    """ci/run-branch ARGS in a copy of ci/ whose tools/bin/ktopic only
    records its arguments: (exit status, each ktopic call's arguments, top)."""
    top = tmp_path / "checkout"
    (top / "ci").mkdir(parents=True)
    (top / "tools" / "bin").mkdir(parents=True)
    shutil.copy2(REPO / "ci" / "run-branch", top / "ci" / "run-branch")
    (top / "tools" / "bin" / "ktopic").write_text(FAKE_KTOPIC)
    log = tmp_path / "calls"
    p = subprocess.run([str(top / "ci" / "run-branch"), *args], capture_output=True, text=True,
                       env=dict(os.environ, FAKE_KTOPIC_LOG=str(log),
                                FAKE_KTOPIC_STATUS=str(status)))
    calls = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return p.returncode, calls, top


def main_job_ci_options() -> list[str]:
    """The options the Makefile's main job gives `ktopic ci` (`make -n main`)."""
    out = subprocess.run(["make", "-n", "-s", "-C", str(REPO), "main"], capture_output=True,
                         text=True, check=True).stdout
    words = [shlex.split(x) for x in out.splitlines() if x.strip()]
    ci = [w for w in words if len(w) > 2 and w[1].endswith("tools/bin/ktopic") and w[2] == "ci"]
    assert len(ci) == 1, out
    return ci[0][3:]


def test_a_job_runs_the_main_jobs_ktopic_ci_on_its_branch(tmp_path):
    """The script of every job, ci/run-branch BRANCH, gives `ktopic ci` the
    options the main job gives it (--main-job: runner/options.py says which
    gates), after import-base and generate."""
    main = main_job_ci_options()
    status, calls, top = run_branch(tmp_path, "topic/locking")
    assert status == 0
    manifest_arg = ["-m", str(top / "branches.yaml")]
    assert calls[:2] == [manifest_arg + ["import-base"], manifest_arg + ["generate"]]
    ci = calls[2]
    assert ci[:5] == manifest_arg + ["ci", "topic/locking", "-o"] and ci[5] == str(top / "out")
    assert ci[6:] == main
    assert len(calls) == 3
    # Both name the gates by the one definition, not by a list each.
    assert main == ["--main-job"]


def test_a_jobs_extra_options_follow_and_its_status_is_cis(tmp_path):
    """$KTOPIC_CI_OPTIONS (--gates-only: `ktopic ci --main-job --gates-only`
    leaves out the gates that build, test_mainjob.py) comes after the main
    job's options; a failing branch fails the job."""
    status, calls, _ = run_branch(tmp_path, "for-next", "--gates-only", status=1)
    assert status == 1
    assert calls[-1][2:4] == ["ci", "for-next"] and calls[-1][-2:] == ["--main-job",
                                                                       "--gates-only"]


# ------------------------------------------------------------------- CLI

def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("-m", "--manifest", type=Path, default=TINY)
    p.add_argument("-w", "--workdir", type=Path, default=None)      # as cli.parser() has it
    cmd_pipeline.register(p.add_subparsers(dest="command"))
    return p.parse_args(argv)


def test_command_writes_and_checks(tmp_path, capsys):
    out = tmp_path / "ci.yml"
    args = parse(["pipeline", "-o", str(out)])
    assert args.func(args) == 0
    text = out.read_text()
    assert "from manifest.yaml" in text
    check_structure(yaml.safe_load(text), manifest.load(TINY))

    args = parse(["pipeline", "-o", str(out), "--check"])
    assert args.func(args) == 0
    out.write_text(text.replace("topics-3", "topics-9"))
    with pytest.raises(Failure, match="not up to date"):
        args.func(args)


def test_command_to_stdout(capsys):
    args = parse(["pipeline", "-o", "-"])
    assert args.func(args) == 0
    assert "topic:core:" in capsys.readouterr().out
