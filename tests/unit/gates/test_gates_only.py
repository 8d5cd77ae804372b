"""ktopic ci --gates-only: generate and the gates, no kernel build, boot or
test, and nothing cached that a full run would take for its own."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(Path(__file__).parent))

from ktopic.model.results import PASS, SKIP  # noqa: E402

from test_ci import console, run_all, world  # noqa: E402,F401  (fixture)
from test_ktap import parser  # noqa: E402,F401  (fixture)


def test_gates_only_builds_and_boots_nothing(world):  # noqa: F811
    w = world
    w.consoles.update({"base": console(), "topic_a": console()})
    res = run_all(w, w.runner(build=False), "a")
    assert w.calls == {"build": [], "boot": []}
    a = res["a"]
    assert [(s.stage, s.status) for s in a.stages] == [
        ("generate", PASS), ("build", SKIP), ("boot", SKIP), ("test", SKIP)]
    assert all(s.summary == "gates only" for s in a.stages[1:])
    assert a.ok and a.head
    # Nothing was cached: the next full run builds and boots both.
    full = run_all(w, w.runner(), "a")
    assert w.calls["build"] and w.calls["boot"] == ["base", "topic_a"]
    assert full["a"].stage("build").status == PASS


def test_gates_only_without_gates_is_an_error(tmp_path, capsys):
    from ktopic import cli
    status = cli.main(["-w", str(tmp_path), "ci", "--gates-only", "--no-check"])
    assert status == 2
    assert "nothing to run" in capsys.readouterr().err
