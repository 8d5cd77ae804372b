"""Rebase every topic onto a newer packaged tree (`ktopic rebase`).

Takes the manifest, the work directory and a newer tarball; gives the
moved branches (the old heads kept under refs/ktopic/old/), the rewritten
patches and manifest and a Report, or a stop at a conflict to resolve
(state in <workdir>/rebase/state.json).  docs/rebase.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ktopic.plumbing import importbase
from ktopic.model import manifest_edit
from ktopic.branches import proofs, upstream_detect
from ktopic.errors import Failure, KtopicError
from ktopic.plumbing.fastapply import Applied
from ktopic.branches.generate import MADE, Generator, refuse_ref_clashes, worktree_branches
from ktopic.plumbing.gitutil import ZERO, Git, tree_attributes
from ktopic.model import debversion, yamlpos
from ktopic.model.manifest import Manifest, debian_version_problem
from ktopic.plumbing.patchfile import PatchFile, crlf_throughout, parse
from ktopic.model.workdir import Workdir
from ktopic.fileio import write_atomic

OLD = "refs/ktopic/old/"
APPLIED, THREEWAY, UPSTREAM, CONFLICT, RESOLVED, DROPPED = \
    "applied", "3-way", "upstream", "conflict", "resolved", "dropped"
FORMAT = ["format-patch", "--no-signature", "--zero-commit", "--no-numbered", "--stdout", "-1"]


def _format(p: PatchFile) -> list[str]:
    """format-patch of one commit written back as p's file: with the subject
    prefix p's file has ([PATCH 2/3], as export numbers a series), not the
    [PATCH] that -1 alone gives."""
    headers = p.data.decode(errors="replace").split("\n\n", 1)[0]
    m = re.search(r"^Subject: \[([^\]\n]*)\] ", headers, re.M)
    return FORMAT + [f"--subject-prefix={m.group(1)}"] if m else FORMAT


@dataclass
class Row:
    topic: str
    patch: str            # file name, or "" for a topic-level line
    outcome: str          # applied | 3-way | upstream | conflict | resolved | waiting | failed | done
    detail: str = ""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    complete: bool = False
    old: str = ""
    new: str = ""
    seconds: float = 0.0
    moved: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Conflict(Exception):
    pass


def _state_dir(wd: Workdir) -> Path:
    return wd.rebase_state


def in_progress(wd: Workdir) -> bool:
    return (_state_dir(wd) / "state.json").exists()


def _text(path: Path) -> str:
    """A file's bytes as text for the snapshot (state.json): its line ends
    as they are and any byte that is not UTF-8 kept (surrogateescape), so
    that --abort and a failed commit write the same bytes back."""
    return path.read_bytes().decode("utf-8", "surrogateescape")


def _put(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


def _write_json(path: Path, data) -> None:
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True))


def _run_in(wt: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """git in a worktree (its own .git file, not the bare repository)."""
    e = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE",
                                                          "GIT_INDEX_FILE")}
    e.update({"GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"})
    e.update(env or {})
    return subprocess.run(["git", "-c", "core.sparseCheckout=true", "-c", "rerere.enabled=true",
                           *args], cwd=wt, env=e, capture_output=True, text=True)


def package_version(tarball: Path) -> str | None:
    """The Debian version of the installed package that owns tarball."""
    p = subprocess.run(["dpkg-query", "-S", str(tarball)], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    pkg = p.stdout.split(":", 1)[0].strip()
    q = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True)
    return q.stdout.strip() or None if q.returncode == 0 else None


def _new_base(tarball: Path, version: str | None,
              debian_version: str | None) -> tuple[Path, str, str]:
    """The new base's tarball (resolved), version and Debian version,
    the versions from the installed package where not given; refused
    when they do not name a kernel packaging."""
    tarball = Path(tarball).resolve()
    if not tarball.is_file():
        raise KtopicError(f"tarball {tarball} not found")
    if debian_version is None:
        debian_version = package_version(tarball)
        if debian_version is None:
            raise KtopicError(f"{tarball} belongs to no installed package: "
                              f"give --debian-version (and --version)")
    # Checked before anything is read or written: it names refs, and it
    # goes into the manifest and a ref transaction.
    why = debian_version_problem(debian_version)
    if why:
        raise KtopicError(why)
    if version is None:
        version = debversion.upstream_of(debian_version) if "-" in debian_version else None
    if version is not None and not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version, re.A):
        raise KtopicError(f"version {yamlpos.shown(version)!r} is not a kernel version "
                          f"(X.Y.Z)")
    if not version or "-" not in debian_version or \
            debversion.upstream_of(debian_version) != version:
        raise KtopicError(f"debian-version {debian_version} is not a packaging of "
                          f"version {version}")
    return tarball, version, debian_version


class Rebase:
    def __init__(self, m: Manifest, wd: Workdir):
        self.m, self.wd = m, wd
        self.git = Git(wd.git_dir)
        self.dir = _state_dir(wd)
        self.state: dict = {}
        self._gen: Generator | None = None
        self._parsed: dict[tuple, PatchFile] = {}

    # --- starting ------------------------------------------------------------

    def start(self, tarball: Path, version: str | None, debian_version: str | None) -> Report:
        m, wd = self.m, self.wd
        if in_progress(wd):
            raise KtopicError("a rebase is in progress: `ktopic rebase --continue` or `--abort`",
                              self.dir / "state.json")
        tarball, version, debian_version = _new_base(tarball, version, debian_version)
        old_base, refs = self._startable(debian_version)
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            snapshot = self._snapshot(refs)
            had_ref = debversion.base_ref(debian_version) in refs
            imp = importbase.import_base(m, wd, parent=old_base, tarball=tarball, version=version,
                                         debian_version=debian_version, point_base=False)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.state = {
            "version": 1, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "manifest": str(m.path),
            "old": {"commit": old_base, "version": m.base.version,
                    "debian_version": m.base.debian_version, "tarball": str(m.base.tarball)},
            "new": {"commit": imp.commit, "version": version, "debian_version": debian_version,
                    "tarball": str(tarball)},
            "created_base_ref": None if had_ref else debversion.base_ref(debian_version),
            "snapshot": snapshot, "touched": [], "base_committed": False,
            "topics": {n: {"state": "pending", "rows": []} for n in m.order},
            "integration": "pending",
        }
        self._save()
        return self._drive()

    def _startable(self, debian_version: str) -> tuple[str, dict]:
        """The old base commit and the work repository's refs, once the
        repository is on the manifest's base and every branch is ktopic's."""
        m, git, wd = self.m, self.git, self.wd
        if debian_version == m.base.debian_version:
            raise KtopicError(f"the manifest is already on {debian_version}", m.display(),
                              m.base.lines.get("debian-version"))
        old_base = git.rev_parse("refs/heads/base") if wd.git_dir.exists() else None
        if not old_base or old_base != git.rev_parse(debversion.base_ref(m.base.debian_version)):
            raise Failure(f"the work repository's base is not {m.base.debian_version}: run "
                          f"`ktopic import-base` and `ktopic generate` first")
        refs = git.refs()
        refuse_ref_clashes(m, refs, m.order, True)
        branches = [m.topics[n].branch for n in m.order] + [m.integration.branch]
        alien = [b for b in branches if not self._ours(refs, b)]
        if alien:
            raise Failure(f"branch(es) {', '.join(alien)} hold commits ktopic did not make: "
                          f"export them (`ktopic export`) before rebasing")
        return old_base, refs

    def _ours(self, refs: dict, branch: str) -> bool:
        head, made = refs.get("refs/heads/" + branch), refs.get(MADE + branch)
        return head is None or head == made or (made is not None and self.git.is_ancestor(head, made))

    def _snapshot(self, refs: dict) -> dict:
        patches = {}
        for name in self.m.topics:
            d = self.m.root / "patches" / name
            if d.is_dir():
                for f in sorted(d.iterdir()):
                    if f.is_file():
                        patches[f"{name}/{f.name}"] = _text(f)
        cache = self.wd.stack_cache
        index_dir = self.wd.index_cache
        return {"manifest": _text(self.m.path), "patches": patches, "refs": refs,
                "stack_cache": cache.read_text() if cache.exists() else None,
                "index_cache": sorted(os.listdir(index_dir)) if index_dir.is_dir() else []}

    def _save(self) -> None:
        _write_json(self.dir / "state.json", self.state)

    def load(self) -> None:
        try:
            self.state = json.loads((self.dir / "state.json").read_text())
        except FileNotFoundError:
            raise KtopicError("no rebase in progress", self.dir / "state.json") from None

    # --- the topics ----------------------------------------------------------

    @property
    def gen(self) -> Generator:
        if self._gen is None:
            self._gen = Generator(self.m, self.wd)
        return self._gen

    def _drive(self, report: Report | None = None) -> Report:
        t0 = time.monotonic()
        report = report or Report()
        st = self.state
        report.old, report.new = st["old"]["debian_version"], st["new"]["debian_version"]
        new_base = st["new"]["commit"]
        for name in self.m.order:
            t = st["topics"][name]
            if t["state"] in ("done", "committed", "conflict"):
                continue
            waiting = [d for d in self.m.closure(name)
                       if st["topics"][d]["state"] not in ("done", "committed")]
            if waiting:
                t["state"], t["error"] = "waiting", f"depends on {', '.join(waiting)}"
                continue
            try:
                proofs.verify(self.m, self.git, new_base, [name])
            except KtopicError as e:
                t["state"], t["error"] = "failed", f"manifest proof fails on the new base: {e}"
                continue
            t.update(state="running", error="")
            t.setdefault("entries", self._entries(name))
            t.setdefault("next", 0)
            t.setdefault("rewritten", {})
            t.setdefault("upstream", [])
            try:
                self._topic(name, t)
                t["state"] = "done"
            except Conflict:
                t["state"] = "conflict"
            self._save()
        self._commit(report)
        report.complete = all(t["state"] == "committed" for t in st["topics"].values()) \
            and st["integration"] == "committed"
        for name in self.m.order:
            t = st["topics"][name]
            report.rows += [Row(name, *r) for r in t["rows"]]
            if t["state"] in ("waiting", "failed"):
                report.rows.append(Row(name, "", t["state"], t.get("error", "")))
            elif t["state"] == "committed" and not t["rows"]:
                report.rows.append(Row(name, "", "done", "no patches"))
            if t["state"] == "conflict":
                report.conflicts.append(t["conflict"])
                for e in t["entries"][t["next"] + 1:]:      # not reached yet: said, not left out
                    report.rows.append(Row(name, e if isinstance(e, str) else e["file"],
                                           "pending", "after the conflict"))
        if report.complete:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            self._save()
        report.seconds = time.monotonic() - t0
        return report

    def _entries(self, name: str) -> list:
        return [p.entry() for p in self.m.topics[name].patches]

    def _final_patches(self, name: str) -> list[PatchFile]:
        """The topic's patches as the rebase left them (rewritten ones from
        the state directory until they are committed to patches/)."""
        t = self.state["topics"][name]
        out = []
        for e in t.get("entries", self._entries(name)):
            f = e if isinstance(e, str) else e["file"]
            path = self.dir / "patches" / name / f if f in t.get("rewritten", {}) \
                else self.m.root / "patches" / name / f
            st = path.stat()
            key = (str(path), st.st_mtime_ns, st.st_size)
            if key not in self._parsed:
                self._parsed[key] = parse(path, f"patches/{name}/{f}")
            out.append(self._parsed[key])
        return out

    def _start(self, name: str) -> str:
        head = self.state["new"]["commit"]
        for dep in self.m.closure(name):
            head = self.gen.stacker.stack(head, self._final_patches(dep))
        return head

    def _topic(self, name: str, t: dict) -> None:
        """Stack the topic's patches from t['next'] on; raise Conflict."""
        st = self.state
        old, new = st["old"]["commit"], st["new"]["commit"]
        patches = self._final_patches(name)
        head = t.get("head") or self._start(name)
        i = t["next"]
        while i < len(patches):
            outcome, head = self._one(name, t, patches[i], head, old, new)
            if outcome == UPSTREAM:
                t["entries"].pop(i)
                patches.pop(i)
                t["next"] = i
                continue
            i += 1
            t["next"], t["head"] = i, head
        t["head"] = head

    def _tree(self, commit: str) -> str:
        return self.gen.stacker.tree_of(commit)

    def _apply(self, head: str, p: PatchFile, *args: str) -> Applied:
        return self.gen.stacker.apply(head, p, *args)

    def _commit_as(self, tree: str, parent: str, p: PatchFile) -> str:
        return self.gen.stacker.commit(tree, parent, p)

    def _one(self, name, t, p: PatchFile, head, old, new) -> tuple[str, str]:
        """One patch: (outcome, the new head)."""
        git, file = self.git, p.path.name
        cache = self.gen.cache
        if self._known_upstream(name, t, p, head):
            return UPSTREAM, head
        how = t.get("series_upstream", {}).pop(file, None)
        if how and self._upstream(name, t, p, how):
            return UPSTREAM, head
        pid = None
        if self._changed(old, new) & set(p.paths):
            pid = upstream_detect.same_as_base_diff(git, p, old, new)
        if pid and self._upstream(name, t, p, f"its patch-id {pid[:12]} equals that of the "
                                  f"{self.state['old']['debian_version']}.."
                                  f"{self.state['new']['debian_version']} diff of its files"):
            return UPSTREAM, head
        hit = cache.get(head, p)
        if hit and cache.exists(hit):
            t["rows"].append([file, APPLIED, "cached"])
            return APPLIED, hit
        a = self._apply(head, p)
        if a.ok:
            if a.tree == self._tree(head) and \
                    self._upstream(name, t, p, "it applies as an empty change on the new base"):
                return UPSTREAM, head
            t["rows"].append([file, APPLIED, ""])
            return APPLIED, self._commit_as(a.tree, head, p)
        rev = self._apply(head, p, "--check", "--reverse", "--ignore-whitespace")
        if rev.ok and self._upstream(name, t, p,
                                     "it reverse-applies on the new base (whitespace ignored)"):
            return UPSTREAM, head
        r3 = self._apply(head, p, "--3way")
        if r3.ok:
            if r3.tree == self._tree(head):
                if self._upstream(name, t, p, "a three-way merge onto the new base leaves "
                                  "the tree unchanged"):
                    return UPSTREAM, head
                self._conflict(name, t, p, head, [], "the change merges away, but no line it "
                               "adds is on the new base")
                raise Conflict(name)
            commit = self._rewrite(name, t, p, head, r3.tree)
            t["rows"].append([file, THREEWAY, "rewritten for the new base"])
            return THREEWAY, commit
        if self._series_upstream(name, t, p, head):
            return UPSTREAM, head
        self._conflict(name, t, p, head, r3.unmerged, r3.stderr)
        raise Conflict(name)

    def _old_commits(self, name: str) -> list[str] | None:
        """The commits of the topic's own patches on the old base, as the
        last generate made them (refs/ktopic/made/, as the rebase found it),
        oldest first; None when they are not the manifest's patches."""
        entries = self._entries(name)
        made = self.state["snapshot"]["refs"].get(MADE + self.m.topics[name].branch)
        if not made or not entries:
            return None
        out = self.git.run("log", "--first-parent", f"-{len(entries)}", "--format=%H %s",
                           made).splitlines()[::-1]
        want = [parse(self.m.root / "patches" / name / (e if isinstance(e, str) else e["file"]))
                .subject for e in entries]
        if len(out) != len(want) or [ln.split(" ", 1)[-1] for ln in out] != want:
            return None
        return [ln.split(" ", 1)[0] for ln in out]

    def _series_upstream(self, name, t, p: PatchFile, head: str) -> bool:
        """p does not fit on the new base; is it upstream together with the
        patches after it (their lines in its context)?  Smallest run first:
        the run's diff on the old base must reverse-apply on head, and every
        patch of it needs a check new in the new base."""
        st = self.state
        old, new = st["old"]["commit"], st["new"]["commit"]
        files = [e if isinstance(e, str) else e["file"] for e in self._entries(name)]
        if p.path.name not in files:
            return False
        commits = self._old_commits(name)
        if commits is None:
            return False
        i = files.index(p.path.name)
        rest = {q.path.name: q for q in self._final_patches(name)}
        tree = self._tree(head)
        for j in range(i + 1, len(files)):
            run = files[i:j + 1]
            if any(f not in rest for f in run[1:]):
                return False
            start = f"{commits[i]}^"
            diff = self.git.run("diff", "--no-color", "--no-ext-diff", "--no-renames",
                                start, commits[j], binary=True)
            paths = self.git.run("diff", "--name-only", "--no-renames", "-z", start,
                                 commits[j]).split("\0")
            if not upstream_detect.reverse_applies(self.git, tree, diff, [x for x in paths if x]):
                continue
            patches = [p] + [rest[f] for f in run[1:]]
            if any(upstream_detect.find_check(self.git, q, old, new) is None for q in patches):
                return False
            how = (f"patches {run[0][:4]}..{run[-1][:4]} of {name}, upstream together: "
                   f"their diff reverse-applies on the new base (whitespace ignored)")
            t.setdefault("series_upstream", {}).update({f: how for f in run[1:]})
            return self._upstream(name, t, p, how)
        return False

    def _stack_one(self, head: str, p: PatchFile) -> str:
        hit = self.gen.cache.get(head, p)
        if hit and self.gen.cache.exists(hit):
            return hit
        a = self._apply(head, p)
        if not a.ok:
            raise Failure(f"integration ({self.m.integration.branch}): {p.display} does not apply "
                          f"on the topics before it: {a.stderr.strip()}")
        return self._commit_as(a.tree, head, p)

    def _changed(self, old: str, new: str) -> set[str]:
        """Paths that differ between the two bases (one tree diff per run)."""
        if getattr(self, "_changed_set", None) is None:
            out = self.git.run("diff", "--name-only", "--no-renames", "-z", old, new)
            self._changed_set = set(filter(None, out.split("\0")))
        return self._changed_set

    def _known_upstream(self, name, t, p: PatchFile, head: str) -> bool:
        """The manifest names the mainline commit that carries p (its
        entry's upstream:).  On a new base from that release on, p is
        dropped by that id once the entry's checks hold there; if one
        fails, the rebase stops at p: the claim or its check is wrong."""
        entry = next((q for q in self.m.topics[name].patches
                      if q.path.name == p.path.name), None)
        u = entry and entry.upstream
        st = self.state
        if not u or not release_reached(st["new"]["version"], u.release):
            return False
        named = f'{u.commit} ("{u.subject}")'
        bad = proofs.failing(self.m, self.git, st["new"]["commit"], u.checks)
        if bad:
            why = (f"the manifest says {named} carries it since {u.release}, but on "
                   f"{st['new']['debian_version']} {bad[0].describe()} does not hold: "
                   f"fix the entry, or resolve the patch")
            self._conflict(name, t, p, head, [], why)
            t["conflict"]["why"] = why
            raise Conflict(name)
        t["upstream"].append({
            "subject": p.subject,
            "upstream-in": f"{u.release}: {named}",
            "evidence": f"dropped by ktopic rebase onto {st['new']['debian_version']}: "
                        f"the manifest names the mainline commit",
            "checks": [{"file": c.file, ("contains" if c.present else "lacks"): c.pattern}
                       for c in u.checks]})
        t["rows"].append([p.path.name, UPSTREAM, f"mainline {named}, in {u.release}"])
        t["rewritten"].pop(p.path.name, None)
        t.setdefault("removed", []).append(p.path.name)
        return True

    def _upstream(self, name, t, p: PatchFile, how: str) -> bool:
        st = self.state
        check = upstream_detect.find_check(self.git, p, st["old"]["commit"], st["new"]["commit"])
        if check is None:
            return False
        e = upstream_detect.entry(p, check, how, st["new"]["version"], self.m.base.package,
                                  st["new"]["debian_version"])
        t["upstream"].append(e)
        t["rows"].append([p.path.name, UPSTREAM, how])
        f = p.path.name
        t["rewritten"].pop(f, None)
        t.setdefault("removed", []).append(f)
        return True

    def _rewrite(self, name, t, p: PatchFile, parent: str, tree: str) -> str:
        """Commit tree on parent as p, write it back as p's file (in the state
        directory until committed) and return the commit generate will make
        from that file."""
        git = self.git
        first = git.run("commit-tree", tree, "-p", parent, input=p.message,
                        env=p.ident_env()).strip()
        with tree_attributes(git, first) as attrs:
            text = git.run(*attrs, *_format(p), first)
        return self._store_patch(name, t, p.path.name, text, parent, tree)

    def _store_patch(self, name, t, file: str, text: str, parent: str, tree: str) -> str:
        git = self.git
        out = self.dir / "patches" / name / file
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        t["rewritten"][file] = True
        np = parse(out, f"patches/{name}/{file}")
        commit = git.run("commit-tree", tree, "-p", parent, input=np.message,
                         env=np.ident_env()).strip()
        self.gen.cache.put(parent, np, commit)
        return commit

    # --- conflicts -----------------------------------------------------------

    def _conflict(self, name, t, p: PatchFile, head: str, unmerged: list[str], err: str) -> None:
        wt = self.dir / f"wt-{name}"
        self._remove_worktree(wt)
        self.git.run("worktree", "add", "-q", "--no-checkout", "--detach", str(wt), head)
        gitdir = Path(_run_in(wt, "rev-parse", "--absolute-git-dir").stdout.strip())
        (gitdir / "info").mkdir(parents=True, exist_ok=True)
        paths = p.paths
        (gitdir / "info" / "sparse-checkout").write_text("".join(f"/{f}\n" for f in paths))
        r = _run_in(wt, "read-tree", "-mu", "HEAD")
        if r.returncode != 0:
            raise Failure(f"could not prepare the worktree {wt}: {r.stderr.strip()}")
        # The CRs generate keeps (patchfile.as_mailsplit): all of a CRLF
        # mail's are dropped, a diff's own are kept.
        keep = [] if crlf_throughout(p.data.lstrip(b" \t\n\r")) else ["--keep-cr"]
        am = _run_in(wt, "am", "--3way", *keep, str(p.path), env=self._committer(p))
        files = _run_in(wt, "diff", "--name-only", "--diff-filter=U").stdout.split() or unmerged
        remaining = set(_run_in(wt, "rerere", "remaining").stdout.split())
        by_rerere = [f for f in files if f not in remaining]
        # The hunk that does not fit, per file, from git apply's "patch
        # failed: FILE:LINE" (LINE is the hunk's old start); every hunk of
        # the file only when git does not say.
        chk = self._apply(head, p, "--check")
        failed: dict[str, set[int]] = {}
        for mf in re.finditer(r"^error: patch failed: (.+):(\d+)$", chk.stderr or "", re.M):
            failed.setdefault(mf.group(1), set()).add(int(mf.group(2)))
        hunks = []
        for f in files:
            marks = []
            try:
                for n, ln in enumerate((wt / f).read_text(errors="replace").splitlines(), 1):
                    if ln.startswith("<<<<<<< "):
                        marks.append(n)
            except OSError:
                pass
            mine = p.hunks.get(f, [])
            mine = [h for h in mine if h.old_start in failed.get(f, ())] or mine
            hs = ", ".join(f"hunk #{h.number} ({h.header})" for h in mine)
            hunks.append({"file": f, "hunks": hs, "markers": marks,
                          "rerere": f in by_rerere})
        t["conflict"] = {"topic": name, "patch": p.path.name, "subject": p.subject,
                         "worktree": str(wt), "head": head, "files": hunks,
                         "am_failed": am.returncode != 0,
                         "message": err.strip().splitlines()[-1] if err.strip() else ""}
        t["rows"].append([p.path.name, CONFLICT, ", ".join(x["file"] for x in hunks)])

    @staticmethod
    def _committer(p: PatchFile) -> dict:
        return {"GIT_COMMITTER_NAME": p.author, "GIT_COMMITTER_EMAIL": p.email}

    def _remove_worktree(self, wt: Path) -> None:
        if wt.exists():
            self.git.try_run("worktree", "remove", "--force", str(wt))
            shutil.rmtree(wt, ignore_errors=True)
        self.git.try_run("worktree", "prune")

    def cont(self, drop: str | None = None) -> Report:
        """Take the resolutions; drop (a reason) confirms dropping a patch
        whose resolution is empty."""
        self.load()
        st = self.state
        report = Report()
        resolved_any = False
        for name in self.m.order:
            t = st["topics"][name]
            if t["state"] != "conflict":
                continue
            if not self._take_resolution(name, t, drop, report):
                continue
            resolved_any = True
            self._save()
        if report.notes and not resolved_any:
            raise Failure("; ".join(report.notes))
        for t in st["topics"].values():
            if t["state"] in ("waiting", "failed"):
                t["state"] = "pending"
        return self._drive(report)

    def _take_resolution(self, name: str, t: dict, drop: str | None, report: Report) -> bool:
        """Take topic name's resolved conflict into its new head (or drop
        the patch when the resolution is empty and drop gives a reason);
        False, with a note in report, while files are still unmerged."""
        git = self.git
        c = t["conflict"]
        wt = Path(c["worktree"])
        p = self._final_patches(name)[t["next"]]
        left = []
        for f in _run_in(wt, "diff", "--name-only", "--diff-filter=U").stdout.split():
            # A file with no conflict markers left is resolved: stage it
            # (with -f: Debian's top-level .gitignore ignores every path).
            try:
                text = (wt / f).read_text(errors="replace")
            except OSError:
                text = None
            if text is None or re.search(r"^(<<<<<<<|>>>>>>>)( |$)", text, re.M) \
                    or _run_in(wt, "add", "-f", "--", f).returncode != 0:
                left.append(f)
        if left:
            report.notes.append(f"topic {name}: {', '.join(left)} still unmerged in {wt}: "
                                f"resolve, then `ktopic rebase --continue`")
            return False
        apply_dir = Path(_run_in(wt, "rev-parse", "--git-path", "rebase-apply").stdout.strip())
        if not apply_dir.is_absolute():
            apply_dir = wt / apply_dir
        if apply_dir.exists():
            r = _run_in(wt, "am", "--continue", env=self._committer(p))
            if r.returncode != 0:
                if "No changes" not in r.stdout + r.stderr:
                    raise Failure(f"topic {name}: git am --continue in {wt}: "
                                  f"{(r.stdout + r.stderr).strip()}")
                _run_in(wt, "am", "--skip")
        resolved = _run_in(wt, "rev-parse", "HEAD").stdout.strip()
        if resolved == c["head"]:
            # An empty resolution discards the patch.  The detection
            # found no evidence that the new base has it (else there
            # would be no conflict): dropping it is the maintainer's
            # call, said with a reason, and recorded as dropped.
            if not drop:
                raise Failure(f"topic {name}: the resolution of {p.path.name} leaves no "
                              f"change, which drops the patch, and nothing shows the new base "
                              f"has it: resolve it with its change, or confirm with "
                              f"`ktopic rebase --continue --drop \"REASON\"` (recorded under "
                              f"the topic's `dropped:`)")
            t.setdefault("dropped", []).append({"subject": p.subject, "reason": drop})
            t["rows"].append([p.path.name, DROPPED, drop])
            t["rewritten"].pop(p.path.name, None)
            t.setdefault("removed", []).append(p.path.name)
            t["entries"].pop(t["next"])
        else:
            if _run_in(wt, "rev-parse", "HEAD^").stdout.strip() != c["head"]:
                raise Failure(f"topic {name}: {wt} must hold exactly one commit on "
                              f"{c['head'][:12]} (the resolved patch)")
            # git am dropped the notes below the patch's `---` (test
            # figures, history): the message is the patch's, with them.
            t["head"] = self._rewrite(name, t, p, c["head"], git.tree_of(resolved))
            t["rows"].append([p.path.name, RESOLVED, "conflict resolved by hand"])
            t["next"] += 1
        self._remove_worktree(wt)
        t["state"], t["conflict"] = "pending", None
        t["rows"] = [r for r in t["rows"] if r[1] != CONFLICT]
        return True

    # --- committing ----------------------------------------------------------

    def _commit(self, report: Report) -> None:
        st, git, m = self.state, self.git, self.m
        done = [n for n in m.order if st["topics"][n]["state"] == "done"]
        all_done = all(st["topics"][n]["state"] in ("done", "committed") for n in m.order)
        if not done and not (all_done and st["integration"] != "committed"):
            return
        refs = git.refs()
        heads = {n: st["topics"][n]["head"] for n in done}
        integration = None
        if all_done:
            integration = st["new"]["commit"]
            for n in m.integration.topics:
                for p in self._final_patches(n):
                    integration = self._stack_one(integration, p)
        self.gen.cache.save()
        updates = self._ref_updates(refs, done, heads, integration, report)
        st["touched"] = sorted(set(st["touched"]) | {u[0] for u in updates})
        self._save()
        snapshot_text = _text(m.path)
        written: list[Path] = []
        try:
            for n in done:
                t = st["topics"][n]
                for f in t["rewritten"]:
                    dst = m.root / "patches" / n / f
                    shutil.copyfile(self.dir / "patches" / n / f, dst)
                    written.append(dst)
            tmp = m.path.with_name(f".branches.rebase-{os.getpid()}.yaml")
            _put(tmp, snapshot_text)
            try:
                mt = self._edit_manifest(dataclasses.replace(m, path=tmp), done)
                proofs.verify(mt, git, st["new"]["commit"], done)
                os.replace(tmp, m.path)
                new_m = dataclasses.replace(mt, path=m.path)
            finally:
                tmp.unlink(missing_ok=True)
            if updates:
                git.update_refs(updates, f"ktopic rebase onto {st['new']['debian_version']}")
        except BaseException:
            _put(m.path, snapshot_text)
            for path in written:
                rel = f"{path.parent.name}/{path.name}"
                if rel in st["snapshot"]["patches"]:
                    _put(path, st["snapshot"]["patches"][rel])
            raise
        for n in done:
            for f in st["topics"][n].get("removed", []):
                (m.root / "patches" / n / f).unlink(missing_ok=True)
            st["topics"][n]["state"] = "committed"
        st["base_committed"] = True
        if integration:
            st["integration"] = "committed"
        self.m = new_m
        if self._gen:
            self._gen.m = self.m
        self._save()

    def _ref_updates(self, refs: dict, done: list[str], heads: dict[str, str], integration: str | None,
                     report: Report) -> list[tuple[str, str, str | None]]:
        """The ref transaction that moves the base, the done topics and the
        integration branch, each old head kept under the old base's name;
        refused when one of them is checked out in a worktree."""
        st, git, m = self.state, self.git, self.m
        old_dv = st["old"]["debian_version"]
        updates: list[tuple[str, str, str | None]] = []

        def move(branch: str, head: str) -> None:
            ref = "refs/heads/" + branch
            cur = refs.get(ref)
            keep = debversion.old_ref(old_dv, branch)
            if cur and cur != head and not refs.get(keep):
                updates.append((keep, cur, None))
            if cur != head:
                updates.append((ref, head, cur))
            if refs.get(MADE + branch) != head:
                updates.append((MADE + branch, head, refs.get(MADE + branch)))
            report.moved.append(branch)
        if not st["base_committed"]:
            updates.append(("refs/heads/base", st["new"]["commit"], refs.get("refs/heads/base")))
        for n in done:
            move(m.topics[n].branch, heads[n])
        if integration:
            move(m.integration.branch, integration)
        checked_out = worktree_branches(git) if updates else {}
        for ref, _, _ in updates:
            if ref in checked_out:
                raise Failure(f"branch {ref[len('refs/heads/'):]} is checked out in the worktree "
                              f"at {checked_out[ref]}; nothing moved (git branch -f refuses it "
                              f"too). Switch that worktree to another branch or detach it "
                              f"(git switch --detach), then `ktopic rebase --continue`")
        return updates

    def _edit_manifest(self, mt: Manifest, done: list[str]) -> Manifest:
        """mt with the new base and the done topics' patches, carried and
        dropped entries written in."""
        st = self.state
        if not st["base_committed"]:
            mt = manifest_edit.set_base(mt, tarball=st["new"]["tarball"],
                                        version=st["new"]["version"],
                                        debian_version=st["new"]["debian_version"])
        for n in done:
            t = st["topics"][n]
            if t["entries"] != self._entries(n):
                mt = manifest_edit.set_patches(mt, n, t["entries"])
            for e in t["upstream"]:
                mt = manifest_edit.add_upstream(mt, n, e)
            for e in t.get("dropped", []):
                mt = manifest_edit.add_upstream(mt, n, e, kind="dropped")
        return mt

    # --- aborting ------------------------------------------------------------

    def abort(self) -> list[str]:
        """Put back everything as it was before the rebase started."""
        self.load()
        st, git, m = self.state, self.git, self.m
        snap = st["snapshot"]
        for name, t in st["topics"].items():
            if t.get("conflict"):
                wt = Path(t["conflict"]["worktree"])
                if wt.exists():          # rerere keeps what was resolved so far
                    _run_in(wt, "rerere")
                self._remove_worktree(wt)
        refs = git.refs()
        updates = []
        for ref in st["touched"] + ([st["created_base_ref"]] if st["created_base_ref"] else []):
            want, cur = snap["refs"].get(ref), refs.get(ref)
            if want == cur:
                continue
            if want is None:
                updates.append((ref, ZERO, cur))
            else:
                updates.append((ref, want, cur))
        if updates:
            git.update_refs(updates, "ktopic rebase --abort")
        tmp = m.path.with_name(f".branches.abort-{os.getpid()}.yaml")
        _put(tmp, snap["manifest"])
        os.replace(tmp, m.path)
        for name in m.topics:
            d = m.root / "patches" / name
            want = {k.split("/", 1)[1]: v for k, v in snap["patches"].items()
                    if k.split("/", 1)[0] == name}
            if d.is_dir():
                for f in d.iterdir():
                    if f.is_file() and f.name not in want:
                        f.unlink()
            for f, text in want.items():
                path = d / f
                if not path.exists() or _text(path) != text:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    _put(path, text)
        cache = self.wd.stack_cache
        if snap["stack_cache"] is None:
            cache.unlink(missing_ok=True)
        else:
            cache.write_text(snap["stack_cache"])
        index_dir = self.wd.index_cache
        if index_dir.is_dir():
            for f in os.listdir(index_dir):
                if f not in snap["index_cache"]:
                    (index_dir / f).unlink()
        shutil.rmtree(self.dir, ignore_errors=True)
        return [u[0] for u in updates]


def release_reached(version: str, release: str) -> bool:
    """Is kernel version (6.7.12) from release (v6.7) on?"""
    have = tuple(int(x) for x in version.split(".")[:2])
    return have >= tuple(int(x) for x in release.lstrip("v").split("."))


def conflict_help(c: dict) -> list[str]:
    """What the maintainer reads about one conflict."""
    lines = [f"topic {c['topic']}: {c['patch']} ({c['subject']}) conflicts; "
             f"worktree {c['worktree']}"]
    if c.get("why"):
        lines.append(f"  {c['why']}")
    for f in c["files"]:
        where = f"; conflict markers at line(s) {', '.join(map(str, f['markers']))}" \
            if f["markers"] else ""
        by = " (resolved by rerere from last time: check it)" if f["rerere"] else ""
        lines.append(f"  {f['file']}: {f['hunks'] or 'the file'}{where}{by}")
    lines.append("  resolve there (--continue stages a file with no conflict markers left; "
                 "`git add -f` it yourself otherwise: Debian's .gitignore ignores every path), "
                 "then `ktopic rebase --continue`, or `ktopic rebase --abort`")
    return lines
