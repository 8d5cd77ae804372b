"""ci and mutate build a branch as it is: one that is behind its patches
is named on stderr, so that a green run is not taken for the patches'."""

import argparse

from ktopic.commands import common
from ktopic.model import manifest


def _args(project):
    return argparse.Namespace(manifest=str(project.manifest), workdir=str(project.workdir))


def test_a_branch_behind_its_patches_is_named(generated, capsys):
    p = generated.root / "patches/names/0001-lib-names-rename.patch"
    p.write_text(p.read_text().replace("Why: a test needs it.", "Why: changed."))
    m = manifest.load(generated.manifest, workdir=generated.workdir)
    common.warn_stale(m, _args(generated), [])
    err = capsys.readouterr().err.splitlines()
    # names, and the integration branch that stacks it
    assert [ln.split()[2] for ln in err] == ["topic/names", "for-next"]
    assert "ktopic generate names" in err[0]


def test_only_the_branches_asked_for(generated, capsys):
    p = generated.root / "patches/names/0001-lib-names-rename.patch"
    p.write_text(p.read_text().replace("Why: a test needs it.", "Why: changed."))
    m = manifest.load(generated.manifest, workdir=generated.workdir)
    common.warn_stale(m, _args(generated), ["counters"])
    assert capsys.readouterr().err == ""
    common.warn_stale(m, _args(generated), ["topic/names"])
    assert "topic/names" in capsys.readouterr().err


def test_in_sync_says_nothing(generated, capsys):
    m = manifest.load(generated.manifest, workdir=generated.workdir)
    common.warn_stale(m, _args(generated), [])
    assert capsys.readouterr().err == ""
