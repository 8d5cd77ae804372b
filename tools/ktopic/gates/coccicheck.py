"""`ktopic check --coccicheck`: a topic adds no report of the kernel's own
semantic patches (scripts/coccinelle/, as `make coccicheck MODE=report`),
on the .c files it changes, start against head; a report is waived in the
manifest as COCCI_<SCRIPT>.  Builds nothing, so it takes no lock;
docs/gates.md, "--coccicheck".

Takes a topic's Plan, the work directory and the manifest; gives the
reports its head adds over its start.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ktopic import stampcache
from ktopic.gates.base import Gate, GateRun, Located, ResultBase, beyond
from ktopic.kernel import build as buildmod
from ktopic.model import results as R
from ktopic.plumbing.gitutil import Git
from ktopic.plumbing.patchfile import parse as parse_patch

SPATCH = "spatch"
SCRIPTS = "scripts/coccinelle"
WAIVER = "COCCI_"
TIMEOUT = 120                        # spatch's own limit per file, seconds
_REPORT = re.compile(r"^(?P<side>start|head)/(?P<file>.+?):(?P<line>\d+):[\d-]+: (?P<msg>.*)$")
_NUMBERS = re.compile(r"\b(lines?) \d+(,\d+)*")


@dataclass
class Report(Located):
    script: str                      # its path under scripts/coccinelle/
    message: str
    waived: str = ""                 # the waiver's reason

    def waiver(self) -> str:
        return waiver_type(self.script)

    def signature(self) -> tuple[str, str, str]:
        return self.file, self.script, _NUMBERS.sub(r"\1 N", self.message)


@dataclass
class CocciResult(ResultBase):
    label = "coccicheck"
    nested = {"new": Report}
    ok: bool
    new: list[Report] = field(default_factory=list)      # waived ones marked
    files: list[str] = field(default_factory=list)
    scripts: int = 0
    base_count: int = 0
    head_count: int = 0
    seconds: float = 0.0
    error: str = ""
    cached: bool = False

    def failing(self) -> list[Report]:
        return [r for r in self.new if not r.waived]

    def summary(self) -> str:
        if self.error:
            return self.error
        bad, waived = len(self.failing()), len(self.new) - len(self.failing())
        s = (f"{bad} new report(s)" + (f", {waived} waived" if waived else "")
             + f" (start {self.base_count}, head {self.head_count}) of {self.scripts} "
             f"script(s) in {len(self.files)} file(s)")
        if bad:
            r = self.failing()[0]
            s = f"{r.where()}: {r.message}; " + s
        return s

    def render(self) -> list[str]:
        out = self.head()
        for r in self.new:
            head = f"waived {r.waiver()}: " if r.waived else "new "
            out.append(f"  {head}{r.where()}: {r.message} ({r.script})")
            if r.waived:
                out.append(f"    {r.waived}")
        return out

    def findings(self) -> list[R.Finding]:
        if self.error:
            return [R.Finding("coccicheck", self.error)]
        # No console line: the source file and line are in the message.
        return [R.Finding("coccicheck", f"{r.where()}: {r.message}", 0,
                          [f"{r.where()}: {r.message}",
                           f"scripts/coccinelle/{r.script}; waiver type {r.waiver()}"])
                for r in self.failing()]



def waiver_type(script: str) -> str:
    """scripts/coccinelle/locks/double_lock.cocci -> COCCI_DOUBLE_LOCK."""
    return WAIVER + re.sub(r"[^A-Z0-9]+", "_", Path(script).stem.upper()).strip("_")


def spatch_version(cache: Path) -> str:
    """spatch --version's first line, asked again only when spatch changed."""
    return stampcache.tool_versions(Path(cache) / "spatch.json", {"spatch": (SPATCH, "--version")},
                                    stampcache.first_line)["spatch"]


# ------------------------------------------------------------ the inputs

def touched(git_dir: Path, plan) -> dict[str, list[str]]:
    """{path: [blob at the start or "", blob at the head]} of the .c files
    the topic adds or changes."""
    g = Git(git_dir)
    out = {}
    for path in buildmod.changed_c_files(git_dir, plan.start, plan.head):
        out[path] = [_blob(g, c, path) for c in (plan.start, plan.head)]
    return out


def _blob(g: Git, commit: str, path: str) -> str:
    found = g.resolve(f"{commit}:{path}")
    if found:
        return found
    r = g.try_run("rev-parse", "-q", "--verify", f"{commit}:{path}")
    return r.stdout.strip() if r.returncode == 0 else ""


def scripts_tree(git_dir: Path, commit: str) -> str:
    return _blob(Git(git_dir), commit, SCRIPTS)


def topic_waivers(m, topic: str) -> list[tuple[Path, str, str]]:
    """(patch file, type, reason) of the topic's COCCI_ waivers."""
    if m is None:
        return []
    return [(p.path, w.type, w.reason) for _, p in m.resolve([topic])[0].patches
            for w in p.waivers if w.type.startswith(WAIVER)]


def key_parts(plan, wd, m) -> dict:
    git_dir = Path(wd.git_dir)
    return {"start": plan.start, "files": touched(git_dir, plan),
            "scripts": scripts_tree(git_dir, plan.start),
            "spatch": spatch_version(wd.gate_cache),
            "waivers": sorted([p.name, t, r] for p, t, r in topic_waivers(m, plan.topic))}


# ------------------------------------------------------------ the run

def _extract(git_dir: Path, commit: str, paths: list[str], dest: Path) -> list[str]:
    """paths as they are at commit, under dest; the ones that exist there."""
    there = []
    for path in paths:
        r = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "blob",
                            f"{commit}:{path}"], capture_output=True)
        if r.returncode == 0:
            (dest / path).parent.mkdir(parents=True, exist_ok=True)
            (dest / path).write_bytes(r.stdout)
            there.append(path)
    return there


def _scripts(git_dir: Path, commit: str, dest: Path) -> list[Path]:
    """The start's semantic patches that have a report mode."""
    tar = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit, SCRIPTS],
                         capture_output=True)
    if tar.returncode != 0:
        return []
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar.stdout, check=True)
    return sorted(p for p in (dest / SCRIPTS).rglob("*.cocci")
                  if re.search(r"^virtual\s+report\b", p.read_text(errors="replace"), re.M))


# What spatch says when a part it needs at run time is missing, and where
# Debian has it: scripts with OCaml rules (api/check_bq27xxx_data.cocci)
# are compiled when they run, and Debian's coccinelle does not bring the
# compiler.
SPATCH_NEEDS = {"No OCaml compiler found": "Debian: ocaml-nox, which ci/deps installs"}


def _options(script: Path) -> list[str]:
    m = re.search(r"^// Options:(.*)$", script.read_text(errors="replace"), re.M)
    return m.group(1).split() if m else []


def _spatch(script: Path, tree: Path, rel: str) -> tuple[list[tuple[str, Report]], str]:
    """One script on both copies: ([(side, Report)], error)."""
    cmd = [SPATCH, "-D", "report", "--very-quiet", "--no-show-diff", "--timeout", str(TIMEOUT),
           "--cocci-file", str(script), *_options(script), "--dir", "."]
    try:
        r = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, errors="replace")
    except FileNotFoundError:
        return [], f"{SPATCH} is not installed (Debian: coccinelle)"
    out = []
    for line in r.stdout.splitlines():
        mt = _REPORT.match(line.strip().removeprefix("./"))
        if mt:
            out.append((mt["side"], Report(mt["file"], int(mt["line"]), rel, mt["msg"])))
    if r.returncode != 0 and not out:
        why = (r.stderr.strip().splitlines() or ["?"])[-1]
        hint = next((f" ({h})" for text, h in SPATCH_NEEDS.items() if text in r.stderr), "")
        return [], f"spatch failed on {rel}: {why}{hint}"
    return out, ""


def apply_waivers(new: list[Report], waivers: list[tuple[Path, str, str]]) -> None:
    """A report is waived by its type on a patch that touches its file."""
    touches: dict[Path, list[str]] = {}
    for r in new:
        for path, wtype, reason in waivers:
            if wtype != r.waiver():
                continue
            if path not in touches:
                touches[path] = parse_patch(path).files
            if r.file in touches[path]:
                r.waived = reason
                break


def check(plan, wd, m=None, steps=None) -> CocciResult:
    """The gate on one topic (see the module's doc)."""
    t0 = time.monotonic()
    git_dir = Path(wd.git_dir)
    files = buildmod.changed_c_files(git_dir, plan.start, plan.head)
    res = CocciResult(ok=True, files=files)
    if not files:
        return res
    with tempfile.TemporaryDirectory(prefix="ktopic-cocci-") as tmp:
        tree = Path(tmp)
        scripts = _scripts(git_dir, plan.start, tree / "s")
        res.scripts = len(scripts)
        for side, commit in (("start", plan.start), ("head", plan.head)):
            (tree / "t" / side).mkdir(parents=True)
            _extract(git_dir, commit, files, tree / "t" / side)
        reports: dict[str, list[Report]] = {"start": [], "head": []}
        for script in scripts:
            rel = str(script.relative_to(tree / "s" / SCRIPTS))
            got, err = _spatch(script, tree / "t", rel)
            if err:
                return CocciResult(ok=False, files=files, error=err)
            for side, rep in got:
                reports[side].append(rep)
    res.base_count, res.head_count = len(reports["start"]), len(reports["head"])
    res.new = beyond(reports["start"], reports["head"], Report.signature)
    apply_waivers(res.new, topic_waivers(m, plan.topic))
    res.ok = not res.failing()
    res.seconds = time.monotonic() - t0
    return res


class CoccicheckGate(Gate):
    name = "coccicheck"
    help = "the kernel's semantic patches (scripts/coccinelle, report mode) on the .c " \
           "files the topic touches, base vs branch"
    result = CocciResult
    builds = False
    rule_files = ("gates/coccicheck.py", "gates/gatecache.py")
    waiver_prefix = WAIVER

    def key_parts(self, plan, tools: dict[str, str], wd=None, m=None) -> dict:
        return key_parts(plan, wd, m)

    def run(self, run: GateRun) -> CocciResult:
        plan = run.plan
        with run.steps.step(plan.branch, "coccicheck", "spatch, start and head",
                            commit=plan.head) as st:
            res = check(plan, run.wd, run.m)
            st.result(res.summary())
        return res
