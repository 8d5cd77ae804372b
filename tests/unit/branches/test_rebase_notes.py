"""A patch's notes (the lines between the `---` that ends its message and
a second `---` before the diffstat: test figures, history) survive every
path of `ktopic rebase`: a clean apply, a three-way merge, a conflict
resolved by hand and `--continue`, and a conflict rerere resolves.  In
the patch file and in the commit, as generate keeps them."""

import pytest

from test_rebase import P2, newer, rebase, resolve

NOTE = ("Tested: counter_30() returns 300 on a boot of the test kernel,\n"
        "1000 calls in 0.2 ms (QEMU TCG).\n")


def _with_note(project, ktopic) -> str:
    path = project.root / "patches/counters" / P2
    text = path.read_text()
    assert text.count("\n---\n") == 1
    text = text.replace("\n---\n", "\n---\n" + NOTE + "---\n", 1)
    path.write_text(text)
    r = ktopic(*project.args("generate"))
    assert r.status == 0, r
    return text


def _kept(project) -> None:
    text = (project.root / "patches/counters" / P2).read_text()
    assert "\n---\n" + NOTE + "---\n" in text, text
    body = project.git("log", "-1", "--format=%B", "topic/counters")
    assert "---\n" + NOTE in body, body


CASES = {
    "applied": [("README", "Linux kernel\n", "Linux kernel, newer\n")],
    "3-way": [("lib/counter.c", "return 32;", "return 3200;")],
}


@pytest.mark.parametrize("outcome", sorted(CASES))
def test_notes_kept_when_the_patch_applies(generated, ktopic, tmp_path, outcome):
    _with_note(generated, ktopic)
    r = rebase(ktopic, generated, newer(tmp_path, outcome, CASES[outcome]))
    assert r.status == 0, r
    assert f"{P2}" in r.out and outcome in r.out, r
    _kept(generated)


def _conflict(generated, ktopic, tmp_path):
    _with_note(generated, ktopic)
    tb = newer(tmp_path, "conflict", [("lib/counter.c", "return 30;", "return 31;")])
    r = rebase(ktopic, generated, tb)
    assert r.status == 1, r
    return tb, generated.workdir / "rebase" / "wt-counters"


def test_notes_kept_through_a_hand_resolution(generated, ktopic, tmp_path):
    _, wt = _conflict(generated, ktopic, tmp_path)
    resolve(wt, "310")
    c = ktopic(*generated.args("rebase", "--continue"))
    assert c.status == 0, c
    assert "return 310;" in generated.git("show", "topic/counters:lib/counter.c")
    _kept(generated)


def test_notes_kept_through_rerere(generated, ktopic, tmp_path):
    tb, wt = _conflict(generated, ktopic, tmp_path)
    resolve(wt, "320", add=False)
    assert ktopic(*generated.args("rebase", "--abort")).status == 0
    r = rebase(ktopic, generated, tb)
    assert r.status == 1 and "resolved by rerere" in r.out, r
    c = ktopic(*generated.args("rebase", "--continue"))
    assert c.status == 0, c
    assert "return 320;" in generated.git("show", "topic/counters:lib/counter.c")
    _kept(generated)
