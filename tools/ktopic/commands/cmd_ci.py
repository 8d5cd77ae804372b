"""ktopic ci: build, boot and test branches; write out/report.json (see
ktopic.runner.runner for the stages and docs/ci.md).

Takes branch names and the run options; gives out/ (report.json,
index.html, JUnit) and the exit status of the run."""

from __future__ import annotations

from pathlib import Path

from ktopic.commands import common
from ktopic.errors import KtopicError
from ktopic.gates import registry
from ktopic.report import report as rep
from ktopic.runner.options import MAIN_JOB_GATES
from ktopic.runner.runner import run_targets



def register(sub) -> None:
    p = sub.add_parser("ci", help="build, boot and test branches; write out/report.json",
                       description="Build, boot and test every topic branch and the integration branch.")
    p.add_argument("branches", nargs="*", metavar="BRANCH",
                   help="topic or branch names (default: every topic and the integration branch)")
    p.add_argument("--no-cache", action="store_true", help="ignore cached results")
    p.add_argument("--no-sanitizers", action="store_true",
                   help="skip the sanitizer variants the manifest asks for (sanitizers:)")
    p.add_argument("--no-check", action="store_true",
                   help="skip the patch gates (ktopic check) stage")
    p.add_argument("--gates-only", action="store_true",
                   help="generate and the patch gates only: no kernel build, boot or test "
                        "(recorded as skipped; minutes instead of an hour on a cold runner)")
    for name, gate in registry.GATES.items():
        p.add_argument(f"--{name}", action="store_true",
                       help=f"the gate of `ktopic check --{name}` ({gate.help}), per topic "
                            "just before its build; a failing gate keeps the topic from booting")
    p.add_argument("--mutate", action="store_true",
                   help="the mutation gate (`ktopic mutate`) per topic, right after its "
                        "plain result; the mutants join the report")
    p.add_argument("--main-job", action="store_true",
                   help="the main job's gates, as `make` and every pipeline job "
                        "(ci/run-branch) run them: "
                        + " ".join(f"--{g}" for g in MAIN_JOB_GATES)
                        + " (none of them with --gates-only; with --no-check, not "
                        + " ".join(f"--{g}" for g in registry.GATES) + ")")
    p.add_argument("--first-verdict", action="store_true",
                   help="with --main-job: stop after its first tier (every branch built, "
                        "booted and tested, checkpatch and hygiene); the build gates, "
                        "mutants and sanitizer variants stay pending (make verdict)")
    p.add_argument("--no-attribute", action="store_true",
                   help="do not look for the first bad commit of a failing branch")
    p.add_argument("--attribute-boots", type=int, default=12, metavar="N",
                   help="boots at most to find a failing branch's first bad commit "
                        "(default 12; when they run out, the range it narrowed is given)")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="output directory (default: out/ beside the manifest)")
    common.add_common(p)
    p.set_defaults(func=run)


def gates_of(args) -> dict[str, bool]:
    """Each gate of MAIN_JOB_GATES (and every topic gate) -> whether this
    run has it: as given, and with --main-job every one of MAIN_JOB_GATES,
    but for those the other options leave out (--gates-only: none of
    them, it is the quick variant; --no-check has no check stage for the
    topic gates).  Given explicitly, one that builds with --gates-only, or
    a topic gate with --no-check, is an error (run())."""
    names = list(dict.fromkeys(MAIN_JOB_GATES + tuple(registry.GATES)))
    chosen = {g: bool(getattr(args, g, False)) for g in names}
    if args.main_job:
        for g in MAIN_JOB_GATES:
            chosen[g] = chosen[g] or not (args.gates_only or _left_out(args, g))
    return chosen


def _left_out(args, gate: str) -> str:
    """Why the other options leave a gate out ("" when they do not)."""
    if args.gates_only and (gate not in registry.GATES or registry.GATES[gate].builds):
        return "builds kernels: not with --gates-only"
    if args.no_check and gate in registry.GATES:
        return "is a gate of the check stage: not with --no-check"
    return ""


def run(args) -> int:
    if args.gates_only and args.no_check:
        raise KtopicError("--gates-only with --no-check leaves nothing to run")
    if args.first_verdict and not args.main_job:
        raise KtopicError("--first-verdict is the first tier of --main-job: give both")
    chosen = gates_of(args)
    for g in (g for g, on in chosen.items() if on):
        if _left_out(args, g):
            raise KtopicError(f"--{g} {_left_out(args, g)}")
    m = common.load_manifest(args)
    common.warn_stale(m, args, args.branches)
    out_dir = Path(args.out or Path(m.root) / "out")
    opts = common.options_from_args(args)
    # The manifest's `sanitizers:` variants run too (not in a whole-run --variant).
    opts.sanitizers = not args.no_sanitizers
    opts.gates = tuple(g for g in registry.GATES if chosen[g])
    opts.mutate = chosen["mutate"]
    # The main job in two tiers: a first verdict, then its depth (runner/tiers.py).
    opts.tiers = args.main_job and not args.gates_only
    opts.first_verdict = args.first_verdict
    opts.attribute = 0 if args.no_attribute else max(args.attribute_boots, 0)
    report = run_targets(m, common.workdir_of(args), opts, args.branches,
                         out_dir, write_report=True, use_live=True)
    print()
    rep.print_report(report)        # the table, failures, mutation scores
    print()
    rep.print_timing(report.timing)
    if args.first_verdict:
        return 0 if all(b.verdict_ok for b in report.branches) else 1
    return 0 if report.ok else 1
