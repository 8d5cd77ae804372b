"""A KCSAN report of for-next+kcsan, followed up (runner/followup.py,
runner/locate.py) without a kernel: a report in a topic's file builds
that topic under KCSAN, one in no topic's file the base; each a row of
the report marked as the attribution, cached as a topic's own run
caches it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(Path(__file__).parent))

from ktopic.model import results as R  # noqa: E402
from ktopic.report import report as rep  # noqa: E402

from test_kcsan_plan import _seed, race, rows, world  # noqa: E402,F401  (fixtures)
from test_ktap import parser  # noqa: E402,F401  (fixture)


@pytest.mark.parametrize("tiers", [True, False])
def test_a_report_in_a_topics_file_builds_that_topic_under_kcsan(world, capsys, tiers):  # noqa: F811
    world.races["for-next-kcsan"] = world.races["topic_a-kcsan"] = race("a_race", "a_race")
    report = world.run(live=True, tiers=tiers)
    assert world.built[-2:] == ["for-next-kcsan", "topic_a-kcsan"]
    assert "base-kcsan" not in world.built and "topic_b-kcsan" not in world.built
    assert "kcsan: report in lib/a.c -> topic/a+kcsan\n" in capsys.readouterr().out
    # Seeded from the one KCSAN build there is, not from an empty directory.
    assert world.seeded["topic_a-kcsan"] == "for-next-kcsan"
    r = rows(report)
    assert list(r)[-2:] == ["for-next+kcsan", "topic/a+kcsan"]
    f = r["for-next+kcsan"].followups
    assert [(x["branch"], x["topic"], x["files"], x["shows"]) for x in f] == [
        ("topic/a+kcsan", "a", ["lib/a.c"], True)]
    assert r["topic/a+kcsan"].follows["branch"] == "for-next+kcsan"
    assert not r["for-next+kcsan"].ok and not r["topic/a+kcsan"].ok
    line = ("for-next+kcsan: kcsan report in lib/a.c: topic/a+kcsan shows it too: "
            "topic/a carries it")
    assert line in rep.failure_lines(report)
    saved = R.Report.from_json((world.out / "report.json").read_text())
    assert rows(saved)["topic/a+kcsan"].follows == r["topic/a+kcsan"].follows
    junit = (world.out / "for-next+kcsan" / "junit.xml").read_text()
    assert "topic/a+kcsan shows it too: topic/a carries it" in junit
    assert "attributes for-next+kcsan's kcsan report" in \
        (world.out / "topic_a+kcsan" / "junit.xml").read_text()
    html = (world.out / "index.html").read_text()
    assert 'href="#b-topic_a+kcsan">kcsan: carried by topic/a</a>' in html
    assert "(attributes for-next+kcsan&#x27;s kcsan report)" in html


@pytest.mark.parametrize("base_shows", [True, False])
def test_a_report_in_no_topics_file_builds_the_base_under_kcsan(world, capsys, base_shows):  # noqa: F811
    world.races["for-next-kcsan"] = race("base_fn", "base_fn")
    if base_shows:
        world.races["base-kcsan"] = race("base_fn", "base_fn")
    report = world.run(live=True, tiers=True)
    assert world.built[-2:] == ["for-next-kcsan", "base-kcsan"]
    assert not any(b.endswith("-kcsan") for b in world.built[:-2])
    assert "kcsan: report in kernel/base.c -> base+kcsan (no topic touches it)\n" in \
        capsys.readouterr().out
    r = rows(report)
    assert [(x["branch"], x["shows"]) for x in r["for-next+kcsan"].followups] == [
        ("base+kcsan", base_shows)]
    # The base's report is the base's, as when base+kcsan ran first: its
    # row fails until the report is allow-listed, for-next+kcsan's does not.
    assert r["for-next+kcsan"].ok == base_shows == (not r["base+kcsan"].ok)
    assert not report.ok
    lines = rep.failure_lines(report)
    if base_shows:
        assert ("for-next+kcsan: kcsan report in kernel/base.c: base+kcsan shows it too: it is "
                "the base's (6.1's own), to be allow-listed in qemu/allowlist.yaml "
                "(kind: kcsan)") in lines
    else:
        assert ("for-next+kcsan: kcsan report in kernel/base.c: no topic touches it, and "
                "base+kcsan does not show it") in lines


def test_a_follow_up_takes_the_topics_cached_result(world):  # noqa: F811
    """A follow-up is the topic's own target under the variant: the same
    content key, so the result a topic's own run left is reused."""
    world.races["for-next-kcsan"] = world.races["topic_a-kcsan"] = race("a_race", "a_race")
    world.run(["a"])
    world.built.clear()
    report = world.run(tiers=True)
    assert "topic_a-kcsan" not in world.built and world.built[-1] == "for-next-kcsan"
    a = rows(report)["topic/a+kcsan"]
    assert a.stage("build").status == R.CACHED and a.follows["shows"]
