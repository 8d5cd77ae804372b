"""A Debian package version, checked, and the ref name it is kept under.

Takes a version string; gives why it is not a Debian version (or None),
its DEP-14 ref name, and the version a ref name stands for.
docs/rebase.md.
"""

from __future__ import annotations

import re
import subprocess

UPSTREAM = re.compile(r"[0-9][A-Za-z0-9.+~-]*", re.A)
REVISION = re.compile(r"[A-Za-z0-9.+~]+", re.A)
# git keeps a ref in a file of its name (and <name>.lock while it moves).
NAME_MAX = 255


def problem(version: str) -> str | None:
    """Why version is not a Debian package version, or None."""
    if not version:
        return "it is empty"
    if any(c.isspace() or not c.isprintable() for c in version):
        return "it holds a space or a control character"
    rest = version
    if ":" in rest:
        epoch, rest = rest.split(":", 1)
        if not re.fullmatch(r"[0-9]+", epoch, re.A):
            return f"the epoch {epoch!r} is not a number"
    upstream, dash, revision = rest.rpartition("-")
    if not dash:
        upstream, revision = rest, None
    if not upstream or not upstream[0].isdigit() or not upstream[0].isascii():
        return "the upstream version does not start with a digit"
    if not UPSTREAM.fullmatch(upstream):
        bad = next(c for c in upstream if not re.fullmatch(r"[A-Za-z0-9.+~-]", c, re.A))
        return f"the upstream version holds {bad!r} (only letters, digits and . + ~ -)"
    if revision is not None and not REVISION.fullmatch(revision):
        if not revision:
            return "the Debian revision after the last '-' is empty"
        bad = next(c for c in revision if not re.fullmatch(r"[A-Za-z0-9.+~]", c, re.A))
        return f"the Debian revision holds {bad!r} (only letters, digits and . + ~)"
    return None


def upstream_of(version: str) -> str:
    """The upstream version: without the epoch and the revision."""
    rest = version.split(":", 1)[1] if ":" in version else version
    return rest.rpartition("-")[0] or rest


def mangle(version: str) -> str:
    """The DEP-14 name of version in a ref."""
    v = version.replace("~", "_").replace(":", "%")
    return re.sub(r"\.(?=\.|$|lock$)", ".#", v)


def unmangle(name: str) -> str:
    """The version a DEP-14 ref name stands for."""
    return name.replace("#", "").replace("%", ":").replace("_", "~")


# Names git's check-ref-format always takes (a subset of its rules: no
# component starts with a dot or ends with ".lock" or a dot, no "..").
PLAIN_REF = re.compile(r"(?!.*\.\.)(?!.*\.lock(?:/|$))(?!.*\.(?:/|$))"
                       r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)*")


def ref_problem(ref: str) -> str | None:
    """Why git cannot make this ref, or None: `git check-ref-format`, and
    the length of each component as a file name.  A name of the
    characters every ref may hold (PLAIN_REF) starts no git process:
    every manifest load checks the base's ref."""
    plain = ref.startswith("refs/") and PLAIN_REF.fullmatch(ref[len("refs/"):])
    if not plain and subprocess.run(["git", "check-ref-format", ref],
                                    capture_output=True).returncode != 0:
        return f"git refuses the ref name {ref}"
    for c in ref.split("/"):
        if len(c.encode()) + len(".lock") > NAME_MAX:
            return (f"a component of {len(c.encode())} bytes in the ref name: git keeps a ref in "
                    f"a file whose name, with .lock, has at most {NAME_MAX} bytes")
    return None


def base_ref(version: str) -> str:
    return "refs/ktopic/bases/" + mangle(version)


def old_ref(version: str, branch: str) -> str:
    return f"refs/ktopic/old/{mangle(version)}/{branch}"
