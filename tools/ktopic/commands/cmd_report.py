"""ktopic report: re-render the terminal table, HTML and JUnit from a
report.json.

Takes out/report.json; gives the terminal table, out/index.html and the
JUnit files again."""

from __future__ import annotations

from pathlib import Path

from ktopic.report.report import (DEFAULT_OUT, HTML_NAME, JUNIT_NAME, REPORT_NAME, load_json,
                                  print_report, write_html, write_junit)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report", help="re-render the terminal table, HTML and JUnit from out/report.json",
        description="Re-render the results of the last `ktopic ci` run from its "
        "report.json: print the table, and write index.html and the JUnit XML "
        "files beside it.  With neither --html nor --junit, both are written.")
    p.add_argument("--json", metavar="PATH", type=Path, default=None,
                   help=f"report to read (default: {DEFAULT_OUT / REPORT_NAME} beside the "
                   "manifest)")
    p.add_argument("--html", action="store_true", help=f"write {HTML_NAME}")
    p.add_argument("--junit", action="store_true",
                   help=f"write <branch>/{JUNIT_NAME} for each branch")
    p.add_argument("--out", metavar="DIR", type=Path, default=None,
                   help="where to write (default: the directory of the report)")
    p.set_defaults(func=run)


def default_out(args) -> Path:
    """out/ of the checkout: beside the manifest (the repository root)."""
    return Path(args.manifest).resolve().parent / DEFAULT_OUT


def run(args) -> int:
    path = args.json or default_out(args) / REPORT_NAME
    out_dir = args.out or path.parent
    report = load_json(path)
    both = not args.html and not args.junit
    if args.junit or both:
        write_junit(report, out_dir)
    if args.html or both:
        write_html(report, out_dir)
    print_report(report)
    return 0
