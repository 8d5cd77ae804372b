"""ktopic pipeline: write (or --check) the GitLab CI pipeline generated
from the manifest (and its topics' mutants, which the time-outs count).

Takes the manifest; gives .gitlab-ci.yml (or, with --check, whether it is
up to date)."""

from __future__ import annotations

import sys
from pathlib import Path

from ktopic.errors import Failure
from ktopic.plumbing import manifests
from ktopic.runner.pipeline import DEFAULT_IMAGE, DEFAULT_OUTPUT, MUTANTS_DIR, render
from ktopic.fileio import write_atomic


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "pipeline", help="write the GitLab CI pipeline (one job per topic and integration)",
        description="Write a GitLab CI pipeline generated from the manifest: one job per "
        "topic and one for the integration branch, each running ci/run-branch (the main "
        "job's gates on its branch), with needs: from the topics' dependencies, a "
        "time-out from the branch's commits, mutants and sanitizer variants, JUnit XML "
        "and logs as artifacts and a ccache cache.")
    p.add_argument("-o", "--output", metavar="PATH", default=None,
                   help=f"where to write ('-': standard output; default: {DEFAULT_OUTPUT} "
                   "beside the manifest)")
    p.add_argument("--image", default=DEFAULT_IMAGE,
                   help="container image of the jobs (default: %(default)s)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if the file is not what would be written")
    p.set_defaults(func=run)


def run(args) -> int:
    m = manifests.load(args.manifest, workdir=args.workdir)
    text = render(m, image=args.image, source=m.display())
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output) if args.output else m.root / DEFAULT_OUTPUT
    if args.check:
        try:
            current = out.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            raise Failure(f"{out} is not up to date with {m.display()} and "
                          f"{MUTANTS_DIR}/: run `ktopic pipeline`")
        print(f"{out}: up to date")
        return 0
    write_atomic(out, text)
    jobs = len(m.topics) + 1
    print(f"{out}: {jobs} jobs ({len(m.topics)} topics and integration)")
    return 0
