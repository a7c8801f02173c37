"""Colour in tables for people: only on a terminal, and never when NO_COLOR is set (no-color.org).

The decision is made once, at the command's edge, from the stream the table goes to and the
environment; the table itself only calls the painter it is handed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final, TextIO

from colocate.cli.output import Painter

#: the results of `test` and `audit`, in SGR colours: green, red, yellow, dim
RESULT_COLOURS: Final = {"PASS": "32", "FAIL": "31", "ERROR": "31", "WARN": "33", "SKIP": "2"}


def colour_enabled(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """A terminal that is not `dumb`, and no NO_COLOR (any non-empty value turns colour off)."""
    return stream.isatty() and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


def results_painter(column: int, stream: TextIO) -> Painter | None:
    """Colours the result words of `column`, or None (no colour) where colour is not wanted."""
    if not colour_enabled(stream):
        return None

    def paint(index: int, text: str) -> str:
        code = RESULT_COLOURS.get(text) if index == column else None
        return f"\x1b[{code}m{text}\x1b[0m" if code else text

    return paint
