"""Repository safety: export writes all or nothing, commands read the
manifest under the work directory's lock, and what status and the file
modes say is true."""

from __future__ import annotations

import subprocess

import pytest

from conftest import git_in
from ktopic.errors import KtopicError
from ktopic.model import manifest
from ktopic.plumbing import manifests


def _edit_branch(project, tmp_path, branch, *steps):
    """Run git commands (lists of arguments) in a worktree of branch."""
    wt = tmp_path / "wt"
    gd = str(project.workdir / "linux.git")
    subprocess.run(["git", "--git-dir", gd, "worktree", "add", "-q", str(wt), branch], check=True)
    for step in steps:
        git_in(wt, *step)
    subprocess.run(["git", "--git-dir", gd, "worktree", "remove", "--force", str(wt)], check=True)


def _checkout(project) -> dict:
    return {str(p.relative_to(project.root)): p.read_bytes()
            for p in sorted(project.root.rglob("*")) if p.is_file()}


def test_failed_export_changes_nothing(generated, ktopic, tmp_path):
    """A reworded commit and an empty one: the export fails, and every patch
    file and the manifest are as they were."""
    _edit_branch(generated, tmp_path, "topic/names",
                 ["commit", "-q", "--amend", "-m", "lib/names: reworded\n\nWhy: a test."],
                 ["commit", "-q", "--allow-empty", "-m", "empty\n\nWhy: nothing."])
    before, refs = _checkout(generated), generated.refs()
    r = ktopic(*generated.args("export", "names"))
    print(r)
    assert r.status != 0
    assert _checkout(generated) == before
    assert generated.refs() == refs


def test_failed_export_says_which_commit(generated, ktopic, tmp_path):
    _edit_branch(generated, tmp_path, "topic/names",
                 ["commit", "-q", "--allow-empty", "-m", "empty\n\nWhy: nothing."])
    r = ktopic(*generated.args("export", "names"))
    assert r.status == 1
    head = generated.git("rev-parse", "topic/names").strip()
    assert r.err == (f"ktopic: branch topic/names: commit {head[:12]} (empty) gives no patch "
                     f"(empty patch file); drop it or fold it into "
                     f"another, then export again; nothing was written\n")


def test_interrupted_export_changes_nothing(generated, ktopic, tmp_path, monkeypatch):
    """Ctrl-C while the manifest is being rewritten: the patch files moved
    in are taken out again and the old ones put back."""
    from ktopic.model import manifest_edit
    _edit_branch(generated, tmp_path, "topic/names",
                 ["commit", "-q", "--amend", "-m", "lib/names: reworded\n\nWhy: a test."])
    before, refs = _checkout(generated), generated.refs()

    def interrupt(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(manifest_edit, "set_patches", interrupt)
    r = ktopic(*generated.args("export", "names"))
    assert r.status == 130
    assert _checkout(generated) == before
    assert generated.refs() == refs


def test_generate_reads_the_manifest_under_the_lock(generated, ktopic, tmp_path):
    """A generate that waits for the lock (an export holds it) builds from
    the manifest as the export left it, not as it was when it started."""
    import sys
    import threading
    import time
    from conftest import REPO
    from ktopic.model.workdir import Workdir

    p = generated.root / "patches/names/0001-lib-names-rename.patch"
    old_head = generated.refs()["refs/heads/topic/names"]
    with Workdir(generated.workdir).lock():
        proc = subprocess.Popen([sys.executable, str(REPO / "tools/bin/ktopic"),
                                 *generated.args("generate", "names")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # It is waiting when it says so; then the "export" rewrites the series.
        line = proc.stderr.readline()
        assert "waiting for another run" in line, line
        # (as export does: a new file name in the manifest, the old file gone)
        q = p.with_name("0001-lib-names-renamed.patch")
        q.write_text(p.read_text().replace("Why: a test needs it.", "Why: exported meanwhile."))
        p.unlink()
        generated.manifest.write_text(generated.manifest.read_text().replace(
            "- 0001-lib-names-rename.patch", "- 0001-lib-names-renamed.patch"))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    head = generated.refs()["refs/heads/topic/names"]
    assert head != old_head
    assert "exported meanwhile" in generated.git("log", "-1", "--format=%B", head)


def test_export_and_import_mbox_keep_the_manifest_mode(generated, ktopic, tmp_path, patches_text):
    generated.manifest.chmod(0o644)
    _edit_branch(generated, tmp_path, "topic/names",
                 ["commit", "-q", "--amend", "-m", "lib/names: reworded\n\nWhy: a test."])
    assert ktopic(*generated.args("export", "names")).status == 0
    assert generated.manifest.stat().st_mode & 0o777 == 0o644
    mbox = tmp_path / "one.mbox"       # 1/2 alone lacks 2/2: unnumbered
    mbox.write_text(patches_text["counters/0001-lib-counter-return-more.patch"]
                    .replace("[PATCH 1/2]", "[PATCH]"))
    assert ktopic(*generated.args("import-mbox", str(mbox), "--topic", "compiler")).status == 0
    assert generated.manifest.stat().st_mode & 0o777 == 0o644


def test_validation_stamps_follow_the_work_directory(project, ktopic, tmp_path, monkeypatch):
    """-w names the work directory: nothing is written to the default one."""
    default = tmp_path / "default"
    monkeypatch.setenv("KTOPIC_WORKDIR", str(default))
    r = ktopic(*project.args("status"))
    assert r.status == 1, r
    assert not default.exists()
    assert list((project.workdir / "validated").iterdir())


def test_a_manifest_changed_while_it_is_loaded_is_not_stamped_valid(project, monkeypatch):
    """The validation stamp is keyed by the bytes validated: a file
    rewritten between the read and the stamp is validated when it is
    loaded again, not taken as known."""
    good = project.manifest.read_text()
    bad = good.replace("    branch: topic/names\n", "    branch: topic/bad..name\n")
    real = manifest.no_nul

    def rewritten(data, name):          # runs after the read, before the stamp
        real(data, name)
        project.manifest.write_text(bad)
    monkeypatch.setattr(manifest, "no_nul", rewritten)
    manifests.load(project.manifest, workdir=project.workdir)
    assert list((project.workdir / "validated").iterdir())
    monkeypatch.setattr(manifest, "no_nul", real)
    with pytest.raises(KtopicError, match="invalid branch name 'topic/bad..name'"):
        manifests.load(project.manifest, workdir=project.workdir)


def test_export_without_a_base_says_import_base(project, ktopic):
    r = ktopic(*project.args("export", "names"))
    assert r.status == 1
    assert r.err == "ktopic: no base in the work repository: run `ktopic import-base` first\n"


def test_status_exit_status(generated, ktopic, tmp_path):
    assert ktopic(*generated.args("status")).status == 0
    _edit_branch(generated, tmp_path, "topic/names",
                 ["commit", "-q", "--allow-empty", "-m", "mine\n\nWhy: by hand."])
    r = ktopic(*generated.args("status"))
    assert r.status == 1
    assert r.err == "ktopic: not in sync with branches.yaml: topic/names\n"


def test_status_on_another_base_is_not_in_sync(generated, ktopic):
    generated.manifest.write_text(generated.manifest.read_text().replace(
        "debian-version: 6.1.192-3", "debian-version: 6.1.192-4"))
    r = ktopic(*generated.args("status"))
    assert r.status == 1
    assert "in sync" not in r.out and r.out.count("base differs: run `ktopic import-base`") == 4


def _mail_without_from_line(text: str) -> str:
    return text.split("\n", 1)[1]           # drop git format-patch's "From <sha>" line


def test_import_mbox_refuses_mails_glued_together(generated, ktopic, tmp_path, patches_text):
    mbox = tmp_path / "glued.mbox"
    mbox.write_text(patches_text["counters/0001-lib-counter-return-more.patch"] +
                    _mail_without_from_line(patches_text["names/0001-lib-names-rename.patch"]))
    before = _checkout(generated)
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "compiler"))
    assert r.status == 2
    assert r.err == (f"ktopic: {mbox}: mail 1: holds more than one mail (headers after a diff, "
                     f"with no 'From ' line between them): make it an mbox, or a directory "
                     f"with one mail per file\n")
    assert _checkout(generated) == before


def test_import_mbox_twice_is_refused(generated, ktopic, tmp_path, patches_text):
    mbox = tmp_path / "series.mbox"    # 1/2 alone lacks 2/2: unnumbered
    mbox.write_text(patches_text["counters/0001-lib-counter-return-more.patch"]
                    .replace("[PATCH 1/2]", "[PATCH]"))
    assert ktopic(*generated.args("import-mbox", str(mbox), "--topic", "compiler")).status == 0
    before = _checkout(generated)
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "compiler"))
    assert r.status == 2
    assert r.err == (f"ktopic: {mbox}: mail 1: 'lib/counter: return more' is already in topic "
                     f"compiler as patches/compiler/0001-lib-counter-return-more.patch\n")
    assert _checkout(generated) == before


def test_import_mbox_error_names_the_input_and_mail(generated, ktopic, tmp_path, patches_text):
    mbox = tmp_path / "series.mbox"
    bad = patches_text["names/0001-lib-names-rename.patch"].replace(
        "From: Test Porter <porter@example.org>\n", "")
    mbox.write_text(patches_text["counters/0001-lib-counter-return-more.patch"] + bad)
    r = ktopic(*generated.args("import-mbox", str(mbox), "--topic", "compiler"))
    assert r.status == 2
    assert r.err.startswith(f"ktopic: {mbox}: mail 2"), r.err
    assert "ktopic-mbox-" not in r.err


def test_two_force_backups_within_a_second(generated, ktopic, tmp_path, monkeypatch):
    import time as time_mod
    monkeypatch.setattr(time_mod, "gmtime", lambda *a: time_mod.struct_time(
        (2026, 12, 4, 12, 0, 0, 4, 338, 0)))
    backups = []
    for i in range(2):
        _edit_branch(generated, tmp_path, "topic/names",
                     ["commit", "-q", "--allow-empty", "-m", f"mine {i}\n\nWhy: by hand."])
        r = ktopic(*generated.args("generate", "--force", "names"))
        assert r.status == 0, r
        backups.append(next(ln.split(" kept as ")[1] for ln in r.out.splitlines() if " kept as " in ln))
    assert backups == ["refs/ktopic/backup/topic/names/20261204T120000Z",
                       "refs/ktopic/backup/topic/names/20261204T120000Z-2"]
    assert all(b in generated.refs() for b in backups)


def test_interrupt_while_starting_is_one_line(project):
    """Ctrl-C at any moment of the first half second: one line, exit 130."""
    import signal
    import sys
    import time
    from conftest import REPO
    for delay in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5):
        p = subprocess.Popen([sys.executable, str(REPO / "tools/bin/ktopic"),
                              *project.args("status")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        if "init_import_site" in err or err.startswith(("Fatal Python error: init_",
                                                        "python: failed to set __main__")):
            continue        # Python itself was still starting: no ktopic code had run
        if p.returncode == 130:
            assert err == "ktopic: interrupted; no ref was moved\n", (delay, err)
        else:
            assert "Traceback" not in err, (delay, err)


def test_interrupt_inside_a_lazy_import_is_one_line(ktopic, monkeypatch):
    """Ctrl-C while a command's modules load: a KeyboardInterrupt raised in a
    class body comes out of the import as a RuntimeError (Python wraps what
    __set_name__ raises); still one line and exit 130.  A RuntimeError with
    no interrupt behind it is no interrupt."""
    from ktopic import cli, errors

    def wrapped(command):
        try:
            cli._interrupt()            # what the SIGINT handler does
        except KeyboardInterrupt as e:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from e
    monkeypatch.setattr(cli, "parser", wrapped)
    r = ktopic("status")
    assert (r.status, r.err) == (130, "ktopic: interrupted; no ref was moved\n"), r

    def broken(command):
        raise RuntimeError("a bug")
    monkeypatch.setattr(cli, "parser", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        ktopic("status")
    assert not errors.interrupted


def test_interrupt_after_the_ref_transaction_says_so(imported, ktopic, monkeypatch):
    from ktopic.plumbing import gitutil
    real = gitutil.Git.update_refs

    def then_interrupt(self, updates, msg):
        real(self, updates, msg)
        raise KeyboardInterrupt
    monkeypatch.setattr(gitutil.Git, "update_refs", then_interrupt)
    r = ktopic(*imported.args("generate", "counters"))
    assert r.status == 130
    assert r.err == ("ktopic: interrupted after its ref transaction(s) moved 2 ref(s), each "
                     "transaction whole: refs/heads/topic/counters, "
                     "refs/ktopic/made/topic/counters\n")
    assert "refs/heads/topic/counters" in imported.refs()
    monkeypatch.setattr(gitutil.Git, "update_refs", real)
    r = ktopic(*imported.args("generate", "names"))
    assert r.status == 0


def test_interrupted_import_leaves_no_pack(project, ktopic, monkeypatch):
    from ktopic.plumbing import importbase

    def interrupt(*a):
        raise KeyboardInterrupt
    monkeypatch.setattr(importbase, "makefile_version", interrupt)
    r = ktopic(*project.args("import-base"))
    assert r.status == 130
    assert r.err == "ktopic: interrupted; no ref was moved\n"
    assert project.refs() == {}
    assert list((project.workdir / "linux.git/objects/pack").glob("tmp_pack_*")) == []


def test_a_swallowed_interrupt_still_stops_import_base(project, ktopic, monkeypatch):
    """A signal whose KeyboardInterrupt Python "ignored" (it landed in a
    destructor): the import stops at the next file, and nothing moves."""
    from ktopic import errors
    from ktopic.plumbing import importbase
    real = importbase.makefile_version

    def swallowed(text):
        errors.interrupted = True          # the handler ran; its exception was lost
        return real(text)
    monkeypatch.setattr(importbase, "makefile_version", swallowed)
    r = ktopic(*project.args("import-base"))
    assert r.status == 130, r
    assert project.refs() == {}


def test_a_swallowed_interrupt_moves_no_ref(imported, ktopic, monkeypatch):
    from ktopic import errors
    from ktopic.plumbing import stack
    real = stack.Stacker.apply

    def swallowed(self, *a, **k):
        errors.interrupted = True
        return real(self, *a, **k)
    monkeypatch.setattr(stack.Stacker, "apply", swallowed)
    before = imported.refs()
    r = ktopic(*imported.args("generate"))
    assert r.status == 130, r
    assert r.err == "ktopic: interrupted; no ref was moved\n"
    assert imported.refs() == before


def test_import_base_says_how_far_it_is_in_a_log(project, ktopic, monkeypatch):
    """Not a terminal: a line every INTERVAL seconds (here: every read)."""
    from ktopic.plumbing import importbase
    monkeypatch.setattr(importbase._Meter, "INTERVAL", 0.0)
    r = ktopic(*project.args("import-base"))
    assert r.status == 0, r
    lines = [ln for ln in r.err.splitlines() if ln.startswith("ktopic: import-base: ")]
    assert lines and all(" files)" in ln and "% (" in ln for ln in lines), r.err
    assert lines[-1].startswith("ktopic: import-base: 100% ")
