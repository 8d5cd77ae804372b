"""manifest_edit.set_patches on the project's own branches.yaml: a patch
taken out of a list leaves every other entry as it was written (layout,
folded reasons, anchors), except where an entry names an anchor that went
with the removed one."""

import difflib
import shutil

import pytest
import yaml

from conftest import REPO
from ktopic.model import manifest, manifest_edit


@pytest.fixture
def project(tmp_path):
    for d in ("patches", "qemu"):
        shutil.copytree(REPO / d, tmp_path / d)
    shutil.copy(REPO / "branches.yaml", tmp_path / "branches.yaml")
    return tmp_path / "branches.yaml"


def edit(path, topic, drop):
    m = manifest.load(path)
    before = path.read_text()
    entries = [p for p in yaml.safe_load(before)["topics"][topic]["patches"]
               if (p if isinstance(p, str) else p["file"]) != drop]
    manifest_edit.set_patches(m, topic, entries)
    after = path.read_text()
    changed = [ln for ln in difflib.unified_diff(before.splitlines(), after.splitlines(), n=0,
                                                 lineterm="")
               if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return entries, after, changed


def test_dropping_a_plain_entry_removes_its_line_only(project):
    _, _, changed = edit(project, "locking",
                         "0003-locking-locktorture-add-six_lock-and-six_lock_pcpu.patch")
    assert changed == ["-      - 0003-locking-locktorture-add-six_lock-and-six_lock_pcpu.patch"]


def test_dropping_the_entry_that_holds_an_anchor(project):
    entries, after, changed = edit(project, "locking",
                                   "0001-locking-six-add-SIX-locks-shared-intent-exclusive.patch")
    got = manifest.load(project).topics["locking"]
    assert [p.rel for p in got.patches] == [e if isinstance(e, str) else e["file"] for e in entries]
    # the entries that named the anchor carry its waiver now, written out
    assert all(p.waivers and p.waivers[0].type == "FILE_PATH_CHANGES"
               for p in got.patches if p.rel != entries[1])
    assert "*six-maintainers" not in after
    # the entry that named no anchor is as it was; nothing outside the list moved
    assert "-      - 0003-locking-locktorture-add-six_lock-and-six_lock_pcpu.patch" not in changed
    assert all(len(ln) <= 90 for ln in changed), "\n".join(changed)
    assert "\n".join(changed).count("+          - type: FILE_PATH_CHANGES") == 2, changed
    assert not [ln for ln in changed if "topic/" in ln or "to:" in ln]


def test_an_entry_is_added_to_a_flow_style_upstream_list(project):
    text = project.read_text()
    a = text.index("    upstream:\n      - subject: \"Compiler Attributes")
    b = text.index("    tested: true", a)
    project.write_text(text[:a] + (
        '    upstream: [{subject: "Compiler Attributes: add __flatten", upstream-in: "v5.12",\n'
        '                evidence: "in compiler_attributes.h",\n'
        '                checks: [{file: include/linux/compiler_attributes.h,\n'
        '                          contains: "__flatten"}]}]  # since v5.12\n') + text[b:])
    new = {"subject": "locking: a later one", "upstream-in": "v6.2", "evidence": "here",
           "checks": [{"file": "kernel/locking/six.c", "contains": "six_lock"}]}
    manifest_edit.add_upstream(manifest.load(project), "compiler", new)
    after = project.read_text()
    got = manifest.load(project).topics["compiler"].upstream
    assert [u.subject for u in got] == ["Compiler Attributes: add __flatten", "locking: a later one"]
    assert "    upstream:  # since v5.12\n      - subject: 'Compiler Attributes: add" in after
    assert "[{" not in after and after.count("    tested: true") == text.count("    tested: true")
