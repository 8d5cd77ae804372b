"""Unit tests use only their temporary directories: run some that load
manifests and import trees with HOME and the cache directory pointed at
empty directories, and nothing appears there."""

from __future__ import annotations

import os
import subprocess

from conftest import REPO


def _unit(*names: str) -> list[str]:
    """The unit test files of these names, wherever under tests/unit they are."""
    return [str(p.relative_to(REPO)) for n in names for p in REPO.glob(f"tests/unit/**/{n}")]


def test_unit_tests_write_nothing_outside_their_tmp(tmp_path, tmp_path_factory):
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KTOPIC_", "XDG_"))}
    # Its own base temporary directory: the default one, shared with every
    # other run, is where pytest removes old runs' directories on exit.
    basetemp = tmp_path_factory.mktemp("inner")
    env.update(HOME=str(home), XDG_CACHE_HOME=str(cache),
               PYTEST_ADDOPTS=f"-p no:cacheprovider --basetemp={basetemp}")
    p = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-c", "tests/pytest.ini",
                        "--rootdir=tests", "-q", *_unit("test_manifest_errors.py", "test_mail.py"),
                        "-k", "wrong-type or missing_manifest or bad_patch_file or test_targets"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert sorted(str(x.relative_to(tmp_path)) for x in tmp_path.rglob("*")) == ["cache", "home"]
