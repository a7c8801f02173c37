"""The argument parser every command group is built with, reporting usage errors as one line."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn, TypeAlias

from colocate.cli.errors import EXIT_USAGE, one_line

Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"
"""What `register_commands(subparsers)` of a command group receives; its parsers are `Parser`s."""

Container: TypeAlias = "argparse._ActionsContainer"
"""A parser or one of its (mutually exclusive) groups: where a shared flag is added."""


class _CommandsAction(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands whose `--help` always says what they do: the one-line `help` shown in the
    parent's list is the description unless the command gives a longer one."""

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if kwargs.get("help") and not kwargs.get("description"):
            kwargs["description"] = kwargs["help"][0].upper() + kwargs["help"][1:] + "."
        return super().add_parser(name, **kwargs)


class Parser(argparse.ArgumentParser):
    """`argparse` with one-line errors: `error: colocate apply: ... (see colocate apply --help)`, exit 2.

    Subparsers are created with the class of their parent, so every command of the tree gets it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _CommandsAction)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {self.prog}: {one_line(message)} (see {self.prog} --help)\n")
