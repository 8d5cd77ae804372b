"""ktopic rebase / range-diff on synthetic "newer" trees made from the
synthetic tarball: our patch exactly, with other whitespace, with other
context, a conflict, an unrelated change; --continue and --abort."""

import json
import re
import subprocess

import pytest

from conftest import TREE, git_in, make_tarball
from rebase_support import header, outcomes, resolve_conflicts, snapshot

NEW_DV = "6.1.193-1"
P1 = "0001-lib-counter-return-more.patch"
P2 = "0002-lib-counter-return-even-more.patch"


def newer(tmp_path, name: str, edits):
    files = dict(TREE)
    files["Makefile"] = files["Makefile"].replace("SUBLEVEL = 192", "SUBLEVEL = 193")
    for f, old, new in edits:
        assert old in files[f], (f, old)
        files[f] = files[f].replace(old, new, 1)
    return make_tarball(tmp_path / f"{name}.tar.xz", files, mtime=1_700_100_000)


def rebase(ktopic, project, tarball, *extra):
    return ktopic(*project.args("rebase", "--tarball", str(tarball), "--debian-version", NEW_DV,
                                *extra))


def test_unrelated_change_applies_everything(generated, ktopic, tmp_path):
    before = snapshot(generated)
    tb = newer(tmp_path, "unrelated", [("README", "Linux kernel\n", "Linux kernel, newer\n")])
    r = rebase(ktopic, generated, tb)
    assert r.status == 0, r
    assert outcomes(r.out) == {("compiler", "-"): "done", ("counters", P1): "applied",
                               ("counters", P2): "applied",
                               ("names", "0001-lib-names-rename.patch"): "applied"}
    refs = generated.refs()
    new_base = refs["refs/heads/base"]
    # The new base continues the old one's history; its diff is the README.
    assert generated.git("rev-parse", "base^").strip() == before["refs"]["refs/heads/base"]
    assert generated.git("diff", "--name-only", "base^", "base").split() == ["Makefile", "README"]
    assert refs["refs/ktopic/bases/" + NEW_DV] == new_base
    for b in ("topic/compiler", "topic/counters", "topic/names", "for-next"):
        assert refs[f"refs/ktopic/old/6.1.192-3/{b}"] == before["refs"][f"refs/heads/{b}"]
        assert refs[f"refs/ktopic/made/{b}"] == refs[f"refs/heads/{b}"]
        assert generated.git("merge-base", "--is-ancestor", new_base, b) == ""
    assert refs["refs/heads/topic/compiler"] == new_base
    text = generated.manifest.read_text()
    assert text.count("debian-version:") == 1
    assert f"debian-version: {NEW_DV}" in text and "version: 6.1.193\n" in text
    assert f"tarball: {tb}" in text
    # Only the base keys changed in the manifest; no patch file changed.
    changed = [ln for ln in difflines(before["manifest"], text)]
    assert len(changed) == 3, changed
    assert snapshot(generated)["patches"] == before["patches"]
    assert not (generated.workdir / "rebase").exists()
    # generate agrees with what rebase made: a no-op.
    g = ktopic(*generated.args("generate"))
    assert g.status == 0 and "0 patches applied" in g.out, g
    assert generated.refs() == refs


def difflines(a: str, b: str) -> list[str]:
    import difflib
    return [ln for ln in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
            if ln.startswith("+") and not ln.startswith("+++")]


P3 = "0001-lib-names-rename.patch"
NAME7 = 'const char *name_7 = "n7";\n'
NAME9 = 'const char *name_9 = "n9";\n'


@pytest.mark.parametrize("case,edits,hows,p2", [
    # counters' first patch exactly; names' patch with other context (a line
    # two below it changed too): the three-way merge leaves the tree as it is
    ("exact+context",
     [("lib/counter.c", "return 3;", "return 33;"),
      ("lib/names.c", NAME7, NAME7.replace('"n7"', '"seven"')),
      ("lib/names.c", NAME9, NAME9.replace('"n9"', '"nine"'))],
     {"counters": "patch-id", "names": "three-way"}, "applied"),
    # counters' first patch with other whitespace and a change further down
    # the file (the patch-id differs, it reverse-applies); that change is in
    # the context of the second patch, which then needs a three-way merge;
    # names' patch with other whitespace only (patch-id ignores whitespace)
    ("whitespace+elsewhere",
     [("lib/counter.c", "{ return 3; }\n", "{  return   33; }\n"),
      ("lib/counter.c", "return 32;", "return 3200;"),
      ("lib/names.c", NAME7, 'const char *name_7  =  "seven";\n')],
     {"counters": "reverse-applies", "names": "patch-id"}, "3-way"),
])
def test_patches_already_upstream(generated, ktopic, tmp_path, case, edits, hows, p2):
    import yaml
    old_p2 = (generated.root / "patches/counters" / P2).read_text()
    tb = newer(tmp_path, case, edits)
    r = rebase(ktopic, generated, tb)
    assert r.status == 0, r
    assert outcomes(r.out) == {("compiler", "-"): "done", ("counters", P1): "upstream",
                               ("counters", P2): p2, ("names", P3): "upstream"}
    new_p2 = (generated.root / "patches/counters" / P2).read_text()
    if p2 == "3-way":       # rewritten for the new base: its context is the new one
        assert " int counter_32(void) { return 3200; }" in new_p2
        assert "+int counter_30(void) { return 300; }" in new_p2
        # ... and only its diff: the mail's headers and message, [PATCH 2/2] too, as they were
        assert header(new_p2) == header(old_p2)
    else:
        assert new_p2 == old_p2
    assert not (generated.root / "patches/counters" / P1).exists()
    assert not (generated.root / "patches/names" / P3).exists()
    text = generated.manifest.read_text()
    topics = yaml.safe_load(text)["topics"]
    assert topics["counters"]["patches"] == [P2] and topics["names"]["patches"] == []
    old_base = "refs/ktopic/bases/6.1.192-3"
    for topic, subject, file, value in (("counters", "lib/counter: return more", "lib/counter.c", "33"),
                                        ("names", "lib/names: rename", "lib/names.c", "seven")):
        # The upstream entry: subject, version, evidence and a check that holds.
        (entry,) = topics[topic]["upstream"]
        assert entry["subject"] == subject
        assert entry["upstream-in"] == f"v6.1.193 (linux-source-6.1 {NEW_DV})"
        assert hows[topic] in entry["evidence"]
        (check,) = entry["checks"]
        assert check["file"] == file and value in check["contains"]
        assert re.search(check["contains"], generated.git("show", f"base:{file}"), re.M)
        # ... and proves something: the old base fails it.
        assert not re.search(check["contains"], generated.git("show", f"{old_base}:{file}"), re.M)
    # The branches carry only the second counters patch; generate agrees.
    assert generated.git("log", "--format=%s", "base..topic/counters").splitlines() == \
        ["lib/counter: return even more"]
    refs = generated.refs()
    assert refs["refs/heads/topic/names"] == refs["refs/heads/topic/counters"] == refs["refs/heads/for-next"]
    g = ktopic(*generated.args("generate"))
    assert g.status == 0 and "0 patches applied" in g.out, g
    assert generated.refs() == refs


def resolve(wt, value="310", add=True):
    resolve_conflicts(wt / "lib/counter.c",
                      lambda ours, theirs: f"int counter_30(void) {{ return {value}; }}\n")
    if add:         # -f: Debian's top-level .gitignore ignores every path
        git_in(wt, "add", "-f", "lib/counter.c")


def test_conflict_abort_rerere_continue(generated, ktopic, tmp_path):
    """One conflict, start to end: it stops its topic only; --continue
    refuses while unresolved; --abort puts everything back; the resolution
    is remembered (rerere) when the rebase runs again; --continue finishes."""
    before = snapshot(generated)
    tb = newer(tmp_path, "conflict", [("lib/counter.c", "return 30;", "return 31;")])
    r = rebase(ktopic, generated, tb)
    assert r.status == 1, r
    got = outcomes(r.out)
    assert got[("counters", P1)] == "applied"
    assert got[("counters", P2)] == "conflict"
    assert got[("names", "-")] == "waiting"
    assert got[("compiler", "-")] == "done"
    wt = generated.workdir / "rebase" / "wt-counters"
    assert f"worktree {wt}" in r.out
    assert re.search(r"lib/counter.c: hunk #1 \(@@ -28,7 \+28,7 @@\); conflict markers at line", r.out)
    # The conflict is in place, in a sparse worktree: only the patch's file.
    files = sorted(str(p.relative_to(wt)) for p in wt.rglob("*") if p.is_file() and p.name != ".git")
    assert files == ["lib/counter.c"]
    text = (wt / "lib/counter.c").read_text()
    assert "<<<<<<<" in text and "return 300;" in text and "return 31;" in text
    assert "UU lib/counter.c" in git_in(wt, "status", "--short")
    # compiler finished: it moved, with the base and the manifest's base keys;
    # counters and names did not move, nor did their patches.
    refs = generated.refs()
    assert refs["refs/heads/base"] != before["refs"]["refs/heads/base"]
    assert refs["refs/heads/topic/compiler"] == refs["refs/heads/base"]
    for b in ("topic/counters", "topic/names", "for-next"):
        assert refs[f"refs/heads/{b}"] == before["refs"][f"refs/heads/{b}"]
    assert f"debian-version: {NEW_DV}" in generated.manifest.read_text()
    assert snapshot(generated)["patches"] == before["patches"]
    state = json.loads((generated.workdir / "rebase/state.json").read_text())
    assert state["topics"]["counters"]["state"] == "conflict"
    # Nothing else while it is in progress; --continue refuses an unresolved file.
    again = rebase(ktopic, generated, tb)
    assert again.status == 2 and "in progress" in again.err
    c = ktopic(*generated.args("rebase", "--continue"))
    assert c.status == 1 and "lib/counter.c still unmerged" in c.err
    assert (wt / "lib/counter.c").read_text() == text

    # --abort after a resolution: everything as it was, the resolution remembered.
    resolve(wt, "320", add=False)
    a = ktopic(*generated.args("rebase", "--abort"))
    assert a.status == 0, a
    after = snapshot(generated)
    for key in before:
        assert after[key] == before[key], key
    assert ktopic(*generated.args("rebase", "--abort")).status == 2
    assert ktopic(*generated.args("rebase", "--continue")).status == 2

    r = rebase(ktopic, generated, tb)
    assert r.status == 1 and "resolved by rerere" in r.out, r
    text = (wt / "lib/counter.c").read_text()
    assert "<<<<<<<" not in text and "return 320;" in text
    c = ktopic(*generated.args("rebase", "--continue"))     # stages it: no markers left
    assert c.status == 0, c
    got = outcomes(c.out)
    assert got[("counters", P1)] == "applied"
    assert got[("counters", P2)] == "resolved"
    assert got[("names", "0001-lib-names-rename.patch")] == "applied"
    assert not wt.exists() and not (generated.workdir / "rebase").exists()
    assert len(generated.git("worktree", "list").splitlines()) == 1
    # The resolved patch is exported back under its name; the first is unchanged.
    p2 = (generated.root / "patches/counters" / P2).read_text()
    assert "+int counter_30(void) { return 320; }" in p2
    assert "-int counter_30(void) { return 31; }" in p2
    assert header(p2) == header(before["patches"]["patches/counters/" + P2])     # [PATCH 2/2] too
    assert (generated.root / "patches/counters" / P1).read_text() == \
        before["patches"]["patches/counters/" + P1]
    refs = generated.refs()
    assert "return 320;" in generated.git("show", "for-next:lib/counter.c")
    assert refs["refs/ktopic/old/6.1.192-3/topic/counters"] == before["refs"]["refs/heads/topic/counters"]
    g = ktopic(*generated.args("generate"))
    assert g.status == 0 and "0 patches applied" in g.out, g
    assert generated.refs() == refs
    # range-diff for the changelog: the first patch the same, the second changed.
    rd = ktopic(*generated.args("range-diff", "counters"))
    assert rd.status == 0, rd
    lines = [ln for ln in rd.out.splitlines() if re.match(r"^\d+:", ln)]
    assert len(lines) == 2
    assert " = " in lines[0] and " ! " in lines[1]
    assert "return 320" in rd.out
    rd = ktopic(*generated.args("range-diff", "names", "6.1.192-3"))
    lines = [ln for ln in rd.out.splitlines() if re.match(r"^\d+:", ln)]
    assert rd.status == 0 and len(lines) == 1 and " = " in lines[0], rd
    assert ktopic(*generated.args("range-diff", "names", "6.0.1-1")).status == 2


def test_continue_after_git_add(generated, ktopic, tmp_path):
    tb = newer(tmp_path, "conflict", [("lib/counter.c", "return 30;", "return 31;")])
    assert rebase(ktopic, generated, tb).status == 1
    resolve(generated.workdir / "rebase" / "wt-counters", "310")
    c = ktopic(*generated.args("rebase", "--continue"))
    assert c.status == 0, c
    assert "return 310;" in generated.git("show", "topic/names:lib/counter.c")


def test_bad_invocations(generated, ktopic, tmp_path):
    before = snapshot(generated)
    same = ktopic(*generated.args("rebase", "--tarball", str(generated.tarball),
                                  "--debian-version", "6.1.192-3"))
    assert same.status == 2 and "already on 6.1.192-3" in same.err
    tb = newer(tmp_path, "readme", [("README", "Linux", "Linux!")])
    wrong = ktopic(*generated.args("rebase", "--tarball", str(tb), "--debian-version", "6.1.194-1"))
    assert wrong.status == 2 and "Makefile says 6.1.193" in wrong.err
    missing = ktopic(*generated.args("rebase", "--tarball", str(tmp_path / "nope.tar.xz"),
                                     "--debian-version", NEW_DV))
    assert missing.status == 2 and "not found" in missing.err
    assert ktopic(*generated.args("rebase", "--continue")).status == 2
    assert snapshot(generated) == before


def test_hand_made_commit_refused(generated, ktopic, tmp_path):
    gd = str(generated.workdir / "linux.git")
    head = generated.git("rev-parse", "topic/names").strip()
    hand = subprocess.run(["git", "--git-dir", gd, "commit-tree", head + "^{tree}", "-p", head,
                           "-m", "by hand"], capture_output=True, text=True, check=True,
                          env={"GIT_AUTHOR_NAME": "H", "GIT_AUTHOR_EMAIL": "h@x",
                               "GIT_COMMITTER_NAME": "H", "GIT_COMMITTER_EMAIL": "h@x"}).stdout.strip()
    generated.git("update-ref", "refs/heads/topic/names", hand)
    before = snapshot(generated)
    tb = newer(tmp_path, "readme", [("README", "Linux", "Linux!")])
    r = rebase(ktopic, generated, tb)
    assert r.status == 1 and "topic/names" in r.err and "ktopic export" in r.err
    assert snapshot(generated) == before


def test_a_proof_the_new_base_no_longer_backs(generated, ktopic, tmp_path):
    """The manifest's upstream checks run against the new base: a claim it
    does not back fails that topic; the others are rebased."""
    tb = newer(tmp_path, "reverted", [("include/linux/compiler_attributes.h", "# define __flatten",
                                       "# define __unflatten")])
    r = rebase(ktopic, generated, tb)
    assert r.status == 1, r
    got = outcomes(r.out)
    assert got[("compiler", "-")] == "failed"
    assert "__flatten" in r.out and "is not true" in r.out
    assert got[("counters", P1)] == got[("counters", P2)] == "applied"
    assert generated.refs()["refs/heads/topic/compiler"] != generated.refs()["refs/heads/base"]
    assert ktopic(*generated.args("rebase", "--abort")).status == 0


# --- counters' patches made for one case -------------------------------------------

def counters_patches(imported, ktopic, tmp_path, p1_edits, p2_edits, no_index=False):
    """Replace counters' two patches by ones that make p1_edits, then
    p2_edits on top (lib/counter.c ...), and generate; with no_index, the
    patches carry no `index` lines (as patches from a tree git does not
    have: no three-way merge is possible)."""
    from conftest import make_patch
    tree1 = dict(TREE)
    for f, old, new in p1_edits:
        tree1[f] = tree1.get(f, "").replace(old, new, 1) if old else new
    for rel, edits, files, subject, date in (
            (P1, p1_edits, TREE, "lib/counter: return more", "Thu, 3 Dec 2026 06:00:00 +0000"),
            (P2, p2_edits, tree1, "lib/counter: return even more",
             "Thu, 3 Dec 2026 06:01:00 +0000")):
        text = make_patch(tmp_path, files, edits, subject, date)
        text = text.replace("[PATCH]", f"[PATCH {rel[3]}/2]", 1)
        if no_index:
            text = re.sub(r"^index [0-9a-f]+\.\.[0-9a-f]+.*\n", "", text, flags=re.M)
        (imported.root / "patches/counters" / rel).write_text(text)
    g = ktopic(*imported.args("generate"))
    assert g.status == 0, g
    return imported


COUNTER = "int counter_{0}(void) {{ return {0}; }}\n".format


def test_empty_resolution_is_not_upstream_without_new_evidence(imported, ktopic, tmp_path):
    """Resolving a conflict by taking the new base's side drops the patch.
    That is no evidence it is upstream, even when a line it adds (a copy of
    one the old base already had) is on the new base: --continue refuses;
    --drop REASON drops it, recorded under `dropped:`."""
    import yaml
    project = counters_patches(
        imported, ktopic, tmp_path, [("lib/counter.c", "return 3;", "return 33;")],
        [("lib/counter.c", COUNTER(30), COUNTER(30).replace("30;", "300;") + COUNTER(5))])
    before = snapshot(project)
    tb = newer(tmp_path, "conflict", [("lib/counter.c", "return 30;", "return 31;")])
    r = rebase(ktopic, project, tb)
    assert r.status == 1 and outcomes(r.out)[("counters", P2)] == "conflict", r
    wt = project.workdir / "rebase" / "wt-counters"
    resolve_conflicts(wt / "lib/counter.c", lambda ours, theirs: ours)
    git_in(wt, "add", "-f", "lib/counter.c")
    c = ktopic(*project.args("rebase", "--continue"))
    assert c.status == 1, c
    assert "--drop" in c.err and P2 in c.err, c
    assert (project.root / "patches/counters" / P2).exists()
    assert "upstream:" not in project.manifest.read_text().split("counters:")[1].split("names:")[0]
    short = ktopic(*project.args("rebase", "--continue", "--drop", "gone"))
    assert short.status == 2 and "reason" in short.err, short
    reason = "counter_30 stays 31 in 6.1.193, which is what we want"
    c = ktopic(*project.args("rebase", "--continue", "--drop", reason))
    assert c.status == 0, c
    assert outcomes(c.out)[("counters", P2)] == "dropped"
    topics = yaml.safe_load(project.manifest.read_text())["topics"]
    assert topics["counters"]["patches"] == [P1]
    assert topics["counters"]["dropped"] == [{"subject": "lib/counter: return even more",
                                              "reason": reason}]
    assert "upstream" not in topics["counters"]
    assert not (project.root / "patches/counters" / P2).exists()
    assert before["patches"]["patches/counters/" + P1] == \
        (project.root / "patches/counters" / P1).read_text()


def test_series_upstream_together(imported, ktopic, tmp_path):
    """Both counters patches upstream, the second's line in the first's
    context, the first's with other whitespace: the first alone neither
    applies nor reverse-applies (and without index lines no three-way
    merge is possible), but the two together reverse-apply: both upstream."""
    import yaml
    project = counters_patches(
        imported, ktopic, tmp_path, [("lib/counter.c", "return 3;", "return 33;")],
        [("lib/counter.c", "return 5;", "return 500;")], no_index=True)
    tb = newer(tmp_path, "both", [("lib/counter.c", "{ return 3; }", "{  return 33; }"),
                                  ("lib/counter.c", "return 5;", "return 500;")])
    r = rebase(ktopic, project, tb)
    assert r.status == 0, r
    got = outcomes(r.out)
    assert got[("counters", P1)] == got[("counters", P2)] == "upstream", r.out
    topics = yaml.safe_load(project.manifest.read_text())["topics"]
    assert topics["counters"]["patches"] == []
    ups = topics["counters"]["upstream"]
    assert [u["subject"] for u in ups] == ["lib/counter: return more",
                                           "lib/counter: return even more"]
    assert all("together" in u["evidence"] for u in ups), ups
    old_base = project.git("show", "refs/ktopic/bases/6.1.192-3:lib/counter.c")
    for u in ups:
        (check,) = u["checks"]
        assert re.search(check["contains"], project.git("show", "base:lib/counter.c"), re.M)
        assert not re.search(check["contains"], old_base, re.M)


def test_three_way_apply_writes_nothing_to_the_cwd(imported, ktopic, tmp_path, monkeypatch):
    """git apply --cached --3way writes a cleanly merged new file to the
    current directory when another file conflicts: ktopic runs it where
    that cannot reach the user's checkout."""
    project = counters_patches(
        imported, ktopic, tmp_path, [("lib/counter.c", "return 3;", "return 33;")],
        [("lib/counter.c", "return 30;", "return 300;"), ("lib/fresh.c", "", "int fresh;\n")])
    cwd = tmp_path / "user-checkout"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    tb = newer(tmp_path, "conflict", [("lib/counter.c", "return 30;", "return 31;")])
    r = rebase(ktopic, project, tb)
    assert r.status == 1 and outcomes(r.out)[("counters", P2)] == "conflict", r
    assert sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*")) == []
    a = ktopic(*project.args("rebase", "--abort"))
    assert a.status == 0, a
    # ... and a file of that name there does not make the rebase fail
    (cwd / "lib").mkdir()
    (cwd / "lib/fresh.c").write_text("the user's own file\n")
    r = rebase(ktopic, project, tb)
    assert r.status == 1 and outcomes(r.out)[("counters", P2)] == "conflict", r
    assert (cwd / "lib/fresh.c").read_text() == "the user's own file\n"


def test_range_diff_of_a_topic_without_patches(generated, ktopic, tmp_path):
    tb = newer(tmp_path, "unrelated", [("README", "Linux kernel\n", "Linux kernel, newer\n")])
    assert rebase(ktopic, generated, tb).status == 0
    rd = ktopic(*generated.args("range-diff", "compiler"))
    assert rd.status == 0 and "topic/compiler carries no patches of its own on either base" \
        in rd.out, rd
    assert "usage" not in rd.out + rd.err


def test_status_and_generate_mid_rebase(generated, ktopic, tmp_path):
    """While a rebase is stopped: status says so; generate refuses with the
    reason (one line, exit 2) and moves nothing."""
    tb = newer(tmp_path, "conflict", [("lib/counter.c", "return 30;", "return 31;")])
    assert rebase(ktopic, generated, tb).status == 1
    s = ktopic(*generated.args("status"))
    assert "a rebase is in progress" in s.out, s
    refs = generated.refs()
    g = ktopic(*generated.args("generate"))
    assert g.status == 2 and "a rebase is in progress" in g.err, g
    assert len(g.err.strip().splitlines()) == 1 and "--abort" in g.err
    assert generated.refs() == refs


def test_conflict_report_names_the_hunk_and_the_patches_after_it(imported, ktopic, tmp_path):
    """counters 0001 has two hunks in lib/counter.c, only the second of
    which conflicts; the report names that one, and the table lists 0002,
    not reached, as pending."""
    project = counters_patches(
        imported, ktopic, tmp_path,
        [("lib/counter.c", "return 3;", "return 33;"), ("lib/counter.c", "return 30;", "return 300;")],
        [("lib/counter.c", "return 20;", "return 200;")])
    tb = newer(tmp_path, "conflict", [("lib/counter.c", "return 30;", "return 31;")])
    r = rebase(ktopic, project, tb)
    assert r.status == 1, r
    got = outcomes(r.out)
    assert got[("counters", P1)] == "conflict" and got[("counters", P2)] == "pending", r.out
    line = [ln for ln in r.out.splitlines() if ln.startswith("  lib/counter.c: ")]
    assert len(line) == 1 and "hunk #2 (@@ -28,7 +28,7 @@)" in line[0], r.out
    assert "hunk #1" not in line[0], line


def test_branch_checked_out_in_a_worktree_is_not_moved(generated, ktopic, tmp_path):
    """As generate (and git branch -f): a topic checked out in a worktree
    of the work repository is not moved, nor anything else; once the
    worktree lets go of it, --continue finishes the rebase."""
    gd = str(generated.workdir / "linux.git")
    wt = tmp_path / "wt"
    subprocess.run(["git", "--git-dir", gd, "worktree", "add", "-q", str(wt), "topic/names"],
                   check=True, capture_output=True)
    before = snapshot(generated)
    tb = newer(tmp_path, "readme", [("README", "Linux", "Linux!")])
    r = rebase(ktopic, generated, tb)
    assert r.status == 1 and f"branch topic/names is checked out in the worktree at {wt}" \
        in r.err and len(r.err.splitlines()) == 1, r
    # No branch moved and no file changed; the rebase waits for --continue
    # (its state and the new base's import are kept for that).
    after = snapshot(generated)
    heads = {k: v for k, v in after["refs"].items() if k.startswith("refs/heads/")}
    assert heads == {k: v for k, v in before["refs"].items() if k.startswith("refs/heads/")}
    assert (after["manifest"], after["patches"]) == (before["manifest"], before["patches"])
    subprocess.run(["git", "-C", str(wt), "switch", "-q", "--detach"], check=True)
    r = ktopic(*generated.args("rebase", "--continue"))
    assert r.status == 0, r
    assert generated.refs()["refs/heads/topic/names"] != before["refs"]["refs/heads/topic/names"]
