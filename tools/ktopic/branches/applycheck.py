"""Would git am apply a series on a topic?  Checked before import-mbox writes.

Takes the manifest, the work directory, a topic and the series' patches;
gives nothing, or the error that names the first patch (and its mail) git
am would stop at.  Commits are written as generate writes them; no ref
moves.  docs/design.md (import-mbox).
"""

from __future__ import annotations

from ktopic.branches.generate import Generator, base_commit
from ktopic.errors import Failure, KtopicError
from ktopic.model.manifest import Manifest
from ktopic.model.workdir import Workdir
from ktopic.plumbing.patchfile import PatchFile
from ktopic.plumbing.stack import ApplyError


def check(m: Manifest, wd: Workdir, topic: str, series: list[PatchFile]) -> None:
    """Raise unless every patch of series applies, in order, on topic."""
    gen = Generator(m, wd)
    try:
        base = base_commit(gen.git, m)
        try:
            head = gen.head_of(base, topic)
        except ApplyError as e:
            raise Failure(f"topic {topic}: {e}: the series cannot be checked on it; "
                          f"fix the topic first") from None
        try:
            gen.stacker.stack(head, series)
        except ApplyError as e:
            raise KtopicError(f"{e.file}: {e.hunk}: {e.detail}; git am would stop at it on "
                              f"top of topic {topic}", e.patch.display) from None
        gen.cache.save()
    finally:
        gen.stop_parsing()
        gen.stacker.close()
