"""ktopic.kernel.kconfig: fragments, the did-not-stick check, hashes, when
configure may keep a .config (no kernel tree needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO  # noqa: E402  (the checkout, wherever this file sits)
from conftest import needs_gcc, needs_make  # noqa: E402
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


# A tree whose config targets only record that they ran: allnoconfig copies
# the merged fragments, as the kernel's would settle them.
FAKE_MAKEFILE = """\
allnoconfig:
\tcp $(KCONFIG_ALLCONFIG) $(O)/.config
\techo allnoconfig >> $(O)/calls
olddefconfig:
\techo olddefconfig >> $(O)/calls
"""
FAKE_MERGE = 'shift 3; cat "$@" > "$KCONFIG_CONFIG"\n'


@needs_make
@needs_gcc
def test_configure_keeps_a_config_whose_inputs_are_unchanged(tmp_path):
    """Every build used to run allnoconfig and olddefconfig, and make then
    ran syncconfig for the rewritten .config: Kconfig's compiler tests each
    time.  A .config is kept when the fragments, every file of the tree
    but its sources, and the tools are those it was made from, and it was
    not edited since."""
    src, out = tmp_path / "src", tmp_path / "out"
    (src / "scripts/kconfig").mkdir(parents=True)
    (src / "Makefile").write_text(FAKE_MAKEFILE)
    (src / "scripts/kconfig/merge_config.sh").write_text(FAKE_MERGE)
    (src / "Kconfig").write_text("config A\n\tbool\n")
    (src / "a.c").write_text("int a;\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e.org")

    def commit(msg):
        for cmd in (["add", "-A"], ["commit", "-qm", msg]):
            subprocess.run(["git", "-C", str(src), *cmd], check=True, env=env)
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    commit("tree")
    frag = write(tmp_path, "frag.config", "CONFIG_A=y\n")

    def configure(fragment=frag):
        r = kconfig.configure(kconfig.ConfigRequest(src=src, out=out, fragments=[fragment]))
        assert r.ok
        return (out / "calls").read_text().count("olddefconfig")
    assert configure() == 1
    assert configure() == 1                      # nothing changed: kept
    (src / "a.c").write_text("int a = 1;\n")     # a source only: kept
    commit("source")
    assert configure() == 1
    (src / "Kconfig").write_text("config A\n\tbool \"A\"\n")
    commit("Kconfig")
    assert configure() == 2
    assert configure(write(tmp_path, "other.config", "CONFIG_A=y\nCONFIG_B=y\n")) == 3
    assert configure() == 4
    (out / ".config").write_text("CONFIG_A=y\nCONFIG_C=y\n")   # edited by hand
    assert configure() == 5
    (src / "Kconfig").write_text("config A\n\tbool \"B\"\n")  # not committed
    assert configure() == 6
    assert configure() == 7


def test_a_tree_inside_another_repository_is_always_configured(tmp_path):
    """git answers for the repository around a plain directory: its HEAD
    says nothing of the tree, so no key."""
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e.org")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "Kconfig").write_text("config A\n\tbool\n")
    for cmd in (["add", "-A"], ["commit", "-qm", "outer"]):
        subprocess.run(["git", "-C", str(tmp_path), *cmd], check=True, env=env)
    assert kconfig.inputs_key(tmp_path / "src", b"CONFIG_A=y\n", [], dict(os.environ)) == ""
