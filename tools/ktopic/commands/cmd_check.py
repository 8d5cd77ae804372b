"""ktopic check [TOPIC...]: checkpatch, series hygiene and recipients for
each topic's patches; --bisect: every commit builds; --warnings: no new
W=1/sparse warnings; one option per gate of gates/registry.py
(docs/gates.md).

Takes branch names and the gates' options; gives a verdict per topic,
printed (and --json), exit 1 on a failing gate."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from ktopic.errors import Failure
from ktopic.gates import check, registry
from ktopic.kernel import steplog
from ktopic.model.workdir import Workdir
from ktopic.plumbing import manifests
from ktopic.report import report as rep
from ktopic.fileio import write_atomic


def register(sub) -> None:
    p = sub.add_parser("check", help="checkpatch, hygiene and recipients per patch; "
                       "--bisect, --warnings build gates",
                       description=__doc__)
    p.add_argument("topics", nargs="*", metavar="TOPIC",
                   help="topic or branch names, or 'integration' (default: every topic)")
    p.add_argument("--strict", action="store_true",
                   help="checkpatch --strict on every patch (default: on patches that add files)")
    p.add_argument("--no-codespell", action="store_true",
                   help="skip checkpatch's codespell dictionary")
    for name, gate in registry.GATES.items():
        p.add_argument(f"--{name}", action="store_true", help=gate.help)
    p.add_argument("-j", "--jobs", type=int, default=0,
                   help="parallel checkpatch runs and make -j (default: nproc)")
    p.add_argument("--json", type=Path, default=None, metavar="PATH",
                   help="also write the verdicts (with tool versions) as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    m = manifests.load(args.manifest, workdir=args.workdir)
    wd = Workdir(args.workdir)
    if not wd.git_dir.is_dir():
        raise Failure(f"no work repository at {wd.git_dir}: run `ktopic import-base` "
                      "(and `ktopic generate` for --bisect/--warnings) first")
    opts = check.Options(strict_all=args.strict, codespell=not args.no_codespell,
                         gates=tuple(g for g in registry.GATES if getattr(args, g)),
                         jobs=args.jobs,
                         progress=sys.stderr.isatty())
    # The style gates only read the repository and their own content cache;
    # the gates that build take the work directory's lock for the topics their
    # cache does not answer (an unchanged topic waits for no other run).
    # In a log, each build step says what it does every 30 s (a terminal
    # has the build's progress bar).
    def say(s: str) -> None:
        print(s, file=sys.stderr, flush=True)
    with steplog.StepLog(say=say, heartbeat=not sys.stderr.isatty(),
                         ccache=steplog.ccache_counter(wd.root / "ccache")) as steps:
        verdicts = check.check_topics(m, wd, args.topics, opts, log=say, steps=steps)
        timing = steps.totals()
    for tv in verdicts:
        print("\n".join(check.render(tv, tools=False)))
    if verdicts:
        print(check.tools_line(verdicts[0].versions))
    bad = [tv for tv in verdicts if not tv.ok]
    if args.json:
        write_atomic(args.json, json.dumps([tv.to_dict() for tv in verdicts], indent=1) + "\n")
    rep.print_timing(timing)
    print(f"check: {len(verdicts) - len(bad)} of {len(verdicts)} topic(s) pass"
          + (f"; failing: {', '.join(tv.topic for tv in bad)}" if bad else ""))
    return 1 if bad else 0
