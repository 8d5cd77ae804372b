"""Render a results.Report.

Takes a results.Report; gives out/report.json, out/<branch-dir>/junit.xml,
out/index.html and the terminal tables.  docs/reports.md.
"""

from __future__ import annotations

import copy
import html
import os
import re
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import quote

from ktopic.model import results as R
from ktopic.model.branchspec import BASE
from ktopic.model.results import CACHED, CRASH, FAIL, PASS, PENDING, SKIP, STAGES, branch_dir

from ktopic.errors import KtopicError
from ktopic.fileio import write_atomic

DEFAULT_OUT = Path("out")
REPORT_NAME = "report.json"
HTML_NAME = "index.html"
JUNIT_NAME = "junit.xml"

# A status a live table may show besides the final ones.
RUNNING = "running"
CELL_CLASSES = (PASS, FAIL, SKIP, CACHED, CRASH, PENDING)

# One description per status, for legends (HTML and terminal).
LEGEND = (
    (PASS, "stage passed"),
    (CACHED, "result reused from the cache (passed before, inputs unchanged)"),
    (FAIL, "stage failed"),
    (CRASH, "suite or case crashed"),
    (SKIP, "skipped (nothing to do, or an earlier stage failed)"),
    (PENDING, "not run yet: the main job's second tier fills it in"),
    ("none", "not run"),
)


# ---------------------------------------------------------------- helpers

def _branch_dirs(report: R.Report) -> dict[str, str]:
    """branch -> directory name, checking that no two branches collide."""
    seen: dict[str, str] = {}
    out: dict[str, str] = {}
    for b in report.branches:
        d = branch_dir(b.branch)
        if d in seen and seen[d] != b.branch:
            raise KtopicError(f"branches {seen[d]!r} and {b.branch!r} both map "
                              f"to out/{d}/; rename one of them")
        seen[d] = b.branch
        out[b.branch] = d
    return out


# Characters XML 1.0 cannot carry at all, even escaped; HTML should not
# carry them either.  Console logs do contain them (ANSI colour, NULs).
_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def clean(text: str) -> str:
    """Make text safe for XML/HTML: control characters become \\xNN."""
    return _BAD_CHARS.sub(lambda m: "\\x%02x" % ord(m.group()) if ord(m.group()) < 0x100
                          else "\ufffd", str(text))


def stage_names(report: R.Report) -> list[str]:
    """STAGES first, then any other stage a branch carries, in order seen."""
    names = list(STAGES)
    for b in report.branches:
        for s in b.stages:
            if s.stage not in names:
                names.append(s.stage)
    return names


def failing_findings(b: R.BranchResult) -> list[R.Finding]:
    return [f for f in b.findings if not f.in_base]


def case_counts(b: R.BranchResult) -> dict[str, int]:
    """Number of KUnit cases per status over all suites of a branch."""
    counts = {PASS: 0, FAIL: 0, SKIP: 0, CRASH: 0}
    for s in b.suites:
        for c in s.cases:
            counts[c.status] = counts.get(c.status, 0) + 1
    return counts


def suites_broken_alone(b: R.BranchResult) -> list[R.SuiteResult]:
    """Suites that failed or crashed with no failed case to show for it
    (a crash before the first case, a missing plan, ...)."""
    return [s for s in b.suites if s.status in (FAIL, CRASH)
            and not any(c.status in (FAIL, CRASH) for c in s.cases)]


def console_log(b: R.BranchResult) -> str:
    """The log findings' line numbers refer to: the boot stage's log."""
    for name in ("boot", "test"):
        st = b.stage(name)
        if st and st.log:
            return st.log
    return ""


def repro_command(b: R.BranchResult) -> str:
    return f"ci/run-branch {b.branch}"


# ------------------------------------------------------------------- JSON

def write_json(report: R.Report, out_dir: Path = DEFAULT_OUT) -> Path:
    path = Path(out_dir) / REPORT_NAME
    write_atomic(path, report.to_json())
    return path


def load_json(path: Path) -> R.Report:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KtopicError("no report here (run `ktopic ci` first)", file=str(path))
    except OSError as e:
        raise KtopicError(f"cannot read: {e.strerror}", file=str(path))
    try:
        return R.Report.from_json(text)
    except ValueError as e:   # json.JSONDecodeError is a ValueError
        raise KtopicError(f"not valid JSON: {getattr(e, 'msg', e)}", file=str(path),
                          line=getattr(e, "lineno", None))
    except (KeyError, TypeError, AttributeError) as e:
        raise KtopicError(f"not a ktopic report: {e}", file=str(path))


# ------------------------------------------------------------------ JUnit

def _suite_el(parent: ET.Element, name: str, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, "testsuite", name=clean(name))
    for k, v in attrs.items():
        el.set(k, clean(v))
    return el


def _case_el(suite: ET.Element, classname: str, name: str, status: str,
             message: str = "", text: str = "", seconds: float = 0.0,
             out: str = "") -> ET.Element:
    """Add a testcase; status pass/cached -> passed, fail -> failure,
    crash -> error, skip -> skipped."""
    el = ET.SubElement(suite, "testcase", classname=clean(classname), name=clean(name),
                       time=f"{seconds:.3f}")
    if status == FAIL:
        sub = ET.SubElement(el, "failure", message=clean(message or "failed"), type="failure")
        sub.text = clean(text) if text else None
    elif status == CRASH:
        sub = ET.SubElement(el, "error", message=clean(message or "crashed"), type="crash")
        sub.text = clean(text) if text else None
    elif status == SKIP:
        ET.SubElement(el, "skipped", message=clean(message or "skipped"))
    if out:
        ET.SubElement(el, "system-out").text = clean(out)
    return el


def _count(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.set("time", "%.3f" % sum(float(c.get("time", "0")) for c in cases))


def _repro_text(b: R.BranchResult) -> str:
    lines = [f"reproduce: {repro_command(b)}"]
    lines += [f"{k}: {v}" for k, v in sorted(b.repro.items())]
    return "\n".join(lines)


def _finding_text(f: R.Finding, log: str) -> str:
    where = f"{log}:{f.line}" if log and f.line else (log or "")
    head = f"{f.kind}: {f.message}" + (f" ({where})" if where else "")
    return "\n".join([head, *f.lines])


def _blame(b: R.BranchResult, message: str) -> str:
    """A failing case's message, with the branch's first bad commit."""
    a = b.attribution
    if a.get("commit"):
        where = a.get("patch") or a["commit"][:12]
        return f"{message} (first bad: {where})"
    return message


def _carrier(b: R.BranchResult, f: R.Finding) -> str:
    """A sanitizer report's message, with the builds that attribute it."""
    said = [followup_text(b.branch, x).split(": ", 1)[1] for x in b.followups
            if f.message in x["reports"]]
    return f"{f.kind}: {f.message}" + (f" ({'; '.join(said)})" if said else "")


def _console_suite(root: ET.Element, b: R.BranchResult, repro: str) -> None:
    """The testsuite "<branch> console": a testcase per finding, or one
    passing case when the console was scanned and clean."""
    cls = b.branch
    log = console_log(b)
    boot = b.stage("boot")
    if not b.findings and not (boot and boot.status in (PASS, FAIL, CACHED)):
        return
    suite = _suite_el(root, f"{b.branch} console")
    if not b.findings:
        _case_el(suite, f"{cls}.console", "no findings", PASS,
                 out=f"console log scanned: {log}" if log else "")
    for i, f in enumerate(b.findings, 1):
        name = f"{i:02d} {f.kind}: {f.message}"
        text = _finding_text(f, log) + "\n\n" + repro
        if f.in_base:
            _case_el(suite, f"{cls}.console", name, SKIP,
                     message=f"the base kernel shows this too: {f.message}",
                     out=_finding_text(f, log))
        else:
            _case_el(suite, f"{cls}.console", name, FAIL,
                     message=_blame(b, _carrier(b, f)), text=text)
    _count(suite)


def _follows_suite(root: ET.Element, b: R.BranchResult) -> None:
    """A follow-up's testsuite naming the report it attributes."""
    f = b.follows
    suite = _suite_el(root, f"{b.branch} attribution")
    _case_el(suite, f"{b.branch}.attribution", follows_text(b), PASS,
             out="\n".join([f"files: {', '.join(f['files'])}", *f["reports"],
                             "shows it too" if f["shows"] else "does not show it"]))
    _count(suite)


def junit_xml(b: R.BranchResult) -> bytes:
    """The JUnit XML document of one branch.

    One testsuite per stage (``<branch> stage <name>``, one testcase), one
    testsuite ``<branch> console`` with a testcase per finding (findings the
    base also shows are skipped, not failed), and one testsuite per KUnit
    suite with its cases.
    """
    root = ET.Element("testsuites", name=clean(f"ktopic {b.branch}"))
    cls = b.branch
    repro = _repro_text(b)

    for st in b.stages:
        suite = _suite_el(root, f"{b.branch} stage {st.stage}")
        out = "\n".join(x for x in (
            st.summary, f"log: {st.log}" if st.log else "",
            "result reused from the cache" if st.status == CACHED else "") if x)
        status = SKIP if st.status == PENDING else \
            st.status if st.status in (PASS, FAIL, SKIP, CACHED, CRASH) else FAIL
        text = "\n".join(x for x in (st.summary, f"log: {st.log}" if st.log else "", repro) if x)
        _case_el(suite, f"{cls}.stage", st.stage, status,
                 message=_blame(b, st.summary or st.status) if status == FAIL else
                 st.summary or st.status,
                 text=text, seconds=st.seconds, out=out if status not in (FAIL, CRASH) else "")
        _count(suite)

    _console_suite(root, b, repro)
    if b.follows:
        _follows_suite(root, b)

    for s in b.suites:
        suite = _suite_el(root, s.name)
        for c in s.cases:
            text = "\n".join(c.log)
            if c.status in (FAIL, CRASH):
                text = text + ("\n\n" if text else "") + repro
            msg = f"{s.name}.{c.name} {c.status}"
            _case_el(suite, f"{cls}.{s.name}", c.name, c.status,
                     message=_blame(b, msg) if c.status in (FAIL, CRASH) else msg, text=text)
        if not s.cases or (s.status in (FAIL, CRASH) and
                           not any(c.status in (FAIL, CRASH) for c in s.cases)):
            # A suite that failed or crashed on its own (before or after its
            # cases) must still show up as a failure.
            _case_el(suite, f"{cls}.{s.name}", "(suite)", s.status,
                     message=f"suite {s.name} {s.status}", text=repro)
        _count(suite)

    return _xml(root)


def _xml(root: ET.Element) -> bytes:
    """The document of a <testsuites> root, its totals summed from its suites."""
    for k in ("tests", "failures", "errors", "skipped"):
        root.set(k, str(sum(int(s.get(k)) for s in root.findall("testsuite"))))
    root.set("time", "%.3f" % sum(float(s.get("time")) for s in root.findall("testsuite")))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(report: R.Report, out_dir: Path = DEFAULT_OUT) -> list[Path]:
    dirs = _branch_dirs(report)
    paths = []
    for b in report.branches:
        path = Path(out_dir) / dirs[b.branch] / JUNIT_NAME
        write_atomic(path, junit_xml(b))
        paths.append(path)
    if report.mutants:
        path = Path(out_dir) / MUTANTS_DIR / JUNIT_NAME
        write_atomic(path, mutants_junit_xml(report.mutants))
        paths.append(path)
    return paths


MUTANTS_DIR = "mutants"          # out/mutants/: the mutation gate's logs and junit.xml


def mutation_scores(mutants: list[R.MutantResult]) -> dict[str, tuple[int, int]]:
    """topic -> (caught, total), in the order topics first appear; a
    topic's mutants run on another branch count apart ("locking on
    for-next+kcsan", MutantResult.group)."""
    out: dict[str, tuple[int, int]] = {}
    for x in mutants:
        c, n = out.get(x.group, (0, 0))
        out[x.group] = (c + (x.status == R.CAUGHT), n + 1)
    return out


def mutants_junit_xml(mutants: list[R.MutantResult]) -> bytes:
    """One testsuite per topic ("mutate.<topic>"), one testcase per mutant:
    caught passes, survived is a failure, invalid an error."""
    root = ET.Element("testsuites", name="ktopic mutate")
    for topic in mutation_scores(mutants):
        suite = _suite_el(root, f"mutate.{topic}")
        for x in (y for y in mutants if y.group == topic):
            status = {R.CAUGHT: PASS, R.SURVIVED: FAIL, PENDING: SKIP}.get(x.status, CRASH)
            msg = {R.SURVIVED: f"survived: {x.name}", R.INVALID: f"invalid: {x.summary}"}.get(
                x.status, "")
            text = f"Breaks: {x.breaks}\nCaught-by: {x.caught_by}\n{x.summary}"
            _case_el(suite, f"mutate.{topic}", x.name, status, msg, text, x.seconds,
                     out=text if status == PASS else "")
        _count(suite)
    return _xml(root)


def mutation_lines(report: R.Report) -> list[str]:
    """The mutation score per topic, then one line per mutant not caught."""
    waiting = {t: sum(x.group == t and x.status == PENDING for x in report.mutants)
               for t in mutation_scores(report.mutants)}
    lines = [f"mutation score {topic}: {c}/{n} caught"
             + (f" ({waiting[topic]} pending)" if waiting[topic] else "")
             for topic, (c, n) in mutation_scores(report.mutants).items()]
    for x in report.mutants:
        if x.status not in (R.CAUGHT, PENDING):
            lines.append(f"{x.group}: mutant {x.name} {x.status.upper()}: {x.summary}")
    return lines


def _mutants_html(report: R.Report) -> list[str]:
    if not report.mutants:
        return []
    h = ['<h2 id="mutants">Mutation gate</h2>',
         "<p>Each mutant is a deliberate bug (<code>qemu/mutants/&lt;topic&gt;/</code>) "
         "that the topic's tests must catch.</p>",
         "<table><tr><th>topic</th><th>caught</th><th>score</th></tr>"]
    for topic, (c, n) in mutation_scores(report.mutants).items():
        waiting = any(x.group == topic and x.status == PENDING for x in report.mutants)
        st = PASS if c == n else PENDING if waiting else FAIL
        h.append(f"<tr><td>{_e(topic)}</td>{_status_cell(st, f'{c}/{n}')}"
                 f"<td>{_e(f'{100 * c // n}%' if n else '-')}</td></tr>")
    h.append("</table>")
    h.append("<table><tr><th>mutant</th><th>status</th><th>breaks</th><th>caught by</th>"
             "<th>result</th></tr>")
    for x in report.mutants:
        st = {R.CAUGHT: PASS, R.SURVIVED: FAIL, PENDING: PENDING}.get(x.status, CRASH)
        h.append(f"<tr><td>{_e(x.topic)}/{_e(x.name)}"
                 + (f" on {_e(x.on)}" if x.on else "") + "</td>"
                 f"{_status_cell(st, x.status + (' (cached)' if x.cached else ''), x.log)}"
                 f"<td>{_e(x.breaks)}</td><td><code>{_e(x.caught_by)}</code></td>"
                 f"<td>{_e(x.summary)}</td></tr>")
    h.append("</table>")
    return h


# ------------------------------------------------------------------- HTML

_CSS = """
:root { --pass:#1a7f37; --pass-bg:#dafbe1; --fail:#cf222e; --fail-bg:#ffebe9;
  --skip:#57606a; --skip-bg:#eaeef2; --cached:#0969da; --cached-bg:#ddf4ff;
  --crash:#8250df; --crash-bg:#fbefff; --none:#8c959f; --none-bg:#ffffff;
  --pending:#9a6700; --pending-bg:#fff8c5; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 72em;
  padding: 0 1em; color: #1f2328; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { margin-top: 2em;
  border-bottom: 1px solid #d0d7de; } h3 { font-size: 1.05em; margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #d0d7de; padding: .25em .6em; text-align: left;
  vertical-align: top; }
th { background: #f6f8fa; }
td.st { text-align: center; font-weight: 600; min-width: 5em; }
table.matrix td, table.matrix th { white-space: nowrap; }
.pass { color: var(--pass); background: var(--pass-bg); }
.fail { color: var(--fail); background: var(--fail-bg); }
.skip { color: var(--skip); background: var(--skip-bg); }
.cached { color: var(--cached); background: var(--cached-bg); }
.crash { color: var(--crash); background: var(--crash-bg); }
.none { color: var(--none); background: var(--none-bg); }
.pending { color: var(--pending); background: var(--pending-bg); }
td.st a { color: inherit; }
.badge { display: inline-block; padding: 0 .5em; border-radius: .8em; font-weight: 600; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; padding: .5em; overflow-x: auto;
  white-space: pre-wrap; word-break: break-all; margin: .3em 0; }
code { background: #f6f8fa; padding: 0 .2em; word-break: break-all; }
.legend td { border: none; padding: .1em .6em; }
.legend caption { text-align: left; font-weight: 600; padding: .3em 0; }
.muted { color: #57606a; }
dl.repro { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
dl.repro dt { font-weight: 600; } dl.repro dd { margin: 0; }
section.branch { margin-bottom: 2em; }
"""


def _e(text) -> str:
    return html.escape(clean(str(text)), quote=True)


def _href(path: str) -> str:
    return _e(quote(clean(path).replace(os.sep, "/"), safe="/._-+~#"))


def _status_cell(status: str, text: str = "", href: str = "", title: str = "") -> str:
    cls = status if status in CELL_CLASSES else "none"
    label = _e(text or (status if status not in ("", "none") else "–"))
    if href:
        label = f'<a href="{_href(href)}">{label}</a>'
    t = f' title="{_e(title)}"' if title else ""
    return f'<td class="st {cls}"{t}>{label}</td>'


def _badge(status: str) -> str:
    cls = status if status in CELL_CLASSES else "none"
    return f'<span class="badge {cls}">{_e(status)}</span>'


def _is_local_file(value: str, out_dir: Path | None) -> bool:
    if out_dir is None or not value or any(ch.isspace() for ch in value):
        return False
    p = Path(value)
    if p.is_absolute() or ".." in p.parts:
        return False
    try:
        return (out_dir / p).is_file()
    except OSError:
        return False


def _repro_html(b: R.BranchResult, out_dir: Path | None) -> str:
    rows = [f"<dt>command</dt><dd><code>{_e(repro_command(b))}</code></dd>"]
    for k, v in sorted(b.repro.items()):
        v = str(v)
        if _is_local_file(v, out_dir):
            val = f'<a href="{_href(v)}"><code>{_e(v)}</code></a>'
        elif "\n" in v or len(v) > 100:
            val = f"<pre>{_e(v)}</pre>"
        else:
            val = f"<code>{_e(v)}</code>"
        rows.append(f"<dt>{_e(k)}</dt><dd>{val}</dd>")
    return '<dl class="repro">' + "".join(rows) + "</dl>"


def _matrix(report: R.Report, stages: list[str], dirs: dict[str, str]) -> list[str]:
    h = ['<table class="matrix" id="matrix">', "<thead><tr><th>branch</th>"]
    h += [f"<th>{_e(s)}</th>" for s in stages]
    h += ["<th>KUnit cases</th><th>findings</th><th>result</th></tr></thead><tbody>"]
    for b in report.branches:
        anchor = "b-" + dirs[b.branch]
        same = f' <span class="muted">(= {_e(b.same_as)})</span>' if b.same_as else ""
        if b.follows:
            same += f' <span class="muted follows">({_e(follows_text(b))})</span>'
        row = [f'<tr><th><a href="#{_e(anchor)}">{_e(b.branch)}</a>{same}</th>']
        for name in stages:
            st = b.stage(name)
            if st is None:
                row.append(_status_cell("none", title="not run"))
            else:
                row.append(_status_cell(st.status, href=st.log, title=st.summary))
        cc = case_counts(b)
        total = sum(cc.values())
        bad = cc.get(FAIL, 0) + cc.get(CRASH, 0)
        broken = suites_broken_alone(b)
        if total or broken:
            notes = ([f"{bad} failed"] if bad else []) + \
                ([f"{len(broken)} suite{'s' if len(broken) > 1 else ''} "
                  f"{'crashed' if all(s.status == CRASH for s in broken) else 'failed'}"]
                 if broken else [])
            row.append(_status_cell(FAIL if bad or broken else PASS,
                                    text=f"{total - bad}/{total}"
                                    + (f" ({', '.join(notes)})" if notes else ""),
                                    title=", ".join(s.name for s in broken)))
        else:
            row.append(_status_cell("none"))
        nf, nb = len(failing_findings(b)), len(b.findings) - len(failing_findings(b))
        ftext = str(nf) + (f" (+{nb} base)" if nb else "")
        boot = b.stage("boot")
        scanned = boot is not None and boot.status != SKIP
        row.append(_status_cell(FAIL if nf else PASS, text=ftext) if b.findings or scanned
                   else _status_cell("none", title="console not scanned"))
        row.append(_status_cell(PENDING, text="pending") if b.pending else
                   _status_cell(PASS if b.ok else FAIL, text="ok" if b.ok else "FAILED")
                   .replace("</td>", _first_bad_html(b, anchor) + _carried_html(b, dirs)
                            + "</td>"))
        row.append("</tr>")
        h.append("".join(row))
    h.append("</tbody></table>")
    return h


def _first_bad_html(b: R.BranchResult, anchor: str) -> str:
    """The matrix cell's line naming the failure's first bad commit, which
    links to the branch's reproduce block."""
    a = b.attribution
    if not a.get("commit") and not a.get("range"):
        return ""
    what = a.get("patch") or a.get("commit", "")[:12] or \
        f"one of {len(a['range'])} commits"
    return (f'<br><a class="first-bad" href="#{_e(anchor)}-repro">'
            f"first bad: {_e(what)}</a>")


def _carried_html(b: R.BranchResult, dirs: dict[str, str]) -> str:
    """The matrix cell's lines naming the builds that attribute the
    branch's sanitizer report, each a link to its row's section."""
    out = ""
    for f in b.followups:
        who = ("the base's" if f["topic"] == BASE else f"carried by {f['branch'].split('+')[0]}") \
            if f["shows"] else f"not shown by {f['branch']}"
        href = f"#b-{dirs.get(f['branch'], branch_dir(f['branch']))}"
        out += f'<br><a class="carried" href="{_e(href)}">{_e(f["kind"])}: {_e(who)}</a>'
    return out


def _legend() -> str:
    cells = "".join(f'<tr><td class="st {s}">{_e(s if s != "none" else "–")}</td>'
                    f"<td>{_e(d)}</td></tr>" for s, d in LEGEND)
    return f'<table class="legend" id="legend"><caption>Legend</caption>{cells}</table>'


def _branch_section(b: R.BranchResult, stages: list[str], anchor: str,
                    junit: str, out_dir: Path | None) -> list[str]:
    h = [f'<section class="branch" id="{_e(anchor)}">',
         f"<h2>{_e(b.branch)} {_badge(PASS if b.ok else FAIL)}</h2>"]
    meta = [("topic", b.topic), ("head", b.head), ("tree", b.tree),
            ("config hash", b.config_hash)]
    h.append("<p>" + " · ".join(f'{_e(k)} <code>{_e(v)}</code>' for k, v in meta if v) + "</p>")
    if b.same_as:
        h.append(f"<p>Same tree as <b>{_e(b.same_as)}</b>: these are its results.</p>")
    h += _followups_html(b)
    h.append(f'<p><a href="{_href(junit)}">JUnit XML</a></p>')

    # Stages.
    h.append("<h3>Stages</h3><table><tr><th>stage</th><th>status</th><th>time</th>"
             "<th>summary</th><th>log</th></tr>")
    for st in b.stages:
        log = f'<a href="{_href(st.log)}">{_e(st.log)}</a>' if st.log else ""
        h.append(f"<tr><td>{_e(st.stage)}</td>{_status_cell(st.status)}"
                 f"<td>{st.seconds:.1f} s</td><td>{_e(st.summary)}</td><td>{log}</td></tr>")
    h.append("</table>")

    h += _findings_html(b)

    # Suites.
    if b.suites:
        h.append("<h3>KUnit suites</h3><table><tr><th>suite</th><th>status</th>"
                 "<th>cases</th><th>failed</th></tr>")
        for s in b.suites:
            bad = [c for c in s.cases if c.status in (FAIL, CRASH)]
            ok = sum(1 for c in s.cases if c.status == PASS)
            cases = f"{ok}/{len(s.cases)} passed" if s.cases else "no case ran"
            failed = ", ".join(_e(c.name) for c in bad)
            if not bad and s.status in (FAIL, CRASH):
                failed = f"the suite itself {'crashed' if s.status == CRASH else 'failed'}"
            h.append(f"<tr><td>{_e(s.name)}</td>{_status_cell(s.status)}"
                     f"<td>{cases}</td><td>{failed}</td></tr>")
        h.append("</table>")
        for s in b.suites:
            for c in s.cases:
                if c.status in (FAIL, CRASH):
                    h.append(f'<div class="case"><p>{_badge(c.status)} '
                             f"<code>{_e(s.name)}.{_e(c.name)}</code></p>")
                    if c.log:
                        h.append("<pre>" + "\n".join(_e(x) for x in c.log) + "</pre>")
                    h.append("</div>")

    if not b.ok or any(st.status == FAIL for st in b.stages):
        h.append(f'<h3 id="{_e(anchor)}-repro">Reproduce</h3>' + _repro_html(b, out_dir))
        if b.attribution:
            h.append(f"<p>{_e(attribution_line(b))}</p>")
    elif b.repro:
        h.append("<details><summary>Reproduce</summary>" + _repro_html(b, out_dir)
                 + "</details>")
    h.append("</section>")
    return h


def _findings_html(b: R.BranchResult) -> list[str]:
    """A branch section's findings, each with its place in the console log."""
    log = console_log(b)
    h = ["<h3>Findings</h3>"] if b.findings else []
    for f in b.findings:
        where = ""
        if log:
            where = f' — <a href="{_href(log)}">{_e(log)}</a>'
            if f.line:
                where += f" line {f.line}"
        base = ' <span class="badge skip">also on base</span>' if f.in_base else ""
        cls = SKIP if f.in_base else FAIL
        h.append(f'<div class="finding"><p><span class="badge {cls}">{_e(f.kind)}</span> '
                 f"{_e(f.message)}{where}{base}</p>")
        if f.lines:
            h.append("<pre>" + "\n".join(_e(x) for x in f.lines) + "</pre>")
        h.append("</div>")
    return h


def _followups_html(b: R.BranchResult) -> list[str]:
    """A branch section's lines on the builds that attribute its
    sanitizer report, or (such a build) on the report it attributes."""
    h = []
    if b.follows:
        h.append(f'<p class="follows">This build {_e(follows_text(b))} in '
                 f"{_e(', '.join(b.follows['files']))}: it "
                 f"{'shows it too' if b.follows['shows'] else 'does not show it'}.</p>")
    return h + [f'<p class="carried">{_e(followup_text(b.branch, f))}</p>'
                for f in b.followups]


def _relative_logs(report: R.Report, out_dir: Path | None) -> R.Report:
    """A copy whose stage logs given as absolute paths inside out_dir are
    relative to it (the contract is relative paths; links must survive the
    directory being copied, e.g. as CI artifacts)."""
    if out_dir is None:
        return report
    base = Path(out_dir).resolve()
    report = copy.deepcopy(report)
    for b in report.branches:
        for st in b.stages:
            if st.log and Path(st.log).is_absolute():
                try:
                    st.log = str(Path(st.log).resolve().relative_to(base))
                except ValueError:
                    pass
    return report


def render_html(report: R.Report, out_dir: Path | None = None) -> str:
    """The whole page as one string.  ``out_dir`` (where the page will live)
    lets repro values that name files there become links."""
    report = _relative_logs(report, out_dir)
    dirs = _branch_dirs(report)
    stages = stage_names(report)
    failed = [b for b in report.branches if not b.ok]
    title = f"ktopic report: Linux {report.base_version}"
    verdict = (f"{len(report.branches) - len(failed)} of {len(report.branches)} branches ok"
               if report.branches else "no branches")
    if report.mutants:
        scores = mutation_scores(report.mutants)
        verdict += "; mutants caught: " + ", ".join(f"{t} {c}/{n}"
                                                     for t, (c, n) in scores.items())
    h = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         # Nothing on this page loads anything: no scripts, no network.
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "style-src 'unsafe-inline'\">",
         '<meta name="viewport" content="width=device-width, initial-scale=1">',
         f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
         f"<h1>{_e(title)}</h1>",
         f'<p id="verdict">{_badge(PASS if report.ok else FAIL)} {_e(verdict)}'
         + (": " + ", ".join(f'<a href="#b-{_e(dirs[b.branch])}">{_e(b.branch)}</a>'
                             for b in failed) + " failed" if failed else "") + "</p>"]
    h += _matrix(report, stages, dirs)
    h.append(_legend())
    h += _mutants_html(report)
    for b in report.branches:
        h += _branch_section(b, stages, "b-" + dirs[b.branch],
                             f"{dirs[b.branch]}/{JUNIT_NAME}", out_dir)
    h.append('<p class="muted">Generated by <code>ktopic report</code> from '
             f"<code>{REPORT_NAME}</code>.</p></body></html>")
    return "\n".join(h) + "\n"


def write_html(report: R.Report, out_dir: Path = DEFAULT_OUT) -> Path:
    path = Path(out_dir) / HTML_NAME
    write_atomic(path, render_html(report, Path(out_dir)))
    return path


def write_all(report: R.Report, out_dir: Path = DEFAULT_OUT) -> None:
    """report.json, every junit.xml and index.html."""
    write_json(report, out_dir)
    write_junit(report, out_dir)
    write_html(report, out_dir)


# --------------------------------------------------------------- terminal

SHORT = {"generate": "gen"}      # column headers in terminal tables
STYLES = {PASS: "green", CACHED: "cyan", FAIL: "bold red", CRASH: "bold magenta",
          SKIP: "dim", RUNNING: "yellow", PENDING: "dim"}


def _styled(status: str):
    from rich.text import Text
    return Text(status or "–", style=STYLES.get(status, "dim"))


def render_table(report: R.Report):
    """A rich Table of branches by stage, with case and finding counts.

    The branch name is green when the branch is ok, red when it failed; it
    is the one column that gives way (ellipsis) on a narrow terminal.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text
    stages = stage_names(report)
    t = Table(title=f"ktopic: Linux {report.base_version}", title_justify="left",
              box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    t.add_column("branch", no_wrap=True, overflow="ellipsis", min_width=12)
    for s in stages:
        t.add_column(SHORT.get(s, s), justify="center", no_wrap=True, min_width=6)
    t.add_column("cases", justify="right", no_wrap=True, min_width=5)
    t.add_column("finds", justify="right", no_wrap=True, min_width=5)
    for b in report.branches:
        cells = [_styled(st.status) if (st := b.stage(s)) else _styled("") for s in stages]
        cc = case_counts(b)
        total, bad = sum(cc.values()), cc.get(FAIL, 0) + cc.get(CRASH, 0)
        bad_suites = len(suites_broken_alone(b))
        nf = len(failing_findings(b))
        name = Text(b.branch, style=STYLES[PASS if b.ok else FAIL])
        if b.same_as:
            name.append(f" = {b.same_as}", style="dim")
        if b.follows:
            name.append(f" ({follows_text(b)})", style="dim")
        t.add_row(name, *cells,
                  Text((f"{total - bad}/{total}" if total or bad_suites else "–")
                       + (f" +{bad_suites}" if bad_suites else ""),
                       style=STYLES[FAIL] if bad or bad_suites else ""),
                  Text(str(nf), style=STYLES[FAIL] if nf else ""))
    return t


def failure_lines(report: R.Report) -> list[str]:
    """Plain one-line descriptions of what failed, for the end of a run."""
    lines = []
    for b in report.branches:
        for st in b.stages:
            if st.status == FAIL:
                lines.append(f"{b.branch}: {st.stage} failed: {st.summary}"
                             + (f" (out/{st.log})" if st.log else ""))
        for f in failing_findings(b):
            lines.append(f"{b.branch}: {f.kind}: {f.message}")
        for s in b.suites:
            for c in s.cases:
                if c.status in (FAIL, CRASH):
                    lines.append(f"{b.branch}: {s.name}.{c.name} {c.status}")
        for s in suites_broken_alone(b):
            lines.append(f"{b.branch}: suite {s.name} {s.status}")
        if b.attribution:
            lines.append(attribution_line(b))
        lines += [followup_text(b.branch, f) for f in b.followups]
    return lines


def attribution_line(b: R.BranchResult) -> str:
    """"<branch>: first bad commit <id> ("<subject>", <patch>) after N boot(s)"."""
    return attribution_text(b.branch, b.attribution)


def attribution_text(branch: str, a: dict) -> str:
    """One line for the end of a run and the JUnit message."""
    pair = f"fails with {' and '.join(a['topics'])} stacked alone; " if a.get("topics") else ""
    if a.get("commit"):
        where = f", {a['patch']}" if a.get("patch") else ""
        text = f"{pair}first bad commit {a['commit'][:12]} (\"{a['subject']}\"{where})"
    elif a.get("range"):
        text = (f"{pair}first bad commit among {len(a['range'])}: {a['range'][0][:12]}.."
                f"{a['range'][-1][:12]} (stopped by {a['stopped']})")
    else:
        return f"{branch}: no first bad commit: {a.get('error', 'unknown')}"
    if a.get("skipped"):
        text += f"; {len(a['skipped'])} commit(s) skipped: they do not build"
    return f"{branch}: {text} after {a.get('boots', 0)} boot(s)"


def followup_text(branch: str, f: dict) -> str:
    """What a build that attributes a sanitizer report found, one line:
    "for-next+kcsan: kcsan report in kernel/locking/six.c: topic/locking+kcsan
    shows it too: topic/locking carries it"."""
    head = f"{branch}: {f['kind']} report in {', '.join(f['files']) or 'code no file names'}: "
    if f["topic"] == BASE:
        if f["shows"]:
            return head + (f"{f['branch']} shows it too: it is the base's (6.1's own), to be "
                           f"allow-listed in qemu/allowlist.yaml (kind: {f['kind']})")
        return head + f"no topic touches it, and {f['branch']} does not show it"
    if f["shows"]:
        return head + f"{f['branch']} shows it too: {f['branch'].split('+')[0]} carries it"
    return head + (f"{f['branch']} does not show it (the race may need another topic's "
                   "code, or another boot)")


def follows_text(b: R.BranchResult) -> str:
    """A follow-up's mark: "attributes for-next+kcsan's kcsan report"."""
    return f"attributes {b.follows['branch']}'s {b.follows['kind']} report" if b.follows else ""


def print_report(report: R.Report, console=None) -> None:
    """The static table, then one line per failure."""
    from rich.console import Console
    if console is None:
        console = Console()
        if not console.is_terminal:
            # CI logs have no width limit worth truncating cells for.
            console = Console(width=max(console.width, 160))
    console.print(render_table(report))
    for line in failure_lines(report):
        console.print(line, markup=False, highlight=False)
    for line in mutation_lines(report):
        console.print(line, markup=False, highlight=False)


class LiveTable:
    """A table of branches by stage that ``ktopic ci`` updates as it goes.

        with LiveTable(["topic/mm", "integration"]) as live:
            live.update("topic/mm", "build", "running")
            live.update("topic/mm", "build", "pass", "48 s")

    On a terminal it redraws a rich table in place; otherwise (CI logs, a
    pipe) it prints one plain line per update.  Safe to call from threads.
    """

    def __init__(self, branches=(), stages=STAGES, console=None, title: str = "ktopic ci"):
        from rich.console import Console
        self.console = console or Console()
        self.stages = list(stages)
        self.title = title
        self.rows: dict[str, dict[str, str]] = {b: {} for b in branches}
        self.notes: dict[str, str] = {}
        self._lock = threading.Lock()
        self._live = None
        self._start = time.monotonic()

    @property
    def interactive(self) -> bool:
        return bool(self.console.is_terminal) and not self.console.is_dumb_terminal

    def render(self):
        from rich.table import Table
        from rich import box
        t = Table(title=self.title, title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True,
                  pad_edge=False)
        t.add_column("branch", no_wrap=True, overflow="ellipsis", min_width=12)
        for s in self.stages:
            t.add_column(SHORT.get(s, s), justify="center", no_wrap=True, min_width=6)
        t.add_column("", overflow="fold")
        for b, row in self.rows.items():
            t.add_row(b, *[_styled(row.get(s, PENDING)) for s in self.stages],
                      self.notes.get(b, ""))
        return t

    def __enter__(self):
        self._start = time.monotonic()
        if self.interactive:
            from rich.live import Live
            self._live = Live(self.render(), console=self.console,
                              refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc):
        if self._live is not None:
            with self._lock:
                self._live.update(self.render(), refresh=True)
            self._live.__exit__(*exc)
            self._live = None
        return False

    def update(self, branch: str, stage: str, status: str, summary: str = "") -> None:
        with self._lock:
            self.rows.setdefault(branch, {})[stage] = status
            if stage not in self.stages:
                self.stages.append(stage)
            if summary:
                self.notes[branch] = f"{stage}: {summary}"
            if self._live is not None:
                self._live.update(self.render(), refresh=True)
            else:
                took = time.monotonic() - self._start
                line = f"[{took:7.1f}s] {branch}: {stage} {status}" + \
                    (f" ({summary})" if summary else "")
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)


# ---------------------------------------------------- where the time went

TIMING_TITLE = "where the time went"


def _timing_cells(r: R.StageTime) -> list[str]:
    cc = "" if r.ccache_hits is None else f"{r.ccache_hits}/{r.ccache_misses}"
    return [r.branch or ("(run)" if r.stage == "total" else ""), r.stage,
            str(r.runs) if r.runs else "", f"{r.seconds:.1f}", f"{r.cpu:.1f}",
            f"{r.load:.2f}" if r.stage != "other" else "", str(r.kbuild) if r.kbuild else "", cc]


TIMING_HEAD = ["branch", "stage", "steps", "wall s", "cpu s", "load", "kbuild", "ccache hit/miss"]


def timing_lines(rows: list[R.StageTime]) -> list[str]:
    """The table as plain aligned lines (a log)."""
    table = [TIMING_HEAD] + [_timing_cells(r) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(TIMING_HEAD))]
    right = {2, 3, 4, 5, 6, 7}
    out = [f"{TIMING_TITLE}:"]
    for row in table:
        out.append("  " + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                                    for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    return out


def print_timing(rows: list[R.StageTime], console=None) -> None:
    """Where the time went: a rich table on a terminal, plain lines in a log.
    cpu s is the child processes' user + system time, load the 1-minute
    load average when the stage started (docs/ci.md)."""
    if not rows:
        return
    from rich.console import Console
    console = console or Console()
    if not (console.is_terminal and not console.is_dumb_terminal):
        for line in timing_lines(rows):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    from rich import box
    from rich.table import Table
    t = Table(title=TIMING_TITLE, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              collapse_padding=True)
    for i, h in enumerate(TIMING_HEAD):
        t.add_column(h, justify="right" if i >= 2 else "left", no_wrap=True)
    for r in rows:
        t.add_row(*_timing_cells(r), style="bold" if r.stage == "total" else None)
    console.print(t)
