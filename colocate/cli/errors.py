"""The error convention: a mistake the user can correct is one line on stderr and exit code 2.

Commands document any other codes they use (`apply`: 1 denied; `certs inspect`: 1 a check failed;
`scheduler explain`: 1 unschedulable). A traceback is for a bug in colocate, never for bad input.

A reader that stops reading (`colocate ... | head`) ends any command quietly with
`EXIT_BROKEN_PIPE` (141, the status of a process SIGPIPE killed, as other Unix tools end): commands
let `BrokenPipeError` rise, and `colocate`'s `main` alone turns it into `stdout_closed()`.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TextIO

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


class UsageError(Exception):
    """Bad input or an unusable environment (a missing file, a cluster that cannot be reached).

    Raised below the edge; `colocate`'s `main` reports it with `report()` and exits 2.
    """


def one_line(message: str) -> str:
    """`message` on one line: multi-line library errors are joined with `; `."""
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())


def report(message: object, stream: TextIO | None = None) -> int:
    """Print `error: <message>` as one line on stderr; returns `EXIT_USAGE` for the command to return."""
    print(f"error: {one_line(str(message))}", file=stream or sys.stderr)
    return EXIT_USAGE


def stdout_closed() -> int:
    """stdout's reader went away: say nothing, keep Python from complaining at exit when it flushes
    stdout again (https://docs.python.org/3/library/signal.html#note-on-sigpipe), and return
    `EXIT_BROKEN_PIPE` for the command to exit with."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (a test's StringIO)
        pass
    return EXIT_BROKEN_PIPE
