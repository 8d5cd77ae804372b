"""Add a posted series to a topic: an mbox file, or a directory of patch
mails (one per file, as in shared/seeds/).  Cover letters and mails
without a diff are skipped; the patches keep their order (the [PATCH n/m]
numbers when present, else file order) and are appended to the topic.

Takes an mbox file or a directory of mails and a topic; gives the patch
files written and the edited manifest."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from ktopic.model import manifest_edit
from ktopic.errors import KtopicError
from ktopic.model.manifest import Manifest, is_patch_file
from ktopic.plumbing import gitutil
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
                       capture_output=True, text=True, env=gitutil.env())
    if r.returncode != 0:
        raise KtopicError(f"not an mbox: {r.stderr.strip()}", source)
    return sorted(tmp.iterdir())


# A mail header block after a diff: mails pasted together without the
# "From " line that separates mails in an mbox.
GLUED = re.compile(r"^diff --git .*?^\n?(?:From|Date): [^\n]*\n(?:[\w-]+: [^\n]*\n)*?Subject: ",
                   re.M | re.S)


def _plain(subject: str) -> str:
    """A subject without its [PATCH ...] prefix, spaces folded."""
    return re.sub(r"\s+", " ", re.sub(r"^(\[[^\]]*\]\s*)+", "", subject)).strip()


def import_mbox(m: Manifest, source: Path, topic: str) -> tuple[Manifest, list[str]]:
    t = m.topic(topic)
    have = {_plain(_raw_subject(p.path)): p.rel for p in t.patches}
    with tempfile.TemporaryDirectory(prefix="ktopic-mbox-") as tmp:
        mails = []
        for i, path in enumerate(split(source, Path(tmp))):
            # Name the input, and the mail's number in it: not the temporary file.
            where = f"{source}: mail {i + 1}" if not source.is_dir() else str(path)
            if is_patch_file(path) is not None:
                continue                      # a cover letter, an article...
            text = path.read_text(errors="replace")
            if GLUED.search(text):
                raise KtopicError("holds more than one mail (headers after a diff, with no "
                                  "'From ' line between them): make it an mbox, or a "
                                  "directory with one mail per file", where)
            subject = _raw_subject(path)
            if _plain(subject) in have:
                raise KtopicError(f"{_plain(subject)!r} is already in topic {topic} as "
                                  f"patches/{topic}/{have[_plain(subject)]}", where)
            num = NUMBER.match(subject)
            mails.append(((int(num.group(1)) if num else 0, i), path, where))
        if not mails:
            raise KtopicError("no patch mails found (a patch mail has a Subject: and a diff)",
                              source)
        mails.sort()
        outdir = m.root / "patches" / topic
        outdir.mkdir(parents=True, exist_ok=True)
        existing = [p.rel for p in t.patches]
        n = len(existing)
        written = []
        for _, path, where in mails:
            pf = parse(path, where)           # refuses what git am would refuse
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
