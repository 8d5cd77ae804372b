"""The gate that keeps main green: every topic in the manifest's tested set
(and the integration branch, once every topic is tested) is generated,
built, booted and passes its tests on the real packaged tree."""

import subprocess
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
from ktopic.model import manifest  # noqa: E402

pytestmark = pytest.mark.e2e


def branches_to_test() -> list[str]:
    m = manifest.load(REPO / "branches.yaml")
    branches = [t.branch for t in m.topics.values() if t.tested]
    if all(t.tested for t in m.topics.values()):
        branches.append(m.integration.branch)
    return branches


def test_tested_topics_pass():
    branches = branches_to_test()
    if not branches:
        pytest.skip("no topic is in the tested set yet")
    ktopic = [sys.executable, str(REPO / "tools/bin/ktopic")]
    for step in (["import-base"], ["generate"]):
        r = subprocess.run(ktopic + step, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    # The KCSAN variants are a second kernel per declared topic: the main
    # job runs them (and the mutation gate); here the plain kernels keep
    # main green within the test budget.
    r = subprocess.run(ktopic + ["ci", "--no-sanitizers", *branches], capture_output=True, text=True)
    tail = "\n".join((r.stdout + r.stderr).splitlines()[-40:])
    assert r.returncode == 0, f"ktopic ci --no-sanitizers {' '.join(branches)} failed; see out/index.html\n{tail}"
