"""The `colocate` console script.

This module only builds the argument parser and dispatches. Each subcommand group is owned by the
package that implements it: the package exposes `register_commands(subparsers)`, which adds its
parsers and sets `func` (args -> exit code) on each. Configuration is read here, at the edge, and
passed down; nothing deeper reads the environment or argv.

The conventions the groups share live in `cli` (flags, `-o` formats, errors, JSON logs). Here, once
for every command: the global options (`--log-level`, `--version`), JSON logging for the duration
of the command, and the error convention (a `UsageError`, or a cluster that cannot be used, is one
line on stderr and exit code 2). A reader that stops reading (`colocate ... | head`) ends the command
quietly, with the exit status of a process killed by SIGPIPE (`colocate.cli.errors.EXIT_BROKEN_PIPE`, 141),
as other Unix tools do: commands let `BrokenPipeError` rise to here.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from colocate import __version__
from colocate.cli import errors, flags
from colocate.cli.jsonlog import json_logging
from colocate.cli.parser import Parser, Subparsers
from colocate.cluster.client import ClusterUnavailable
from colocate.cluster.plugins import PluginError
from webhook import commands as webhook_commands

CommandGroup = Callable[[Subparsers], None]

log = logging.getLogger("colocate.main")


def command_groups() -> list[CommandGroup]:
    """Every subcommand group, in the order `colocate --help` lists them."""
    from certs import cli as certs_cli
    from colocate import plugins as plugins_cli
    from colocate.whatif import cli as whatif_cli
    from scheduler_plugins.descheduler import cli as descheduler_cli
    from scheduler_plugins.koordlet import cli as koordlet_cli
    from scheduler_plugins.manager import cli as manager_cli
    from scheduler_plugins.scheduler import cli as scheduler_cli
    from webhook import configurations as webhook_configurations
    from webhook.rollout import commands as rollout_commands

    return [
        webhook_commands.register_commands,
        certs_cli.register_commands,
        scheduler_cli.register_commands,
        koordlet_cli.register_commands,
        descheduler_cli.register_commands,
        manager_cli.register_commands,
        webhook_configurations.register_commands,
        rollout_commands.register_commands,
        plugins_cli.register_commands,
        whatif_cli.register_commands,
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="colocate",
        description="Koordinator-compatible colocation admission webhook and scheduling plugins.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    flags.add_log_level(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for register in command_groups():
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help and --version
        return int(exc.code or 0)
    with json_logging(flags.log_level(args)):
        for note in flags.deprecations(args):
            log.warning(note)
        try:
            code = int(args.func(args))
            sys.stdout.flush()  # here, not at exit, so that a closed pipe is handled like any other
            return code
        except (errors.UsageError, ClusterUnavailable, PluginError) as exc:
            return errors.report(exc)
        except BrokenPipeError:
            return errors.stdout_closed()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
