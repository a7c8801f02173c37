"""The argument parser every command group is built with, reporting usage errors as one line."""

from __future__ import annotations

import argparse
from typing import NoReturn, TypeAlias

from cli.errors import EXIT_USAGE, one_line

Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"
"""What `register_commands(subparsers)` of a command group receives; its parsers are `Parser`s."""

Container: TypeAlias = "argparse._ActionsContainer"
"""A parser or one of its (mutually exclusive) groups: where a shared flag is added."""


class Parser(argparse.ArgumentParser):
    """`argparse` with one-line errors: `error: colocate apply: ... (see colocate apply --help)`, exit 2.

    Subparsers are created with the class of their parent, so every command of the tree gets it.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {self.prog}: {one_line(message)} (see {self.prog} --help)\n")
