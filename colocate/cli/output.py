"""The `-o/--output` vocabulary: one name for one kind of output, in every command.

- `json`  the command's result as one JSON document (for programs; stable keys)
- `yaml`  the same document as YAML (for objects a person will edit or `kubectl apply`)
- `table` aligned columns, one row per item (for people), drawn by `table`/`table_lines` here
- `text`  prose: lines of findings (for people)
- `html`  one self-contained page (for people, in a browser: `colocate whatif`)

A command offers the subset it can print, and its default is the first one a person would want.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from colocate.cli.parser import Container

FORMATS = ("json", "yaml", "table", "text", "html")


def add_output(container: Container, formats: Sequence[str], default: str) -> None:
    """`-o/--output` with `formats` (a subset of `FORMATS`) and `default` (one of them)."""
    unknown = [name for name in formats if name not in FORMATS]
    if unknown or default not in formats:
        raise ValueError(f"output formats {list(formats)} (default {default!r}) are not a subset of {FORMATS}")
    container.add_argument(
        "-o",
        "--output",
        choices=tuple(formats),
        default=default,
        help=f"output format: {'|'.join(formats)} (default {default})",
    )


Painter = Callable[[int, str], str]
"""Styles one body cell (column index, text) after alignment: colour that does not shift columns."""


def table_lines(headers: Sequence[str], rows: Sequence[Sequence[Any]], paint: Painter | None = None) -> list[str]:
    """`-o table`'s lines: left-aligned columns two spaces apart, a header row first, no trailing
    blanks; a None cell is empty. Every command's plain-text table is drawn here."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str], body: bool) -> str:
        padded = []
        for i, (c, w) in enumerate(zip(row, widths, strict=False)):
            padded.append((paint(i, c) if body and paint is not None and c else c) + " " * (w - len(c)))
        return "  ".join(padded).rstrip()

    return [line(row, index > 0) for index, row in enumerate(cells)]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], paint: Painter | None = None) -> str:
    """`-o table`: `table_lines` as one text."""
    return "\n".join(table_lines(headers, rows, paint))


def markdown_cell(text: str) -> str:
    """Text fit for a Markdown table cell: no line breaks, no bare `|`."""
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The same table for a Markdown page (the generated references under docs/reference/)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in rows]
    return lines
