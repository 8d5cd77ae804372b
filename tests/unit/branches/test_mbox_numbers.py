"""import-mbox and the numbers of [PATCH vR n/N]: a part or a total beyond
what a series can be, or a revision of thousands of digits, is refused in
one line naming the mbox and the mail, in milliseconds and without the
memory a list of every part would take."""

from __future__ import annotations

import resource
import time

import pytest

from conftest import TREE, make_patch
from ktopic.branches import mbox


@pytest.fixture(scope="module")
def mail(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("numbers")
    tree = dict(TREE, **{"lib/names.c": TREE["lib/names.c"].replace('"n7"', '"seven"')})
    return make_patch(tmp, tree, [("lib/names.c", '"n1"', '"one"')], "lib/names: one",
                      "Thu, 3 Dec 2026 07:01:00 +0000")


BIG = {
    "total-of-12-digits": ("[PATCH 1/100000000000]", "patch 1 of 100000000000"),
    "total-of-20-digits": ("[PATCH 99999999999999999999/99999999999999999999]",
                           "patch 99999999999999999999 of 99999999999999999999"),
    "total-of-5000-digits": ("[PATCH 1/" + "9" * 5000 + "]", "patch 1 of <5000 digits>"),
    "part-of-5000-digits": ("[PATCH " + "9" * 5000 + "/3]", "patch <5000 digits> of 3"),
    "revision-of-5000-digits": ("[PATCH v" + "9" * 5000 + " 1/1]", "revision v<5000 digits>"),
    "revision-of-5-digits": ("[PATCH v10000 1/1]", "revision v10000"),
    "total-of-10000": ("[PATCH 1/10000]", "patch 1 of 10000"),
}


@pytest.mark.parametrize("kind", BIG)
def test_numbers_beyond_a_series_are_refused(generated, ktopic, tmp_path, mail, kind):
    prefix, said = BIG[kind]
    box = tmp_path / "big.mbox"
    box.write_text(mail.replace("[PATCH]", prefix, 1))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    r = ktopic(*generated.args("import-mbox", str(box), "--topic", "names"))
    assert time.monotonic() - t0 < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000   # KiB
    assert r.status == 2, r
    limit = "at most v9999" if "revision" in kind else "at most 9999 patches"
    assert r.err == f"ktopic: {box}: mail 1: {said}: out of range ({limit})\n", r


def test_zero_padded_numbers_are_numbers(generated, ktopic, tmp_path, mail):
    """git format-patch pads the part to the width of the total: 01/12."""
    box = tmp_path / "padded.mbox"
    box.write_text(mail.replace("[PATCH]", "[PATCH v02 0001/0001]", 1))
    r = ktopic(*generated.args("import-mbox", str(box), "--topic", "names"))
    assert r.status == 0, r


def test_the_part_missing_is_found_without_listing_the_series(generated, ktopic, tmp_path,
                                                              mail, monkeypatch):
    box = tmp_path / "gap.mbox"
    box.write_text(mail.replace("[PATCH]", "[PATCH 2/9999]", 1))
    monkeypatch.setattr(mbox, "range", lambda *a: pytest.fail("range() over the series"),
                        raising=False)
    r = ktopic(*generated.args("import-mbox", str(box), "--topic", "names"))
    assert r.status == 2, r
    assert "patch 1/9999 of the series is missing" in r.err, r
