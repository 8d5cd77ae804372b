"""Kernel configuration from fragments, every requested value checked.

Takes a ConfigRequest (source tree, fragments); gives a ConfigResult (the
.config, the values that did not stick, the hashes).  docs/ci.md.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.errors import Failure, KtopicError

# "CONFIG_FOO=y", "CONFIG_FOO=\"str\"", "# CONFIG_FOO is not set"
_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


@dataclass
class ConfigRequest:
    """What to configure: the tree, the output directory, the fragments."""
    src: Path                        # kernel source tree
    out: Path                        # O= build directory
    fragments: list[Path]            # in order; later ones win
    make_env: dict[str, str] = field(default_factory=dict)
    # More make arguments: the build's own HOSTCC, or the config targets
    # build fixdep with another compiler and every build after them
    # compiles it again.
    make_args: list[str] = field(default_factory=list)


@dataclass
class ConfigResult:
    config: Path                     # out/.config
    fragment_hash: str               # hash of the requested values (cache key)
    config_hash: str                 # hash of the final .config
    missing: list[str]               # "CONFIG_X=y (got: not set)" per value that did not stick
    log: str = ""

    @property
    def ok(self) -> bool:
        return not self.missing


def parse_fragment(text: str, path: Path | None = None) -> dict[str, str]:
    """Requested values of one fragment: name -> value ("n" for not set)."""
    values: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = _UNSET.match(line)
        if m:
            values[m.group(1)] = "n"
            continue
        if line.startswith("#"):
            continue
        m = _SET.match(line)
        if not m:
            raise KtopicError(f"not a config line: {line!r}", file=path, line=n)
        values[m.group(1)] = m.group(2)
    return values


def requested_values(fragments: list[Path]) -> dict[str, str]:
    """The values the fragments ask for, later fragments overriding."""
    values: dict[str, str] = {}
    for frag in fragments:
        try:
            text = frag.read_text()
        except OSError as e:
            raise KtopicError(f"cannot read config fragment: {e.strerror}", file=frag) from None
        values.update(parse_fragment(text, frag))
    return values


def fragment_hash(fragments: list[Path]) -> str:
    """Hash of what the fragments request (order-sensitive, comments ignored)."""
    h = hashlib.sha256()
    for name, value in requested_values(fragments).items():
        h.update(f"{name}={value}\n".encode())
    return h.hexdigest()[:16]


def read_config(path: Path) -> dict[str, str]:
    """Values of a .config: name -> value; unset symbols are absent."""
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = _SET.match(line)
        if m:
            values[m.group(1)] = m.group(2)
    return values


def check_values(requested: dict[str, str], actual: dict[str, str]) -> list[str]:
    """Each requested value that the final configuration does not have."""
    missing = []
    for name, want in requested.items():
        got = actual.get(name)
        if want == "n":
            if got not in (None, "n"):
                missing.append(f"{name}=n (got: {got})")
        elif got != want:
            missing.append(f"{name}={want} (got: {'not set' if got is None else got})")
    return missing


def config_file_hash(path: Path) -> str:
    """Hash of a .config's settings (comments such as the header ignored)."""
    lines = [l for l in path.read_text().splitlines() if l.startswith("CONFIG_")]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _make(src: Path, out: Path, target: str, env: dict[str, str], extra=()) -> str:
    cmd = ["make", "-s", "-C", str(src), f"O={out}", *extra, target]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode:
        raise Failure(f"config: make {target} failed in {out}:\n{p.stdout.strip()}")
    return p.stdout


def configure(req: ConfigRequest) -> ConfigResult:
    """Write out/.config from the fragments and check that every value stuck."""
    for frag in req.fragments:
        if not frag.is_file():
            raise KtopicError("config fragment does not exist", file=frag)
    out = req.out
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(req.make_env)
    merged = out / "ktopic.merged.config"
    # merge_config.sh -m only merges (its make step would run in the current
    # directory); it writes its temporary files into the current directory,
    # so run it in the build directory, never in the source tree.
    env_merge = dict(env, KCONFIG_CONFIG=str(merged))
    script = req.src / "scripts/kconfig/merge_config.sh"
    p = subprocess.run(["sh", str(script), "-m", "-O", str(out),
                        *[str(f.resolve()) for f in req.fragments]],
                       cwd=out, env=env_merge, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    log = p.stdout
    if p.returncode:
        raise Failure(f"config: merge_config.sh failed:\n{p.stdout.strip()}")
    config = out / ".config"
    stamp = out / STAMP
    key = inputs_key(req.src, merged.read_bytes(), req.make_args, env)
    if key and config.is_file() and _stamped(stamp) == (key, config_file_hash(config)):
        log += f"configuration inputs unchanged ({key[:16]}): .config kept\n"
    else:
        stamp.unlink(missing_ok=True)
        log += _make(req.src, out, "allnoconfig", env,
                     [*req.make_args, f"KCONFIG_ALLCONFIG={merged}"])
        log += _make(req.src, out, "olddefconfig", env, req.make_args)
        if key:
            stamp.write_text(f"{key} {config_file_hash(config)}\n")
    requested = requested_values(req.fragments)
    missing = check_values(requested, read_config(config))
    return ConfigResult(config=config, fragment_hash=fragment_hash(req.fragments),
                        config_hash=config_file_hash(config), missing=missing, log=log)


# Written beside .config: the key of the inputs it was made from, and its hash.
STAMP = "ktopic.config.key"
# What Kconfig never reads: a change to these alone leaves .config as it was.
_NOT_KCONFIG = (".c", ".h", ".S", ".rs", ".rst", ".txt", ".dts", ".dtsi")
# Environment the kernel's Makefile and Kconfig take tools and flags from.
_KCONFIG_ENV = ("ARCH", "SRCARCH", "CC", "LD", "HOSTCC", "CROSS_COMPILE", "LLVM", "LLVM_IAS",
                "KCONFIG_CONFIG", "KCONFIG_ALLCONFIG")


def inputs_key(src: Path, merged: bytes, make_args: list[str], env: dict[str, str]) -> str:
    """A key of everything olddefconfig's result depends on: the merged
    fragments, the tree's files but its sources and documents (every
    Kconfig file, the scripts and Makefiles Kconfig runs or reads), the
    make arguments, the tool environment and the compiler and linker
    (Kconfig tests their options).  "" (always configure) when src is not
    a git worktree or holds changes to such files."""
    def run(*cmd: str) -> str | None:
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, errors="surrogateescape", env=env)
        except OSError:
            return None
        return p.stdout if p.returncode == 0 else None
    top = run("git", "-C", str(src), "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != Path(src).resolve():
        return ""                    # not a worktree of its own (inside another one?)
    tree = run("git", "-C", str(src), "ls-tree", "-r", "--full-tree", "HEAD")
    if tree is None:
        return ""
    h = hashlib.sha256()
    for line in tree.splitlines():
        path = line.split("\t", 1)[-1]
        if not (path.endswith(_NOT_KCONFIG) or path.startswith("Documentation/")):
            h.update(line.encode("utf-8", "surrogateescape") + b"\n")
    changed = run("git", "-C", str(src), "status", "--porcelain", "--untracked-files=no")
    if changed is None or any(not (x[3:].endswith(_NOT_KCONFIG) or
                                   x[3:].startswith("Documentation/"))
                              for x in changed.splitlines()):
        return ""
    h.update(merged)
    for part in (*make_args, *(f"{k}={env.get(k, '')}" for k in _KCONFIG_ENV)):
        h.update(part.encode() + b"\0")
    for tool in ("gcc", "ld"):
        h.update((run(env.get(tool.upper(), tool).split()[-1], "--version") or "").encode())
    return h.hexdigest()


def _stamped(stamp: Path) -> tuple[str, str] | None:
    try:
        key, chash = stamp.read_text().split()
    except (OSError, ValueError):
        return None
    return key, chash
