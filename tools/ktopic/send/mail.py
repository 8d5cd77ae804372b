"""Mail a topic (or the integration branch) as a patch series, with b4.

Takes the manifest, the work directory and a topic or integration; gives
the series b4 wrote (and sent) and its new revision.  docs/mail.md.
"""

from __future__ import annotations

import dataclasses
import datetime
import email.utils
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.send import cover, deliver, revisions, sentrecord, signoffs
from ktopic.send.sender import identity
from ktopic.model import yamlpos
from ktopic.errors import Failure, KtopicError
from ktopic.branches.generate import BACKUP, MADE, Generator, base_commit, worktree_branches
from ktopic.plumbing import namelookup
from ktopic.plumbing.gitutil import ZERO, Git
from ktopic.plumbing.objstore import ObjectStore
from ktopic.model.branchspec import INTEGRATION, BranchSpec
from ktopic.model.manifest import Manifest
from ktopic.model.workdir import Workdir

MAGIC = "--- b4-submit-tracking ---"
# b4 prepares the series on this branch; b4/<label> is moved to it at the end.
SCRATCH = "ktopic-mail/"
SPARSE_NOTHING = "/.ktopic-sparse-checkout-nothing\n"

# Our cover template for b4: b4's footers, with the base said in words too.
# base-commit is the commit the series applies on: the base import (the
# same id on every machine that imports the tarball) plus the topics it
# depends on, as `ktopic generate` makes them; `b4 am` reports it.
COVER_TEMPLATE = """\
${cover}

---
${shortlog}

${diffstat}
---
base: %(base)s
base-commit: %(base_commit)s
change-id: ${change_id}

-- 
${signature}
"""


def line_of(m: Manifest, *keys) -> int | None:
    return yamlpos.line_of(m.data, list(keys))


def subject(m: Manifest, t: BranchSpec) -> str:
    """The series' subject: the manifest's, with the topic named."""
    s = m.series.subject
    return s if t.kind == INTEGRATION else f"{s} ({t.name})"


def body(m: Manifest, t: BranchSpec) -> tuple[str, int]:
    """The cover letter's own text and its line in the manifest: the
    topic's description; the series' cover (else the integration
    branch's description) for the integration branch."""
    if t.kind != INTEGRATION:
        return t.description, line_of(m, "topics", t.name, "description") or t.line
    s = m.series
    text, line = (s.cover, line_of(m, "series", "cover")) if s.cover else \
        (t.description, line_of(m, "integration", "description") or t.line)
    return text, line or t.line


def applies_on(m: Manifest, t: BranchSpec) -> list[str]:
    """The branches the series applies on (its dependencies, not mailed)."""
    return [m.topic(d).branch for d in t.depends]


def sender(m: Manifest) -> tuple[str, str]:
    name, addr = email.utils.parseaddr(m.series.sender or "")
    if not name or not re.fullmatch(r"[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+", addr or ""):
        raise KtopicError(f"series.from {m.series.sender!r} is not a sender identity "
                          f"'Name <address>'", m.display(), line_of(m, "series", "from"))
    return name, addr


def check_recipients(m: Manifest, t: BranchSpec) -> None:
    if not t.to and not t.cc:
        what = "integration" if t.kind == INTEGRATION else f"topic {t.name}"
        raise KtopicError(f"{what} has no recipients: add `to:` (and `cc:`) to it in the manifest",
                          m.display(), t.line)


def check_placeholders(m: Manifest, t: BranchSpec) -> None:
    sources = [(subject(m, t), line_of(m, "series", "subject")), body(m, t)]
    sources += [(c.subject + " " + c.where + " " + c.evidence, c.line) for c in t.carried]
    for text, line in sources:
        word = cover.placeholder(text)
        if word:
            raise KtopicError(f"the cover letter of {t.branch} would still hold placeholder "
                              f"text {word!r}; write it in the manifest first",
                              m.display(), line)


def smtp_server() -> str:
    p = subprocess.run(["git", "config", "--get", "sendemail.smtpserver"],
                       capture_output=True, text=True, cwd="/")
    return p.stdout.strip()


def signing_key(git: Git, key: str = "patatt.signingkey") -> str:
    return git.try_run("config", "--get", key).stdout.strip()


# --- recipients from the kernel's own script -----------------------------------

def get_maintainers(git: Git, start: str, head: str) -> tuple[list[str], str]:
    """Addresses scripts/get_maintainer.pl of the branch gives for the
    series, and a note when it could not run."""
    if not git.has(f"{head}:scripts/get_maintainer.pl"):
        return [], "the tree has no scripts/get_maintainer.pl"
    with tempfile.TemporaryDirectory(prefix="ktopic-maint-") as tmp:
        for path in ("scripts/get_maintainer.pl", "MAINTAINERS", ".mailmap",
                     ".get_maintainer.ignore"):
            blob = git.try_run("cat-file", "blob", f"{head}:{path}")
            if blob.returncode == 0:
                Path(tmp, path).parent.mkdir(parents=True, exist_ok=True)
                Path(tmp, path).write_text(blob.stdout)
        pdir = Path(tmp, "series")
        files = git.run("format-patch", "-o", str(pdir), f"{start}..{head}").split()
        p = subprocess.run(["perl", "scripts/get_maintainer.pl", "--no-tree", "--no-git",
                            "--no-git-fallback", "--no-rolestats", "--no-remove-duplicates",
                            *files], cwd=tmp, capture_output=True, text=True)
    if p.returncode != 0:
        return [], "get_maintainer.pl failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    out = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if "@" in line and line not in out:
            out.append(line)
    return out, ""


def merge_addresses(to: list[str], cc: list[str], extra: list[str]) -> tuple[list[str], list[str]]:
    seen = {email.utils.parseaddr(a)[1].lower() for a in to}
    cc_out = []
    for a in cc + extra:
        addr = email.utils.parseaddr(a)[1].lower()
        if addr and addr not in seen:
            seen.add(addr)
            cc_out.append(a)
    return list(to), cc_out


# --- the plan: everything decided before anything is written ---------------------

@dataclass
class Plan:
    m: Manifest
    t: BranchSpec
    git: Git
    state: revisions.State
    revision: int
    base: str
    start: str
    head: str
    tree: str
    count: int
    cover_text: str
    to: list[str]
    cc: list[str]
    changes: list[str]
    stack: list[dict]
    own: int
    notes: list[str] = field(default_factory=list)
    send: bool = False
    refs: list = field(default_factory=list)     # ref updates made after a success
    finish: bool = False         # the revision was partly sent: send the rest of it
    uncertain: str = ""          # --uncertain: "sent" or "resend" a message perhaps out

    @property
    def outdir(self) -> Path:
        return self.m.root / "out" / "mail" / self.t.branch / f"v{self.revision}"


def commits(git: Git, start: str, head: str) -> list[tuple[str, str, str, str]]:
    """(commit, subject, patch-id, message) of start..head, oldest first:
    patch-id ignores the message, which a revision may change alone.
    Three gits whatever the number of commits: the messages, the diffs
    (as `git show` gives each, a merge's combined), their patch-ids."""
    fields = git.run("log", "--reverse", "-z", "--format=%H%x00%s%x00%B",
                     f"{start}..{head}").split("\0")
    listed = [(fields[i], fields[i + 1], fields[i + 2].strip())
              for i in range(0, len(fields) - 2, 3)]
    if not listed:
        return []
    diffs = git.run("log", "--format=commit %H", "-p", "--cc", f"{start}..{head}")
    # One "<patch-id> <commit>" line per commit whose diff is not empty.
    pids = dict(reversed(line.split(" ", 1)) for line in
                git.run("patch-id", "--stable", input=diffs).splitlines())
    return [(c, subject, pids.get(c, ""), msg) for c, subject, msg in listed]


def changelog(old: list[tuple[str, str, str, str]] | None, new: list[tuple[str, str, str, str]],
              prev: revisions.Revision, plan_base: str, stack_own: list[dict]) -> list[str]:
    out = []
    if old is not None:
        olds = {s: (pid, msg) for _, s, pid, msg in old}
        news = {s: pid for _, s, pid, _ in new}
        for _, s, pid, msg in new:
            if s not in olds:
                out.append(f"New patch: {s}")
            elif olds[s][0] != pid:
                out.append(f"Changed: {s}" + ("" if olds[s][1] == msg else " (and its message)"))
            elif olds[s][1] != msg:
                out.append(f"Changed the commit message only: {s}")
        out += [f"Dropped: {s}" for _, s, _, _ in old if s not in news]
        if [s for _, s, _, _ in old if s in news] != [s for _, s, _, _ in new if s in olds]:
            out.append("Patches reordered")
    else:
        old_own = {e["file"]: e["blob"] for e in prev.stack[len(prev.stack) - prev.own:]}
        new_own = {e["file"]: e["blob"] for e in stack_own}
        out += [f"New patch file: {f}" for f in new_own if f not in old_own]
        out += [f"Changed patch file: {f}" for f in new_own if f in old_own and old_own[f] != new_own[f]]
        out += [f"Dropped patch file: {f}" for f in old_own if f not in new_own]
    if prev.base and prev.base != plan_base:
        out.append(f"Rebased onto a new base import ({plan_base[:12]}, was {prev.base[:12]})")
    return out or ["No change to the patches"]


def _state(m: Manifest, t: BranchSpec, git: Git, send: bool) -> revisions.State:
    """mail/<label>.yaml (or a new state), checked against the work
    repository's copy of it, which every save then keeps."""
    loaded = revisions.load(m.root, t.name)
    sentrecord.check(git, m.root, t.name, t.branch, loaded)
    if send:
        sentrecord.checkout(m.root, f"{revisions.STATE_DIR}/{t.name}.yaml")
    state = loaded or revisions.new_state(m.root, m.series.name, t.name)
    state.mirror = lambda text: sentrecord.store(git, t.name, text)
    return state


def _refuse_early(m: Manifest, t: BranchSpec, wd: Workdir, send: bool) -> None:
    """What can be refused before the work repository is read."""
    sender(m)
    check_recipients(m, t)
    check_placeholders(m, t)
    if send:
        signoffs.refuse(m, t, identity(m), "--send")
    if send and not smtp_server():
        raise KtopicError("--send needs an SMTP server: `git config --global sendemail.smtpserver "
                          "HOST` (and smtpserverport, smtpuser as for git send-email)")
    if not (wd.git_dir / "HEAD").exists():
        raise KtopicError(f"no work repository at {wd.git_dir}: run `ktopic import-base` and "
                          f"`ktopic generate` first")


def _generated_head(m: Manifest, wd: Workdir, t: BranchSpec, git: Git):
    """The branch's head, base and start, once the head is what the
    manifest generates; and the generator that said so."""
    integration = t.kind == INTEGRATION
    head = git.rev_parse(t.ref)
    if not head:
        raise KtopicError(f"branch {t.branch} does not exist in the work repository: run "
                          f"`ktopic generate` first")
    base = base_commit(git, m)
    gen = Generator(m, wd)
    start = base if integration else gen.start_of(base, t.name)
    expected = gen.integration_head(base) if integration else gen.head_of(base, t.name)
    if head != expected:
        # Mail what the manifest says, never a branch it has moved past.
        behind = [tn for tn in (t.topics if integration else t.depends + [t.name])
                  if git.rev_parse(m.topic(tn).ref) != gen.head_of(base, tn)]
        gen.cache.save()
        raise KtopicError(f"{t.branch} is at {head[:12]}, not at {expected[:12]} which the "
                          f"manifest generates" +
                          (f" (behind the manifest: {', '.join('topic ' + b for b in behind)})"
                           if behind else " (edited by hand?)") +
                          ": run `ktopic generate` first", m.display(), t.line)
    gen.cache.save()
    if not git.is_ancestor(start, head):
        raise Failure(f"branch {t.branch} does not start from the base and its dependencies "
                      f"({start[:12]}); regenerate it")
    return head, base, start, gen


def _stack(m: Manifest, t: BranchSpec) -> list[dict]:
    """The patch files the revision is made of, by git blob id."""
    specs = {s.name: s for s in m.branches()}
    patches = [(tn, p) for s in ([] if t.kind == INTEGRATION else [specs[d] for d in t.depends])
               + [t] for tn, p in s.patches]
    blobs = revisions.blob_ids([p.path for _, p in patches])
    return [{"file": f"patches/{tn}/{p.rel}", "blob": b} for (tn, p), b in zip(patches, blobs)]


def _revision(state: revisions.State, t: BranchSpec, head: str, reroll: bool,
              send: bool) -> tuple[int, bool]:
    """The revision to mail, and whether it is one partly sent whose
    rest is to go; refused when the flags do not fit the state."""
    rel = f"{revisions.STATE_DIR}/{t.name}.yaml"
    cur = state.current
    if reroll:
        if cur is None:
            raise KtopicError(f"--reroll: v{state.revision} of {t.branch} was never mailed; "
                              f"mail it first (without --reroll)", rel, state.line("revision"))
        return state.revision + 1, False
    revision = state.revision
    if cur and cur.sent:
        # A sent revision is what the list has: never rewritten, never
        # sent again, whatever the flags.
        raise KtopicError(f"v{revision} of {t.branch} was sent on {cur.sent} as "
                          f"{cur.message_id or 'a series'}; a sent revision is not written or "
                          f"sent again: pass --reroll to mail v{revision + 1}", rel,
                          state.line("revisions", revision, "sent"))
    if cur and cur.partial:
        done = f"{len(cur.delivered)} of {cur.messages} messages"
        if not send:
            raise KtopicError(f"v{revision} of {t.branch} was partly sent ({done}); it is not "
                              f"rewritten: `ktopic mail {t.name} --send` sends the rest, "
                              f"--reroll mails v{revision + 1}", rel,
                              state.line("revisions", revision, "delivered"))
        if cur.head != head:
            raise KtopicError(f"v{revision} of {t.branch} was partly sent ({done}) from "
                              f"{cur.head[:12]}, but the branch is now at {head[:12]}: pass "
                              f"--reroll to mail v{revision + 1}", rel,
                              state.line("revisions", revision, "head"))
        return revision, True
    return revision, False


@dataclass
class _Against:
    """What a revision says about the one before it."""
    changes: list[str] = field(default_factory=list)
    refs: list[tuple[str, str, str | None]] = field(default_factory=list)
    range_diff: str = ""
    range_diff_note: str = ""


def _against_previous(m: Manifest, t: BranchSpec, git: Git, gen: Generator,
                      prev: revisions.Revision, base: str, start: str, head: str,
                      stack: list[dict], own: int, notes: list[str]) -> _Against:
    """The changes since prev (found or rebuilt, and kept under a ref),
    with its range-diff when its commits can be found."""
    out = _Against()
    new = commits(git, start, head)
    old_head, how = revisions.find_commits(git, m.root, t.name, prev, gen.stacker)
    old = None
    keep = f"{revisions.KEEP}{t.name}/v{prev.number}"
    if old_head and not git.ref(keep):
        out.refs.append((keep, old_head, None))      # found or rebuilt: keep it
    if old_head and git.rev_parse(prev.start):
        old = commits(git, prev.start, old_head)
        out.range_diff = git.run("range-diff", "--no-color", f"{prev.start}..{old_head}",
                                 f"{start}..{head}")
    else:
        out.range_diff_note = f"v{prev.number} ({prev.head[:12]}) cannot be found: {how}"
        notes.append(f"no range-diff against v{prev.number}: {how}")
    out.changes = changelog(old, new, prev, base, stack[len(stack) - own:] if own else [])
    if prev.message_id and (prev.sent or prev.delivered):
        out.changes.append(f"Link to v{prev.number}: https://lore.kernel.org/r/"
                           f"{prev.message_id.strip('<>')}")
    return out


def _cover_text(m: Manifest, t: BranchSpec, state: revisions.State, revision: int,
                against: _Against, prev, base: str, start: str, head: str, tree: str) -> str:
    """The cover letter, refused while it holds placeholder text."""
    changes = against.changes
    history = [(revision, changes)] if revision > 1 or changes else []
    history += [(n, r.changes) for n, r in sorted(state.revisions.items(), reverse=True)
                if n < revision and r.changes]
    ci = cover.ci_lines(m.root / "out" / "report.json", t.branch, head, tree)
    cin = cover.CoverInput(
        subject=subject(m, t), body=body(m, t)[0], branch=t.branch, head=head, tree=tree,
        revision=revision, base_commit=base, start=start, depends=applies_on(m, t),
        carried=t.carried, ci=ci,
        changelog=history, range_diff=against.range_diff,
        range_diff_note=against.range_diff_note,
        previous=revision - 1 if prev else 0)
    text = cover.render(m, cin)
    word = cover.placeholder(cover.render(m, cover.CoverInput(**{**cin.__dict__, "range_diff": ""})))
    if word or "EDITME" in text:
        raise KtopicError(f"the cover letter of {t.branch} still holds placeholder text "
                          f"{word or 'EDITME'!r} (a --changes note?)", m.display(), body(m, t)[1])
    return text


def plan(m: Manifest, wd: Workdir, name: str, reroll: bool = False, send: bool = False,
         notes: list[str] | None = None) -> Plan:
    t = m.series_branch(name)
    _refuse_early(m, t, wd, send)
    git = Git(wd.git_dir, user_config=True)
    head, base, start, gen = _generated_head(m, wd, t, git)
    count = int(git.run("rev-list", "--count", f"{start}..{head}").strip())
    if count == 0:
        raise KtopicError(f"{t.branch} carries no patches of its own: nothing to mail",
                          m.display(), t.line)
    tree = git.tree_of(head)
    result_notes: list[str] = []
    stack = _stack(m, t)
    own = len(t.patches)
    state = _state(m, t, git, send)
    revision, finish = _revision(state, t, head, reroll, send)
    common = dict(m=m, t=t, git=git, state=state, revision=revision, head=head, tree=tree,
                  count=count, notes=result_notes, send=send)
    if finish:
        cur = state.current
        return Plan(**common, base=cur.base, start=cur.start, cover_text="", to=list(t.to),
                    cc=list(t.cc), changes=cur.changes, stack=cur.stack, own=cur.own, refs=[],
                    finish=True)
    prev = state.revisions.get(revision - 1)
    against = (_against_previous(m, t, git, gen, prev, base, start, head, stack, own,
                                 result_notes) if prev else _Against())
    against.changes += list(notes or [])
    text = _cover_text(m, t, state, revision, against, prev, base, start, head, tree)
    extra, note = get_maintainers(git, start, head)
    if note:
        result_notes.append(f"recipients from the manifest only: {note}")
    to, cc = merge_addresses(t.to, t.cc, extra)
    if not to:
        to, cc = cc[:1], cc[1:]
    return Plan(**common, base=base, start=start, cover_text=text, to=to, cc=cc,
                changes=against.changes, stack=stack, own=own, refs=against.refs)


# --- b4 in a sparse worktree ------------------------------------------------------

def b4_env(plan: Plan, template: Path) -> dict:
    name, addr = email.utils.parseaddr(identity(plan.m))
    name = name or sender(plan.m)[0]
    config = {
        "core.sparseCheckout": "true",
        "core.editor": "true",
        "user.name": name,
        "user.email": addr,
        "sendemail.from": f"{name} <{addr}>",
        "b4.prep-cover-strategy": "commit",
        "b4.prep-cover-template": str(template),
    }
    if not plan.send:
        # b4 send -o without an SMTP server picks the web endpoint and then
        # refuses --no-sign; a configured server keeps it on SMTP (nothing is
        # sent with -o).
        config["sendemail.smtpserver"] = "localhost"
    env = {k: v for k, v in os.environ.items()
           if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    n = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    for i, (k, v) in enumerate(config.items(), n):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = k, v
    env["GIT_CONFIG_COUNT"] = str(n + len(config))
    env["EDITOR"] = env["GIT_EDITOR"] = "true"     # b4 reads core.editor or $EDITOR
    env["LC_ALL"] = "C"
    return env


class Worktree:
    """A sparse worktree of the work repository, on a scratch branch
    (ktopic's own, SCRATCH<label>) that becomes b4/<label> once the series
    is written: b4/<label> moves only when everything succeeded."""

    def __init__(self, wd: Workdir, git: Git, label: str):
        self.git = git
        self.path = wd.mail_worktree(label)
        self.branch = f"b4/{label}"
        self.scratch = f"{SCRATCH}{label}"

    def remove(self) -> None:
        if self.path.exists():
            self.git.try_run("worktree", "remove", "--force", str(self.path))
            shutil.rmtree(self.path, ignore_errors=True)
        if (self.git.git_dir / "worktrees").exists():     # all that prune reads
            self.git.try_run("worktree", "prune")

    def drop_scratch(self) -> None:
        """The scratch branch and the configuration b4 prep gave it (where
        the ref, its reflog or the name in the configuration file is
        there: git is not started to find nothing)."""
        ref = "refs/heads/" + self.scratch
        if not namelookup.ref_absent(str(self.git.git_dir), ref) \
                or (self.git.git_dir / "logs" / ref).exists():
            self.git.try_run("update-ref", "-d", ref)
        try:
            config = (self.git.git_dir / "config").read_text(errors="surrogateescape")
        except OSError:
            config = None
        if config is None or self.scratch in config or any(c in self.scratch for c in '"\\'):
            self.git.try_run("config", "--remove-section", f"branch.{self.scratch}")

    def create(self, head: str, env: dict) -> None:
        self.remove()
        self.drop_scratch()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.git.run("worktree", "add", "-q", "--no-checkout", "-f", "-B", self.scratch,
                     str(self.path), head)
        gitdir = Path(self.run(["git", "rev-parse", "--absolute-git-dir"], env).strip())
        (gitdir / "info").mkdir(exist_ok=True)
        (gitdir / "info" / "sparse-checkout").write_text(SPARSE_NOTHING)
        self.run(["git", "checkout", "-q"], env)

    def run(self, argv: list[str], env: dict, input: str | None = None) -> str:
        try:
            p = subprocess.run(argv, cwd=self.path, env=env, capture_output=True, text=True,
                               input=input if input is not None else "")
        except FileNotFoundError:
            raise Failure(f"{argv[0]} is not installed (make deps installs it)") from None
        if p.returncode != 0:
            tail = (p.stderr.strip() or p.stdout.strip()).splitlines()[-3:]
            raise Failure(f"{' '.join(argv[:3])} failed in {self.path}: " + " / ".join(tail))
        return p.stdout + p.stderr


def b4_branch_updates(p: Plan, wt: Worktree, force: bool) -> tuple[str | None, str | None, str]:
    """(b4/<label>'s head, ktopic's record of the head it made there, the
    backup ref for the old head or ""), checked before anything is made.
    b4/<label> is ktopic's when it is what ktopic made there last (or
    behind it, or behind the branch being mailed); one holding commits
    ktopic did not make is refused, or with force kept under
    refs/ktopic/backup/ as generate keeps a topic branch."""
    git = p.git
    ref = "refs/heads/" + wt.branch
    old = git.ref(ref)
    made = git.ref(MADE + wt.branch)
    where = worktree_branches(git).get(ref)
    if where and Path(where) != wt.path:
        raise Failure(f"branch {wt.branch} is checked out in the worktree at {where}; not "
                      f"moved (git branch -f refuses it too). Switch that worktree to another "
                      f"branch or detach it (git switch --detach), then mail again")
    if not old or (made and (old == made or git.is_ancestor(old, made))) or \
            git.is_ancestor(old, p.head):
        return old, made, ""
    if not force:
        raise Failure(f"branch {wt.branch} holds commits ktopic did not make (head {old[:12]}); "
                      f"not overwritten. Keep them on a branch of their own (git branch -m), or "
                      f"pass --force to replace it (the old head is kept under "
                      f"{BACKUP}{wt.branch}/)")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    backup, n = f"{BACKUP}{wt.branch}/{stamp}", 1
    while git.ref(backup):          # a backup made within the same second
        n += 1
        backup = f"{BACKUP}{wt.branch}/{stamp}-{n}"
    return old, made, backup


def _tracking(message: str) -> tuple[str, dict]:
    body, magic = message.split(MAGIC, 1)
    return body, json.loads("{" + magic.split("{", 1)[1])


def write_cover(plan: Plan, wt: Worktree, env: dict) -> str:
    """Put the cover letter and our change-id/revision into b4's cover
    commit; the commits after it are re-parented unchanged (same trees,
    messages, authors, committers)."""
    git = plan.git
    ref = "refs/heads/" + wt.scratch
    tip = git.rev_parse(ref)
    cover_commit = git.run("log", "--grep", MAGIC, "-F", "--format=%H", "-1", tip).strip()
    if not cover_commit:
        raise Failure(f"b4 prep made no cover commit on {wt.scratch}")
    later = git.run("rev-list", "--reverse", f"{cover_commit}..{tip}").split()
    # Every commit read in one git and written through one other (the
    # ids are computed as they are written, stored at sync()).
    store = ObjectStore(git)
    try:
        raws = [got[1] for got in store.read([cover_commit, *later])]
        header, message = raws[0].split(b"\n\n", 1)
        _, tracking = _tracking(message.decode())
        tracking.setdefault("series", {})
        tracking["series"]["revision"] = plan.revision
        tracking["series"]["change-id"] = plan.state.change_id
        message = (plan.cover_text + "\n" + MAGIC + "\n"
                   "# This section is used internally by b4 prep for tracking purposes.\n"
                   + json.dumps(tracking, indent=2) + "\n")
        new = store.write_commit(header + b"\n\n" + message.encode(), wait=False)
        for raw in raws[1:]:
            raw = re.sub(rb"^parent [0-9a-f]+$", b"parent " + new.encode(), raw, count=1,
                         flags=re.M)
            new = store.write_commit(raw, wait=False)
        store.sync()
    finally:
        store.close()
    if git.tree_of(new) != plan.tree:
        raise Failure(f"b4's branch {wt.scratch} does not hold the tree of {plan.t.branch}")
    git.update_refs([(ref, new, tip)], "ktopic mail: cover letter")
    return new


# --- the output directory: only ktopic's own messages are ever replaced ----------
#
# Beside the messages, OUTPUT_MARK lists each file ktopic wrote there by its
# SHA-256.  A directory holding anything else (a file of the user's, a
# message edited since) is refused: nothing the tool did not write is lost.
# A new directory is written beside its place and renamed into it; into an
# existing one (perhaps the caller's working directory: it must stay the
# same directory) the messages are written in a directory inside it and
# renamed one by one, the mark listing old and new while they move.

OUTPUT_MARK = ".ktopic-mail"
OUTPUT_TMP = ".ktopic-mail-tmp."
# What b4 send -o names its messages: out/mail/ of earlier versions holds these only.
B4_NAME = re.compile(r"[0-9]{4}-[^/]*\.eml")


def _sha256(path: Path) -> str:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_mark(outdir: Path) -> dict[str, set[str]] | None:
    """{file name: its SHA-256s} of the mark, or None when there is no
    readable mark."""
    try:
        text = (outdir / OUTPUT_MARK).read_text()
    except (OSError, UnicodeDecodeError):
        return None
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.fullmatch(r"([0-9a-f]{64})  ([^/\0]+)", line)
        if not m or m.group(2) in (".", "..", OUTPUT_MARK):
            return None
        out.setdefault(m.group(2), set()).add(m.group(1))
    return out


def _write_mark(outdir: Path, files: dict[str, set[str]]) -> None:
    from ktopic.fileio import write_atomic
    lines = [f"{h}  {n}" for n in sorted(files) for h in sorted(files[n])]
    write_atomic(outdir / OUTPUT_MARK,
                 "# The messages `ktopic mail` wrote here (SHA-256): it replaces these only.\n"
                 + "".join(x + "\n" for x in lines))


def own_output(outdir: Path, default: bool = False) -> list[str]:
    """The entries of outdir that an earlier `ktopic mail` wrote (what a new
    series replaces); a KtopicError naming outdir when it is not a
    directory or holds anything else.  default: outdir is out/mail/..., where
    earlier versions wrote b4's messages without a mark."""
    if not os.path.lexists(outdir):
        return []
    how = ("move it away, or give --output another directory" if default else
           "give --output a new or empty directory, or one ktopic mail wrote before")
    if not outdir.is_dir():
        raise KtopicError("not a directory: --output names the directory to write to", outdir)
    try:
        entries = sorted(os.scandir(outdir), key=lambda e: e.name)
    except OSError as e:
        raise KtopicError(f"cannot read the directory: {e.strerror}", outdir) from None
    mark = _read_mark(outdir)
    ours = []
    for e in entries:
        name = e.name
        if name.startswith(OUTPUT_TMP) and e.is_dir(follow_symlinks=False):
            ours.append(name)               # a run that was interrupted
            continue
        if name == OUTPUT_MARK and mark is not None and e.is_file(follow_symlinks=False):
            ours.append(name)
            continue
        regular = e.is_file(follow_symlinks=False)
        if mark is not None and name in mark and regular:
            if _sha256(Path(e.path)) not in mark[name]:
                raise KtopicError(f"holds {name!r}, which was changed since ktopic mail wrote "
                                  f"it: {how}", outdir)
            ours.append(name)
            continue
        if mark is None and default and regular and B4_NAME.fullmatch(name):
            ours.append(name)
            continue
        raise KtopicError(f"holds {name!r}, which ktopic mail did not write: {how}", outdir)
    return ours


def output_tmp(outdir: Path) -> Path:
    """Where b4 writes the messages: inside outdir when it exists (the
    same file system, the same directory in the end), else beside it."""
    if outdir.is_dir():
        tmp = outdir / f"{OUTPUT_TMP}{os.getpid()}"
    else:
        outdir.parent.mkdir(parents=True, exist_ok=True)
        tmp = outdir.with_name(f"{OUTPUT_TMP}{outdir.name}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    return tmp


def install_output(tmp: Path, outdir: Path, default: bool = False) -> None:
    """The messages b4 wrote to tmp in place of ktopic's own earlier ones
    in outdir; whatever else outdir holds is refused (own_output)."""
    new = {f.name: {_sha256(f)} for f in sorted(tmp.iterdir()) if f.is_file()}
    if tmp.parent != outdir:
        _write_mark(tmp, new)
        tmp.rename(outdir)                  # all at once
        return
    ours = [n for n in own_output(outdir, default) if n != tmp.name]
    mark = _read_mark(outdir) or {}
    # Old and new are listed while they move: an interrupted run leaves
    # only files the next one knows for its own.
    _write_mark(outdir, {n: mark.get(n, set()) | new.get(n, set())
                         for n in set(mark) | set(new)} |
                {n: {_sha256(outdir / n)} for n in ours
                 if n not in mark and n != OUTPUT_MARK and (outdir / n).is_file()})
    for n in new:
        os.replace(tmp / n, outdir / n)
    for n in ours:
        if n in new or n == OUTPUT_MARK:
            continue
        p = outdir / n
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    _write_mark(outdir, new)
    shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Result:
    plan: Plan
    outdir: Path | None
    files: list[Path]
    b4_log: str
    seconds: dict
    sent: int = 0                # messages delivered by this run


def _b4_write(p: Plan, wt: "Worktree", outdir: Path, default: bool, send: bool,
              times: dict) -> tuple[str, str]:
    """Enroll the branch with b4 in the worktree, write the cover and have
    b4 write the messages into outdir; b4's log and its branch's head.
    The worktree is removed whatever happens."""
    import time
    tmp_out = None
    log = ""
    with tempfile.TemporaryDirectory(prefix="ktopic-b4-") as tmp:
        template = Path(tmp, "cover-template")
        b = p.m.base
        template.write_text(COVER_TEMPLATE % {
            "base": f"Debian {b.package} {b.debian_version} (upstream v{b.version})",
            "base_commit": p.start})
        env = b4_env(dataclasses.replace(p, send=False), template)
        try:
            t1 = time.monotonic()
            wt.create(p.head, env)
            times["worktree"] = time.monotonic() - t1
            t1 = time.monotonic()
            log += wt.run(["b4", "prep", "-e", p.start], env)
            b4_head = write_cover(p, wt, env)
            times["b4 prep"] = time.monotonic() - t1
            args = ["b4", "send", "--to", *p.to]
            if p.cc:
                args += ["--cc", *p.cc]
            if not (send and signing_key(p.git)):
                args.append("--no-sign")
            t1 = time.monotonic()
            tmp_out = output_tmp(outdir)
            log += wt.run(args + ["-o", str(tmp_out)], env)
            times["b4 send -o"] = time.monotonic() - t1
            install_output(tmp_out, outdir, default=default)
        except BaseException:
            if tmp_out is not None:
                shutil.rmtree(tmp_out, ignore_errors=True)
            wt.remove()
            wt.drop_scratch()
            raise
        wt.remove()
    return log, b4_head


def _record(p: Plan, wt: "Worktree", files: list[Path], send: bool, b4_head: str,
            b4_old: str | None, b4_made: str | None, backup: str) -> None:
    """Record the written revision in the state and move the refs: the
    revision's keep ref, b4's branch; the scratch branch goes."""
    msgid = deliver.message_id(files[0]) if files else ""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    st = p.state
    st.revisions[p.revision] = revisions.Revision(
        number=p.revision, head=p.head, start=p.start, tree=p.tree, base=p.base,
        stack=p.stack, own=p.own, date=now, message_id=msgid, changes=p.changes,
        messages=len(files) if send else 0)
    st.revision = p.revision
    keep = f"{revisions.KEEP}{p.t.name}/v{p.revision}"
    old = p.git.ref(keep)
    updates = list(p.refs) + ([(keep, p.head, old)] if old != p.head else [])
    # b4's branch, enrolled, for `b4 prep` by hand; the scratch branch goes.
    updates += [(f"refs/heads/{wt.branch}", b4_head, b4_old), (MADE + wt.branch, b4_head, b4_made),
                ("refs/heads/" + wt.scratch, ZERO, b4_head)]
    if backup:
        updates.append((backup, b4_old, None))
    try:
        p.git.update_refs(updates, f"ktopic mail: v{p.revision} of {p.t.branch}")
    finally:
        wt.drop_scratch()
    p.git.try_run("config", f"branch.{wt.branch}.b4-prep-cover-strategy", "commit")
    if backup:
        p.notes.append(f"branch {wt.branch} held commits ktopic did not make (head "
                       f"{b4_old[:12]}); replaced, the old head kept as {backup}")
    st.save()


def run(m: Manifest, wd: Workdir, name: str, output: Path | None = None, send: bool = False,
        reroll: bool = False, notes: list[str] | None = None, force: bool = False,
        uncertain: str = "") -> Result:
    import time
    times = {}
    t0 = time.monotonic()
    p = plan(m, wd, name, reroll=reroll, send=send, notes=notes)
    p.uncertain = uncertain
    times["plan"] = time.monotonic() - t0
    if p.finish:
        _keep_tracked(p)
        files = sorted(p.outdir.glob("*.eml"))
        sent = _deliver(p, files, times)
        times["total"] = time.monotonic() - t0
        return Result(p, p.outdir, files, "", times, sent)
    wt = Worktree(wd, p.git, p.t.name)
    # Sent or not, b4 writes the messages to files (`b4 send -o`): a send
    # delivers those files, so that what went out is known one by one.
    # A relative --output is the caller's, not b4's (b4 runs in the worktree).
    outdir = Path(output).resolve() if output else p.outdir
    own_output(outdir, default=not output)          # refused before anything is made
    b4_old, b4_made, backup = b4_branch_updates(p, wt, force)
    log, b4_head = _b4_write(p, wt, outdir, not output, send, times)
    files = sorted(outdir.glob("*.eml"))
    _record(p, wt, files, send, b4_head, b4_old, b4_made, backup)
    if send:
        _keep_tracked(p)
    sent = _deliver(p, files, times) if send else 0
    times["total"] = time.monotonic() - t0
    return Result(p, outdir, files, log, times, sent)


def _keep_tracked(p: Plan) -> None:
    note = sentrecord.keep_tracked(p.m.root, f"{revisions.STATE_DIR}/{p.state.path.name}")
    if note:
        p.notes.append(note)


def _verify_written(files: list[Path]) -> None:
    """Every message is, byte for byte, what ktopic mail wrote (its SHA-256
    in OUTPUT_MARK), checked before any is sent: a message edited since
    it was written is not sent."""
    for f in files:
        mark = _read_mark(f.parent) or {}
        if _sha256(f) not in mark.get(f.name, set()):
            raise KtopicError(f"not the message ktopic mail wrote (its SHA-256 is not the one "
                              f"{OUTPUT_MARK} records); nothing was sent: put the written "
                              f"message back, or pass --reroll to mail the next revision", f)


def _uncertain(p: Plan, files: list[Path], ids: list[str], how: str) -> None:
    """A message handed over by a run that never heard the server's answer
    (killed): perhaps on the list already.  Sent again (how "resend") or
    recorded as sent ("sent") only when the caller says which."""
    st = p.state
    rev = st.revisions[p.revision]
    mid = rev.sending
    if not mid or mid in rev.delivered:
        rev.sending = ""
        return
    name = files[ids.index(mid)].name if mid in ids else "?"
    if how == "sent":
        rev.delivered.append(mid)
    elif how != "resend":
        raise KtopicError(f"{name} ({mid}) of v{p.revision} of {p.t.branch} was being sent when "
                          f"the run stopped: the server may have it.  Look for it on the list, "
                          f"then pass --uncertain=sent (it went out) or --uncertain=resend",
                          f"{revisions.STATE_DIR}/{st.path.name}",
                          st.line("revisions", p.revision, "sending"))
    rev.sending = ""
    st.save()


def _deliver(p: Plan, files: list[Path], times: dict) -> int:
    """Send the written messages of p's revision that the server has not
    accepted yet, recording each one as being sent before it is handed
    over and as accepted once it is; a Failure that says how many went out
    when the server stops."""
    import time
    st = p.state
    rev = st.revisions[p.revision]
    rel = f"{revisions.STATE_DIR}/{st.path.name}"
    ids = [deliver.message_id(f) for f in files]
    if not files or len(files) != rev.messages or not set(rev.delivered) <= set(ids):
        raise KtopicError(f"the messages of v{p.revision} of {p.t.branch} are not (all) in "
                          f"{p.outdir} any more, so the rest cannot be sent with the Message-Ids "
                          f"already out: pass --reroll to mail v{p.revision + 1}", rel)
    _verify_written(files)
    _uncertain(p, files, ids, p.uncertain)
    todo = [f for f, mid in zip(files, ids) if mid not in rev.delivered]

    def sending(mid: str) -> None:
        rev.sending = mid
        st.save()

    def accepted(mid: str) -> None:
        rev.delivered.append(mid)
        rev.sending = ""
        st.save()

    t1 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ktopic-deliver-") as tmp:
        d = deliver.run(todo, b4_env(p, Path(tmp, "unused")), Path(tmp), accepted, sending)
    times["smtp"] = time.monotonic() - t1
    if not d.uncertain and rev.sending:
        rev.sending = ""                    # refused by the server: certainly not out
        st.save()
    if len(rev.delivered) == rev.messages and not d.error:
        rev.sent = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        rev.message_id = ids[0]
        st.save()
        return len(d.sent)
    return _stopped(p, d, rel)


def _stopped(p: Plan, d: deliver.Delivery, rel: str) -> int:
    rev = p.state.revisions[p.revision]
    out, total = len(rev.delivered), rev.messages
    if out == 0 and not rev.sending:
        raise Failure(f"nothing of v{p.revision} of {p.t.branch} was sent: {d.error}")
    maybe = f" ({d.uncertain} perhaps too)" if rev.sending else ""
    raise Failure(f"{out} of {total} messages of v{p.revision} of {p.t.branch} sent{maybe}, "
                  f"then: {d.error}; recorded in {rel}: `ktopic mail {p.t.name} --send` sends "
                  f"the other {total - out} (the same Message-Ids, in the same thread), or "
                  f"`ktopic mail {p.t.name} --reroll --send` mails v{p.revision + 1}")
