"""Add a posted series to a topic: an mbox file, or a directory of patch
mails (one per file, as in shared/seeds/).  Cover letters and mails
without a diff are skipped; the patches keep their order (the [PATCH n/m]
numbers when present, else file order) and are appended to the topic."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from ktopic.model import manifest_edit
from ktopic.errors import KtopicError
from ktopic.model.manifest import Manifest, is_patch_file
from ktopic.plumbing.patchfile import parse

NUMBER = re.compile(r"^\[[^\]]*?(\d+)/(\d+)\]")


def _raw_subject(path: Path) -> str:
    m = re.search(r"^Subject: (.*(?:\n[ \t].*)*)", path.read_text(errors="replace"), re.M)
    return re.sub(r"\s+", " ", m.group(1)).strip() if m else ""


def split(source: Path, tmp: Path) -> list[Path]:
    if source.is_dir():
        return sorted(p for p in source.iterdir() if p.is_file())
    if not source.is_file():
        raise KtopicError("no such mbox file or directory", source)
    r = subprocess.run(["git", "mailsplit", "-b", f"-o{tmp}", str(source)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise KtopicError(f"not an mbox: {r.stderr.strip()}", source)
    return sorted(tmp.iterdir())


def import_mbox(m: Manifest, source: Path, topic: str) -> tuple[Manifest, list[str]]:
    t = m.topic(topic)
    with tempfile.TemporaryDirectory(prefix="ktopic-mbox-") as tmp:
        mails = []
        for i, path in enumerate(split(source, Path(tmp))):
            if is_patch_file(path) is not None:
                continue                      # a cover letter, an article...
            subject = _raw_subject(path)
            num = NUMBER.match(subject)
            mails.append(((int(num.group(1)) if num else 0, i), path))
        if not mails:
            raise KtopicError("no patch mails found (a patch mail has a Subject: and a diff)",
                              source)
        mails.sort()
        outdir = m.root / "patches" / topic
        outdir.mkdir(parents=True, exist_ok=True)
        existing = [p.rel for p in t.patches]
        n = len(existing)
        written = []
        for _, path in mails:
            pf = parse(path, str(path))       # refuses what git am would refuse
            n += 1
            name = f"{n:04d}-{manifest_edit.slug(pf.subject)}.patch"
            if (outdir / name).exists():
                raise KtopicError(f"patches/{topic}/{name} already exists", source)
            (outdir / name).write_bytes(path.read_bytes())
            written.append(name)
    try:
        m2 = manifest_edit.set_patches(m, topic, [_entry(p) for p in t.patches] + written)
    except BaseException:
        for name in written:
            (outdir / name).unlink(missing_ok=True)
        raise
    return m2, written


def _entry(p):
    if not p.waivers:
        return p.rel
    return {"file": p.rel, "waivers": [{"type": w.type, "reason": w.reason} for w in p.waivers]}
