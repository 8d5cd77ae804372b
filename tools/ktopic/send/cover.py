"""The cover letter of a mailed series, written from the manifest.

Takes a CoverInput (series, branch, carried patches, CI results, changelog,
range-diff); gives the cover letter's text.  docs/mail.md.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.model.manifest import Carried, Manifest
from ktopic.model import results as R

# Words that mark a cover letter nobody finished (b4 refuses EDITME itself).
PLACEHOLDER = re.compile(r"\b(EDITME|FIXME|TBD|XXX)\b")
WIDTH = 72


def placeholder(text: str) -> str | None:
    m = PLACEHOLDER.search(text or "")
    return m.group(1) if m else None


BULLET = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+")


def _fill(text: str, first: str, rest: str) -> list[str]:
    # Never break a word (a URL, a Message-Id) or at its hyphens.
    return textwrap.wrap(" ".join(text.split()), WIDTH, initial_indent=first,
                         subsequent_indent=rest, break_on_hyphens=False,
                         break_long_words=False) or [first.rstrip()]


def wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
    """Paragraphs of text wrapped at WIDTH; blank lines separate them.  A
    paragraph's list items ("- ", "* ", "1. ") stay items, each wrapped
    under its marker; a long word (a URL) is never broken."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", (text or "").strip()):
        if out:
            out.append("")
        lead = first if first is not None and not out else indent
        chunks: list[list[str]] = []          # [marker or "", text lines...]
        for line in para.splitlines():
            b = BULLET.match(line)
            if b:
                chunks.append([b.group(1) + b.group(2) + " ", line[b.end():]])
            elif chunks:
                chunks[-1].append(line)
            else:
                chunks.append(["", line])
        merged: list[list[str]] = []
        for c in chunks:                      # text before the first item: one paragraph
            if merged and not c[0] and not merged[-1][0]:
                merged[-1] += c[1:]
            else:
                merged.append(c)
        for i, (marker, *lines) in enumerate(merged):
            head = lead if i == 0 else indent
            out += _fill(" ".join(lines), head + marker, indent + " " * len(marker))
    return out


def section(title: str) -> list[str]:
    return ["", title, "-" * len(title)]


@dataclass
class CoverInput:
    subject: str
    body: str
    branch: str
    head: str
    tree: str
    revision: int
    base_commit: str
    depends: list[str] = field(default_factory=list)     # branches the series applies on
    carried: list[Carried] = field(default_factory=list)
    ci: list[str] = field(default_factory=list)          # lines, already formatted
    changelog: list[tuple[int, list[str]]] = field(default_factory=list)  # newest first
    range_diff: str = ""
    range_diff_note: str = ""       # why there is none, when there is none
    previous: int = 0
    start: str = ""                 # where the series applies (base-commit)


def base_lines(m: Manifest, base_commit: str, mail: bool = True) -> list[str]:
    b = m.base
    text = (f"Debian's {b.package} {b.debian_version}, that is upstream v{b.version} "
            f"with Debian's patches, as {b.tarball} ships it.  ")
    if mail:
        text += (f"Its import by `ktopic import-base` is commit {base_commit}: the same "
                 f"commit on every machine, so `ktopic import-base` on that tarball gives "
                 f"a recipient the base-commit below (or apply the series on an unpacked "
                 f"{b.package} {b.debian_version}).")
    else:
        text += (f"Commit {base_commit[:12]} is the import of that tarball by `ktopic "
                 f"import-base` (the same commit on every machine).")
    return wrap(text)


def carried_lines(items: list[Carried]) -> list[str]:
    out: list[str] = []
    titles = {"upstream": "Already in the base (not carried)",
              "superseded": "Superseded (not carried)",
              "dropped": "Dropped (not carried)"}
    for kind in ("upstream", "superseded", "dropped"):
        group = [c for c in items if c.kind == kind]
        if not group:
            continue
        out += section(titles[kind])
        for c in group:
            where = {"upstream": "upstream in ", "superseded": "replaced by ",
                     "dropped": "why: "}[kind] + c.where
            out += wrap(f'"{c.subject}": {where.rstrip(".")}.', indent="  ", first="- ")
            if c.evidence:
                out += wrap(f"Evidence: {c.evidence}", indent="  ")
            for chk in c.checks:
                out += wrap(f"Checked on the base: {chk.describe()}", indent="  ")
            if c.tests:
                out += wrap("Tested by: " + ", ".join(c.tests), indent="  ")
    return out


def render(m: Manifest, ci: CoverInput) -> str:
    """The cover letter: first line the subject, then the body (b4 adds
    the shortlog, diffstat and change-id after it)."""
    lines = [ci.subject, ""]
    lines += wrap(ci.body)
    lines += section("Base")
    lines += base_lines(m, ci.base_commit)
    if ci.depends:
        lines += [""] + wrap("The series applies on top of " + ", ".join(ci.depends) +
                             " (sent separately), as the branch " + ci.branch + " has them" +
                             (f"; the base-commit below, {ci.start}, is the base with them, "
                              f"as `ktopic generate` makes it" if ci.start else "") + ".")
    lines += carried_lines(ci.carried)
    lines += section("CI results")
    lines += ci.ci or wrap(f"No CI results for tree {ci.tree[:12]} yet (run `ktopic ci "
                           f"{ci.branch}`).")
    for number, changes in ci.changelog:
        lines += ["", f"Changes in v{number}:" if number > 1 else "Notes on v1:"]
        for c in changes:
            lines += wrap(c, indent="  ", first="- ")
    if ci.previous:
        lines += section(f"Range-diff against v{ci.previous}")
        if ci.range_diff:
            lines += ci.range_diff.rstrip("\n").splitlines()
        else:
            lines += wrap(f"Not available: {ci.range_diff_note}.")
    # b4 takes a last paragraph of "Word: value" lines for trailers and
    # rewrites it (range-diff lines "10:  abc = 10:  def" look like one):
    # end with a sentence.
    lines += ["", f"This series is {ci.branch} at {ci.head[:12]}."]
    # b4 strips lines starting with '#' from the cover letter.
    return "\n".join(" " + ln if ln.startswith("#") else ln.rstrip()
                     for ln in lines).rstrip() + "\n"


def ci_lines(report_path: Path, branch: str, head: str, tree: str) -> list[str]:
    """The CI results of this very tree, from out/report.json, as lines."""
    if not report_path.exists():
        return []
    try:
        rep = R.Report.from_json(report_path.read_text())
    except (ValueError, KeyError, TypeError):
        return wrap("out/report.json could not be read; no CI results quoted.")
    match = [b for b in rep.branches if b.tree == tree and (b.branch == branch or b.head == head)]
    match.sort(key=lambda b: (b.branch != branch, b.head != head))
    if not match:
        older = [b for b in rep.branches if b.branch == branch]
        if older:
            return wrap(f"out/report.json has results for {branch} at "
                        f"{older[0].head[:12]} (tree {older[0].tree[:12]}), not for "
                        f"this tree {tree[:12]}; they are not quoted.")
        return []
    b = match[0]
    verdict = "PASS" if b.ok else "FAIL"
    out = wrap(f"{verdict}: {b.branch} at {b.head[:12]} (tree {b.tree[:12]}"
               f"{', config ' + b.config_hash if b.config_hash else ''}), "
               f"base {rep.base_version}.")
    for s in b.stages:
        timed = s.seconds >= 1 and not re.search(r"\b\d+(\.\d+)?s\b", s.summary or "")
        secs = f" ({s.seconds:.0f} s)" if timed else ""
        out += wrap(f"{s.stage}: {s.status}{secs}" + (f", {s.summary}" if s.summary else ""),
                    indent="    ", first="  ")
    cases = [c for s in b.suites for c in s.cases]
    if b.suites:
        passed = sum(1 for c in cases if c.status == "pass")
        out += wrap(f"KUnit/KTAP: {len(b.suites)} suites, {passed}/{len(cases)} cases passed"
                    f" ({', '.join(s.name for s in b.suites)})", indent="    ", first="  ")
    bad = [f for f in b.findings if not f.in_base]
    if bad:
        out += ["  Console findings:"]
        for f in bad[:10]:
            out += wrap(f"{f.kind}: {f.message}", indent="      ", first="    - ")
    elif b.stage("boot") and b.stage("boot").status in ("pass", "cached"):
        out += ["  Console: no findings."]
    return out
