"""The check an upstream entry records (upstream_detect.find_check) names
a line the patch's own code adds, a function's signature or an export,
when the patch adds one the new base has: not a Kconfig help text or a
comment, which shows that something arrived, not the helper."""

from __future__ import annotations

import re

import pytest

from conftest import git_in
from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.patchfile import parse
from ktopic.branches import upstream_detect

OLD = {
    "lib/Kconfig": "config CRC\n\tbool\n",
    "lib/helper.c": "#include <linux/kernel.h>\n\nint other(void)\n{\n\treturn 1;\n}\n",
    "include/linux/helper.h": "#ifndef _HELPER_H\n#define _HELPER_H\n#endif\n",
}
KCONFIG_ADD = ("config HELPER_KUNIT_TEST\n\ttristate \"KUnit tests for the helper\" if !KUNIT_ALL_TESTS\n"
               "\tdepends on KUNIT\n\thelp\n\t  This builds the KUnit tests of the helper functions "
               "that take an inode and a second inode together.\n")
C_ADD = ("\n/* Insert two inodes at once, for the filesystems that need it. */\n"
         "int insert_two(struct inode *a, struct inode *b)\n{\n\treturn other();\n}\n"
         "EXPORT_SYMBOL(insert_two);\n")
H_ADD = "int insert_two(struct inode *a, struct inode *b);\n"


def _repo(tmp_path, new_files: dict):
    work = tmp_path / "w"
    work.mkdir()
    for name, text in OLD.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git_in(work, "init", "-q")
    git_in(work, "add", "-f", "-A")
    git_in(work, "commit", "-q", "-m", "old")
    for name, text in new_files.items():
        (work / name).write_text(text)
    git_in(work, "add", "-f", "-A")
    git_in(work, "commit", "-q", "-m", "helper: insert two\n\nWhy: a test.")
    (tmp_path / "p.patch").write_text(git_in(work, "format-patch", "--stdout", "-1"))
    return Git(work / ".git"), parse(tmp_path / "p.patch")


@pytest.mark.parametrize("with_header", [False, True])
def test_the_check_names_the_patch_code(tmp_path, with_header):
    files = {"lib/Kconfig": OLD["lib/Kconfig"] + KCONFIG_ADD,
             "lib/helper.c": OLD["lib/helper.c"] + C_ADD}
    if with_header:
        files["include/linux/helper.h"] = OLD["include/linux/helper.h"].replace(
            "#endif", H_ADD + "#endif")
    git, p = _repo(tmp_path, files)
    check = upstream_detect.find_check(git, p, "HEAD~1", "HEAD")
    assert check is not None
    assert "contains" in check and check["file"] != "lib/Kconfig", check
    assert re.search(r"insert_two", check["contains"]), check


def test_a_kconfig_line_when_the_patch_adds_no_code(tmp_path):
    git, p = _repo(tmp_path, {"lib/Kconfig": OLD["lib/Kconfig"] + KCONFIG_ADD})
    check = upstream_detect.find_check(git, p, "HEAD~1", "HEAD")
    assert check["file"] == "lib/Kconfig", check
