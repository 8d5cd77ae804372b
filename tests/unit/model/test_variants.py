"""Build variants as data (model/variants.py, qemu/variants.yaml): a new
variant is a config fragment and a table row, and every part of ktopic
that knows variants learns it from there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
sys.path.insert(0, str(REPO / "tools"))

from ktopic.errors import KtopicError  # noqa: E402
from ktopic.kernel import console_scan  # noqa: E402
from ktopic.model import targets as T  # noqa: E402
from ktopic.model import variants  # noqa: E402
from ktopic.runner import cachekeys  # noqa: E402
from ktopic.runner.options import Options  # noqa: E402

from conftest import variants_table  # noqa: E402
from test_ci import manifest, topic  # noqa: E402


def test_the_projects_variants():
    table = variants.load(REPO / "qemu")
    assert list(table) == ["kasan", "kcsan", "ubsan"]
    for v in table.values():
        assert v.config.is_file(), v
    assert table["kcsan"].excludes == ("kasan",) and table["ubsan"].slowdown == 1.5


def test_a_new_variant_is_a_row_and_a_config(tmp_path):
    q = variants_table(tmp_path / "qemu")
    (q / "configs").mkdir()
    (q / "init").mkdir()
    for name in ("base", "msan"):
        (q / "configs" / f"{name}.config").write_text(f"CONFIG_{name.upper()}=y\n")
    (q / "variants.yaml").write_text((q / "variants.yaml").read_text() + "msan:\n  slowdown: 2\n")
    m = manifest(tmp_path, [topic("a", sanitizers=["msan"])])
    ts = T.targets_from_manifest(m, q, sanitizers=True)
    assert [t.branch for t in ts if t.variant] == ["base+msan", "topic/a+msan", "for-next+msan"]
    whole = T.targets_from_manifest(m, q, "msan")
    assert all(t.fragments[-1] == q / "configs" / "msan.config" for t in whole)
    assert variants.slowdown(q, "msan") == 2.0 and variants.slowdown(q, "") == 1.0
    # Its own cache keys and build directories.
    plain = T.targets_from_manifest(m, q)
    for t in plain + whole:
        t.tree = "t" * 40
        cachekeys.compute_keys(t, q, Options())
    assert {t.key for t in plain}.isdisjoint({t.key for t in whole})


def test_a_bad_table_is_one_line(tmp_path):
    (tmp_path / "variants.yaml").write_text("ubsan:\n  slowness: 2\n")
    with pytest.raises(KtopicError, match=r"variant 'ubsan': takes slowdown and excludes"):
        variants.load(tmp_path)


def test_the_manifest_takes_the_names_from_the_table(tmp_path):
    from test_harness import _add_to_fs, project
    from ktopic.model import manifest as M
    root = project(tmp_path, _add_to_fs("    sanitizers: [ubsan]\n"))
    assert M.load(root / "branches.yaml", workdir=tmp_path / "w").topics["fs"].sanitizers == \
        ["ubsan"]
    (root / "qemu" / "variants.yaml").write_text("kcsan: {}\n")
    with pytest.raises(KtopicError, match="sanitizers"):
        M.load(root / "branches.yaml", workdir=tmp_path / "w")
    # The schema names no variant of its own: without a table, none is known.
    (root / "qemu" / "variants.yaml").unlink()
    with pytest.raises(KtopicError, match="sanitizers"):
        M.load(root / "branches.yaml", workdir=tmp_path / "w")


def test_ubsan_reports_are_a_finding_of_their_own(tmp_path):
    log = tmp_path / "console.log"
    log.write_text("[    1.0] ================================================================"
                   "================\n[    1.0] UBSAN: shift-out-of-bounds in kernel/locking/"
                   "six.c:120:9\n[    1.0] shift exponent 40 is too large for 32-bit type 'int'\n")
    assert [f.kind for f in console_scan.scan_text(console_scan.read(log))] == ["ubsan"]
