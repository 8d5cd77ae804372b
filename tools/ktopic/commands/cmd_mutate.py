"""ktopic mutate: the mutation gate; every qemu/mutants/<topic>/*.patch
must make the topic's tests fail (ktopic.runner.mutate, docs/ci.md)."""

from __future__ import annotations

from pathlib import Path

from ktopic.commands import common
from ktopic.errors import KtopicError
from ktopic.model import results as R
from ktopic.model.targets import BASE, INTEGRATION, select, targets_from_manifest, \
    variant_branch
from ktopic.report import report as rep
from ktopic.runner import mutate as mut
from ktopic.runner.runner import Runner


def register(sub) -> None:
    p = sub.add_parser("mutate", help="mutation gate: every mutant must make the tests fail",
                       description="For each qemu/mutants/<topic>/*.patch: apply it on the "
                       "topic's branch head (no ref moves), boot the topic's tests, and "
                       "require a failure.  A topic's mutants that can be switched at boot "
                       "share one kernel (built once, booted with ktopic_mutant=N each); "
                       "the others build incrementally in the branch's build directory.  "
                       "Survivors (and mutants that no longer apply or build) fail the "
                       "gate.  Results are cached by content.  With --on integration, "
                       "the named topics' mutants run on the integration branch instead: "
                       "applied to its head, built and booted as it is (its fragments, "
                       "suites, modules, programs; --kcsan: for-next+kcsan), each still "
                       "judged by its own Caught-by line, and reported apart (\"locking "
                       "on for-next+kcsan\").")
    p.add_argument("topics", nargs="*", metavar="TOPIC",
                   help="topics, by topic or branch name (default: every topic that has "
                        "mutants)")
    p.add_argument("--mutants", type=Path, default=None, metavar="DIR",
                   help="directory of <topic>/NNNN-*.patch (default: qemu/mutants)")
    p.add_argument("--on", default=None, metavar="BRANCH",
                   help="run the mutants on this branch instead of each topic's own: "
                        "`integration` (or its branch name, for-next), which stacks every "
                        "topic.  The switched kernel is built in <its build "
                        "directory>-mutants (for-next-kcsan-mutants under --kcsan), seeded "
                        "from its build directory; a mutant that does not apply to its "
                        "head is invalid and says so.  Results are kept apart from the "
                        "topic's own")
    p.add_argument("--no-cache", action="store_true", help="ignore cached mutant results")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="output directory (default: out/ beside the manifest); the mutants "
                        "join report.json, index.html and out/mutants/junit.xml")
    common.add_common(p)
    p.set_defaults(func=run)


def run(args) -> int:
    m = common.load_manifest(args)
    wd = common.workdir_of(args)
    out_dir = Path(args.out or Path(m.root) / "out")
    mdir = Path(args.mutants or Path(m.root) / "qemu" / "mutants")
    # Named as every command names a branch; a mutant belongs to a topic.
    topics = [m.resolve_one(n, ("topic",)).name for n in args.topics] or \
        [s.name for s in m.resolve([]) if s.kind == "topic" and (mdir / s.name).is_dir()]
    topics = list(dict.fromkeys(topics))
    # --on: the one other branch the mutants run on; it must stack each topic.
    on = m.resolve_one(args.on, ("integration",)) if args.on else None
    for t in topics if on is not None else []:
        if t not in on.topics:
            raise KtopicError(f"{on.branch} does not stack topic '{t}'")
    common.warn_stale(m, args, topics + ([on.name] if on is not None else []))
    if args.mutants and not mdir.is_dir():
        raise KtopicError("no such directory", mdir)
    # Parse every mutant first: a malformed one stops the run before any build.
    mutants = {t: mut.load_mutants(mdir, t) for t in topics}
    # A topic named, or a directory given, that has nothing to run is a
    # mistake (a directory without its <topic>/ level, a misspelt name):
    # never a green gate that ran nothing.
    for t in topics if args.topics else []:
        if not mutants[t]:
            raise KtopicError(f"no mutants for topic '{t}' (no {t}/*.patch here)", mdir)
    if not any(mutants.values()):
        if args.mutants:
            raise KtopicError("no <topic>/*.patch in this directory", mdir)
        print(f"no mutants under {mdir}")
        return 0
    opts = common.options_from_args(args)
    opts.check = False
    # --no-cache is about the mutants: the base's and the branch's own results
    # are ktopic ci's, cached by the same keys.
    opts.use_cache = opts.base_cache = True
    targets = targets_from_manifest(m, Path(m.root) / "qemu", opts.variant)
    base = next(t for t in targets if t.topic == BASE)
    results: list[R.MutantResult] = []

    def show(r: R.MutantResult) -> None:
        how = " (cached)" if r.cached else f" ({r.seconds:.0f}s)"
        where = f" on {r.on}" if r.on else ""
        print(f"  {r.topic}/{r.name}{where}: {r.status.upper()}{how}: {r.summary}", flush=True)

    with wd.lock():
        runner = Runner(wd, m, out_dir / "mutants", opts)
        for topic in topics:
            if not mutants[topic]:
                continue
            # The run's own variant (--variant, or none): never a
            # sanitizer row the manifest adds beside a plain run.
            want = INTEGRATION if on is not None else topic
            t = next(x for x in select(targets, [want])
                     if x.topic == want and x.variant == base.variant)
            where = f" on {variant_branch(t.spec.branch, t.variant)}" if on is not None else ""
            print(f"{topic}: {len(mutants[topic])} mutant(s){where}", flush=True)
            # On the integration branch under a sanitizer, as the main job
            # runs it: no base under the variant (a full compile that its
            # one KCSAN kernel stands for).
            results += mut.mutate(runner, None if where and base.variant else base, t,
                                  mutants[topic], use_cache=not args.no_cache,
                                  on_result=show)
    report = _merge(out_dir, m.base.version, results, topics,
                    next((r.on for r in results), ""))
    rep.write_all(report, out_dir)
    print()
    for line in rep.mutation_lines(report):
        print(line)
    return 0 if all(r.ok for r in results) else 1


def _merge(out_dir: Path, version: str, results: list[R.MutantResult],
           topics: list[str], on: str = "") -> R.Report:
    """The existing report.json (ktopic ci's) with these topics' mutants
    replaced: on the branch these ran on, a topic's own or another."""
    path = out_dir / "report.json"
    try:
        report = R.Report.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError):
        report = R.Report(base_version=version)
    report.mutants = [x for x in report.mutants
                      if not (x.topic in topics and x.on == on)] + results
    return report
