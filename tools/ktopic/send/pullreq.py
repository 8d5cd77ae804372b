"""A pull request for the mailed revision of a topic or the integration branch.

The revision must have been mailed (mail/<label>.yaml records it) and the
branch must still be at that head.  An annotated tag
``<series>/<label>-v<N>`` is made on it (GPG-signed with user.signingkey
when one is configured); its message carries the per-topic summary, the
base and the last CI results, and `git request-pull` against
series.public-url turns it into the text to send.

Takes a mailed revision of a branch; gives a tag and the request-pull text.
"""

from __future__ import annotations

import email.utils
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.send import cover, revisions, signoffs
from ktopic.send.sender import identity
from ktopic.errors import KtopicError
from ktopic.branches.generate import base_commit
from ktopic.plumbing.gitutil import Git
from ktopic.send.mail import applies_on, body, line_of, sender, subject
from ktopic.model.branchspec import INTEGRATION, BranchSpec
from ktopic.model.manifest import Manifest
from ktopic.model.workdir import Workdir
from ktopic.fileio import write_atomic


@dataclass
class Result:
    tag: str
    signed: bool
    text: str
    path: Path
    warnings: list[str] = field(default_factory=list)


def tag_message(m: Manifest, label: str, rev: revisions.Revision, git: Git,
                unsent: bool = False) -> str:
    t = m.series_branch(label)
    lines = [f"{subject(m, t)} v{rev.number}", ""]
    lines += cover.wrap(body(m, t)[0])
    lines += cover.section("Topics")
    specs = {s.name: s for s in m.branches()}
    for tn in t.topics:
        topic = specs[tn]
        n = len(topic.patches)
        lines += cover.wrap(f"{tn} ({topic.branch}, {n} patch{'es' if n != 1 else ''}): "
                            f"{topic.description}", indent="  ", first="- ")
        for c in topic.carried:
            lines += cover.wrap(f"not carried ({c.kind}): \"{c.subject}\": {c.where}",
                                indent="    ", first="  ")
    if t.depends:
        lines += [""] + cover.wrap("Applies on top of " + ", ".join(applies_on(m, t)) + ".")
    lines += cover.section("Base")
    lines += cover.base_lines(m, base_commit(git, m), mail=False)
    lines += cover.section("CI results")
    lines += cover.ci_lines(m.root / "out" / "report.json", t.branch, rev.head, rev.tree) or \
        cover.wrap(f"No CI results for tree {rev.tree[:12]} yet.")
    if rev.message_id and rev.sent:          # written, never sent: nothing to quote
        lines += ["", f"Mailed as v{rev.number}: {rev.message_id}"]
    elif unsent:
        lines += [""] + cover.wrap(f"v{rev.number} was not sent to the list"
                                   f"{' (only partly)' if rev.partial else ''}: this pull "
                                   f"request is the first time it is shown.")
    # git tag strips lines starting with '#' (comments) in the default cleanup.
    return "\n".join(" " + ln if ln.startswith("#") else ln for ln in lines).rstrip() + "\n"


REPLACED = "refs/ktopic/replaced-tags/"


def _tag_text(git: Git, tag_object: str) -> str:
    """The message of an annotated tag, without its signature."""
    raw = git.run("cat-file", "tag", tag_object)
    body = raw.split("\n\n", 1)[1] if "\n\n" in raw else ""
    return body.split("-----BEGIN PGP SIGNATURE-----", 1)[0]


def check_sent(state: revisions.State, branch: str, name: str, rel: str) -> None:
    """A pull request is of what the list saw: the current revision must
    have been sent, all of it."""
    rev = state.current
    if rev.sent:
        return
    last = next((n for n, r in sorted(state.revisions.items(), reverse=True) if r.sent), 0)
    how = (f"was only partly sent ({len(rev.delivered)} of {rev.messages} messages)"
           if rev.partial else "was never sent")
    raise KtopicError(f"v{rev.number} of {branch} {how} (" +
                      (f"the last sent revision is v{last}" if last else "no revision was sent") +
                      f"): `ktopic mail {name} --send` first, or pass --unsent to tag it anyway "
                      f"(the pull request then says so)", rel, state.line("revision"))


def _mailed_revision(m: Manifest, t: BranchSpec, name: str, unsent: bool):
    """The branch's state and current revision, refused while it was
    never mailed (or, without unsent, never sent)."""
    state = revisions.load(m.root, t.name)
    rel = f"{revisions.STATE_DIR}/{t.name}.yaml"
    if t.kind != INTEGRATION and not t.patches:
        raise KtopicError(f"{t.branch} carries no patches of its own: there is nothing to "
                          f"pull (nor to mail)", m.display(), t.line)
    if state is None or state.current is None:
        raise KtopicError(f"{t.branch} is not enrolled: no revision of it was mailed "
                          f"(run `ktopic mail {name}` first)", rel)
    if not unsent:
        check_sent(state, t.branch, name, rel)
    return state, state.current, rel


def _reuse_tag(git: Git, tag: str, existing: str, rev, message: str, key: str, retag: bool,
               name: str, rel: str, warnings: list[str]) -> tuple[bool, bool]:
    """Whether the existing tag is kept (else it is moved aside under a
    ref of its own) and whether it is signed."""
    if git.rev_parse(f"refs/tags/{tag}") != rev.head:
        raise KtopicError(f"tag {tag} exists and points elsewhere "
                          f"({git.rev_parse('refs/tags/' + tag)[:12]})", rel)
    kind = git.run("cat-file", "-t", existing).strip()
    signed = kind == "tag" and "-----BEGIN PGP SIGNATURE-----" in \
        git.run("cat-file", "tag", existing)
    stale = kind != "tag" or _tag_text(git, existing) != message
    if stale or retag:
        # A tag whose message no longer says what the revision is (a
        # Message-Id quoted from an unsent revision, a send since), or
        # one the maintainer wants signed now: replaced, the old kept.
        keep = f"{REPLACED}{tag}/{existing[:12]}"
        git.update_refs([(keep, existing, None)], f"ktopic pull-request: old {tag}")
        warnings.append(f"tag {tag} " + ("did not say what v{0} is now (its message is "
                                         "stale)".format(rev.number) if stale else
                                         "replaced (--retag)") +
                        f"; replaced, the old one kept as {keep}")
        return False, signed
    warnings.append(f"tag {tag} already existed with this message; reused")
    if key and not signed:
        warnings.append(f"tag {tag} is not signed though user.signingkey is set now: "
                        f"`ktopic pull-request {name} --retag` replaces it with a "
                        f"signed one (the old one kept)")
    return True, signed


def _make_tag(git: Git, tag: str, head: str, message: str, key: str, who: str,
              addr: str) -> None:
    env = {"GIT_COMMITTER_NAME": who, "GIT_COMMITTER_EMAIL": addr}
    with tempfile.NamedTemporaryFile("w", prefix="ktopic-tag-", suffix=".txt",
                                     delete=False) as f:
        f.write(message)
    try:
        args = ["tag", "-f", "--cleanup=verbatim", "-F", f.name]
        args += ["-s", "-u", key] if key else ["-a"]
        git.run(*args, tag, head, env=env)
    finally:
        os.unlink(f.name)


def _request_pull(git: Git, wd: Workdir, start: str, url: str, tag: str,
                  warnings: list[str]) -> str:
    """git request-pull's text, naming the public url."""
    p = git.try_run("request-pull", start, url, tag)
    if p.returncode != 0 and not p.stdout.strip():
        raise KtopicError(f"git request-pull failed: {p.stderr.strip()}")
    if p.returncode != 0:
        warnings.append(f"the tag is not at {url} yet: `git -C {wd.git_dir} push {url} "
                        f"tag {tag}` and run this again")
    text = p.stdout
    # request-pull names the URL after url.insteadOf rewriting; the request
    # is for the public one.
    resolved = git.try_run("ls-remote", "--get-url", url).stdout.strip()
    if resolved and resolved != url:
        text = text.replace(f"\n  {resolved} ", f"\n  {url} ", 1)
    return text


def run(m: Manifest, wd: Workdir, name: str, retag: bool = False,
        unsent: bool = False) -> Result:
    t = m.series_branch(name)
    who, addr = sender(m)
    url = m.series.public_url
    if not url:
        raise KtopicError("series.public-url is not set: a pull request names where the "
                          "branch is published", m.display(), line_of(m, "series"))
    state, rev, rel = _mailed_revision(m, t, name, unsent)
    ident = identity(m)
    signoffs.refuse(m, t, ident, "pull-request")
    who, addr = email.utils.parseaddr(ident)
    who = who or sender(m)[0]
    if not (wd.git_dir / "HEAD").exists():
        raise KtopicError(f"no work repository at {wd.git_dir}: run `ktopic import-base` first")
    git = Git(wd.git_dir, user_config=True)
    head = git.rev_parse(t.ref)
    if head != rev.head:
        raise KtopicError(f"{t.branch} is at {head[:12] if head else 'nothing'}, not at "
                          f"{rev.head[:12]} which v{rev.number} mailed: mail it again "
                          f"(--reroll) first", rel, state.line("revisions", rev.number, "head"))
    tag = f"{m.series.name}/{t.name}-v{rev.number}"
    key = git.try_run("config", "--get", "user.signingkey").stdout.strip()
    existing = git.ref(f"refs/tags/{tag}")
    warnings: list[str] = []
    message = tag_message(m, t.name, rev, git, unsent=not rev.sent)
    kept = False
    if existing:
        kept, signed = _reuse_tag(git, tag, existing, rev, message, key, retag, name, rel,
                                  warnings)
    if not kept:
        _make_tag(git, tag, rev.head, message, key, who, addr)
        signed = bool(key)
    if not signed:
        warnings.append(f"tag {tag} is not signed (no user.signingkey): whoever pulls cannot "
                        f"verify who made it")
    text = _request_pull(git, wd, rev.start, url, tag, warnings)
    path = m.root / "out" / "pull" / f"{t.branch}-v{rev.number}.txt"
    write_atomic(path, text)
    return Result(tag, signed, text, path, warnings)
