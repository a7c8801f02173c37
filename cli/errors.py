"""The error convention: a mistake the user can correct is one line on stderr and exit code 2.

Commands document any other codes they use (`apply`: 1 denied; `certs inspect`: 1 a check failed;
`scheduler explain`: 1 unschedulable). A traceback is for a bug in colocate, never for bad input.
"""

from __future__ import annotations

import sys
from typing import TextIO

EXIT_OK = 0
EXIT_USAGE = 2


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
