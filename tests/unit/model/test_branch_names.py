"""Branch names taken without asking git (manifest.PLAIN_BRANCH, so that a
manifest of thousands of topics does not start a git process for each)
are names git's check-ref-format takes too: seeded, generated names."""

from __future__ import annotations

import random
import subprocess

from ktopic.model import manifest

ALPHABET = ["a", "b", "Z", "0", ".", "-", "_", "+", "/", "lock", ".lock", "@", "{", "~", ":"]


def _git_takes(name: str) -> bool:
    return subprocess.run(["git", "check-ref-format", "refs/heads/" + name],
                          capture_output=True).returncode == 0


def test_names_taken_without_git_are_names_git_takes():
    rng = random.Random(20261206)
    plain = 0
    for _ in range(800):
        name = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 8)))
        if manifest.PLAIN_BRANCH.fullmatch(name):
            plain += 1
            assert _git_takes(name), name
    assert plain >= 50, plain
