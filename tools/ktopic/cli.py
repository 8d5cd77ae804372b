"""The ktopic command line: one command, one module per subcommand.

Each command module defines ``register(subparsers)``, which adds its parser
and sets ``func`` to a ``run(args) -> int``.  Adding a command is adding its
name and module to COMMANDS.  Only the module of the command being run is
imported (``--help`` imports them all), so a quick command stays quick.

Takes the command line; gives the exit status (0, 1 on Failure, 2 on
KtopicError) of the one command it loads.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from pathlib import Path

from ktopic import errors
from ktopic.errors import Failure, KtopicError

COMMANDS = {
    "import-base": "commands.cmd_import_base",
    "generate": "commands.cmd_generate",
    "status": "commands.cmd_status",
    "export": "commands.cmd_export",
    "import-mbox": "commands.cmd_import_mbox",
    "build": "commands.cmd_build",
    "boot": "commands.cmd_boot",
    "ci": "commands.cmd_ci",
    "mutate": "commands.cmd_mutate",
    "report": "commands.cmd_report",
    "pipeline": "commands.cmd_pipeline",
    "check": "commands.cmd_check",
    "mail": "commands.cmd_mail",
    "pull-request": "commands.cmd_pull_request",
    "rebase": "commands.cmd_rebase",
    "range-diff": "commands.cmd_range_diff",
    "trailers": "commands.cmd_trailers",
    "signoff": "commands.cmd_signoff",
}

REPO = Path(__file__).resolve().parents[2]


def parser(command: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ktopic",
        description="Topic branches of the bcachefs core-kernel prerequisites "
                    "on Debian's linux-source-6.1.")
    p.add_argument("-m", "--manifest", type=Path, default=REPO / "branches.yaml",
                   help="the manifest (default: %(default)s)")
    p.add_argument("-w", "--workdir", type=Path, default=None,
                   help="work directory (default: $KTOPIC_WORKDIR or ~/.cache/ktopic)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in COMMANDS.items():
        if command in (None, name):
            importlib.import_module(f".{module}", __package__).register(sub)
    return p


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in argv, if it is a known one."""
    it = iter(argv)
    for a in it:
        if a in ("-m", "--manifest", "-w", "--workdir"):
            next(it, None)
        elif not a.startswith("-"):
            return a if a in COMMANDS else None
    return None


def _interrupt(*_) -> None:
    errors.interrupted = True
    raise KeyboardInterrupt


def _caused_by_interrupt(e: BaseException) -> bool:
    """e was raised while a KeyboardInterrupt propagated, or because of one."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _interrupted() -> int:
    """Say what an interrupted command left: exit status 130."""
    git = sys.modules.get("ktopic.plumbing.gitutil")
    moved = list(dict.fromkeys(git.MOVED)) if git else []
    if moved:
        print(f"ktopic: interrupted after its ref transaction(s) moved {len(moved)} ref(s), "
              f"each transaction whole: {', '.join(moved)}", file=sys.stderr)
    else:
        print("ktopic: interrupted; no ref was moved", file=sys.stderr)
    return 130


def main(argv: list[str] | None = None, pending=()) -> int:
    """Run one command.  pending: not empty when Ctrl-C came before main()
    took it over (the entry point holds it while the modules load)."""
    argv = sys.argv[1:] if argv is None else argv
    git = sys.modules.get("ktopic.plumbing.gitutil")
    if git:
        git.MOVED.clear()           # a run before this one in the same process
    # Ctrl-C: let the command's own cleanup (temporary refs, index files,
    # QEMU processes) run through KeyboardInterrupt, then exit 130.
    errors.interrupted = False
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        # Inside the try: an interrupt while the command's modules load
        # ends as one line too.
        if pending:
            raise KeyboardInterrupt
        args = parser(_command_of(argv)).parse_args(argv)
        return args.func(args) or 0
    except KtopicError as e:
        print(f"ktopic: {e}", file=sys.stderr)
        return e.exit_status
    except Failure as e:
        print(f"ktopic: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        return 141
    except Exception as e:
        # Ctrl-C while a module loads lazily: a KeyboardInterrupt raised in
        # a class body (a dataclass's __set_name__) comes out wrapped in a
        # RuntimeError, having unwound the command as it would have.
        if not (errors.interrupted and _caused_by_interrupt(e)):
            raise
        return _interrupted()
