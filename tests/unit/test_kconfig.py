"""ktopic.kernel.kconfig: fragments, the did-not-stick check, hashes (no kernel tree needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from ktopic.kernel import kconfig  # noqa: E402
from ktopic.errors import KtopicError  # noqa: E402


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_parse_fragment():
    v = kconfig.parse_fragment("# comment\nCONFIG_A=y\n\n# CONFIG_B is not set\n"
                               'CONFIG_C="x y"\nCONFIG_D=m\n')
    assert v == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": '"x y"', "CONFIG_D": "m"}


def test_bad_line_names_file_and_line(tmp_path):
    f = write(tmp_path, "t.config", "CONFIG_A=y\nCONFIG_B y\n")
    with pytest.raises(KtopicError) as e:
        kconfig.requested_values([f])
    assert e.value.line == 2 and str(f) in str(e.value)


def test_later_fragments_win(tmp_path):
    a = write(tmp_path, "a.config", "CONFIG_A=y\nCONFIG_B=y\n")
    b = write(tmp_path, "b.config", "# CONFIG_B is not set\nCONFIG_C=m\n")
    assert kconfig.requested_values([a, b]) == {"CONFIG_A": "y", "CONFIG_B": "n",
                                                "CONFIG_C": "m"}


def test_check_names_every_value_that_did_not_stick():
    req = {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": "m", "CONFIG_D": "y", "CONFIG_E": "n"}
    actual = {"CONFIG_A": "y", "CONFIG_B": "y", "CONFIG_C": "y"}
    missing = kconfig.check_values(req, actual)
    assert missing == ["CONFIG_B=n (got: y)", "CONFIG_C=m (got: y)",
                       "CONFIG_D=y (got: not set)"]


def test_fragment_hash_ignores_comments_not_values(tmp_path):
    a = write(tmp_path, "a.config", "# one\nCONFIG_A=y\n")
    a2 = write(tmp_path, "a2.config", "CONFIG_A=y\n# other comment\n")
    b = write(tmp_path, "b.config", "CONFIG_A=m\n")
    assert kconfig.fragment_hash([a]) == kconfig.fragment_hash([a2])
    assert kconfig.fragment_hash([a]) != kconfig.fragment_hash([b])


def test_repository_fragments_parse():
    for f in sorted((REPO / "qemu" / "configs").glob("*.config")):
        assert kconfig.requested_values([f]), f
    base = kconfig.requested_values([REPO / "qemu/configs/base.config"])
    for opt in ("CONFIG_SMP", "CONFIG_ACPI", "CONFIG_KUNIT", "CONFIG_PROVE_LOCKING",
                "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_LIST", "CONFIG_MODULES",
                "CONFIG_DEVTMPFS", "CONFIG_SERIAL_8250_CONSOLE", "CONFIG_BLK_DEV_INITRD"):
        assert base.get(opt) == "y", opt
    kasan = kconfig.requested_values([REPO / "qemu/configs/kasan.config"])
    assert kasan["CONFIG_KASAN"] == "y"


def test_missing_fragment_is_bad_input(tmp_path):
    with pytest.raises(KtopicError, match="cannot read"):
        kconfig.requested_values([tmp_path / "nope.config"])
