"""One whole job of the committed pipeline, run by gitlab-ci-local with the
shell executor on this machine, on a fresh copy of the checkout: ci/deps
--runner, then ci/run-branch importing the packaged tree into the job's own
work directory, generating, and running the gates (the --gates-only variant
of the job, through KTOPIC_CI_OPTIONS: no kernel build).  Then its exported
artifacts: junit.xml and report.json exist and parse, and say the branch
passed.  A few minutes, most of it the import."""

from __future__ import annotations

import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests"))

import gitlab_ci_local as glcl  # noqa: E402
from ktopic.model import results as R  # noqa: E402

pytestmark = pytest.mark.e2e

JOB, BRANCH, DIR = "topic:fs", "topic/fs", "topic_fs"


def test_one_job_runs_with_the_shell_executor(tmp_path):
    root = glcl.repository(tmp_path / "repo", glcl.checkout_files())
    try:
        r = glcl.run(root, "--force-shell-executor", "--timestamps",
                     # gitlab-ci-local gives a job with an image: the container's
                     # /builds/<group>/<project> as CI_PROJECT_DIR even when the
                     # shell executor runs it here; GitLab's shell runner gives
                     # the directory the job runs in, which this restores.
                     "--variable", f"CI_PROJECT_DIR={root}",
                     "--ignore-predefined-vars", "CI_PROJECT_DIR",
                     "--variable", "KTOPIC_CI_OPTIONS=--gates-only", JOB, timeout=1800)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-4000:]
        assert "PASS" in out and "$ ci/deps --runner" in out
        assert f"$ ci/run-branch {BRANCH} $KTOPIC_CI_OPTIONS" in out
        # The job's work directory was the checkout's .ktopic/ (the cache's parent).
        assert (root / ".ktopic" / "linux.git").is_dir()

        # What the job exported is what the pipeline declares, and parses.
        exported = list((root / ".gitlab-ci-local" / "artifacts").glob("*/out"))
        assert len(exported) == 1, exported
        art = exported[0].parent
        declared = yaml.safe_load((root / ".gitlab-ci.yml").read_text())[JOB]["artifacts"]
        for p in declared["paths"]:
            assert (art / p).exists(), p
        junit = ET.parse(art / declared["reports"]["junit"]).getroot()
        assert junit.tag == "testsuites" and junit.get("failures") == "0"
        suites = {s.get("name"): s for s in junit.iter("testsuite")}
        check = suites[f"{BRANCH} stage check"]
        assert check.get("tests") == "1" and check.get("failures") == "0"
        assert suites[f"{BRANCH} stage build"].get("skipped") == "1"
        report = R.Report.from_json((art / "out" / "report.json").read_text())
        fs = [b for b in report.branches if b.branch == BRANCH]
        assert len(fs) == 1 and fs[0].ok
        assert [(s.stage, s.status) for s in fs[0].stages] == [
            ("generate", R.PASS), ("check", R.PASS), ("build", R.SKIP), ("boot", R.SKIP),
            ("test", R.SKIP)]
        assert (art / "out" / DIR / "check.log").is_file()
    finally:
        # The job's imported tree is a few hundred MB.
        shutil.rmtree(root / ".ktopic", ignore_errors=True)
