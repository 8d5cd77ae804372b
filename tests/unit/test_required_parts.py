"""Under `make test` and with CI=true a test that skips for a missing part
fails, naming it; run by hand it skips; tests marked optional may skip
anywhere.  Shown on a machine without chromium (hidden from PATH), with the
pytest command `make test` runs, and on one without b4 with the command of
`make check` (taken from `make -n`, so the Makefile's settings are what is
tested)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import REPO, path_without

CHROMIUM_TESTS = "tests/e2e/test_report_chromium.py"


def make_test_command(tests: str, target: str = "test", var: str = "TESTS") -> str:
    out = subprocess.run(["make", "-n", "-s", "-C", str(REPO), target, f"{var}={tests}"],
                         capture_output=True, text=True, check=True).stdout
    [cmd] = [ln for ln in out.splitlines() if " pytest " in ln]
    return cmd


def run(cmd: str, tmp_path: Path, without: str = "chromium", **env: str
        ) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("CI", "KTOPIC_TEST_STRICT")}
    e.update(PATH=path_without(tmp_path / "bin", without), HOME=str(tmp_path),
             PYTEST_ADDOPTS=f"-p no:cacheprovider --basetemp={tmp_path / 'basetemp'}", **env)
    return subprocess.run(["sh", "-c", cmd], cwd=REPO, env=e, capture_output=True, text=True,
                          timeout=600)


def missing_lines(p: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in p.stdout.splitlines() if ln.startswith("MISSING ")]


def test_make_test_without_chromium_fails_saying_so(tmp_path):
    p = run(make_test_command(CHROMIUM_TESTS), tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert missing_lines(p) == [
        "MISSING chromium: no headless Chromium on PATH (apt-get install chromium; make deps)"
        " (3 tests)"], p.stdout
    assert " passed" not in p.stdout and " skipped" not in p.stdout, p.stdout


def test_ci_true_fails_too(tmp_path):
    cmd = f"/usr/bin/python3 -m pytest -c tests/pytest.ini --rootdir=tests -q {CHROMIUM_TESTS}"
    p = run(cmd, tmp_path, CI="true")
    assert p.returncode == 1 and len(missing_lines(p)) == 1, p.stdout + p.stderr


def test_by_hand_it_skips_saying_why(tmp_path):
    cmd = f"/usr/bin/python3 -m pytest -c tests/pytest.ini --rootdir=tests -q -rs {CHROMIUM_TESTS}"
    p = run(cmd, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3 skipped" in p.stdout and "missing chromium" in p.stdout and not missing_lines(p)


def test_optional_variant_may_skip_strict(tmp_path):
    """A test marked optional skips even under make test; an unmarked one
    whose fixture skips fails, with the fixture's reason."""
    t = tmp_path / "tests"
    t.mkdir()
    (t / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text().replace(
        'REPO = Path(__file__).resolve().parents[1]', f'REPO = Path({str(REPO)!r})'))
    (t / "pytest.ini").write_text((REPO / "tests" / "pytest.ini").read_text())
    (t / "test_x.py").write_text(
        "import pytest\nfrom conftest import missing\n\n"
        "@pytest.fixture\ndef part():\n    missing('frobnicator', 'apt-get install frob')\n\n"
        "def test_needs_part(part):\n    pass\n\n"
        "@pytest.mark.optional\n@pytest.mark.skipif(True, reason='FROB=1 runs it')\n"
        "def test_variant():\n    pass\n\n"
        "def test_plain():\n    pass\n")
    p = run(f"/usr/bin/python3 -m pytest -c {t}/pytest.ini --rootdir={t} -q {t}/test_x.py",
            tmp_path, KTOPIC_TEST_STRICT="1")
    assert p.returncode == 1, p.stdout + p.stderr
    assert missing_lines(p) == ["MISSING frobnicator: apt-get install frob (1 test)"], p.stdout
    assert "1 passed, 1 skipped, 1 error" in p.stdout, p.stdout


B4_TESTS = "tests/unit/send/test_mail_output.py"


def test_make_check_by_hand_skips_a_missing_part_and_ci_fails(tmp_path):
    """`make check` is the command a maintainer types: a missing b4 skips
    the tests that need it, saying why, and the run passes; the same
    command with CI=true fails, naming b4."""
    cmd = make_test_command(B4_TESTS, "check", "CHECK_TESTS") + " -rs"
    p = run(cmd, tmp_path, without="b4")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "5 skipped" in p.stdout and "missing b4" in p.stdout, p.stdout
    assert not missing_lines(p) and " failed" not in p.stdout, p.stdout
    p = run(cmd, tmp_path, without="b4", CI="true")
    assert p.returncode == 1, p.stdout + p.stderr
    assert missing_lines(p) == ["MISSING b4: apt-get install b4 (make deps) (5 tests)"], p.stdout
