"""Write a topic branch back as patch files (git format-patch), and record
the branch head as known, so that generate may regenerate it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ktopic.model import manifest_edit
from ktopic.errors import Failure
from ktopic.branches.generate import MADE, Generator, base_commit
from ktopic.plumbing.gitutil import Git, tree_attributes
from ktopic.model.manifest import Manifest
from ktopic.model.workdir import Workdir


def export(m: Manifest, wd: Workdir, topic: str) -> tuple[Manifest, list[str]]:
    t = m.topic(topic)
    git = Git(wd.git_dir)
    head = git.ref(t.ref)
    if not head:
        raise Failure(f"branch {t.branch} does not exist: run `ktopic generate {topic}` first")
    gen = Generator(m, wd)
    start = gen.start_of(base_commit(git, m), topic)
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
            names = git.run(*attrs, "format-patch", "--no-signature", "--zero-commit",
                            "-o", str(Path(tmp, "out")), f"{start}..{head}").split()
        files = [Path(n).name for n in names]
        old = {p.path for p in t.patches}
        for f in files:
            Path(tmp, "out", f).replace(outdir / f)
    for p in old:
        if p.parent == outdir and p.name not in files and p.exists():
            p.unlink()
    if files == [p.rel for p in t.patches]:
        m2 = m                      # same list: leave the manifest as written
    else:
        waivers = {p.rel: p.waivers for p in t.patches}
        entries = []
        for f in files:
            w = waivers.get(f)
            entries.append({"file": f, "waivers": [{"type": x.type, "reason": x.reason}
                                                   for x in w]} if w else f)
        m2 = manifest_edit.set_patches(m, topic, entries)
    made = git.ref(MADE + t.branch)
    if made != head:
        git.update_refs([(MADE + t.branch, head, made)], "ktopic export")
    return m2, files
