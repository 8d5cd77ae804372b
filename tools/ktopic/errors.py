"""The two ways a ktopic command ends badly.

KtopicError is bad input (a manifest, a patch, an argument): one line that
names the file and line, exit status 2, nothing changed.  Failure is a
command that ran and found something wrong (a patch that does not apply, a
kernel that panics): exit status 1.

Takes a message (and a file and line); gives the exception cli maps to an
exit status.
"""

from __future__ import annotations

from pathlib import Path


class KtopicError(Exception):
    exit_status = 2

    def __init__(self, message: str, file: str | Path | None = None,
                 line: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        return where + self.message


class Failure(Exception):
    exit_status = 1


# Set when SIGINT or SIGTERM arrives.  The handler raises KeyboardInterrupt,
# but a signal that lands while a destructor runs has its exception
# "ignored" by Python; the steps that commit something (a ref transaction,
# each file of an import) look at this too.
interrupted = False


def check_interrupted() -> None:
    if interrupted:
        raise KeyboardInterrupt
