"""KTAP results from a guest console, parsed by the kernel's own kunit_parser.

Takes a console log and the branch's tools/testing/kunit; gives a
SuiteResult per suite and the findings of missing suites, silent programs
and failed cases.  docs/ci.md, "KTAP (kernel/ktap.py)".
"""

from __future__ import annotations

import importlib.util
import io
import re
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.kernel.console_scan import clean_lines
from ktopic.errors import Failure
from ktopic.plumbing.gitutil import Git
from ktopic.model.results import CRASH, FAIL, PASS, SKIP, CaseResult, Finding, SuiteResult

_MARK = re.compile(r"^ktopic-init: (start|insmod (\S+)|run (\S+)|done)$")
_TOP_RESULT = re.compile(r"^(not ok|ok) (\d+)( .*)?$")

_parsers: dict[Path, object] = {}


def load_parser(kunit_dir: Path):
    """The kunit_parser module of a tree's tools/testing/kunit (output silenced)."""
    kunit_dir = Path(kunit_dir).resolve()
    if kunit_dir in _parsers:
        return _parsers[kunit_dir]
    if not (kunit_dir / "kunit_parser.py").is_file():
        raise Failure(f"no kunit_parser.py in {kunit_dir}")
    saved = {n: sys.modules.pop(n) for n in ("kunit_printer", "kunit_parser")
             if n in sys.modules}
    sys.path.insert(0, str(kunit_dir))
    try:
        spec = importlib.util.spec_from_file_location(
            f"ktopic_kunit_parser_{len(_parsers)}", kunit_dir / "kunit_parser.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(kunit_dir))
        for n in ("kunit_printer", "kunit_parser"):
            sys.modules.pop(n, None)
        sys.modules.update(saved)
    # The parser prints progress as it goes; keep it quiet.
    printer = type(mod.stdout)(io.StringIO())
    mod.stdout = printer
    _parsers[kunit_dir] = mod
    return mod


def parser_dir(git_dir: Path, rev: str, cache: Path) -> Path:
    """tools/testing/kunit of a commit in the work repo, extracted once per version."""
    def git(*args: str, text=True):
        return Git(git_dir).run(*args, binary=not text)
    tree = git("rev-parse", f"{rev}:tools/testing/kunit").strip()
    out = cache / "kunit" / tree[:16]
    if (out / "kunit_parser.py").is_file():
        return out
    data = git("archive", "--format=tar", rev, "tools/testing/kunit", text=False)
    tmp = out.with_name(out.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.count("/") == 3 and m.name.endswith(".py"):
                (tmp / Path(m.name).name).write_bytes(tar.extractfile(m).read())
    tmp.rename(out)
    return out


@dataclass
class Segment:
    kind: str                        # boot | module | program | log
    name: str                        # module/program name ("" for boot)
    start: int                       # 0-based index of the first line
    lines: list[str] = field(default_factory=list)


def split_segments(lines: list[str]) -> list[Segment]:
    segs: list[Segment] = []
    cur = Segment("boot", "", 0)
    marked = False
    for i, line in enumerate(lines):
        m = _MARK.match(line.strip())
        if m:
            marked = True
            segs.append(cur)
            if m.group(2):
                cur = Segment("module", m.group(2), i + 1)
            elif m.group(3):
                cur = Segment("program", m.group(3), i + 1)
            else:
                cur = Segment("log", "", i + 1)
            continue
        if line.startswith("ktopic-init: "):
            # Other init lines (exit status, failures) end a program's output.
            segs.append(cur)
            cur = Segment("log", "", i + 1)
            continue
        cur.lines.append(line)
    segs.append(cur)
    if not marked:
        segs = [Segment("log", "", 0, lines)]
    return segs


_STATUS = {"SUCCESS": PASS, "FAILURE": FAIL, "SKIPPED": SKIP, "TEST_CRASHED": CRASH,
           "NO_TESTS": SKIP, "FAILURE_TO_PARSE_TESTS": CRASH}


def _status(test) -> str:
    return _STATUS.get(test.status.name, CRASH)


def _parse(parser, lines: list[str]):
    """Run kunit_parser over lines; None when they hold no KTAP."""
    stream = parser.extract_tap_lines(lines)
    if not stream:
        return None
    return parser.parse_test(stream, 0, [], False)


def _module_lines(lines: list[str]) -> list[str]:
    """A module's suites as one document: header added, suite numbers from 1."""
    out, n = ["KTAP version 1"], 0
    for line in lines:
        m = _TOP_RESULT.match(line)
        if m:
            n += 1
            line = f"{m.group(1)} {n}{m.group(3) or ''}"
        out.append(line)
    return out


MISSING = "<missing #{}>"


def _case(t, number: int) -> CaseResult:
    # A case the plan announced but that never reported (the run was cut
    # short) has no name: name it by its number.
    return CaseResult(name=t.name or MISSING.format(number), status=_status(t),
                      log=[l for l in t.log if l.strip()][-30:])


def _cases(t) -> list[CaseResult]:
    return [_case(c, i) for i, c in enumerate(t.subtests, 1)]


def _suite(t) -> SuiteResult:
    return SuiteResult(name=t.name, status=_status(t), cases=_cases(t))


@dataclass
class KtapResult:
    suites: list[SuiteResult]
    programs_seen: list[str]
    modules_seen: list[str]


def parse_console(text: str, parser) -> KtapResult:
    lines = clean_lines(text)
    suites: list[SuiteResult] = []
    programs, modules = [], []
    for seg in split_segments(lines):
        if seg.kind == "program":
            top = _parse(parser, seg.lines)
            if top is None:
                continue
            programs.append(seg.name)
            # One top-level test per program: its cases are the document's tests.
            st = _status(top) if top.subtests else CRASH
            if top.subtests and top.counts.get_status().name in _STATUS:
                st = _STATUS[top.counts.get_status().name]
            suites.append(SuiteResult(name=seg.name, status=st,
                                      cases=_cases(top)))
        elif seg.kind == "module":
            if not any("KTAP version" in l or "# Subtest:" in l for l in seg.lines):
                continue
            top = _parse(parser, _module_lines(seg.lines))
            if top is None:
                continue
            modules.append(seg.name)
            suites.extend(_suite(s) for s in top.subtests)
        else:
            top = _parse(parser, seg.lines)
            if top is not None:
                suites.extend(_suite(s) for s in top.subtests if s.name)
    return KtapResult(suites=suites, programs_seen=programs, modules_seen=modules)


def _find_line(lines: list[str], pattern: re.Pattern) -> int:
    for i, l in enumerate(lines):
        if pattern.search(l):
            return i + 1
    return 0


def check(res: KtapResult, console_text: str, expect_suites: list[str],
          expect_programs: list[str], cut_short: bool = False) -> list[Finding]:
    """Findings: expected suites/programs that did not run; failed or crashed cases.
    cut_short: the boot was ended on purpose at a line that decided it; the
    suites, programs and cases it had not reached are no finding then."""
    lines = clean_lines(console_text)
    findings: list[Finding] = []
    ran = {s.name for s in res.suites}
    if cut_short:
        expect_suites, expect_programs = [], []
    for name in expect_suites:
        if name not in ran:
            findings.append(Finding("missing_suite", f"KUnit suite {name} did not run "
                                    "(the manifest expects it)"))
    for name in expect_programs:
        if name not in res.programs_seen:
            ln = _find_line(lines, re.compile(rf"ktopic-init: run {re.escape(name)}$"))
            findings.append(Finding("missing_suite", f"test program {name} printed no KTAP"
                                    if ln else f"test program {name} did not run", ln,
                                    [lines[ln - 1]] if ln else []))
    for s in res.suites:
        bad = [c for c in s.cases if c.status in (FAIL, CRASH) and
               not (cut_short and c.name.startswith("<missing"))]
        if cut_short and not bad:
            continue
        if s.status in (FAIL, CRASH) and not bad:
            ln = _find_line(lines, re.compile(rf"^not ok \d+ {re.escape(s.name)}\b"))
            findings.append(Finding("failed_case", f"{s.name}: suite {s.status}ed"
                                    if s.status == FAIL else f"{s.name}: suite crashed",
                                    ln, [lines[ln - 1]] if ln else []))
        missing = [c for c in bad if c.name.startswith("<missing")]
        if missing:
            findings.append(Finding("unreported_case", f"{s.name}: {len(missing)} case(s) never "
                                    "reported (crashed or cut short)"))
        for c in bad:
            if c in missing:
                continue
            ln = _find_line(lines, re.compile(rf"^\s*not ok \d+ {re.escape(c.name)}(?:\s|$)"))
            what = "failed" if c.status == FAIL else "crashed"
            quoted = c.log[-15:] + ([lines[ln - 1]] if ln else [])
            findings.append(Finding("failed_case", f"{s.name}.{c.name} {what}", ln, quoted))
    return findings
