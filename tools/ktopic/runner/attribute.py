"""Which commit brought a branch's failure (docs/ci.md, "First bad commit").

A failing branch is bisected over its own commits (the topic's, or the
integration branch's stack), each probe built in the branch's build
directory and booted with its tests, as `git bisect` would: a commit that
does not build is skipped, a probe that fails differently is a good one
(and reported), and the number of boots is bounded.

Takes a Runner and a failing target with its result; gives the dict that
BranchResult.attribution records.
"""

from __future__ import annotations

from ktopic.gates import bisectable
from ktopic.gates.check import FINDING_KINDS as GATE_KINDS
from ktopic.model import results as R
from ktopic.model.results import CRASH, FAIL
from ktopic.model.targets import BASE, INTEGRATION, Target

MAX_BOOTS = 12
# Commits made for a probe (runner/pairs.py): fixed, so that they are
# the same commits, and so the same cached results, every time.
PROBE_ENV = {"GIT_AUTHOR_NAME": "ktopic", "GIT_AUTHOR_EMAIL": "ktopic@localhost",
             "GIT_COMMITTER_NAME": "ktopic", "GIT_COMMITTER_EMAIL": "ktopic@localhost",
             "GIT_AUTHOR_DATE": "@0 +0000", "GIT_COMMITTER_DATE": "@0 +0000"}
LOAD_KINDS = {"timeout", "silence", "qemu", "incomplete"}


def signature(br: R.BranchResult) -> set[tuple[str, str]]:
    """What a failure is, as (kind, name): each failed or crashed case, each
    suite that failed with no failed case of its own, each finding kind the
    base does not show (by its kind alone: addresses and times differ
    between boots), a failed build.  Not the patch gates' findings (a new
    W=1 warning, a checkpatch error): a probe is a build and a boot, which
    cannot show them, so a failure made of them alone is not bisected."""
    sig = {("case", f"{s.name}.{c.name}") for s in br.suites for c in s.cases
           if c.status in (FAIL, CRASH)}
    sig |= {("suite", s.name) for s in br.suites if s.status in (FAIL, CRASH) and
            not any(c.status in (FAIL, CRASH) for c in s.cases)}
    for f in br.findings:
        if f.in_base or f.kind in ("failed_case", "unreported_case") or f.kind in GATE_KINDS:
            continue
        sig.add((f.kind, f.message if f.kind == "missing_suite" else ""))
    build = br.stage("build")
    if build is not None and build.status == FAIL:
        sig.add(("build", ""))
    return sig


def patch_file(m, topic: str, subject: str) -> str:
    """patches/<topic>/<file> whose commit has this subject ("" when none)."""
    names = m.integration.topics if topic == INTEGRATION else [topic]
    for name in names:
        for p in getattr(m.topics[name], "patches", []):
            if _subject_of(p.path) == subject:
                return f"patches/{name}/{p.rel}"
    return ""


def _subject_of(path) -> str:
    try:
        head = path.read_text(errors="replace").split("\n\n", 1)[0]
    except OSError:
        return ""
    text = head.replace("\n ", " ")
    for line in text.splitlines():
        if line.startswith("Subject:"):
            s = line[len("Subject:"):].strip()
            return s.split("] ", 1)[1] if s.startswith("[") and "] " in s else s
    return ""


class Bisection:
    """One failing target's bisection over its commits (oldest first)."""

    def __init__(self, runner, t: Target, head: R.BranchResult, commits, bound: int):
        self.runner, self.t, self.commits, self.bound = runner, t, commits, bound
        self.want = signature(head)
        self.build_failure = ("build", "") in self.want
        self.boots, self.skipped, self.other = 0, [], []

    def probe(self, i: int) -> str:
        """'bad' (the same failure), 'good', or 'skip' (does not build)."""
        sha, subject = self.commits[i]
        br = self.runner.run_commit(self.t, sha, f"{self.t.branch}@{sha[:12]}")
        self.boots += 1
        sig = signature(br)
        if sig & self.want:
            return "bad"
        if ("build", "") in sig:
            self.skipped.append(sha)
            return "skip"
        if not br.ok:           # a failure of its own: reported, not confused
            self.other.append({"commit": sha, "subject": subject,
                               "failure": sorted(f"{k} {n}".strip() for k, n in sig)})
        return "good"

    def run(self) -> tuple[int, int]:
        """(last good index, first bad index); good is -1 for the start."""
        good, bad = -1, len(self.commits) - 1
        while bad - good > 1 and self.boots < self.bound:
            open_ = [i for i in range(good + 1, bad) if self.commits[i][0] not in self.skipped]
            if not open_:
                break
            mid = min(open_, key=lambda i: abs(i - (good + bad) // 2))
            verdict = self.probe(mid)
            if verdict == "bad":
                bad = mid
            elif verdict == "good":
                good = mid
        return good, bad


def first_bad(runner, t: Target, head: R.BranchResult, bound: int = MAX_BOOTS) -> dict:
    """The first commit of t's own on which head's failure appears."""
    p = bisectable.plan(runner.m, runner.wd, t.topic)
    if p.error or not p.commits:
        return {"error": p.error or "no commits of its own"}
    b = Bisection(runner, t, head, p.commits, bound)
    good, bad = b.run()
    return verdict(runner.m, t.topic, p.commits, good, bad, b, b.boots, bound)


def verdict(m, topic: str, commits, good: int, bad: int, b: Bisection, boots: int,
            bound: int) -> dict:
    """What a bisection over commits (oldest first) found."""
    sha, subject = commits[bad]
    out = {"boots": boots, "skipped": b.skipped, "other": b.other}
    if bad - good == 1:
        out.update(commit=sha, subject=subject, patch=patch_file(m, topic, subject))
    else:
        out["range"] = [c for c, _ in commits[good + 1:bad + 1]]
        out["stopped"] = ("the bound of boots" if boots >= bound
                          else "commits that do not build")
    return out


def wanted(t: Target, br: R.BranchResult) -> bool:
    """Attribute a failure of a topic or the integration branch, not the
    base's, and not one that only load made (a time-out alone)."""
    sig = signature(br)
    return t.topic != BASE and not br.ok and bool(sig - {(k, "") for k in LOAD_KINDS})
