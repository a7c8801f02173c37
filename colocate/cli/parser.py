"""The argument parser every command group is built with, reporting usage errors as one line.

A mistyped subcommand or flag gets the spelling it was probably meant to be (`colocate aply`: did
you mean "apply"?), found by the hint every input uses (`policies.apis.suggestions`). A mistyped
flag is named as unrecognized by the command it was given to, even when a required flag is then
missing too: a misspelt cluster flag is reported as unrecognized (did you mean "--cluster"?), not
as a missing `--cluster`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TypeAlias

from colocate.cli.errors import EXIT_USAGE, one_line
from policies.apis.suggestions import did_you_mean

Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"
"""What `register_commands(subparsers)` of a command group receives; its parsers are `Parser`s."""

Container: TypeAlias = "argparse._ActionsContainer"
"""A parser or one of its (mutually exclusive) groups: where a shared flag is added."""

COMMAND_METAVAR = "COMMAND"
"""How usage lines name the command to give, at every level (`colocate certs [-h] COMMAND ...`)."""


class _CommandsAction(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands whose `--help` always says what they do: the one-line `help` shown in the
    parent's list is the description unless the command gives a longer one."""

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if kwargs.get("help") and not kwargs.get("description"):
            kwargs["description"] = kwargs["help"][0].upper() + kwargs["help"][1:] + "."
        return super().add_parser(name, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Run the subcommand's parser; flags it does not know are its error (with its hints), not
        left for the parent, which knows none of the subcommand's flags."""
        super().__call__(parser, namespace, values, option_string)
        extras = getattr(namespace, argparse._UNRECOGNIZED_ARGS_ATTR, None)
        if extras and values and values[0] in self.choices:
            self.choices[values[0]].error(f"unrecognized arguments: {' '.join(extras)}")


class Parser(argparse.ArgumentParser):
    """`argparse` with one-line errors: `error: colocate apply: ... (see colocate apply --help)`, exit 2.

    Subparsers are created with the class of their parent, so every command of the tree gets it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _CommandsAction)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)  # for error(): what the user typed
        return super().parse_known_args(args, namespace)

    def _unknown_flags(self) -> list[str]:
        """The flags given that this parser knows under no spelling (nor an abbreviation of one)."""
        known = list(self._option_string_actions)
        given = getattr(self, "_given", [])
        words = given[: given.index("--")] if "--" in given else given
        flags = [w.split("=", 1)[0] for w in words if w.startswith("--") and len(w) > 2]
        return [f for f in flags if not any(k.startswith(f) for k in known)]

    def _hinted(self, message: str) -> str:
        unknown = self._unknown_flags()
        if unknown and (message.startswith("the following arguments are required") or "unrecognized" in message):
            return f"unrecognized arguments: {' '.join(unknown)}{did_you_mean(unknown[0], self._option_string_actions)}"
        choice = re.match(r"argument \S+: invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice:
            options = re.findall(r"'([^']*)'", choice.group(2))
            return f"{message}{did_you_mean(choice.group(1), options)}"
        return message

    def error(self, message: str) -> NoReturn:
        message = self._hinted(message)
        self.exit(EXIT_USAGE, f"error: {self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def add_commands(parser: Parser, dest: str) -> Subparsers:
    """The commands under `parser`, one of which must be given; the one given is `args.<dest>`.

    Every level of the tree opens its commands here, so that they all read alike in `--help`."""
    return parser.add_subparsers(dest=dest, metavar=COMMAND_METAVAR, required=True)


def add_command_group(subparsers: Subparsers, name: str, help: str, description: str | None = None) -> Subparsers:
    """Add the command group `name` (`colocate NAME COMMAND ...`) and return where its commands go.

    The command given is `args.<name>_command`; `description` defaults to `help` (see `Parser`)."""
    group = subparsers.add_parser(name, help=help, description=description)
    return add_commands(group, dest=f"{name}_command")
