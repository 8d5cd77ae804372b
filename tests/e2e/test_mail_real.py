"""ktopic mail closures --output on the real packaged tree: b4 in a sparse
worktree of the 78,000-file repository, get_maintainer.pl from the branch."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import time

import pytest

from conftest import REPO, missing

pytestmark = pytest.mark.e2e


def test_mail_closures_output(real_workdir, tmp_path, monkeypatch):
    if shutil.which("b4") is None:
        missing("b4", "apt-get install b4 (make deps)")
    cfg = tmp_path / "gitconfig"
    cfg.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    # A copy of the project, so that out/ and mail/ of the checkout stay untouched,
    # and a work directory sharing the imported base's objects.
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(REPO / "branches.yaml", proj)
    for d in ("patches", "qemu"):
        shutil.copytree(REPO / d, proj / d, ignore=shutil.ignore_patterns("*.o", "build*"))
    wd = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", "--mirror", "--shared", str(real_workdir / "linux.git"),
                    str(wd / "linux.git")], check=True)
    ktopic = [sys.executable, str(REPO / "tools/bin/ktopic"), "-m", str(proj / "branches.yaml"),
              "-w", str(wd)]
    r = subprocess.run(ktopic + ["generate", "closures"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    t0 = time.monotonic()
    out = tmp_path / "mail-out"
    # The time-out only catches a hang: the run's time is a benchmark's business.
    r = subprocess.run(ktopic + ["mail", "closures", "--output", str(out)],
                       capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    print(r.stdout, f"mail took {seconds:.1f} s")
    files = sorted(out.glob("*.eml"))
    git = ["git", "--git-dir", str(wd / "linux.git")]
    n = int(subprocess.run(git + ["rev-list", "--count", "base..topic/closures"],
                           capture_output=True, text=True, check=True).stdout)
    assert len(files) == (n if n == 1 else n + 1)
    msgs = [email.message_from_binary_file(open(f, "rb")) for f in files]
    first = msgs[0]
    body = first.get_payload(decode=True).decode()
    assert first["Subject"].startswith("[PATCH")
    to_cc = first["To"] + " " + (first["Cc"] or "")
    assert "Coly Li <colyli@suse.de>" in to_cc
    assert "linux-bcache@vger.kernel.org" in to_cc          # manifest and get_maintainer.pl
    assert "Debian's linux-source-6.1 6.1.192-3, that is upstream v6.1.192" in body
    assert '"closures: fix a race on wakeup from closure_sync"' in body
    base = subprocess.run(git + ["rev-parse", "base"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert f"\nbase-commit: {base}\n" in body.replace("\r\n", "\n")   # the reproducible import
    # the sparse worktree checked nothing out, and is gone
    assert not (wd / "mail-worktrees" / "closures").exists()
