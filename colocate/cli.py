"""The `colocate` console script.

This module only builds the argument parser and dispatches. Each subcommand group is owned by the
package that implements it: the package exposes `register_commands(subparsers)`, which adds its
parsers and sets `func` (args -> exit code) on each. Configuration is read here, at the edge, and
passed down; nothing deeper reads the environment or argv.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from webhook import commands as webhook_commands

CommandGroup = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def command_groups() -> list[CommandGroup]:
    """Every subcommand group, in the order `colocate --help` lists them."""
    from certs import cli as certs_cli
    from scheduler_plugins.scheduler import cli as scheduler_cli
    from webhook import configurations as webhook_configurations

    return [webhook_commands.register_commands, certs_cli.register_commands, scheduler_cli.register_commands,
            webhook_configurations.register_commands]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="colocate",
        description="Koordinator-compatible colocation admission webhook and scheduling plugins.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for register in command_groups():
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
