"""branches.yaml: load, validate (JSON Schema, then the rules a schema
cannot say), and present as typed objects.

Every complaint is a KtopicError naming branches.yaml:line.

Takes branches.yaml (and the files it names); gives a Manifest, or a
KtopicError at its line.
"""

from __future__ import annotations

import json
import re
import subprocess
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml

from ktopic.model import branchspec, debversion, variants, yamlpos
from ktopic.errors import KtopicError

SCHEMA = Path(__file__).with_name("manifest.schema.json")


@dataclass
class Check:
    file: str
    pattern: str
    present: bool            # contains (True) or lacks (False)
    line: int

    def describe(self) -> str:
        return f"{self.file} {'contains' if self.present else 'lacks'} /{self.pattern}/"


@dataclass
class Carried:
    """A 2019 patch the series no longer carries: upstream, superseded or dropped."""
    kind: str                # upstream | superseded | dropped
    subject: str
    where: str               # upstream-in / replaced-by / reason
    checks: list[Check]
    line: int
    evidence: str = ""
    tests: list[str] = field(default_factory=list)


@dataclass
class Expect:
    """A boot that loads `module` with `args` and must show a `report` finding
    whose message or quoted lines match `match`."""
    name: str
    module: str
    args: str
    report: str
    match: str
    line: int


@dataclass
class Waiver:
    type: str
    reason: str


@dataclass
class PatchUpstream:
    """The mainline commit that carries a patch in its own form: on a base
    from `release` on, `ktopic rebase` drops the patch by it, once `checks`
    hold on that base (docs/rebase.md)."""
    commit: str
    subject: str
    release: str             # vX.Y
    checks: list[Check]
    raw: dict                # as written, for rewriting the list


@dataclass
class Patch:
    path: Path               # absolute
    rel: str                 # as written in the manifest (relative to patches/<topic>/)
    line: int
    waivers: list[Waiver] = field(default_factory=list)
    upstream: PatchUpstream | None = None

    def entry(self) -> str | dict:
        """The patch's entry in a `patches:` list: its name, or a mapping
        with its waivers and its mainline commit."""
        e: dict = {"file": self.rel}
        if self.waivers:
            e["waivers"] = [{"type": w.type, "reason": w.reason} for w in self.waivers]
        if self.upstream:
            e["upstream"] = self.upstream.raw
        return e if len(e) > 1 else self.rel


@dataclass
class Base:
    package: str
    tarball: Path
    version: str
    debian_version: str
    lines: dict

    @property
    def ref(self) -> str:
        return "refs/heads/base"


@dataclass
class Topic:
    name: str
    description: str
    branch: str
    depends: list[str]
    patches: list[Patch]
    upstream: list[Carried]
    superseded: list[Carried]
    dropped: list[Carried]
    to: list[str]
    cc: list[str]
    kunit: list[str]
    config: Path | None
    modules: list[str]
    programs: list[str]
    cmdline: str
    tested: bool
    line: int
    lines: dict
    # get_maintainer.pl recipients deliberately not written to: (address, reason)
    recipients_waived: list[tuple[str, str]] = field(default_factory=list)
    smp: int = 2
    sanitizers: list[str] = field(default_factory=list)
    expect: list[Expect] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return "refs/heads/" + self.branch


@dataclass
class Integration:
    branch: str
    topics: list[str]
    description: str
    to: list[str]
    cc: list[str]
    line: int

    @property
    def ref(self) -> str:
        return "refs/heads/" + self.branch


@dataclass
class Series:
    name: str
    subject: str
    sender: str
    public_url: str
    cover: str
    placeholder: str = ""        # the stand-in identity of the patch files (ktopic signoff)


@dataclass
class Manifest:
    path: Path
    root: Path
    series: Series
    base: Base
    topics: dict[str, Topic]
    integration: Integration
    data: dict
    workdir: Path | str | None = None      # -w, where validation stamps live

    def display(self) -> str:
        return display_path(self.path, self.root)

    def topic(self, name: str) -> Topic:
        if name not in self.topics:
            raise KtopicError(f"no topic {name!r} (topics: {', '.join(self.topics)})")
        return self.topics[name]

    def check_series_name(self, name: str) -> str:
        """A series mail and pull-request take: a topic, or "integration"
        (by any of its names); gives the topic name or "integration"."""
        return self.series_branch(name).name

    def series_branch(self, name: str) -> branchspec.BranchSpec:
        """The branch a series (mail, pull-request, trailers) is made of:
        a topic or the integration branch, by any of its names."""
        return branchspec.resolve_one(self, name, ("topic", "integration"))

    def branches(self) -> list[branchspec.BranchSpec]:
        """The base, every topic in dependency order, the integration branch."""
        return branchspec.branches(self)

    def resolve(self, names: list[str], base: bool = False) -> list[branchspec.BranchSpec]:
        """The branches a user's names stand for (branchspec.resolve)."""
        return branchspec.resolve(self, names, base)

    def resolve_one(self, name: str, kinds: tuple[str, ...]) -> branchspec.BranchSpec:
        """The one branch name stands for, of one of kinds (branchspec.resolve_one)."""
        return branchspec.resolve_one(self, name, kinds)

    def closure(self, name: str) -> list[str]:
        """The topic's dependencies, transitively, in manifest order (not itself)."""
        seen: set[str] = set()
        todo = list(self.topics[name].depends)
        while todo:                 # iterative: a chain may be thousands long
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(self.topics[d].depends)
        return [t for t in self.topics if t in seen]

    @cached_property
    def order(self) -> list[str]:
        """Topics in an order where every topic follows its dependencies
        (each after its dependencies in their order, as a depth-first walk)."""
        done: dict[str, None] = {}
        for root in self.topics:
            stack = [(root, iter(self.topics[root].depends))]
            while stack:
                n, deps = stack[-1]
                d = next((d for d in deps if d not in done), None)
                if d is not None:
                    stack.append((d, iter(self.topics[d].depends)))
                    continue
                stack.pop()
                done.setdefault(n, None)
        return list(done)


def display_path(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _schema_error(err, data, name: str) -> KtopicError:
    path = list(err.absolute_path)
    where = ".".join(str(p) for p in path) or "top level"
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set(err.schema.get("properties", {}))
        extra = [k for k in err.instance if k not in allowed]
        if extra:
            return KtopicError(f"unknown key {extra[0]!r} in {where}", name,
                               yamlpos.line_of(data, path + [extra[0]]))
    if err.validator == "required":
        return KtopicError(f"{where}: {err.message}", name, yamlpos.line_of(data, path))
    if err.validator == "oneOf" and path and "patches" in path:
        msg = "a patch entry is a file name or a mapping with 'file' (and 'waivers')"
        return KtopicError(f"{where}: {msg}", name, yamlpos.line_of(data, path))
    if err.validator == "pattern":
        msg = f"{err.instance!r} is not valid here (expected to match {err.validator_value})"
    elif err.validator == "type":
        kind = next((t.__name__ for t in (dict, list) if isinstance(err.instance, t)),
                    type(err.instance).__name__)          # not yamlpos' LineDict, LineList
        msg = f"expected {err.validator_value}, got {kind} {err.instance!r}"
    else:
        msg = err.message
    return KtopicError(f"{where}: {msg}", name, yamlpos.line_of(data, path))


# Branches ktopic itself owns: refs/heads/base is the imported tree (every
# branch is made on it), and nothing under it may exist next to it.
RESERVED_BRANCHES = ("base",)
# Names commands take besides topic names.
RESERVED_TOPICS = {"integration": "the integration branch", "base": "the base"}


def _reserved(name: str) -> str | None:
    """Why a manifest may not name this branch, or None."""
    for r in RESERVED_BRANCHES:
        if name == r or name.startswith(r + "/"):
            return f"branch {name!r} is reserved: ktopic keeps the imported tree in refs/heads/{r}"
    return None


def _clash(name: str, branches: dict) -> str | None:
    """A branch already named that git cannot keep next to this one: one is
    a directory of the other (topic/mm and topic/mm/next)."""
    for other, (owner,) in branches.items():
        if other.startswith(name + "/") or name.startswith(other + "/"):
            return f"branch {name!r} clashes with {other!r} of {owner} (git cannot keep both: " \
                   f"one would be a directory of the other)"
    return None


PLAIN_BRANCH = debversion.PLAIN_REF


def _valid_branch(name: str) -> bool:
    if name.startswith("-") or name in ("HEAD", "@"):
        return False
    if PLAIN_BRANCH.fullmatch(name):
        return True             # no git process for each of thousands of topics
    # Not --branch: that expands "@" and "@{-1}" against the repository
    # the command happens to run in.
    return subprocess.run(["git", "check-ref-format", "refs/heads/" + name],
                          capture_output=True).returncode == 0


def _hidden(name: str) -> str | None:
    """A character of name that shows as nothing or reorders what follows
    (a zero-width space, a right-to-left override, a soft hyphen, a
    non-ASCII space): git takes them, and two names would read alike."""
    for c in name:
        if not c.isascii() and unicodedata.category(c) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Co",
                                                          "Cn"):
            return f"U+{ord(c):04X} ({unicodedata.name(c, 'unnamed')})"
    return None


# git keeps a ref in a file named after it (and `<name>.lock` while it
# moves): each component of a branch name is a file name, at most NAME_MAX
# bytes with the ".lock".  check-ref-format does not look at lengths.
NAME_MAX = 255


def _branch_problem(name: str) -> str | None:
    """Why git cannot make a branch of this name, or None."""
    if not _valid_branch(name):
        return f"invalid branch name {name!r}"
    hidden = _hidden(name)
    if hidden:
        return (f"invalid branch name {name!r}: it holds {hidden}, a character that is "
                f"invisible or reorders text, so that two names could read alike")
    for c in name.split("/"):
        if len(c.encode()) + len(".lock") > NAME_MAX:
            return (f"invalid branch name {name!r}: a component of {len(c.encode())} bytes; "
                    f"git keeps a branch in a file whose name, with .lock, has at most "
                    f"{NAME_MAX} bytes")
    return None


def debian_version_problem(version: str, check_ref: bool = True) -> str | None:
    """Why version cannot be a base's debian-version, or None: it must be a
    Debian version (policy's syntax), and the ref ktopic keeps the base
    under (its DEP-14 name, refs/ktopic/bases/<v>) one git can make."""
    why = debversion.problem(version)
    if why:
        return f"debian-version {yamlpos.shown(version)!r} is not a Debian version: {why}"
    why = check_ref and debversion.ref_problem(debversion.base_ref(version))
    if why:
        return f"debian-version {yamlpos.shown(version)!r}: {why}"
    return None


def _moved_aside(root: Path, topic: str, name: str) -> str:
    """Where an export killed while it moved files left this patch, said
    after "does not exist"; "" when it is nowhere there."""
    for d in sorted((root / "patches").glob("ktopic-export-*")):
        if (d / "old" / name).is_file():
            return (f": an interrupted export moved it to "
                    f"{display_path(d / 'old' / name, root)}; `ktopic export {topic}` "
                    f"puts it back")
    return ""


def listed_patches(path: Path, topic: str) -> list[str] | None:
    """The patch files the manifest at path lists for topic, read without
    validating the rest (None when it cannot be read so)."""
    try:
        t = yaml.safe_load(Path(path).read_text())["topics"][topic]
        return [p if isinstance(p, str) else p["file"] for p in t.get("patches") or []]
    except Exception:           # noqa: BLE001  (any manifest that is not so)
        return None


def is_patch_file(path: Path) -> str | None:
    """None when path looks like a git format-patch mail, else why not."""
    try:
        head = path.read_bytes()
    except OSError as e:
        return f"cannot read: {e.strerror}"
    if not head.strip():
        return "empty patch file"
    text = head.decode("utf-8", errors="replace")
    if not re.search(r"^Subject: ", text, re.M):
        return "not a patch mail (no Subject: header; make it with git format-patch)"
    # A quoted-printable or base64 body is decoded by git mailinfo, as git
    # am decodes it: whether it holds a diff is known once it is read.
    if not re.search(r"^diff --git a/", text, re.M) and \
            not re.search(r"^Content-Transfer-Encoding:[ \t]*(base64|quoted-printable)[ \t]*$",
                          text, re.M | re.I):
        return "not a patch (no 'diff --git' section)"
    return None


@dataclass
class Source:
    """A manifest file as read, before validation: its bytes (what a
    record of its validation is keyed by) and their YAML."""
    path: Path
    root: Path
    name: str                       # as messages show it
    raw: bytes
    data: object
    variant_names: tuple            # the build variants under qemu/

    def stamp_parts(self) -> tuple:
        """What a record that this source passed validation depends on:
        its bytes, the schema, this module and the variants there are."""
        return (self.raw, SCHEMA.read_bytes(), Path(__file__).read_bytes(), self.variant_names)


def read(path: Path | str, root: Path | None = None) -> Source:
    """The manifest at path, read and refused only for what no message
    could print (a NUL, a lone surrogate); not validated yet."""
    path = Path(path).resolve()
    root = (root or path.parent).resolve()
    name = display_path(path, root)
    if not path.exists():
        raise KtopicError("manifest not found", name)
    raw = yamlpos.read(path, name)
    data = yamlpos.load(path, name, raw)
    if not isinstance(data, dict):
        raise KtopicError("the manifest must be a mapping of keys (version, series, base, topics, integration)",
                          name, getattr(data, "line", 1))
    _no_surrogate(data, name)           # first: no message below could print one
    no_nul(data, name)
    return Source(path, root, name, raw, data, tuple(variants.load(root / "qemu")))


def build(src: Source, validated: bool = False, workdir: Path | str | None = None) -> Manifest:
    """The Manifest of src; every check runs unless validated says that
    these very bytes passed them before."""
    if not validated:
        validate(src.data, src.name, variant_names=src.variant_names)
    m = _build(src.data, src.path, src.root, src.name, check_names=not validated)
    m.workdir = workdir
    return m


def load(path: Path | str, root: Path | None = None,
         workdir: Path | str | None = None) -> Manifest:
    """The manifest at path, validated.  workdir is only recorded (for the
    manifest edits that load it again); plumbing.manifests.load remembers
    a manifest that passed in the work directory."""
    return build(read(path, root), workdir=workdir)


def no_nul(data, name: str) -> None:
    """A NUL (YAML's "\\0") in any key or value is refused with its line:
    no path, branch or name can hold one, and the OS calls that take a
    path would raise on it."""
    def walk(node, path):
        if isinstance(node, dict):
            items = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            if isinstance(node, str) and "\0" in node:
                shown = node.replace("\0", "\\0")
                raise KtopicError(f"{'.'.join(map(str, path)) or 'value'}: '{shown}' holds a NUL "
                                  f"character, which no path or name can hold", name,
                                  yamlpos.line_of(data, path))
            return
        for k, v in items:
            walk(k, path)
            walk(v, [*path, k])
    walk(data, [])


def _no_surrogate(data, name: str) -> None:
    """A lone surrogate (YAML's "\\ud800", half of a UTF-16 pair) in any
    key or value is refused with its line: it is not a character, so no
    file name, ref or message can hold it (Python cannot encode it)."""
    def walk(node, path, line=None):
        if isinstance(node, dict):
            items = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            if isinstance(node, str) and SURROGATE.search(node):
                lone = SURROGATE.search(node).group()
                raise KtopicError(f"{'.'.join(map(str, path)) or 'value'}: "
                                  f"'{yamlpos.shown(node)}' holds a lone surrogate "
                                  f"({yamlpos.shown(lone)}), which is not a character", name,
                                  line or yamlpos.line_of(data, path))
            return
        for k, v in items:
            walk(k, path, getattr(node, "lines", {}).get(k) if isinstance(node, dict) else None)
            walk(v, [*path, k])
    walk(data, [])


SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls and DEL: in a file name the manifest gives, printed in
# a message, a newline would start a line that looks like the tool's own.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _control(what: str, name: str) -> str | None:
    """Why a file name the manifest gives cannot be taken, or None."""
    m = CONTROL.search(name)
    return m and f"{what} {name!r} holds a control character ({m.group()!r}) in its name"


def regex_problem(pattern: str, flags: int = 0) -> str | None:
    """Why Python cannot compile pattern, or None: re's own complaint, a
    repeat count beyond what re can count (OverflowError), or a nesting
    deeper than its parser's recursion (RecursionError)."""
    try:
        re.compile(pattern, flags)
    except re.error as e:
        return str(e)
    except OverflowError as e:
        return str(e)
    except RecursionError:
        return "groups nested too deeply"
    return None


def validate(data, name: str, schema: Path = SCHEMA, variant_names: tuple | None = None) -> None:
    """JSON Schema validation (of the manifest, or of another YAML file of
    the project's that yamlpos loaded, by its own schema).  A manifest that
    passed is remembered by content (plumbing.manifests), so it is not validated
    again (importing jsonschema alone costs more than a no-op generate).
    variant_names: what a topic's sanitizers: may name (qemu/variants.yaml;
    None for a file that is not a manifest)."""
    import jsonschema

    def ecma_pattern(validator, pattern, instance, schema):
        # A schema's patterns are ECMA 262 regular expressions, whose $ is
        # the end of the text; Python's $ also matches before a final
        # newline, which would let "6.1.192-3\n" through.
        if not validator.is_type(instance, "string"):
            return
        if not re.search(pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern, instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")

    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                       {"pattern": ecma_pattern})
    doc = json.loads(schema.read_text())
    if variant_names is not None:
        doc["$defs"]["topic"]["properties"]["sanitizers"]["items"]["enum"] = list(variant_names)
    validator = cls(doc)
    errors = sorted(validator.iter_errors(data),
                    key=lambda e: (yamlpos.line_of(data, list(e.absolute_path)) or 0))
    if errors:
        # The most specific error of the first place that is wrong.
        first = yamlpos.line_of(data, list(errors[0].absolute_path))
        best = jsonschema.exceptions.best_match(
            [e for e in errors if yamlpos.line_of(data, list(e.absolute_path)) == first])
        raise _schema_error(best, data, name)


def tree_path(path: str) -> bool:
    """A path inside a tree, as git names it: relative, no empty, "." or
    ".." component."""
    return all(c not in ("", ".", "..") for c in path.split("/"))


def _patch_upstream(p, name: str) -> PatchUpstream | None:
    u = None if isinstance(p, str) else p.get("upstream")
    if u is None:
        return None
    return PatchUpstream(u["commit"], u["subject"], u["release"], _checks(u["checks"], name),
                         yamlpos.plain(u))


def _checks(items, name: str) -> list[Check]:
    out = []
    for i, c in enumerate(items):
        present = "contains" in c
        pattern = c["contains"] if present else c["lacks"]
        line = items.lines[i]
        why = _control("check file", c["file"])
        if why:
            raise KtopicError(why, name, c.lines.get("file", line))
        if not tree_path(c["file"]):
            raise KtopicError(f"check file {c['file']!r} is not a path inside the tree "
                              f"(relative, no empty, '.' or '..' component)",
                              name, c.lines.get("file", line))
        why = regex_problem(pattern, re.M)
        if why:
            raise KtopicError(f"check /{yamlpos.shown(pattern)}/ is not a valid regular "
                              f"expression: {why}",
                              name, c.lines.get("contains" if present else "lacks", line))
        out.append(Check(c["file"], pattern, present, line))
    return out


def _base(data, err, check_names: bool) -> Base:
    b = data["base"]
    base = Base(package=b["package"], tarball=Path(b["tarball"]), version=b["version"],
                debian_version=b["debian-version"], lines=dict(b.lines))
    why = debian_version_problem(base.debian_version, check_ref=check_names)
    if why:
        raise err(why, "base", "debian-version")
    if debversion.upstream_of(base.debian_version) != base.version or \
            "-" not in base.debian_version:
        raise err(f"debian-version {base.debian_version} is not a packaging of version {base.version}",
                  "base", "debian-version")
    return base


def _claim_branch(branch: str, owner: str, branches: dict[str, tuple], check_names: bool,
                  fail) -> None:
    """Record branch as owner's, refused (fail(message)) when its name is
    not one git takes, is used already, reserved or clashes with another."""
    why = check_names and _branch_problem(branch)
    if why:
        raise fail(why)
    if branch in branches:
        raise fail(f"branch {branch!r} is already used by {branches[branch][0]}")
    why = _reserved(branch) or _clash(branch, branches)
    if why:
        raise fail(why)
    branches[branch] = (owner,)


def _patches(t, tname: str, root: Path, patch_owner: dict[Path, str], terr,
             name: str) -> list[Patch]:
    patches_dir = (root / "patches").resolve()
    patches = []
    for i, p in enumerate(t.get("patches", [])):
        rel = p if isinstance(p, str) else p["file"]
        why = _control("patch", rel)
        if why:
            raise terr(why, "patches", i)
        full = (root / "patches" / tname / rel).resolve()
        if not full.is_relative_to(patches_dir):
            raise terr(f"patch {rel!r} is outside the repository's patches/ directory", "patches", i)
        if not full.is_file():
            raise terr(f"patch file {display_path(full, root)} does not exist"
                       f"{_moved_aside(root, tname, full.name)}", "patches", i)
        why = is_patch_file(full)
        if why:
            raise terr(f"{display_path(full, root)}: {why}", "patches", i)
        if full in patch_owner:
            raise terr(f"patch {rel!r} is listed twice (also in {patch_owner[full]})", "patches", i)
        patch_owner[full] = f"topic {tname}"
        waivers = []
        for j, w in enumerate([] if isinstance(p, str) else p.get("waivers", [])):
            if not isinstance(w.get("reason"), str) or not w["reason"].strip():
                raise terr(f"waiver {w.get('type')} of {rel} needs a reason",
                           "patches", i, "waivers", j)
            waivers.append(Waiver(w["type"], w["reason"]))
        patches.append(Patch(full, rel, t["patches"].lines[i], waivers,
                             _patch_upstream(p, name)))
    return patches


def _guest_files(t, root: Path, terr) -> Path | None:
    """The topic's config fragment (resolved), after checking that it and
    the topic's modules and test programs exist."""
    config = None
    if "config" in t:
        why = _control("config fragment", t["config"])
        if why:
            raise terr(why, "config")
        config = (root / t["config"]).resolve()
        if not config.is_relative_to(root) or not config.is_file():
            raise terr(f"config fragment {t['config']} does not exist in the repository", "config")
    for kind, sub in (("modules", "qemu/modules"), ("programs", "qemu/tests")):
        for i, m in enumerate(t.get(kind, [])):
            p = root / sub / m if kind == "modules" else root / sub / f"{m}.c"
            if not p.exists():
                raise terr(f"{kind[:-1]} {m!r} not found at {display_path(p, root)}", kind, i)
    return config


def _expects(t, root: Path, terr) -> list[Expect]:
    expect = []
    names_seen: set[str] = set()
    for i, e in enumerate(t.get("expect", [])):
        if e["name"] in names_seen:
            raise terr(f"expect name {e['name']!r} is used twice", "expect", i, "name")
        names_seen.add(e["name"])
        if not (root / "qemu" / "modules" / e["module"]).is_dir():
            raise terr(f"expect module {e['module']!r} not found at qemu/modules/{e['module']}",
                       "expect", i, "module")
        why = regex_problem(e["match"])
        if why:
            raise terr(f"expect match is not a regular expression: {why}", "expect", i, "match")
        expect.append(Expect(e["name"], e["module"], e.get("args", ""), e["report"],
                             e["match"], t["expect"].lines[i]))
    return expect


def _carried(t, kind: str, key: str, name: str) -> list[Carried]:
    items = t.get(kind, [])
    return [Carried(kind, c["subject"], c.get(key, ""),
                    _checks(c.get("checks", []), name), items.lines[i],
                    c.get("evidence", ""), list(c.get("tests", [])))
            for i, c in enumerate(items)]


def _topic(data, tname: str, root: Path, name: str, branches: dict[str, tuple],
           patch_owner: dict[Path, str], check_names: bool, err) -> Topic:
    t = data["topics"][tname]

    def terr(msg, *keys):
        return err(msg, "topics", tname, *keys)
    if tname in RESERVED_TOPICS:
        raise terr(f"topic name {tname!r} is reserved: commands use it for "
                   f"{RESERVED_TOPICS[tname]}")
    _claim_branch(t["branch"], f"topic {tname}", branches, check_names,
                  lambda msg: terr(msg, "branch"))
    patches = _patches(t, tname, root, patch_owner, terr, name)
    config = _guest_files(t, root, terr)
    expect = _expects(t, root, terr)
    return Topic(
        name=tname, description=t["description"], branch=t["branch"],
        depends=list(t.get("depends", [])), patches=patches,
        upstream=_carried(t, "upstream", "upstream-in", name),
        superseded=_carried(t, "superseded", "replaced-by", name),
        dropped=_carried(t, "dropped", "reason", name),
        to=list(t.get("to", [])), cc=list(t.get("cc", [])),
        kunit=list(t.get("kunit", [])), config=config,
        modules=list(t.get("modules", [])), programs=list(t.get("programs", [])),
        cmdline=t.get("cmdline", ""), tested=bool(t.get("tested", False)),
        line=data["topics"].lines[tname], lines=dict(t.lines),
        recipients_waived=[(w["address"], w["reason"])
                           for w in t.get("recipients-waived", [])],
        smp=int(t.get("smp", 2)), sanitizers=list(t.get("sanitizers", [])), expect=expect)


def _check_depends(topics: dict[str, Topic], err) -> None:
    for tname, t in topics.items():
        for i, d in enumerate(t.depends):
            if d == tname:
                raise err(f"topic {tname} depends on itself", "topics", tname, "depends", i)
            if d not in topics:
                raise err(f"topic {tname} depends on unknown topic {d!r}", "topics", tname, "depends", i)
    _check_cycles(topics, err)


def _integration(data, topics: dict[str, Topic], branches: dict[str, tuple],
                 check_names: bool, err) -> Integration:
    i = data["integration"]
    _claim_branch(i["branch"], "the integration branch", branches, check_names,
                  lambda msg: err(msg, "integration", "branch"))
    placed: list[str] = []
    for k, tn in enumerate(i["topics"]):
        if tn not in topics:
            raise err(f"integration stacks unknown topic {tn!r}", "integration", "topics", k)
        for d in topics[tn].depends:
            if d not in placed:
                raise err(f"integration stacks {tn} before its dependency {d}", "integration", "topics", k)
        placed.append(tn)
    missing = [t for t in topics if t not in placed]
    if missing:
        raise err(f"integration does not stack topic(s) {', '.join(missing)}", "integration", "topics")
    return Integration(i["branch"], list(i["topics"]), i.get("description", ""),
                       list(i.get("to", [])), list(i.get("cc", [])), i.line)


def _build(data, path: Path, root: Path, name: str, check_names: bool = True) -> Manifest:
    def err(msg, *keys):
        return KtopicError(msg, name, yamlpos.line_of(data, list(keys)))

    base = _base(data, err, check_names)
    s = data["series"]
    series = Series(s["name"], s["subject"], s["from"], s.get("public-url", ""), s.get("cover", ""),
                    s.get("placeholder", ""))
    topics: dict[str, Topic] = {}
    branches: dict[str, tuple] = {}
    patch_owner: dict[Path, str] = {}
    for tname in data["topics"]:
        topics[tname] = _topic(data, tname, root, name, branches, patch_owner, check_names, err)
    _check_depends(topics, err)
    integration = _integration(data, topics, branches, check_names, err)
    return Manifest(path=path, root=root, series=series, base=base, topics=topics,
                    integration=integration, data=data)


def _check_cycles(topics: dict[str, Topic], err) -> None:
    """A dependency cycle, named from where the walk met it; iterative,
    so that a chain of thousands of topics is walked too."""
    state: dict[str, int] = {}          # 1: on the path, 2: done
    for root in topics:
        if root in state:
            continue
        path = [root]
        state[root] = 1
        deps = [iter(topics[root].depends)]
        while path:
            d = next(deps[-1], None)
            if d is None:
                state[path.pop()] = 2
                deps.pop()
            elif state.get(d) == 1:
                n = path[-1]
                cycle = path[path.index(d):] + [d]
                raise err(f"dependency cycle: {' -> '.join(cycle)}", "topics", n, "depends")
            elif d not in state:
                state[d] = 1
                path.append(d)
                deps.append(iter(topics[d].depends))
