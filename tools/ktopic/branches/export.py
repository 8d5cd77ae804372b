"""Write a topic branch back as patch files (git format-patch), and record
the branch head as known, so that generate may regenerate it.

Takes a topic and its branch in the work repository; gives patches/<topic>/
and the manifest's list for it."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from ktopic.model import manifest_edit
from ktopic.errors import Failure, KtopicError
from ktopic.branches.generate import MADE, Generator, base_commit
from ktopic.plumbing.gitutil import Git, tree_attributes
from ktopic.model.manifest import Manifest, is_patch_file, listed_patches
from ktopic.model.workdir import Workdir


JOURNAL = "journal.json"


def recover(manifest: Path) -> list[str]:
    """Finish or undo each export a kill interrupted (a ktopic-export-*
    directory left in patches/), as git clears a dead process's lock files:
    forward when every new file is in place and the manifest lists them,
    else back (the files it moved aside return, the ones it put in go).
    Gives one line per directory, saying which."""
    said = []
    root = manifest.parent
    for tmp in sorted((root / "patches").glob("ktopic-export-*")):
        try:
            j = json.loads((tmp / JOURNAL).read_text())
            topic, files = j["topic"], list(j["files"])
        except (OSError, ValueError, KeyError, TypeError):
            shutil.rmtree(tmp, ignore_errors=True)     # killed before moving anything
            continue
        outdir = root / "patches" / topic
        done = not any((tmp / "out" / f).exists() for f in files) and \
            listed_patches(manifest, topic) == files
        if not done:
            for f in files:
                if not (tmp / "out" / f).exists():
                    (outdir / f).unlink(missing_ok=True)
            for old in (tmp / "old").iterdir() if (tmp / "old").is_dir() else []:
                old.replace(outdir / old.name)
        shutil.rmtree(tmp)
        said.append(f"an interrupted export of topic {topic} ({tmp.name}) was "
                    f"{'completed' if done else 'undone'}")
    return said


def export(m: Manifest, wd: Workdir, topic: str) -> tuple[Manifest, list[str]]:
    t = m.topic(topic)
    git = Git(wd.git_dir)
    base = base_commit(git, m)          # no base: import-base, not generate, comes first
    head = git.ref(t.ref)
    if not head:
        raise Failure(f"branch {t.branch} does not exist: run `ktopic generate {topic}` first")
    gen = Generator(m, wd)
    start = gen.start_of(base, topic)
    gen.cache.save()
    if not git.is_ancestor(start, head):
        raise Failure(f"branch {t.branch} does not start from its base and dependencies "
                      f"({start[:12]}); rebase it onto them first")
    if git.run("rev-list", "--merges", f"{start}..{head}").strip():
        raise Failure(f"branch {t.branch} has merge commits; a topic is a linear series")
    outdir = m.root / "patches" / topic
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ktopic-export-", dir=outdir.parent) as tmp:
        with tree_attributes(git, head) as attrs:
            git.run(*attrs, "format-patch", "--no-signature", "--zero-commit",
                    "-o", str(Path(tmp, "out")), f"{start}..{head}")
        # The files are read from the directory, not from git's output: it
        # names them by their paths, one a line, and the checkout's path
        # may hold a space or even a newline.  format-patch names a file
        # NNNN-<subject of [A-Za-z0-9._-]>.patch, in the series' order.
        out = Path(tmp, "out")
        files = sorted((f for f in os.listdir(out) if f.endswith(".patch")) if out.is_dir()
                       else [], key=_number)
        commits = git.run("rev-list", "--reverse", f"{start}..{head}").split()
        for i, f in enumerate(files):
            why = is_patch_file(Path(tmp, "out", f))
            if why:
                c = commits[i] if len(commits) == len(files) else None
                what = f"commit {c[:12]} ({git.run('log', '-1', '--format=%s', c).strip()})" \
                    if c else f"a commit ({f})"
                raise Failure(f"branch {t.branch}: {what} gives no patch ({why}); drop it "
                              f"or fold it into another, then export again; nothing was written")
        m2 = _replace(m, topic, t, outdir, Path(tmp), files)
    made = git.ref(MADE + t.branch)
    if made != head:
        git.update_refs([(MADE + t.branch, head, made)], "ktopic export")
    return m2, files


def _number(name: str) -> tuple[int, str]:
    """The order of a file git format-patch wrote: its leading number."""
    n = re.match(r"[0-9]+", name)
    return (int(n.group()) if n else 0, name)


def _replace(m: Manifest, topic: str, t, outdir: Path, tmp: Path, files: list[str]) -> Manifest:
    """Put the patches made in tmp/out in outdir and list them in the
    manifest: all of it, or (on any error or interrupt) none of it.  Files
    replaced or removed are moved aside to tmp/old first and moved back if
    anything fails.  Only files the manifest lists for the topic are
    replaced: any other file of an output's name is refused, before
    anything moves."""
    old = {p.path for p in t.patches if p.path.parent == outdir}
    listed = {p.path for p in t.patches} | {outdir / p.rel for p in t.patches}
    for f in files:
        path = outdir / f
        if os.path.lexists(path) and path not in listed and path.resolve() not in listed:
            # Not ktopic's: an untracked draft, another topic's file.
            raise KtopicError(f"exists, and the manifest does not list it for topic {topic}: "
                              f"not overwritten; move it away, then export again (nothing "
                              f"was written)", f"patches/{topic}/{f}")
    aside = tmp / "old"
    aside.mkdir()
    # What a later run needs to finish or undo this export if it is killed.
    (tmp / JOURNAL).write_text(json.dumps({"topic": topic, "files": files}))
    moved: list[str] = []           # in outdir now, put there by this export
    kept: list[str] = []            # moved aside from outdir
    try:
        for f in files:
            if (outdir / f).exists():
                (outdir / f).replace(aside / f)
                kept.append(f)
            (tmp / "out" / f).replace(outdir / f)
            moved.append(f)
        for p in old:
            if p.name not in files and p.exists():
                p.replace(aside / p.name)
                kept.append(p.name)
        if files == [p.rel for p in t.patches]:
            return m                # same list: leave the manifest as written
        known = {p.rel: p for p in t.patches}
        entries = [known[f].entry() if f in known else f for f in files]
        return manifest_edit.set_patches(m, topic, entries)
    except BaseException:
        for f in moved:
            (outdir / f).unlink(missing_ok=True)
        for f in kept:
            (aside / f).replace(outdir / f)
        raise
