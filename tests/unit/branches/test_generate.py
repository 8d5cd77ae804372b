"""ktopic generate / status / export / import-mbox on a synthetic tree."""

import multiprocessing
import re
import subprocess
import time

import pytest

import git_rebuild
from conftest import TREE, git_in, make_patch
from ktopic.model import manifest
from ktopic.plumbing import patchfile, stack

TOPIC_REFS = ["refs/heads/topic/compiler", "refs/heads/topic/counters",
              "refs/heads/topic/names", "refs/heads/for-next"]


def test_generate_makes_every_branch(generated):
    refs = generated.refs()
    base = refs["refs/heads/base"]
    assert refs["refs/heads/topic/compiler"] == base          # carries nothing
    log = generated.git("log", "--format=%s", f"{base}..topic/names").splitlines()
    # names depends on counters: its branch starts from counters' patches.
    assert log == ["lib/names: rename", "lib/counter: return even more", "lib/counter: return more"]
    assert generated.git("rev-parse", "for-next") == generated.git("rev-parse", "topic/names")
    assert "return 300;" in generated.git("show", "topic/counters:lib/counter.c")


def test_commit_is_what_git_am_makes(generated, tmp_path):
    base = generated.refs()["refs/heads/base"]
    wt = tmp_path / "wt"
    subprocess.run(["git", "--git-dir", str(generated.workdir / "linux.git"), "worktree", "add",
                    "-q", "--detach", str(wt), base], check=True)
    patch = generated.root / "patches/counters/0001-lib-counter-return-more.patch"
    git_in(wt, "am", "-q", "--committer-date-is-author-date", str(patch),
           env={"GIT_COMMITTER_NAME": "Test Porter", "GIT_COMMITTER_EMAIL": "porter@example.org"})
    ours = generated.git("rev-parse", "topic/counters~1").strip()
    assert git_in(wt, "rev-parse", "HEAD").strip() == ours


def test_same_inputs_same_hashes_in_another_workdir(generated, ktopic, tmp_path):
    other = tmp_path / "other-work"
    assert ktopic(*generated.args("import-base", workdir=other)).status == 0
    assert ktopic(*generated.args("generate", workdir=other)).status == 0
    for ref in TOPIC_REFS:
        assert generated.refs(other)[ref] == generated.refs()[ref]


def test_every_branch_is_what_git_alone_makes(generated):
    """apply --cached on a full index, write-tree, commit-tree: the same ids."""
    m = manifest.load(generated.manifest)
    assert git_rebuild.mismatches(m, generated.workdir / "linux.git") == {}


def test_users_git_configuration_changes_no_hash(generated, ktopic, tmp_path, monkeypatch):
    """A ~/.gitconfig asking for another commit encoding (or any other
    setting) does not reach the git that writes the branches."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[i18n]\n\tcommitEncoding = ISO-8859-1\n"
                                     "[core]\n\tcompression = 1\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    other = tmp_path / "other-work"
    assert ktopic(*generated.args("import-base", workdir=other)).status == 0
    assert ktopic(*generated.args("generate", workdir=other)).status == 0
    for ref in ["refs/heads/base", *TOPIC_REFS]:
        assert generated.refs(other)[ref] == generated.refs()[ref]


def test_regenerating_unchanged_moves_nothing(generated, ktopic):
    before = generated.refs()
    reflog = generated.git("reflog", "show", "--all").count("\n")
    r = ktopic(*generated.args("generate"))
    assert r.status == 0 and "0 patches applied" in r.out
    assert generated.refs() == before
    assert generated.git("reflog", "show", "--all").count("\n") == reflog


def test_patch_that_does_not_apply(generated, ktopic, patches_text):
    before = generated.refs()
    p = generated.root / "patches/counters/0002-lib-counter-return-even-more.patch"
    p.write_text(patches_text["counters/0002-lib-counter-return-even-more.patch"]
                 .replace("-int counter_30(void) { return 30; }", "-int counter_30(void) { return 31; }"))
    r = ktopic(*generated.args("generate"))
    assert r.status == 1
    errors = [ln for ln in r.err.splitlines() if "does not apply" in ln]
    assert errors == ["ktopic: topic counters: patches/counters/0002-lib-counter-return-even-more.patch: "
                      "lib/counter.c: hunk #1 (@@ -28,7 +28,7 @@): does not apply"]
    assert "names: not generated: it depends on counters" in r.err
    after = generated.refs()
    for ref in ("refs/heads/topic/counters", "refs/heads/topic/names", "refs/heads/for-next"):
        assert after[ref] == before[ref]


MISNAMED = {
    "plus-minus": ("diff --git a/lib/names.c b/lib/names.c\nindex 1111111..2222222 100644\n"
                   "--- a/lib/counter.c\n+++ b/lib/counter.c\n@@ -1,3 +1,3 @@\n"
                   " int counter_0(void) { return 0; }\n-int counter_1(void) { return 1; }\n"
                   "+int counter_1(void) { return 111; }\n int counter_2(void) { return 2; }\n",
                   "M\tlib/counter.c"),
    "rename": ("diff --git a/lib/names.c b/lib/renamed.c\nsimilarity index 100%\n"
               "rename from lib/counter.c\nrename to lib/other.c\n",
               "R100\tlib/counter.c\tlib/other.c"),
}


@pytest.mark.parametrize("kind", MISNAMED)
def test_diff_whose_names_disagree_is_applied_as_git_am_does(generated, ktopic, kind):
    """A diff --git line that names another file than its ---/+++ (or
    rename) lines: git am applies to the file those lines name, and so
    does generate (not "lib/counter.c: does not exist in index")."""
    diff, change = MISNAMED[kind]
    (generated.root / "patches/names/0002-misnamed.patch").write_text(
        "From: Test Porter <porter@example.org>\nDate: Thu, 3 Dec 2026 06:03:00 +0000\n"
        "Subject: [PATCH] misnamed\n\nWhy: a test.\n---\n" + diff)
    generated.manifest.write_text(generated.manifest.read_text().replace(
        "      - 0001-lib-names-rename.patch\n",
        "      - 0001-lib-names-rename.patch\n      - 0002-misnamed.patch\n"))
    r = ktopic(*generated.args("generate"))
    assert r.status == 0, r
    assert generated.git("diff", "--name-status", "-M", "topic/names~", "topic/names").strip() \
        == change
    m = manifest.load(generated.manifest)
    assert git_rebuild.mismatches(m, generated.workdir / "linux.git") == {}
    # Only the misnamed diff leaves the temporary index for a full one.
    agree = {p.name: patchfile.parse(p).names_agree
             for p in (generated.root / "patches").rglob("*.patch")}
    assert [n for n, ok in agree.items() if not ok] == ["0002-misnamed.patch"], agree


def test_hand_made_commit_is_not_overwritten(generated, ktopic, tmp_path):
    wt = tmp_path / "wt"
    subprocess.run(["git", "--git-dir", str(generated.workdir / "linux.git"), "worktree", "add",
                    "-q", str(wt), "topic/counters"], check=True)
    (wt / "README").write_text("changed by hand\n")
    git_in(wt, "commit", "-q", "-a", "-m", "hand-made")
    hand = git_in(wt, "rev-parse", "HEAD").strip()
    subprocess.run(["git", "--git-dir", str(generated.workdir / "linux.git"), "worktree", "remove",
                    "--force", str(wt)], check=True)
    # The manifest changes, so generate wants to move the branch.
    p = generated.root / "patches/counters/0002-lib-counter-return-even-more.patch"
    p.write_text(p.read_text().replace("Why: a test needs it.", "Why: a test needs it badly."))
    r = ktopic(*generated.args("generate"))
    assert r.status == 1
    assert "branch topic/counters holds commits ktopic did not make" in r.err
    assert generated.refs()["refs/heads/topic/counters"] == hand
    r = ktopic(*generated.args("generate", "--force"))
    assert r.status == 0, r
    refs = generated.refs()
    backups = [k for k in refs if k.startswith("refs/ktopic/backup/topic/counters/")]
    assert len(backups) == 1 and refs[backups[0]] == hand
    assert backups[0] in r.out
    assert refs["refs/heads/topic/counters"] != hand


def test_branch_checked_out_in_a_worktree_is_not_moved(generated, ktopic, tmp_path):
    """As `git branch -f` refuses: moving it would leave that checkout
    holding the old files, the new commit's changes staged in reverse.
    Even --force does not move it; the other branches move."""
    gd = str(generated.workdir / "linux.git")
    wt = tmp_path / "wt"
    subprocess.run(["git", "--git-dir", gd, "worktree", "add", "-q", str(wt), "topic/names"],
                   check=True)
    (wt / "README").write_text("uncommitted work\n")
    before = generated.refs()
    p = generated.root / "patches/names/0001-lib-names-rename.patch"
    p.write_text(p.read_text().replace("Why: a test needs it.", "Why: a test needs it badly."))
    for force in ([], ["--force"]):
        r = ktopic(*generated.args("generate", *force))
        assert r.status == 1, r
        assert f"ktopic: branch topic/names is checked out in the worktree at {wt}; not moved" \
            in r.err, r.err
        refs = generated.refs()
        assert refs["refs/heads/topic/names"] == before["refs/heads/topic/names"]
        assert refs.get("refs/ktopic/made/topic/names") == \
            before.get("refs/ktopic/made/topic/names")
        assert refs["refs/heads/for-next"] != before["refs/heads/for-next"]
        assert git_in(wt, "status", "--porcelain") == " M README\n"
    subprocess.run(["git", "-C", str(wt), "switch", "-q", "--detach"], check=True)
    r = ktopic(*generated.args("generate"))
    assert r.status == 0, r
    assert generated.refs()["refs/heads/topic/names"] == generated.refs()["refs/heads/for-next"]


def test_branch_being_rebased_in_a_worktree_is_not_moved(generated, ktopic, tmp_path):
    """Its HEAD is detached while the rebase stops, but git branch -f still
    refuses it: the rebase would end by moving it back."""
    gd = str(generated.workdir / "linux.git")
    wt = tmp_path / "wt"
    subprocess.run(["git", "--git-dir", gd, "worktree", "add", "-q", str(wt), "topic/names"],
                   check=True)
    r = subprocess.run(["git", "-C", str(wt), "rebase", "-x", "false", "HEAD~1"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "rebase --continue" in r.stderr + r.stdout, r
    before = generated.refs()
    p = generated.root / "patches/names/0001-lib-names-rename.patch"
    p.write_text(p.read_text().replace("Why: a test needs it.", "Why: a test needs it badly."))
    r = ktopic(*generated.args("generate"))
    assert r.status == 1, r
    assert f"ktopic: branch topic/names is checked out in the worktree at {wt}; not moved" \
        in r.err, r.err
    assert generated.refs()["refs/heads/topic/names"] == before["refs/heads/topic/names"]


def test_upstream_check_that_fails_is_bad_input(imported, ktopic):
    text = imported.manifest.read_text().replace("contains: '^# define __flatten'",
                                                 "contains: '^# define __unflatten'")
    imported.manifest.write_text(text)
    r = ktopic(*imported.args("generate"))
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "__unflatten" in ln)
    assert r.status == 2
    assert r.err.strip() == (f"ktopic: branches.yaml:{line - 1}: upstream proof for "
                             f"'Compiler Attributes: add __flatten' fails on the base: "
                             f"include/linux/compiler_attributes.h contains /^# define __unflatten/ "
                             f"is not true")
    assert not any(k.startswith("refs/heads/topic") for k in imported.refs())


def test_interrupted_run_moves_no_ref(imported, ktopic, monkeypatch):
    real = stack.Stacker.apply
    calls = []

    def interrupt(self, head, p, *args):
        calls.append(p)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, head, p, *args)
    monkeypatch.setattr(stack.Stacker, "apply", interrupt)
    r = ktopic(*imported.args("generate"))
    assert r.status == 130
    assert not any(k.startswith(("refs/heads/topic", "refs/heads/for-next", "refs/ktopic/made"))
                   for k in imported.refs())
    monkeypatch.setattr(stack.Stacker, "apply", real)
    assert ktopic(*imported.args("generate")).status == 0


def _hold_lock(workdir, started, release):
    from ktopic.model.workdir import Workdir
    with Workdir(workdir).lock():
        started.set()
        release.wait(10)


def test_two_runs_serialise_on_the_lock(imported, ktopic):
    ctx = multiprocessing.get_context("fork")
    started, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(imported.workdir, started, release))
    holder.start()
    try:
        assert started.wait(10)
        t0 = time.monotonic()
        timer = __import__("threading").Timer(1.0, release.set)
        timer.start()
        r = ktopic(*imported.args("generate"))
        assert r.status == 0
        assert time.monotonic() - t0 >= 0.9
        assert "waiting for another run" in r.err
    finally:
        release.set()
        holder.join()


def test_status_table(generated, ktopic):
    r = ktopic(*generated.args("status"))
    assert r.status == 0
    rows = {ln.split("│")[1].strip(): ln for ln in r.out.splitlines() if ln.startswith("│")}
    assert set(rows) == {"compiler", "counters", "names", "integration"}
    assert "in sync (= base)" in rows["compiler"]
    assert all("in sync" in row for row in rows.values())
    assert "6.1.192-3" in rows["names"]


def test_status_sees_a_stale_branch(generated, ktopic):
    p = generated.root / "patches/names/0001-lib-names-rename.patch"
    p.write_text(p.read_text().replace("Why: a test needs it.", "Why: changed."))
    rows = {ln.split("│")[1].strip(): ln for ln in ktopic(*generated.args("status")).out.splitlines()
            if ln.startswith("│")}
    assert "behind the manifest" in rows["names"]
    assert "in sync" in rows["counters"]


def test_export_then_generate_round_trip(generated, ktopic):
    before = generated.refs()
    texts = {p: p.read_text() for p in (generated.root / "patches").rglob("*.patch")}
    manifest = generated.manifest.read_text()
    for topic in ("counters", "names"):
        r = ktopic(*generated.args("export", topic))
        assert r.status == 0, r
    assert {p: p.read_text() for p in (generated.root / "patches").rglob("*.patch")} == texts
    assert generated.manifest.read_text() == manifest
    assert ktopic(*generated.args("generate")).status == 0
    assert generated.refs() == before


def test_notes_below_the_line_survive_generate_and_export(generated, ktopic, tmp_path):
    """Text between the `---` that ends the message and a second `---`
    (test figures for reviewers) is kept in the commit after a `---` line,
    as `git format-patch` expects it: export writes the file back byte for
    byte, while `git am` on the receiving side drops the notes."""
    f = generated.root / "patches/names/0001-lib-names-rename.patch"
    notes = "Measured on a test machine: 3 of 3 runs.\n"
    text = f.read_text().replace("\n---\n", "\n---\n" + notes + "---\n", 1)
    f.write_text(text)
    assert ktopic(*generated.args("generate")).status == 0
    msg = generated.git("log", "-1", "--format=%B", "topic/names")
    assert msg.endswith("---\n" + notes + "\n")
    assert git_rebuild.mismatches(manifest.load(generated.manifest),
                                  generated.workdir / "linux.git") == {}
    r = ktopic(*generated.args("export", "names"))
    assert r.status == 0, r
    assert f.read_text() == text
    wt = tmp_path / "wt"
    subprocess.run(["git", "--git-dir", str(generated.workdir / "linux.git"), "worktree", "add",
                    "-q", "--detach", str(wt), "topic/names~1"], check=True)
    git_in(wt, "am", "-q", str(f))
    assert "Measured" not in git_in(wt, "log", "-1", "--format=%B")
    assert git_in(wt, "rev-parse", "HEAD^{tree}") == \
        generated.git("rev-parse", "topic/names^{tree}")


def _commit_by_hand(project, tmp_path) -> None:
    """A commit made by hand on topic/names, in a worktree since removed."""
    wt = tmp_path / "wt"
    gd = str(project.workdir / "linux.git")
    subprocess.run(["git", "--git-dir", gd, "worktree", "add", "-q", str(wt), "topic/names"], check=True)
    (wt / "lib/names.c").write_text((wt / "lib/names.c").read_text().replace('"n8"', '"eight"'))
    git_in(wt, "commit", "-q", "-a", "-s", "-m", "lib/names: eight\n\nWhy: exported by a test.")
    subprocess.run(["git", "--git-dir", gd, "worktree", "remove", "--force", str(wt)], check=True)


def test_export_of_a_hand_edited_branch_then_generate(generated, ktopic, tmp_path):
    _commit_by_hand(generated, tmp_path)
    r = ktopic(*generated.args("export", "names"))
    assert r.status == 0, r
    assert "patches/names/0002-lib-names-eight.patch" in r.out
    assert "- 0002-lib-names-eight.patch" in generated.manifest.read_text()
    r = ktopic(*generated.args("generate"))
    assert r.status == 0, r
    assert "eight" in generated.git("show", "topic/names:lib/names.c")
    assert generated.git("log", "-1", "--format=%s", "for-next").strip() == "lib/names: eight"


def test_export_does_not_overwrite_a_file_it_does_not_own(generated, ktopic, tmp_path):
    """A file in patches/<topic>/ of an output's name that the manifest does
    not list for the topic (a draft, not yet added) is refused, not
    replaced; nothing is written, the manifest is unchanged."""
    _commit_by_hand(generated, tmp_path)
    draft = generated.root / "patches/names/0002-lib-names-eight.patch"
    draft.write_text("my work in progress, not in the manifest\n")
    first = generated.root / "patches/names/0001-lib-names-rename.patch"
    files, manifest_text = first.read_bytes(), generated.manifest.read_text()
    refs = generated.refs()
    r = ktopic(*generated.args("export", "names"))
    assert r.status == 2, r
    assert r.err == ("ktopic: patches/names/0002-lib-names-eight.patch: exists, and the manifest "
                     "does not list it for topic names: not overwritten; move it away, then "
                     "export again (nothing was written)\n"), r.err
    assert draft.read_text() == "my work in progress, not in the manifest\n"
    assert first.read_bytes() == files
    assert generated.manifest.read_text() == manifest_text
    assert sorted(x.name for x in draft.parent.iterdir()) == [first.name, draft.name]
    assert generated.refs() == refs
    draft.unlink()
    r = ktopic(*generated.args("export", "names"))
    assert r.status == 0, r
    assert "- 0002-lib-names-eight.patch" in generated.manifest.read_text()


def test_export_names_functions_as_a_checkout_would(generated, ktopic, tmp_path):
    """The tree's .gitattributes (the kernel's "*.c diff=cpp") applies to the
    exported hunk headers although the work repository is bare: a label at
    column 0 is not taken for the function."""
    wt = tmp_path / "wt"
    gd = str(generated.workdir / "linux.git")
    subprocess.run(["git", "--git-dir", gd, "worktree", "add", "-q", str(wt), "topic/names"], check=True)
    (wt / ".gitattributes").write_text("*.c diff=cpp\n")
    body = "\tx++;\n" * 4
    (wt / "lib/names.c").write_text((wt / "lib/names.c").read_text() +
                                    f"\nint names_f(void)\n{{\n\tint x = 0;\nout:\n{body}\treturn x;\n}}\n")
    git_in(wt, "add", "-f", ".gitattributes", "lib/names.c")
    git_in(wt, "commit", "-q", "-s", "-m", "lib/names: names_f\n\nWhy: exported by a test.")
    (wt / "lib/names.c").write_text((wt / "lib/names.c").read_text().replace("return x;", "return x + 1;"))
    git_in(wt, "commit", "-q", "-a", "-s", "-m", "lib/names: one more\n\nWhy: exported by a test.")
    subprocess.run(["git", "--git-dir", gd, "worktree", "remove", "--force", str(wt)], check=True)
    r = ktopic(*generated.args("export", "names"))
    assert r.status == 0, r
    text = (generated.root / "patches/names/0003-lib-names-one-more.patch").read_text()
    assert re.search(r"^@@ .* @@ int names_f\(void\)$", text, re.M), text


def test_import_mbox_directory(generated, ktopic, tmp_path, patches_text):
    """The mails of a directory in [PATCH n/N] order, not by file name: a
    series that applies in that order only."""
    mails = tmp_path / "mails"
    mails.mkdir()
    (mails / "0000-cover.txt").write_text("From: x <x@example.org>\nSubject: [PATCH 0/2] cover\n\nhi\n")
    renamed = dict(TREE, **{"lib/names.c": TREE["lib/names.c"].replace('"n7"', '"seven"')})
    second = make_patch(tmp_path, renamed, [("lib/names.c", '"seven"', '"SEVEN"')],
                        "lib/names: rename", "Thu, 3 Dec 2026 06:03:00 +0000") \
        .replace("[PATCH]", "[PATCH 2/2]")
    first = patches_text["names/0001-lib-names-rename.patch"] \
        .replace("lib/names: rename", "lib/names: shout").replace("[PATCH]", "[PATCH 1/2]")
    (mails / "a.patch").write_text(second)
    (mails / "b.patch").write_text(first)
    r = ktopic(*generated.args("import-mbox", str(mails), "--topic", "compiler"))
    assert r.status == 0, r
    assert r.out.splitlines()[:2] == ["patches/compiler/0001-lib-names-shout.patch",
                                      "patches/compiler/0002-lib-names-rename.patch"]
    text = generated.manifest.read_text()
    assert "    patches:\n      - 0001-lib-names-shout.patch\n      - 0002-lib-names-rename.patch\n" in text


def test_import_mbox_file(generated, ktopic, tmp_path, patches_text):
    mbox = tmp_path / "series.mbox"
    first = patches_text["counters/0001-lib-counter-return-more.patch"].replace("[PATCH 1/2]", "[PATCH]")
    mbox.write_text(first + "\n" + patches_text["names/0001-lib-names-rename.patch"])
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "compiler"))
    assert r.status == 0, r
    assert "- 0001-lib-counter-return-more.patch\n      - 0002-lib-names-rename.patch" in \
        generated.manifest.read_text()


def test_import_mbox_of_nothing(generated, ktopic, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "note.txt").write_text("not a patch\n")
    r = ktopic(*generated.args("import-mbox", str(tmp_path / "empty"), "--topic", "names"))
    assert r.status == 2 and "no patch mails found" in r.err


def test_every_command_takes_every_name_of_a_branch(generated, ktopic):
    """A topic, its branch, "integration" and the integration branch's name
    mean the same to every command."""
    r = ktopic(*generated.args("generate", "for-next"))
    assert r.status == 0, r
    assert [ln.split()[0] for ln in r.out.splitlines()[:-1]] == ["for-next"]
    r = ktopic(*generated.args("generate", "topic/names", "integration"))
    assert r.status == 0, r
    assert [ln.split()[0] for ln in r.out.splitlines()[:-1]] == ["topic/names", "for-next"]
    r = ktopic(*generated.args("export", "topic/counters"))
    assert r.status == 0 and "patches/counters/0001-" in r.out, r
    r = ktopic(*generated.args("export", "for-next"))
    assert r.status == 2 and "'for-next' is the integration branch" in r.err, r
    m = manifest.load(generated.manifest)
    assert m.check_series_name("for-next") == m.check_series_name("integration") == "integration"
    assert m.check_series_name("topic/names") == "names"
    assert [s.name for s in m.resolve(["for-next", "topic/names", "counters"])] == \
        ["counters", "names", "integration"]
    assert [s.name for s in m.resolve(["base"], base=True)] == ["base"]


def test_an_unknown_name_is_the_same_line_in_every_command(generated, ktopic, tmp_path):
    """ci, build, boot and mutate reject a name as every other command
    does: one line, exit 2."""
    m = manifest.load(generated.manifest)
    want = f"ktopic: no topic 'nosuch' (topics: {', '.join(m.topics)})"
    for argv in (["generate"], ["check"], ["export"], ["range-diff"], ["mail"],
                 ["pull-request"], ["trailers", "--mbox", str(tmp_path / "r.mbox")],
                 ["ci"], ["build"], ["boot"], ["mutate"]):
        r = ktopic(*generated.args(*argv, "nosuch"))
        assert (r.status, r.err.strip()) == (2, want), (argv, r)


@pytest.mark.parametrize("topic", ["nosuch"])
def test_unknown_topic_argument(generated, ktopic, topic):
    r = ktopic(*generated.args("generate", topic))
    assert r.status == 2 and "no topic 'nosuch'" in r.err


def test_mails_are_parsed_ahead_but_reported_in_order(generated, ktopic, patches_text):
    """mailinfo runs ahead for every topic, but a bad mail is reported only
    when its topic is generated: not for a topic whose dependency failed."""
    root = generated.root / "patches"
    (root / "counters/0002-lib-counter-return-even-more.patch").write_text(
        patches_text["counters/0002-lib-counter-return-even-more.patch"]
        .replace("-int counter_30(void) { return 30; }", "-int counter_30(void) { return 31; }"))
    names = root / "names/0001-lib-names-rename.patch"
    names.write_text("".join(ln for ln in names.read_text().splitlines(keepends=True)
                             if not ln.startswith("From: ")))
    r = ktopic(*generated.args("generate"))
    assert r.status == 1, r
    assert "names: not generated: it depends on counters" in r.err
    assert "no Author" not in r.err
    (root / "counters/0002-lib-counter-return-even-more.patch").write_text(
        patches_text["counters/0002-lib-counter-return-even-more.patch"])
    r = ktopic(*generated.args("generate"))
    assert r.status == 2 and r.err.strip() == \
        "ktopic: patches/names/0001-lib-names-rename.patch:1: patch mail has no Author", r


@pytest.mark.parametrize("how", ["parameters", "count"])
def test_git_configuration_in_the_environment_changes_no_hash(generated, ktopic, tmp_path,
                                                              monkeypatch, how):
    """`git -c` (GIT_CONFIG_PARAMETERS) and GIT_CONFIG_COUNT/KEY/VALUE are
    the user's configuration too: cleared for the git that writes."""
    if how == "parameters":
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'i18n.commitencoding'='ISO-8859-1' "
                                                    "'core.compression'='1'")
    else:
        monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
        monkeypatch.setenv("GIT_CONFIG_KEY_0", "i18n.commitEncoding")
        monkeypatch.setenv("GIT_CONFIG_VALUE_0", "ISO-8859-1")
    other = tmp_path / "other-work"
    assert ktopic(*generated.args("import-base", workdir=other)).status == 0
    assert ktopic(*generated.args("generate", workdir=other)).status == 0
    for ref in ["refs/heads/base", *TOPIC_REFS]:
        assert generated.refs(other)[ref] == generated.refs()[ref]
    from ktopic.plumbing import gitutil
    e = gitutil.env()
    assert not any(k.startswith(("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY",
                                 "GIT_CONFIG_VALUE")) for k in e), e
