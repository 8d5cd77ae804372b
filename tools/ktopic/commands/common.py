"""What commands share: the work directory and manifest from the global
options, the series a sending command names, the run options from the
command line, and the arguments that name branches.

Takes the parsers and arguments of the commands; gives their shared
options and branch arguments."""

from __future__ import annotations

import sys
from pathlib import Path

from ktopic.commands import cmd_status
from ktopic.errors import KtopicError
from ktopic.model import manifest, variants
from ktopic.model.workdir import Workdir
from ktopic.plumbing import manifests
from ktopic.runner.options import Options


def workdir_of(args) -> Workdir:
    """The work directory the global options name."""
    return Workdir(args.workdir)


def load_manifest(args) -> manifest.Manifest:
    """The manifest the global options name, loaded and checked."""
    return manifests.load(args.manifest, workdir=args.workdir)


def series(args) -> tuple[manifest.Manifest, Workdir, str]:
    """The manifest, the work directory and the series args.name names (a
    topic or the integration branch, by any of its names), for the
    commands that send a series."""
    m = load_manifest(args)
    return m, workdir_of(args), m.check_series_name(args.name)


def options_from_args(args) -> Options:
    no_cache = getattr(args, "no_cache", False)
    return Options(smp=args.smp, memory=args.memory, accel=args.accel, timeout=args.timeout,
                   silence=args.silence, variant=variant_of(args),
                   use_cache=not no_cache,
                   base_cache=not no_cache, jobs=args.jobs,
                   check=not getattr(args, "no_check", True),
                   build=not getattr(args, "gates_only", False))


def variant_of(args) -> str:
    """The run's build variant (each --variant NAME or its shorthand),
    checked against qemu/variants.yaml."""
    asked = list(dict.fromkeys(args.variants or ()))
    if not asked:
        return ""
    qemu = Path(args.manifest).resolve().parent / "qemu"
    variants.check_together(qemu, asked)
    if len(asked) > 1:
        raise KtopicError(f"one build variant at a time: {', '.join(asked)}")
    return variants.get(qemu, asked[0]).name


def add_common(p, boot_opts: bool = True) -> None:
    p.add_argument("--variant", dest="variants", action="append", metavar="NAME",
                   help="build every branch with qemu/configs/NAME.config, in build "
                        "directories of its own (the names: qemu/variants.yaml)")
    for short in ("kasan", "kcsan"):    # older spellings, kept for scripts that use them
        p.add_argument(f"--{short}", dest="variants", action="append_const", const=short,
                       help=f"--variant {short}")
    p.add_argument("-j", "--jobs", type=int, default=0, help="make -j (default: nproc)")
    if boot_opts:
        p.add_argument("--smp", type=int, default=None,
                       help="guest CPUs (default: the topic's smp: in the manifest, else 2)")
        p.add_argument("--memory", default="1G", help="guest memory (default: %(default)s)")
        p.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto",
                       help="auto: KVM only if the probe shows it works (default)")
        p.add_argument("--timeout", type=float, default=120.0,
                       help="overall boot time-out in reference seconds, scaled by the "
                            "measured machine speed (default: %(default)s)")
        p.add_argument("--silence", type=float, default=30.0,
                       help="longest console silence in reference seconds, scaled "
                            "(default: %(default)s)")


def add_branch_args(p) -> None:
    p.add_argument("branches", nargs="*", metavar="BRANCH", help="topic or branch names")
    p.add_argument("--all", action="store_true",
                   help="every topic and the integration branch")


def branch_names(args) -> list[str]:
    """The branches add_branch_args() took ([] for --all)."""
    if args.all and args.branches:
        raise KtopicError("give branch names or --all, not both")
    if not args.all and not args.branches:
        raise KtopicError("name a topic or branch, or give --all")
    return [] if args.all else args.branches


def warn_stale(m: manifest.Manifest, args, names: list[str]) -> None:
    """A branch behind its patches is built as it is: say so on stderr, one
    line per branch (`make` generates first; a direct `ktopic ci` does not)."""
    wd = workdir_of(args)
    if not wd.git_dir.exists():
        return
    wanted = set(names)
    for r in cmd_status.rows(m, wd):
        if wanted and not wanted & {r["topic"], r["branch"]}:
            continue
        if r["state"] == "behind the manifest":
            print(f"ktopic: warning: {r['branch']} is behind the manifest and is tested "
                  f"as it is; `ktopic generate {r['topic']}` first to test the patches",
                  file=sys.stderr)
