"""tools/bench/house_figures.py: how it counts lines and long functions,
and that it reads a commit out of git, not the working tree."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools" / "bench"))

import house_figures as hf  # noqa: E402

MODULE = textwrap.dedent('''\
    """A module.

    Two more lines."""
    # a comment line
    import os  # a trailing comment: still code


    class C:
        """One line."""

        def f(self):
            x = 1
            # inside
            return x
    ''')


def test_each_line_counts_once():
    kinds = hf.line_kinds(MODULE)
    assert (kinds["doc"], kinds["comment"], kinds["code"]) == (4, 2, 5)


def test_long_functions_by_their_qualified_name():
    assert hf.long_functions("tools/ktopic/m.py", MODULE, 3) == [(4, "m.py:C.f")]
    assert hf.long_functions("tools/ktopic/m.py", MODULE, 4) == []


def test_package_of_a_path():
    assert hf.package("tools/ktopic/gates/check.py") == "gates"
    assert hf.package("tools/ktopic/cli.py") == "(top)"


def test_figures_come_from_the_commit(tmp_path):
    def git(*a):
        subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True,
                       env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
                            "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
                            "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"})
    pkg = tmp_path / "tools" / "ktopic" / "model"
    pkg.mkdir(parents=True)
    (pkg / "m.py").write_text(MODULE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "one")
    (pkg / "m.py").write_text("y = 2\n")          # not committed: not counted
    assert hf.sources("HEAD", str(tmp_path)) == {"tools/ktopic/model/m.py": MODULE}
    figs = hf.figures("HEAD", 3, 3, str(tmp_path))
    assert figs["packages"]["model"]["code"] == 5
    assert figs["long_model"] == [(4, "model/m.py:C.f")]
    assert hf.touched(["HEAD"], str(tmp_path)) == ["tools/ktopic/model/m.py"]
    assert hf.touched(["HEAD"], str(tmp_path), word="TWO MORE") == ["tools/ktopic/model/m.py"]
    assert hf.touched(["HEAD"], str(tmp_path), word="nowhere") == []
