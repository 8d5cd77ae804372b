"""Scan a guest's whole console log for kernel bug reports.

Takes a console log and qemu/allowlist.yaml; gives a Finding per report
(kind, message, line, quoted lines).  docs/ci.md, "What fails a boot".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from ktopic.errors import KtopicError
from ktopic.model.results import Finding

# printk's "[    1.234567] " prefix, optionally with a caller id "[T1]".
_TS = re.compile(r"^\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])?\s?")

_LOCKDEP_TITLES = (
    r"possible circular locking dependency detected",
    r"possible recursive locking detected",
    r"inconsistent lock state",
    r"bad unlock balance detected",
    r"held lock freed",
    r"suspicious RCU usage",
    r"possible irq lock inversion dependency detected",
    r"\S+-safe -> \S+-unsafe lock order detected",
    r"lock held when returning to user space",
    r"[Nn]ested lock was not taken",
    r"lock held at task exit",
    r"possible circular locking",
)

# (kind, pattern matched at the start of a line, timestamp removed). First match wins.
RULES: list[tuple[str, re.Pattern]] = [(k, re.compile(p)) for k, p in [
    ("lockdep", r"WARNING: (?:" + "|".join(_LOCKDEP_TITLES) + ")"),
    ("lockdep", r"INFO: trying to register non-static key"),
    ("lockdep", r"BUG: MAX_LOCKDEP_\w+ too low|BUG: MAX_STACK_TRACE_ENTRIES too low"),
    ("lockdep", r"DEBUG_LOCKS_WARN_ON\("),
    ("kcsan", r"BUG: KCSAN: "),
    ("kasan", r"BUG: KASAN: "),
    ("kasan", r"BUG: KFENCE: "),
    ("ubsan", r"UBSAN: "),
    ("lockup", r"(?:watchdog: )?BUG: soft lockup"),
    ("lockup", r".*[Ww]atchdog detected hard LOCKUP"),
    ("lockup", r"BUG: workqueue lockup"),
    ("hung_task", r"INFO: task \S+ blocked for more than \d+ seconds"),
    ("rcu_stall", r"(?:rcu: )?INFO: rcu_\w+ (?:self-)?detected stalls?"),
    ("list_corruption", r"list_(?:add|del) corruption|list_add double add"),
    ("refcount", r"refcount_t: "),
    ("debug_objects", r"ODEBUG: "),
    ("oops", r"Oops: |general protection fault|double fault: |stack segment: "),
    ("panic", r"Kernel panic - not syncing"),
    ("bug", r"BUG: |kernel BUG at "),
    ("warning", r"WARNING: "),
    ("init", r"ktopic-init: (?:insmod \S+ failed|exec \S+ failed|run \S+ failed|"
             r"\S+ killed by signal|mount \S+ on \S+ failed|power off failed)"),
]]
_CUT_HERE = re.compile(r"-+\[ cut here \]-+")
# The end of a report: a trace's end line, or the "=====" rule that closes
# a KASAN/KCSAN/UBSAN report (the opening rule is above the title, not quoted).
_END = re.compile(r"---\[ end (?:trace|Kernel panic)|^={40,}\s*$")
_BANNER = re.compile(r"Linux version \d+\.\d+")
_SMP = re.compile(r"smp: Brought up \d+ nodes?, (\d+) CPUs?")
# Generic kinds a "cut here" block gets when nothing more specific is inside.
_GENERIC = ("warning", "bug")
MAX_QUOTE = 60


@dataclass
class AllowEntry:
    pattern: re.Pattern
    reason: str
    kind: str | None = None

    def matches(self, f: Finding) -> bool:
        return (self.kind in (None, f.kind)) and bool(self.pattern.search(f.message))


def load_allowlist(path: Path) -> list[AllowEntry]:
    """qemu/allowlist.yaml: a list of {pattern, reason, kind?}; a reason is required."""
    if not path.is_file():
        return []
    try:
        root = yaml.compose(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise KtopicError(f"YAML syntax error: {getattr(e, 'problem', e)}", file=path,
                          line=mark.line + 1 if mark else None) from None
    if root is None:
        return []
    if not isinstance(root, yaml.SequenceNode):
        raise KtopicError("the allowlist must be a list of entries", file=path,
                          line=root.start_mark.line + 1)
    entries = []
    data = yaml.safe_load(path.read_text())
    for node, item in zip(root.value, data):
        line = node.start_mark.line + 1
        if not isinstance(item, dict) or set(item) - {"pattern", "reason", "kind"}:
            raise KtopicError("an entry has the keys pattern, reason and (optional) kind",
                              file=path, line=line)
        if not isinstance(item.get("pattern"), str) or not item["pattern"]:
            raise KtopicError("entry without a pattern", file=path, line=line)
        if not isinstance(item.get("reason"), str) or not item["reason"].strip():
            raise KtopicError("entry without a reason (every entry must say why "
                              "the line is harmless)", file=path, line=line)
        try:
            pat = re.compile(item["pattern"])
        except re.error as e:
            raise KtopicError(f"bad pattern: {e}", file=path, line=line) from None
        entries.append(AllowEntry(pat, item["reason"].strip(), item.get("kind")))
    return entries


# A printk that comes while init writes a line splits that line: the
# kernel's lines come out in the middle of it and the rest of init's after
# them ("ktopic-init: ins[   12.71] fs_block_exports: loading ...", then
# "mod fs_block_exports.ko").
_SPLIT = re.compile(r"^(ktopic-init: [^\[]*)(\[\s*\d+\.\d+\].*)$")


def clean_lines(text: str) -> list[str]:
    """Console text as lines without printk timestamps or carriage returns,
    and init's lines that a printk split put back together (after the
    kernel's lines)."""
    raw = [l.replace("\r", "") for l in text.split("\n")]
    out: list[str] = []
    i = 0
    while i < len(raw):
        m = _SPLIT.match(raw[i])
        j = i + 1
        while m and j < len(raw) and _TS.match(raw[j]):
            j += 1
        if m and j < len(raw):
            out += [m.group(2), *raw[i + 1:j], m.group(1) + raw[j]]
            i = j + 1
            continue
        out.append(raw[i])
        i += 1
    return [_TS.sub("", l) for l in out]


def _classify(line: str) -> str | None:
    for kind, pat in RULES:
        if pat.match(line):
            return kind
    return None


def _quote(lines: list[str], start: int, first_end: int | None = None) -> list[str]:
    """The report starting at `start`: up to its end-of-trace line, at most MAX_QUOTE."""
    out = []
    for j in range(start, min(len(lines), start + MAX_QUOTE)):
        if j > max(start, first_end or start) and _classify(lines[j]) and \
                not lines[j].startswith("DEBUG_LOCKS_WARN_ON"):
            break                    # the next report starts
        out.append(lines[j])
        if _END.search(lines[j]):
            break
    while out and not out[-1].strip():
        out.pop()
    return out


def scan_text(text: str, allow: list[AllowEntry] | None = None,
              expect_cpus: int | None = None) -> list[Finding]:
    lines = clean_lines(text)
    findings: list[Finding] = []
    consumed: set[int] = set()
    banners = 0
    for i, line in enumerate(lines):
        if i in consumed:
            continue
        if _BANNER.match(line):
            banners += 1
            if banners > 1:
                findings.append(Finding("reboot", "second 'Linux version' banner: the "
                                        "guest rebooted", i + 1, lines[i:i + 1]))
            continue
        if _CUT_HERE.match(line):
            # WARN/BUG: the block runs to its WARNING:/kernel BUG line.
            kind, specific, title_at = None, None, None
            for j in range(i + 1, min(len(lines), i + 6)):
                k = _classify(lines[j])
                if k in _GENERIC:
                    title_at = j
                    kind = kind or k
                    break
                if k and specific is None:
                    specific, kind = j, k
            if title_at is None and specific is None:
                findings.append(Finding("warning", line.strip(), i + 1, _quote(lines, i)))
                continue
            head = [lines[x].strip() for x in (specific, title_at) if x is not None]
            end = title_at if title_at is not None else specific
            consumed.update(range(i, end + 1))
            findings.append(Finding(kind, " / ".join(head), (specific or title_at) + 1,
                                    _quote(lines, i, end)))
            continue
        kind = _classify(line)
        if kind:
            findings.append(Finding(kind, line.strip(), i + 1, _quote(lines, i)))
    if expect_cpus:
        ups = [(i, int(m.group(1))) for i, l in enumerate(lines) if (m := _SMP.match(l))]
        if ups and ups[0][1] < expect_cpus:
            i, n = ups[0]
            findings.append(Finding("smp", f"guest brought up {n} CPU(s), {expect_cpus} "
                                    "requested: concurrency tests prove nothing", i + 1,
                                    [lines[i]]))
    if allow:
        findings = [f for f in findings if not any(a.matches(f) for a in allow)]
    return findings


def read(console: Path) -> str:
    """A console log as text (a byte that is not UTF-8 shown as U+FFFD)."""
    return console.read_bytes().decode("utf-8", errors="replace")


_NOISE = re.compile(r"\b(?:0x[0-9a-f]+|[0-9a-f]{8,}|\d+)\b")


def signature(f: Finding) -> str:
    """What identifies a finding across kernels (numbers, addresses, CPUs, PIDs removed),
    so that a report the base kernel shows too can be recognised in a branch."""
    msg = re.sub(r"\bCPU: \d+ PID: \d+\b|\bCPU#?\d+\b|\[[^\]]*:\d+\]", "", f.message)
    msg = re.sub(r"\+0x[0-9a-f]+/0x[0-9a-f]+", "", msg)
    msg = re.sub(r"(\.[ch]):\d+", r"\1", msg)
    return f"{f.kind}:{_NOISE.sub('#', msg).strip()}"
