"""The hostile corpus (hostile_cases.yaml, beside it): malformed and hostile manifests,
patches and mails, each run against one small synthetic work repository.

Each case must end with its exit status and exactly its one line on
stderr, move no ref, and leave the checkout (manifest, patches) as it was.
After the whole corpus, `git fsck --strict` of the work repository (every
object, reachable or not) reports nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import IDENT, MANIFEST, Project
from ktopic import cli
from ktopic.branches import proofs

CASES = yaml.safe_load(Path(__file__).with_name("hostile_cases.yaml").read_text())
SECONDS = 20            # a case that runs longer hangs: fail it, do not wait


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


def _alias_bomb(levels: int = 12) -> str:
    out = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, levels):
        out.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(out) + "\n"


# Manifest texts too big or too regular to write out in cases.yaml.
MAKERS = {
    "alias_bomb_value": lambda text: text.replace(
        "    description: counter changes\n",
        "    description: counter changes\n    kunit: *a11\n").replace(
        "version: 1\n", "version: 1\nx-bomb:\n" + "".join(
            "  " + ln + "\n" for ln in _alias_bomb().splitlines()), 1),
    "alias_bomb_top": lambda text: _alias_bomb() + "x: *a11\n",
    "deep_nesting": lambda text: text.replace(
        "    description: counter changes\n",
        "    description: counter changes\n    kunit: " + _nest(3000) + "\n"),
    "huge": lambda text: text.replace(
        "# A small manifest for the tests.\n", "#" + "x" * (9 << 20) + "\n"),
}


class Corpus:
    def __init__(self, root: Path, workdir: Path):
        self.project = Project(root, None)
        self.project.workdir = workdir
        self.root = root
        self.pristine = root.parent / "pristine"
        shutil.copytree(root, self.pristine)

    def reset(self) -> None:
        for p in self.root.iterdir():
            (shutil.rmtree if p.is_dir() and not p.is_symlink() else Path.unlink)(p)
        for p in self.pristine.iterdir():
            (shutil.copytree if p.is_dir() else shutil.copy2)(p, self.root / p.name)

    def snapshot(self) -> dict:
        return {str(p.relative_to(self.root)): (p.read_bytes(), p.stat().st_mode)
                for p in sorted(self.root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, _imported_template, tarball, patches_text):
    base = tmp_path_factory.mktemp("hostile")
    root = base / "repo"
    for rel, text in patches_text.items():
        (root / "patches" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "patches" / rel).write_text(text)
    (root / "branches.yaml").write_text(MANIFEST.format(ident=IDENT, tarball=tarball))
    workdir = base / "work"
    shutil.copytree(_imported_template, workdir, symlinks=True)
    assert cli.main(["-m", str(root / "branches.yaml"), "-w", str(workdir), "generate"]) == 0
    return Corpus(root, workdir)


def _new_file_patch(path: str, subject: str = "add a file") -> str:
    """A format-patch mail that adds `path` (whatever git would say of it)."""
    return (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: {IDENT}\nDate: Thu, 3 Dec 2026 06:00:00 +0000\n"
            f"Subject: [PATCH] {subject}\n\nWhy: a hostile test.\n\n"
            f"Signed-off-by: {IDENT}\n---\n"
            f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
            f"index 0000000..7898192\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+a\n")


def _setup(corpus: Corpus, case: dict, tmp: Path) -> dict:
    """Apply the case to the checkout; return the substitutions for its args."""
    root = corpus.root
    manifest = root / "branches.yaml"
    text = manifest.read_text()
    for old, new in case.get("edit", []):
        assert old in text, (case["id"], old)
        text = text.replace(old, new, 1)
    if "make" in case:
        text = MAKERS[case["make"]](text)
    if "text" in case:
        text = case["text"]
    data = text.encode(case.get("encoding", "utf-8"))
    manifest.write_bytes(data)
    for rel, body in case.get("files", {}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    for rel, path in case.get("new_file_patches", {}).items():
        p = root / "patches" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(_new_file_patch(path))
    for rel, target in case.get("symlinks", {}).items():
        (root / rel).symlink_to(target)
    subs = {"root": str(root), "workdir": str(corpus.project.workdir), "tmp": str(tmp)}
    for rel, body in case.get("tmp_files", {}).items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body.encode("latin-1"))
    if "edit_tarball" in case:
        text = re.sub(r"(?m)^  tarball: .*$", "  tarball: " + _subst(case["edit_tarball"], subs),
                      text)
        manifest.write_bytes(text.encode(case.get("encoding", "utf-8")))
    return subs


def _subst(s: str, subs: dict) -> str:
    for k, v in subs.items():
        s = s.replace("{" + k + "}", v)
    return s


def _unsubst(s: str, subs: dict) -> str:
    for k, v in sorted(subs.items(), key=lambda kv: -len(kv[1])):
        s = s.replace(v, "{" + k + "}")
    return s


def _timeout(*_):
    raise TimeoutError(f"the case ran longer than {SECONDS} s")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_hostile(corpus, case, capsys, tmp_path, monkeypatch):
    corpus.reset()
    monkeypatch.setattr(proofs, "SECONDS", 1.0, raising=False)
    subs = _setup(corpus, case, tmp_path)
    before_refs = corpus.project.refs()
    before_files = corpus.snapshot()
    workdir = _subst(case.get("workdir", "{workdir}"), subs)
    args = ["-m", str(corpus.root / "branches.yaml"), "-w", workdir] + \
        [_subst(a, subs) for a in case["run"]]
    capsys.readouterr()
    old = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(SECONDS)
    try:
        status = cli.main(args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out, err = capsys.readouterr()
    err = err.strip()
    if os.environ.get("HOSTILE_SHOW"):
        print(f"\n@@ {case['id']}: {status}: {_unsubst(err, subs)}", file=sys.__stderr__)
    assert status == case["status"], (status, out, err)
    text = (corpus.root / "branches.yaml").read_bytes().decode("utf-8", "replace")
    want = _subst(case["err"], subs)
    if "{line}" in want:
        marker = case["line"]
        assert marker in text, marker
        want = want.replace("{line}", str(text[:text.index(marker)].count("\n") + 1))
    if case.get("match"):
        assert re.fullmatch(want, err), err
    else:
        assert err == want
    assert corpus.project.refs() == before_refs
    assert corpus.snapshot() == before_files


def test_corpus_size():
    assert len(CASES) >= 60
    assert len({c["id"] for c in CASES}) == len(CASES)


def test_fsck_after_the_corpus(corpus):
    """Every object any case wrote, reachable or not, is one git accepts."""
    r = subprocess.run(["git", "--git-dir", str(corpus.project.workdir / "linux.git"),
                        "fsck", "--strict", "--no-dangling", "--no-progress"],
                       capture_output=True, text=True)
    problems = [ln for ln in (r.stdout + r.stderr).splitlines() if not ln.startswith("notice:")]
    assert r.returncode == 0 and not problems, r
