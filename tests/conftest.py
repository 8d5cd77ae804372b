"""Shared fixtures: a synthetic kernel tarball and project checkout for the
fast unit tests, and the real packaged tree (imported once per session) for
the end-to-end ones."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
# The unit tests share fakes and fixtures by importing one another's
# modules (test_ci, test_ktap, ...): every directory of them is importable,
# whichever of them pytest collected first.
sys.path += [str(d) for d in sorted((REPO / "tests" / "unit").glob("**/"))
             if d.name != "__pycache__"]

from ktopic import cli  # noqa: E402

# This file's helpers, also for a copy of it elsewhere (test_required_parts).
sys.path.append(str(REPO / "tests"))
import memo  # noqa: E402

REAL_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
IDENT = "Test Porter <porter@example.org>"


class Run:
    """The result of one ktopic invocation."""

    def __init__(self, status: int, out: str, err: str):
        self.status, self.out, self.err = status, out, err

    def __repr__(self) -> str:
        return f"Run(status={self.status}, out={self.out!r}, err={self.err!r})"


# --- required parts: a skip is a failure under make test and CI ----------------
#
# A test that cannot run because something it needs is missing (the tarball,
# the work repository, b4, chromium, cpio...) calls missing() or carries a
# skipif whose reason starts "missing <part>:".  Run by hand, such a test is
# skipped, saying so.  Under `make test` (KTOPIC_TEST_STRICT=1) or in CI
# (CI=true) every skip is a failure that names what is missing, except in
# tests marked @pytest.mark.optional: deliberately optional variants, whose
# skip reason says how to run them.

def strict() -> bool:
    return os.environ.get("KTOPIC_TEST_STRICT") == "1" or os.environ.get("CI") == "true"


def missing(part: str, how: str):
    """Skip (fail under make test / CI): `part` is not there; `how` gets it."""
    pytest.skip(f"missing {part}: {how}")


def variants_table(qemu_dir: Path) -> Path:
    """qemu_dir with the project's table of build variants (qemu/variants.yaml)."""
    qemu_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "qemu" / "variants.yaml", qemu_dir / "variants.yaml")
    return qemu_dir


def smtp_controller():
    """aiosmtpd's Controller, the loopback SMTP server of the mail tests."""
    try:
        from aiosmtpd.controller import Controller
    except ImportError:
        missing("python3-aiosmtpd", "apt-get install python3-aiosmtpd (make deps)")
    return Controller


def needs(program: str, package: str):
    """A test that runs program (on PATH): a missing part without it."""
    return pytest.mark.skipif(shutil.which(program) is None,
                              reason=f"missing {program}: apt-get install {package} (make deps)")


needs_b4 = needs("b4", "b4")
needs_gcc = needs("gcc", "gcc")
needs_make = needs("make", "make")


@pytest.fixture
def quiet_git(tmp_path, monkeypatch) -> Path:
    """No user configuration leaks in; nothing can be sent anywhere.  The
    mail tests use it for every case (pytest.mark.usefixtures)."""
    cfg = tmp_path / "gitconfig"
    cfg.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return cfg


# The synthetic project's counters topic recorded as sent (v1), with
# Message-Ids of our own making: replies to them are matched without
# mailing anything.
COUNTERS_P1 = "patches/counters/0001-lib-counter-return-more.patch"
COUNTERS_P2 = "patches/counters/0002-lib-counter-return-even-more.patch"
MAILED_STATE = """\
change-id: 20260101-test-series-counters-abcdef
revision: 1
revisions:
  1:
    head: {head}
    start: {base}
    tree: {tree}
    base: {base}
    own: 2
    stack:
    - {{file: {p1}, blob: {blob}}}
    - {{file: {p2}, blob: {blob}}}
    date: '2026-01-01'
    sent: '2026-01-01'
    messages: 3
    delivered: ['<cover@example.org>', '<p1@example.org>', '<p2@example.org>']
"""


def mailed_state(project, p1=COUNTERS_P1, tree: str | None = None,
                 blob: str | None = None) -> str:
    """MAILED_STATE for project's generated counters topic; the tree and
    the blobs default to the base's id (any object id will do)."""
    base = project.git("rev-parse", "base").strip()
    return MAILED_STATE.format(head=project.git("rev-parse", "topic/counters").strip(),
                               base=base, tree=tree or base, blob=blob or base,
                               p1=p1, p2=COUNTERS_P2)


def path_without(bindir: Path, *names: str) -> str:
    """A PATH with every program of the current one but `names` (symbolic
    links in bindir): a machine where those are not installed."""
    bindir.mkdir(parents=True, exist_ok=True)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for entry in os.scandir(d):
            link = bindir / entry.name
            if entry.name not in names and not link.exists() and not link.is_symlink():
                link.symlink_to(entry.path)
    return str(bindir)


def _skip_reason(rep) -> str:
    lr = rep.longrepr
    reason = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
    return reason.removeprefix("Skipped: ")


_MISSING: dict[str, list[str]] = {}
_NO_SKIP = " (make test and CI=true do not skip: install it, or mark the test optional)"


def _fail_skip(rep, optional: bool) -> None:
    if not rep.skipped or hasattr(rep, "wasxfail") or optional or not strict():
        return
    rep.outcome = "failed"
    rep.longrepr = _skip_reason(rep) + _NO_SKIP


def _note_missing(rep) -> None:
    """Counted where the summary is written: under pytest-xdist the
    reports made failed in a worker reach the controller's hooks too."""
    if rep.failed and isinstance(rep.longrepr, str) and rep.longrepr.endswith(_NO_SKIP):
        _MISSING.setdefault(rep.longrepr.removesuffix(_NO_SKIP), []).append(rep.nodeid)


def pytest_runtest_logreport(report):
    _note_missing(report)


def pytest_collectreport(report):
    _note_missing(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip(outcome.get_result(), item.get_closest_marker("optional") is not None)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_skip(outcome.get_result(), False)


# Files whose tests each take seconds (whole pytest runs, mail through b4),
# run first: under pytest-xdist the last tests handed out decide when the
# run ends, and short ones there leave no worker idle for long.
SLOW_FIRST = ("unit/test_required_parts.py", "unit/test_hermetic.py", "unit/send/")


def pytest_collection_modifyitems(items):
    def slow(item) -> bool:
        return any(s in item.nodeid for s in SLOW_FIRST)
    items.sort(key=lambda item: not slow(item))      # stable: the order is kept otherwise


def pytest_terminal_summary(terminalreporter):
    """One line per missing part, however many tests it failed."""
    for reason, nodes in _MISSING.items():
        what = f"MISSING {reason[8:]}" if reason.startswith("missing ") else f"SKIP NOT ALLOWED: {reason}"
        terminalreporter.write_line(f"{what} ({len(nodes)} test{'s' * (len(nodes) != 1)})",
                                    red=True, bold=True)


# --- unit tests are hermetic ------------------------------------------------------

def hermetic_env(mp: pytest.MonkeyPatch, base: Path) -> None:
    """Point the default work directory (~/.cache/ktopic: validated-manifest
    stamps, caches, a work repository) and HOME under base."""
    for var, sub in (("HOME", "home"), ("XDG_CACHE_HOME", "home/.cache"),
                     ("XDG_CONFIG_HOME", "home/.config"), ("KTOPIC_WORKDIR", "default-work")):
        (base / sub).mkdir(parents=True, exist_ok=True)
        mp.setenv(var, str(base / sub))


@pytest.fixture(scope="session", autouse=True)
def _memos():
    """Runs on the same input give what the first gave (memo.py)."""
    with pytest.MonkeyPatch.context() as mp:
        memo.install(mp)
        yield


@pytest.fixture(autouse=True)
def _hermetic_unit_tests(request, tmp_path_factory, monkeypatch):
    """A unit test uses only its temporary directories: not the user's work
    repository, nor the default work directory's stamps and caches."""
    if (REPO / "tests" / "unit") in Path(request.node.path).parents:
        hermetic_env(monkeypatch, tmp_path_factory.mktemp("hermetic"))
    yield


KERNEL_FILES = ["scripts/checkpatch.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch",
                "scripts/get_maintainer.pl", "tools/testing/kunit/kunit_*.py"]


@pytest.fixture(scope="session")
def kernel_files(request, tmp_path_factory) -> Path:
    """The few files of the real kernel tree the unit tests run (checkpatch,
    get_maintainer, the KUnit parser), from the packaged tarball.  tar reads
    the whole tarball (half a minute), so they are kept in pytest's cache,
    keyed by the tarball's size and date; never in the work directory."""
    if not REAL_TARBALL.exists():
        missing(f"{REAL_TARBALL}", "make deps installs linux-source-6.1")
    st = REAL_TARBALL.stat()
    name = f"kernel-files-{st.st_size}-{int(st.st_mtime)}"
    cache = getattr(request.config, "cache", None)
    parent = cache.mkdir("ktopic") if cache is not None else tmp_path_factory.mktemp("kernel")
    d = Path(parent) / name
    if not (d / ".complete").exists():
        tmp = d.with_name(f"{name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        subprocess.run(["tar", "-xJf", str(REAL_TARBALL), "-C", str(tmp), "--strip-components=1",
                        "--wildcards", *[f"linux-source-6.1/{f}" for f in KERNEL_FILES]], check=True)
        (tmp / ".complete").touch()
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
    return d


@pytest.fixture
def ktopic(capsys):
    def run(*args: str) -> Run:
        # main() takes SIGINT and SIGTERM for its own cleanup; in this
        # process they belong to pytest again once the command is done,
        # so a Ctrl-C between commands stops the session, not one command.
        held = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            status = cli.main([str(a) for a in args])
        finally:
            for s, h in held.items():
                signal.signal(s, h)
        cap = capsys.readouterr()
        return Run(status, cap.out, cap.err)
    return run


# --- a synthetic kernel tree -------------------------------------------------

TREE = {
    "Makefile": "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 1\n"
                "SUBLEVEL = 192\nEXTRAVERSION =\nNAME = Curry Ramen\n",
    ".gitignore": "# Debian packaging: ignore everything at the top level\n/*\n!/debian/\n",
    "README": "Linux kernel\n",
    "include/linux/compiler_attributes.h": "#ifndef __LINUX_COMPILER_ATTRIBUTES_H\n"
        "# define __flatten\t\t\t__attribute__((flatten))\n#endif\n",
    "lib/counter.c": "".join(f"int counter_{i}(void) {{ return {i}; }}\n" for i in range(40)),
    "lib/names.c": "".join(f"const char *name_{i} = \"n{i}\";\n" for i in range(40)),
    "lib/.gitignore": "*.o\n",
    "lib/built.o": "an object file that .gitignore would hide\n",
    "scripts/tool.sh": "#!/bin/sh\necho tool\n",
}


def make_tarball(path: Path, files: dict[str, str] | None = None, top: str = "linux-source-6.1",
                 mtime: int = 1_700_000_000) -> Path:
    files = dict(TREE if files is None else files)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        dirs = sorted({str(Path(f).parent) for f in files if "/" in f})
        for d in [""] + dirs:
            ti = tarfile.TarInfo(f"{top}/{d}".rstrip("/"))
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(ti)
        for name, text in sorted(files.items()):
            data = text.encode()
            ti = tarfile.TarInfo(f"{top}/{name}")
            ti.size, ti.mtime = len(data), mtime
            ti.mode = 0o755 if name.endswith(".sh") else 0o644
            tar.addfile(ti, io.BytesIO(data))
        ti = tarfile.TarInfo(f"{top}/lib/link.c")
        ti.type, ti.linkname, ti.mtime = tarfile.SYMTYPE, "counter.c", mtime
        tar.addfile(ti)
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["xz", "-0", "-c"], input=buf.getvalue(), stdout=open(path, "wb"), check=True)
    return path


def git_in(tree: Path, *args: str, **kw) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="Test Porter", GIT_AUTHOR_EMAIL="porter@example.org",
               GIT_COMMITTER_NAME="Test Porter", GIT_COMMITTER_EMAIL="porter@example.org",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(tree))
    env.update(kw.pop("env", {}))
    return subprocess.run(["git", *args], cwd=tree, env=env, check=True, capture_output=True,
                          text=True, **kw).stdout


_PATCHES: dict[tuple, str] = {}


def make_patch(tmp: Path, files: dict[str, str], edits: list[tuple[str, str, str]],
               subject: str, date: str = "Thu, 3 Dec 2026 06:00:00 +0000") -> str:
    """A format-patch mail that replaces `old` by `new` in `file` for each edit,
    made against a checkout of `files`.  The mail depends on nothing else
    (fixed identities and dates, --zero-commit): made once per session."""
    key = (tuple(sorted(files.items())), tuple(tuple(e) for e in edits), subject, date)
    if key not in _PATCHES:
        _PATCHES[key] = _make_patch(tmp, files, edits, subject, date)
    return _PATCHES[key]


def _make_patch(tmp: Path, files: dict[str, str], edits: list[tuple[str, str, str]],
                subject: str, date: str) -> str:
    work = tmp / f"mk-{abs(hash((subject, date)))}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git_in(work, "init", "-q")
    git_in(work, "add", "-f", "-A")
    git_in(work, "commit", "-q", "-m", "base")
    for file, old, new in edits:
        p = work / file
        p.parent.mkdir(parents=True, exist_ok=True)
        text = p.read_text() if p.exists() else ""
        assert old in text or old == "", (file, old)
        p.write_text(text.replace(old, new, 1) if old else new)
    git_in(work, "add", "-f", "-A")
    git_in(work, "commit", "-q", "-s", "-m", f"{subject}\n\nWhy: a test needs it.",
           env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    out = git_in(work, "format-patch", "--no-signature", "--zero-commit", "--stdout", "-1")
    shutil.rmtree(work)
    return out


MANIFEST = """\
# A small manifest for the tests.
version: 1
series:
  name: test-series
  subject: "a test series"
  from: "{ident}"
  public-url: "https://git.example.org/test.git"
base:
  package: linux-source-6.1
  tarball: {tarball}
  version: 6.1.192
  debian-version: 6.1.192-3
topics:
  compiler:
    description: nothing to carry
    branch: topic/compiler
    upstream:
      - subject: "Compiler Attributes: add __flatten"
        upstream-in: "v5.12"
        checks:
          - file: include/linux/compiler_attributes.h
            contains: '^# define __flatten'
  counters:
    description: counter changes
    branch: topic/counters
    patches:
      - 0001-lib-counter-return-more.patch
      - 0002-lib-counter-return-even-more.patch
    to: ["A Maintainer <a@example.org>"]
  names:
    description: name changes, on top of counters
    branch: topic/names
    depends: [counters]
    patches:
      - 0001-lib-names-rename.patch
integration:
  branch: for-next
  topics: [compiler, counters, names]
"""


class Project:
    """A checkout of the project (manifest and patches) plus a work directory."""

    def __init__(self, root: Path, tarball: Path):
        self.root, self.tarball = root, tarball
        self.manifest = root / "branches.yaml"
        self.workdir = root.parent / (root.name + "-work")

    def args(self, *a: str, workdir: Path | None = None) -> list[str]:
        return ["-m", str(self.manifest), "-w", str(workdir or self.workdir), *a]

    def refs(self, workdir: Path | None = None) -> dict[str, str]:
        gd = (workdir or self.workdir) / "linux.git"
        if not gd.exists():
            return {}
        out = subprocess.run(["git", "--git-dir", str(gd), "for-each-ref",
                              "--format=%(refname) %(objectname)"],
                             capture_output=True, text=True, check=True).stdout
        return dict(line.split() for line in out.splitlines())

    def git(self, *a: str, workdir: Path | None = None) -> str:
        return subprocess.run(["git", "--git-dir", str((workdir or self.workdir) / "linux.git"), *a],
                              capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="session")
def tarball(tmp_path_factory) -> Path:
    return make_tarball(tmp_path_factory.mktemp("tarball") / "linux-source-6.1.tar.xz")


@pytest.fixture(scope="session")
def patches_text(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("patches")
    tree = dict(TREE)
    p1 = make_patch(tmp, tree, [("lib/counter.c", "return 3;", "return 33;")],
                    "lib/counter: return more", "Thu, 3 Dec 2026 06:00:00 +0000")
    tree2 = dict(tree, **{"lib/counter.c": tree["lib/counter.c"].replace("return 3;", "return 33;")})
    p2 = make_patch(tmp, tree2, [("lib/counter.c", "return 30;", "return 300;")],
                    "lib/counter: return even more", "Thu, 3 Dec 2026 06:01:00 +0000")
    p3 = make_patch(tmp, tree, [("lib/names.c", '"n7"', '"seven"')],
                    "lib/names: rename", "Thu, 3 Dec 2026 06:02:00 +0000")
    # Numbered as git format-patch numbers a two-patch series.
    return {"counters/0001-lib-counter-return-more.patch": p1.replace("[PATCH]", "[PATCH 1/2]", 1),
            "counters/0002-lib-counter-return-even-more.patch": p2.replace("[PATCH]", "[PATCH 2/2]", 1),
            "names/0001-lib-names-rename.patch": p3}


def write_project(root: Path, tarball: Path, patches_text: dict[str, str]) -> Path:
    """The synthetic project's checkout at root: manifest, patches, variants."""
    for rel, text in patches_text.items():
        (root / "patches" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "patches" / rel).write_text(text)
    (root / "branches.yaml").write_text(MANIFEST.format(ident=IDENT, tarball=tarball))
    variants_table(root / "qemu")
    return root


@pytest.fixture
def project(tmp_path, tarball, patches_text) -> Project:
    return Project(write_project(tmp_path / "repo", tarball, patches_text), tarball)


@pytest.fixture(scope="session")
def _imported_template(tmp_path_factory, tarball, patches_text) -> Path:
    """One import of the synthetic tarball, copied by every test that needs it."""
    wd = tmp_path_factory.mktemp("template") / "work"
    manifest = wd.parent / "branches.yaml"
    manifest.write_text(MANIFEST.format(ident=IDENT, tarball=tarball))
    for rel, text in patches_text.items():
        (wd.parent / "patches" / rel).parent.mkdir(parents=True, exist_ok=True)
        (wd.parent / "patches" / rel).write_text(text)
    with pytest.MonkeyPatch.context() as mp:
        hermetic_env(mp, wd.parent / "env")
        assert cli.main(["-m", str(manifest), "-w", str(wd), "import-base"]) == 0
    return wd


@pytest.fixture
def imported(project, _imported_template) -> Project:
    shutil.copytree(_imported_template, project.workdir, symlinks=True)
    return project


def _project_files(root: Path) -> dict[str, bytes]:
    return {str(f.relative_to(root)): f.read_bytes()
            for f in sorted(root.rglob("*")) if f.is_file() or f.is_symlink()}


@pytest.fixture(scope="session")
def _generated_template(tmp_path_factory, tarball, patches_text,
                        _imported_template) -> tuple[dict[str, bytes], Path]:
    """The synthetic project as the project fixture writes it, and its work
    directory after one `ktopic generate`: what the generated fixture copies
    (work directories hold no path of their project; their refs, objects,
    stack cache and validation stamps depend only on the content)."""
    top = tmp_path_factory.mktemp("generated")
    root = write_project(top / "repo", tarball, patches_text)
    wd = top / "repo-work"
    shutil.copytree(_imported_template, wd, symlinks=True)
    with pytest.MonkeyPatch.context() as mp:
        hermetic_env(mp, top / "env")
        assert cli.main(["-m", str(root / "branches.yaml"), "-w", str(wd), "generate"]) == 0
    return _project_files(root), wd


@pytest.fixture
def generated(request, project, _generated_template, ktopic) -> Project:
    """The project with every branch generated.  A project as the project
    fixture writes it gets a copy of the one generated work directory; one
    that a fixture changed first is imported and generated here."""
    files, wd = _generated_template
    if _project_files(project.root) == files:
        shutil.copytree(wd, project.workdir, symlinks=True)
        return project
    imported = request.getfixturevalue("imported")
    r = ktopic(*imported.args("generate"))
    assert r.status == 0, r
    return imported


def run_quietly(argv: list[str]) -> Run:
    """cli.main(argv) outside a test (capsys is a test's): its output
    captured, the signal handlers it takes given back."""
    import contextlib
    held = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main([str(a) for a in argv])
    finally:
        for s, h in held.items():
            signal.signal(s, h)
    return Run(status, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def _mailed_template(tmp_path_factory, tarball, patches_text,
                     _generated_template) -> tuple[Path, Path, Run]:
    """The generated project after one `ktopic mail counters` (v1 written
    with the real b4, not sent), run as the mail tests run it (no user
    git configuration): its checkout, its work directory and the run.
    Neither holds a path of the other (the worktree b4 ran in is gone)."""
    top = tmp_path_factory.mktemp("mailed")
    root = write_project(top / "repo", tarball, patches_text)
    wd = top / "repo-work"
    shutil.copytree(_generated_template[1], wd, symlinks=True)
    with pytest.MonkeyPatch.context() as mp:
        hermetic_env(mp, top / "env")
        (top / "gitconfig").write_text("")
        mp.setenv("GIT_CONFIG_GLOBAL", str(top / "gitconfig"))
        mp.setenv("XDG_CONFIG_HOME", str(top / "xdg"))
        r = run_quietly(["-m", root / "branches.yaml", "-w", wd, "mail", "counters"])
    assert r.status == 0, r
    return root, wd, r


@pytest.fixture
def mailed_v1(project, _mailed_template) -> Project:
    """The generated project with v1 of counters written by `ktopic mail
    counters` (not sent): a copy of the one run per session (its result
    is the project's `first` attribute), for the tests that go on from
    there."""
    root, wd, r = _mailed_template
    shutil.rmtree(project.root)
    shutil.copytree(root, project.root, symlinks=True)
    shutil.copytree(wd, project.workdir, symlinks=True)
    project.first = r
    return project


# --- the real packaged tree ---------------------------------------------------

@pytest.fixture(scope="session")
def real_workdir(tmp_path_factory) -> Path:
    """A work directory with the real tarball imported (once per session)."""
    if not REAL_TARBALL.exists():
        missing(f"{REAL_TARBALL}", "make deps installs linux-source-6.1")
    wd = tmp_path_factory.mktemp("real") / "work"
    r = subprocess.run([sys.executable, str(REPO / "tools/bin/ktopic"), "-w", str(wd), "import-base"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return wd
