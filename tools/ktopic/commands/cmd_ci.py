"""ktopic ci: build, boot and test branches; write out/report.json (see
ktopic.runner.runner for the stages and docs/ci.md).

Takes branch names and the run options; gives out/ (report.json,
index.html, JUnit) and the exit status of the run."""

from __future__ import annotations

from pathlib import Path

from ktopic.commands import common
from ktopic.errors import KtopicError
from ktopic.report import report as rep
from ktopic.runner.options import MAIN_JOB_GATES
from ktopic.runner.runner import run_targets

# The build gates of the check stage (the others only follow the build).
CHECK_GATES = ("bisect", "warnings")


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
    p.add_argument("--bisect", action="store_true",
                   help="the build gate of `ktopic check --bisect` (every commit builds), per "
                        "topic just before its build; a failing gate keeps the topic from "
                        "booting")
    p.add_argument("--warnings", action="store_true",
                   help="the same for `ktopic check --warnings` (no new W=1/sparse warning)")
    p.add_argument("--mutate", action="store_true",
                   help="the mutation gate (`ktopic mutate`) per topic, right after its "
                        "plain result; the mutants join the report")
    p.add_argument("--main-job", action="store_true",
                   help="the main job's gates, as `make` and every pipeline job "
                        "(ci/run-branch) run them: "
                        + " ".join(f"--{g}" for g in MAIN_JOB_GATES)
                        + " (none of them with --gates-only; with --no-check, not "
                        + " ".join(f"--{g}" for g in CHECK_GATES) + ")")
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
    """Each gate of MAIN_JOB_GATES -> whether this run has it: as given,
    and with --main-job every one of them, but for those the other options
    leave out (--gates-only builds nothing; --no-check has no check stage
    for the build gates).  Given explicitly, such a pair is an error."""
    chosen = {g: bool(getattr(args, g, False)) for g in MAIN_JOB_GATES}
    if getattr(args, "main_job", False):
        for g in MAIN_JOB_GATES:
            if not (getattr(args, "gates_only", False) or
                    (getattr(args, "no_check", False) and g in CHECK_GATES)):
                chosen[g] = True
    return chosen


def run(args) -> int:
    if args.gates_only and args.no_check:
        raise KtopicError("--gates-only with --no-check leaves nothing to run")
    if args.first_verdict and not args.main_job:
        raise KtopicError("--first-verdict is the first tier of --main-job: give both")
    chosen = gates_of(args)
    bisect, warnings, mutate = (chosen[o] for o in ("bisect", "warnings", "mutate"))
    gates = [o for o, on in (("--bisect", bisect), ("--warnings", warnings),
                             ("--mutate", mutate)) if on]
    if gates and args.gates_only:
        raise KtopicError(f"{gates[0]} builds kernels: not with --gates-only")
    if (bisect or warnings) and args.no_check:
        raise KtopicError(f"{gates[0]} is a gate of the check stage: not with --no-check")
    m = common._manifest(args)
    out_dir = Path(args.out or Path(m.root) / "out")
    opts = common.options_from_args(args)
    # The manifest's `sanitizers:` variants run too (not in a whole-run --kasan/--kcsan).
    opts.sanitizers = not args.no_sanitizers
    opts.bisect, opts.warnings, opts.mutate = bisect, warnings, mutate
    # The main job in two tiers: a first verdict, then its depth (runner/tiers.py).
    opts.tiers = args.main_job and not args.gates_only
    opts.first_verdict = args.first_verdict
    opts.attribute = 0 if args.no_attribute else max(args.attribute_boots, 0)
    report = run_targets(m, common._workdir(args), opts, args.branches,
                         out_dir, write_report=True, use_live=True)
    print()
    rep.print_report(report)
    print()
    if report.mutants:
        print("\n".join(rep.mutation_lines(report)))
        print()
    rep.print_timing(report.timing)
    if args.first_verdict:
        return 0 if all(b.verdict_ok for b in report.branches) else 1
    return 0 if report.ok else 1
