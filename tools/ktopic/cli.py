"""The ktopic command line: one command, one module per subcommand.

Each command module defines ``register(subparsers)``, which adds its parser
and sets ``func`` to a ``run(args) -> int``.  Adding a command is adding its
module name to COMMANDS.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from pathlib import Path

from .errors import Failure, KtopicError

COMMANDS = [
    "cmd_import_base",
    "cmd_generate",
    "cmd_status",
    "cmd_export",
    "cmd_import_mbox",
    "report",
    "pipeline",
    "build",
    "boot",
    "ci",
]

REPO = Path(__file__).resolve().parents[2]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ktopic",
        description="Topic branches of the bcachefs core-kernel prerequisites "
                    "on Debian's linux-source-6.1.")
    p.add_argument("-m", "--manifest", type=Path, default=REPO / "branches.yaml",
                   help="the manifest (default: %(default)s)")
    p.add_argument("-w", "--workdir", type=Path, default=None,
                   help="work directory (default: $KTOPIC_WORKDIR or ~/.cache/ktopic)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f".{name}", __package__).register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Ctrl-C: let the command's own cleanup (temporary refs, index files,
    # QEMU processes) run through KeyboardInterrupt, then exit 130.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        return args.func(args) or 0
    except KtopicError as e:
        print(f"ktopic: {e}", file=sys.stderr)
        return e.exit_status
    except Failure as e:
        print(f"ktopic: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("ktopic: interrupted; no ref was moved", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 141
