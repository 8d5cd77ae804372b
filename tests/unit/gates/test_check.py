"""ktopic check: checkpatch and series hygiene on a synthetic tree that
carries the real kernel's scripts/checkpatch.pl and get_maintainer.pl.

The real scripts come from /usr/src/linux-source-6.1.tar.xz (conftest's
kernel_files: extracted once, kept in pytest's cache); without it the tests
are skipped, saying so (under make test and CI=true: they fail).  checkpatch runs here without the codespell
dictionary (it costs seconds per run); tests/e2e/test_gates.py runs it
with codespell on the real patches.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import IDENT, TREE, hermetic_env, make_patch, make_tarball

from ktopic.gates import check, checkpatch, hygiene
from ktopic.model import manifest
from ktopic.model import results as R
from ktopic.model.workdir import Workdir

SCRIPTS = ["scripts/checkpatch.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch",
           "scripts/get_maintainer.pl"]

MAINTAINERS = """\
List of maintainers (synthetic, for the tests)

Descriptions of section entries and preferred order
	M: *Mail* patches to: FullName <address@domain>

COUNTERS
M:	A Maintainer <a@example.org>
L:	counters@lists.example.org
S:	Maintained
F:	lib/counter.c

NAMES
M:	N Maintainer <n@example.org>
S:	Maintained
F:	lib/names.c
"""


TOP = {"COPYING": "GPL\n", "CREDITS": "\n", "Kbuild": "\n", "MAINTAINERS": MAINTAINERS}
for _d in ("Documentation", "arch", "drivers", "fs", "init", "ipc", "kernel"):
    TOP[f"{_d}/README"] = "placeholder\n"

HEADER = "// SPDX-License-Identifier: GPL-2.0\n"


@pytest.fixture(scope="module")
def base_files(kernel_files) -> dict[str, str]:
    files = dict(TREE, **TOP, **{r: (kernel_files / r).read_text() for r in SCRIPTS})
    return files


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, base_files) -> Path:
    """A work directory with the synthetic tree (and the real scripts) imported;
    shared by the tests of this module, so checkpatch's tree is extracted once."""
    tmp = tmp_path_factory.mktemp("check")
    tarball = make_tarball(tmp / "linux-source-6.1.tar.xz", base_files)
    (tmp / "branches.yaml").write_text(_manifest(tarball, {}))
    from ktopic import cli
    wd = tmp / "work"
    with pytest.MonkeyPatch.context() as mp:
        hermetic_env(mp, tmp / "env")
        assert cli.main(["-m", str(tmp / "branches.yaml"), "-w", str(wd), "import-base"]) == 0
    return wd


def _manifest(tarball: Path, patches: dict[str, list], extra: str = "") -> str:
    lines = ["version: 1",
             f"series: {{name: t, subject: t, from: '{IDENT}'}}",
             "base:", "  package: linux-source-6.1", f"  tarball: {tarball}",
             "  version: 6.1.192", "  debian-version: 6.1.192-3", "topics:",
             "  counters:", "    description: counter changes", "    branch: topic/counters",
             "    to: ['A Maintainer <a@example.org>']",
             "    cc: ['counters@lists.example.org']"]
    if patches.get("counters"):
        lines.append("    patches:")
        for p in patches["counters"]:
            if isinstance(p, str):
                lines.append(f"      - {p}")
            else:
                lines.append(f"      - file: {p[0]}")
                lines.append("        waivers:")
                for t, reason in p[1]:
                    lines.append(f'          - {{type: {t}, reason: "{reason}"}}')
    lines.append(extra.rstrip()) if extra else None
    lines += ["integration:", "  branch: for-next", "  topics: [counters]", ""]
    return "\n".join(x for x in lines if x is not None)


class Proj:
    def __init__(self, root: Path, wd: Path, base_files: dict[str, str]):
        self.root, self.wd, self.files = root, wd, base_files
        self.patches: list = []
        self.extra = ""

    def add(self, name: str, edits, subject: str, body_edit=None, waivers=None) -> Path:
        text = make_patch(self.root, self.files, edits, subject)
        if body_edit:
            text = body_edit(text)
        p = self.root / "patches" / "counters" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        self.patches.append((name, waivers) if waivers else name)
        return p

    def manifest(self):
        (self.root / "branches.yaml").write_text(
            _manifest(Path("/nonexistent.tar.xz"), {"counters": self.patches}, self.extra))
        return manifest.load(self.root / "branches.yaml")

    def check(self, names=("counters",), **kw):
        kw.setdefault("codespell", False)
        return check.check_topics(self.manifest(), Workdir(self.wd), list(names),
                                  check.Options(**kw))


@pytest.fixture
def proj(tmp_path, workdir, base_files) -> Proj:
    return Proj(tmp_path / "repo", workdir, base_files)


LONG = "return 3; /* " + "a comment that goes on and on " * 4 + "*/"


def test_style_warning_fails_quoted_then_passes_waived(proj):
    proj.add("0001-long.patch", [("lib/counter.c", "return 3;", LONG)], "lib/counter: long line")
    tv = proj.check()[0]
    assert not tv.ok
    pv = tv.patches[0]
    msg = next(m for m in pv.messages if m.type == "LONG_LINE")
    # checkpatch's own lines: the message, where, and the line itself
    assert msg.lines[0].startswith("WARNING:LONG_LINE: line length of ")
    assert msg.where == "lib/counter.c:4"
    assert any(LONG in ln for ln in msg.lines)
    text = "\n".join(check.render(tv))
    assert "WARNING:LONG_LINE: line length of" in text and "FAIL" in text

    proj.patches = [("0001-long.patch", [("LONG_LINE", "the comment is a table, kept whole")])]
    tv = proj.check()[0]
    assert tv.ok, check.render(tv)
    assert tv.patches[0].cached                     # the waiver did not re-run checkpatch
    assert "waived WARNING:LONG_LINE: the comment is a table, kept whole" in "\n".join(check.render(tv))


def test_stale_waiver_is_noted(proj):
    """A waiver that excuses nothing in its patch: the topic passes, and the
    waiver is named so that it can go."""
    proj.add("0001-four.patch", [("lib/counter.c", "return 3;", "return 4;")],
             "lib/counter: return four", waivers=[("LONG_LINE", "the comment is a table, kept whole")])
    tv = proj.check()[0]
    assert tv.ok, check.render(tv)
    assert [n for n in tv.notes if "waiver" in n] == \
        ["patches/counters/0001-four.patch: waiver LONG_LINE matches nothing (stale?)"], tv.notes
    assert "waiver LONG_LINE matches nothing (stale?)" in "\n".join(check.render(tv))


def test_errors_cannot_be_waived(proj):
    proj.add("0001-ws.patch", [("lib/counter.c", "return 3; }\n", "return 3; }   \n")],
             "lib/counter: trailing space", waivers=[("TRAILING_WHITESPACE", "not allowed to")])
    tv = proj.check()[0]
    assert not tv.ok
    m = next(m for m in tv.patches[0].failures() if getattr(m, "type", "") == "TRAILING_WHITESPACE")
    assert m.level == "ERROR" and not m.waived
    assert m.lines[0] == "ERROR:TRAILING_WHITESPACE: trailing whitespace"


def _drop_sob(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith("Signed-off-by:")) + "\n"


def test_missing_sign_off_fails(proj):
    proj.add("0001-nosob.patch", [("lib/counter.c", "return 3;", "return 4;")],
             "lib/counter: return four", body_edit=_drop_sob)
    tv = proj.check()[0]
    assert not tv.ok
    types = {x.type for x in tv.patches[0].failures()}
    assert "SIGN_OFF_AUTHOR" in types                # ours
    assert "MISSING_SIGN_OFF" in types               # and checkpatch's own ERROR
    f = [x for x in check.findings(tv) if "SIGN_OFF_AUTHOR" in x.message]
    assert f and f[0].kind == "hygiene" and "Test Porter <porter@example.org>" in f[0].message


def test_sender_must_sign_off_a_patch_by_someone_else(proj):
    def other_author(text):
        return text.replace("From: Test Porter <porter@example.org>",
                            "From: Other Author <other@example.org>").replace(
            "Signed-off-by: Test Porter <porter@example.org>",
            "Signed-off-by: Other Author <other@example.org>")
    proj.add("0001-other.patch", [("lib/counter.c", "return 3;", "return 5;")],
             "lib/counter: return five", body_edit=other_author)
    tv = proj.check()[0]
    assert [x.type for x in tv.patches[0].problems] == ["SIGN_OFF_SENDER"]

    def both(text):
        return other_author(text).replace(
            "Signed-off-by: Other Author <other@example.org>",
            "Signed-off-by: Other Author <other@example.org>\n"
            "Signed-off-by: Test Porter <porter@example.org>")
    proj.patches = []
    proj.add("0001-other.patch", [("lib/counter.c", "return 3;", "return 5;")],
             "lib/counter: return five", body_edit=both)
    assert proj.check()[0].ok


def test_subject_prefix_and_leftovers(proj):
    proj.add("0001-prefix.patch", [("lib/counter.c", "return 3;", "return 6;")],
             "mm: return six", body_edit=lambda t: t.replace("Why: a test needs it.",
                                                             "Why: a test needs it. TODO: say more"))
    tv = proj.check()[0]
    probs = {x.type: x for x in tv.patches[0].problems}
    assert set(probs) == {"SUBJECT_PREFIX", "LEFTOVER"}
    assert "'mm:'" in probs["SUBJECT_PREFIX"].message and "lib[/...]:" in probs["SUBJECT_PREFIX"].message
    assert probs["LEFTOVER"].lines == ["Why: a test needs it. TODO: say more"]
    proj.patches = [("0001-prefix.patch", [("SUBJECT_PREFIX", "the counter is mm's own"),
                                           ("LEFTOVER", "the TODO is the point of it")])]
    assert proj.check()[0].ok


def test_recipients_from_get_maintainer(proj):
    proj.add("0001-names.patch", [("lib/names.c", '"n7"', '"seven"'),
                                  ("lib/counter.c", "return 3;", "return 7;")],
             "lib: rename and return seven")
    tv = proj.check()[0]
    missing = [r for r in tv.recipients if not r.waived]
    assert [r.message.split(",")[0] for r in missing] == \
        ["get_maintainer.pl names N Maintainer <n@example.org>"]
    assert missing[0].lines == ["  for patches/counters/0001-names.patch"]
    assert not tv.ok
    proj.extra = ("    recipients-waived:\n"
                  "      - {address: 'n@example.org', reason: 'names is a trivial rename here'}\n"
                  "      - {address: 'gone@example.org', reason: 'nobody needs this waiver'}")
    tv = proj.check()[0]
    assert tv.ok, check.render(tv)
    assert any("gone@example.org" in n and "stale" in n for n in tv.notes)


def test_strict_for_new_files_only(proj):
    proj.add("0001-new.patch", [("lib/fresh.c", "", HEADER + "int fresh_one(int a,\n\tint b);\n")],
             "lib/fresh: a new file")
    proj.add("0002-mod.patch", [("lib/counter.c", "return 3;", "return 8;")],
             "lib/counter: return eight")
    tv = proj.check()[0]
    assert [p.strict for p in tv.patches] == [True, False]
    # --strict's CHECK on the new file: alignment to the open parenthesis
    assert any(m.level == "CHECK" and m.type == "PARENTHESIS_ALIGNMENT"
               for m in tv.patches[0].messages)
    assert proj.check(strict_all=True)[0].patches[1].strict


def test_cache_and_versions(proj):
    p = proj.add("0001-c.patch", [("lib/counter.c", "return 3;", "return 9;")],
                 "lib/counter: return nine")
    first = proj.check()[0]
    again = proj.check()[0]
    assert again.patches[0].cached and again.ok == first.ok
    assert set(first.versions) >= {"checkpatch", "git", "b4", "perl", "codespell"}
    tree = subprocess.run(["git", f"--git-dir={proj.wd / 'linux.git'}", "rev-parse",
                           "base^{tree}"], capture_output=True, text=True).stdout.strip()
    assert tree in first.versions["checkpatch"]
    assert first.versions["git"].startswith("git version")
    p.write_text(p.read_text().replace("return 9;", "return 10;"))
    assert not proj.check()[0].patches[0].cached


def test_check_branch_stage_result(proj, tmp_path):
    proj.add("0001-ok.patch", [("lib/counter.c", "return 3;", "return 11;")],
             "lib/counter: return eleven")
    st, details = check.check_branch(proj.manifest(), Workdir(proj.wd), "counters",
                                     out_dir=tmp_path / "out")
    assert st.stage == "check" and st.status in (R.PASS, R.CACHED), details["lines"]
    assert st.log == "topic_counters/check.log"
    assert (tmp_path / "out" / st.log).read_text().startswith("topic/counters: PASS")
    assert details["versions"]["checkpatch"].startswith("scripts/checkpatch.pl")
    st2, _ = check.check_branch(proj.manifest(), Workdir(proj.wd), "topic/counters")
    assert st2.status == R.CACHED
    proj.add("0002-ws.patch", [("lib/names.c", '"n1";\n', '"one";  \n')], "lib/names: one")
    st3, d3 = check.check_branch(proj.manifest(), Workdir(proj.wd), "integration")
    assert st3.status == R.FAIL and any(f.kind == "checkpatch" for f in d3["findings"])


def test_cli(proj, ktopic):
    proj.add("0001-long.patch", [("lib/counter.c", "return 3;", LONG)], "lib/counter: long line")
    proj.manifest()
    r = ktopic("-m", proj.root / "branches.yaml", "-w", proj.wd, "check", "--no-codespell",
               "--json", proj.root / "v.json")
    assert r.status == 1, r
    assert "WARNING:LONG_LINE: line length of" in r.out
    assert "check: 0 of 1 topic(s) pass; failing: counters" in r.out
    import json
    v = json.loads((proj.root / "v.json").read_text())
    assert v[0]["topic"] == "counters" and v[0]["versions"]["checkpatch"]
    # where the time went: the table before the last line, the topic's row in --json
    table = r.out[r.out.index("where the time went:"):].splitlines()
    assert re.match(r"\s+topic/counters\s+checkpatch\s+1\s", table[2]), table
    assert re.match(r"\s+\(run\)\s+total\s", table[-2]) and table[-1].startswith("check: ")
    assert [(t["branch"], t["stage"], t["runs"]) for t in v[0]["timing"]] == [
        ("topic/counters", "checkpatch", 1)]
    r = ktopic("-m", proj.root / "branches.yaml", "-w", proj.wd, "check", "nosuch")
    assert r.status == 2 and "no topic 'nosuch'" in r.err


# --- pure functions -----------------------------------------------------------

def test_parse_output():
    text = ("WARNING:LONG_LINE: line length of 120 exceeds 100 columns\n"
            "#20: FILE: lib/a.c:4:\n+\tx;\n\n"
            "ERROR:TRAILING_WHITESPACE: trailing whitespace\n#21: FILE: lib/a.c:5:\n+x;   $\n\n"
            "total: 1 errors, 1 warnings, 5 lines checked\n")
    msgs, total = checkpatch.parse_output(text)
    assert [(m.level, m.type, m.where) for m in msgs] == \
        [("WARNING", "LONG_LINE", "lib/a.c:4"), ("ERROR", "TRAILING_WHITESPACE", "lib/a.c:5")]
    assert msgs[1].lines == ["ERROR:TRAILING_WHITESPACE: trailing whitespace",
                             "#21: FILE: lib/a.c:5:", "+x;   $"]
    assert total == "total: 1 errors, 1 warnings, 5 lines checked"


@pytest.mark.parametrize("subject,files,ok", [
    ("locking/six: add SIX locks", ["kernel/locking/six.c", "include/linux/six.h"], True),
    ("locking/locktorture: add six_lock", ["kernel/locking/locktorture.c"], True),
    ("Documentation/locking: describe SIX locks", ["Documentation/locking/six.rst"], True),
    ("mm: pagecache add lock", ["mm/filemap.c", "include/linux/fs.h"], True),
    ("mm/filemap: pagecache add lock", ["mm/filemap.c"], True),
    ("fs: insert_inode_locked2()", ["fs/inode.c", "include/linux/fs.h"], True),
    ("block: export bio_set_pages_dirty", ["block/bio.c"], True),
    ("closures: closure_wait_event()", ["include/linux/closure.h", "lib/closure.c"], True),
    ("bcache: optimize continue_at_nobarrier()", ["drivers/md/bcache/closure.h"], True),
    ("Compiler Attributes: add __flatten", ["include/linux/compiler_attributes.h"], True),
    ("mm: add six locks", ["kernel/locking/six.c"], False),
    ("fs: closures", ["lib/closure.c"], False),
])
def test_subject_prefixes(subject, files, ok):
    prefix = hygiene.subject_prefix(subject)
    assert hygiene.prefix_ok(prefix, files)[0] is ok


def test_subject_prefix_parsing():
    assert hygiene.subject_prefix("[PATCH v2 1/4] locking/six: add") == "locking/six"
    assert hygiene.subject_prefix("no prefix at all") is None
    assert hygiene.sign_offs("x\nSigned-off-by: A <A@X.org>\nSigned-off-by: b@y.org\n") == \
        ["a@x.org", "b@y.org"]


def test_codespell_dictionary_without_the_trees_names(tmp_path):
    (tmp_path / "include/linux").mkdir(parents=True)
    (tmp_path / "include/linux/fs.h").write_text("extern void iput(struct inode *);\n"
                                                 "/* the adress of the inode */\n")
    d = tmp_path / "dictionary.txt"
    d.write_text("iput->input\nadress->address\n")
    out = checkpatch.kernel_dictionary(checkpatch.ScriptsTree(tmp_path, "t"), d)
    assert out.read_text() == "adress->address\n"


PLACEHOLDER = "Port Placeholder <port@placeholder.example.org>"


def test_placeholder_is_a_warning_not_a_failure(proj):
    """The placeholder identity as author and sign-off: shown as a WARNING
    with the line, and the topic passes (CI shows it and stays green)."""
    proj.add("0001-four.patch", [("lib/counter.c", "return 3;", "return 4;")],
             "lib/counter: return four",
             body_edit=lambda t: t.replace("Test Porter <porter@example.org>", PLACEHOLDER))
    proj.manifest()
    mf = proj.root / "branches.yaml"
    mf.write_text(mf.read_text().replace(
        f"from: '{IDENT}'}}", f"from: '{PLACEHOLDER}', placeholder: '{PLACEHOLDER}'}}"))
    tv = check.check_topics(manifest.load(mf), Workdir(proj.wd), ["counters"],
                            check.Options(codespell=False))[0]
    text = "\n".join(check.render(tv))
    assert tv.ok, text
    assert f"WARNING PLACEHOLDER: line 2: its author is the placeholder {PLACEHOLDER}" in text
    assert f"a trailer names the placeholder: Signed-off-by: {PLACEHOLDER}" in text
    assert "2 warning(s)" in tv.summary()
