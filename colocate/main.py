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

Start-up is paid on every invocation, so a group's modules are imported only when that group runs:
`GROUPS` names each group's module and the commands it registers, and `build_parser(argv)` imports
the one group `argv` names (all of them for `colocate --help`, a mistyped command and the
reference docs; none for `colocate --version`). tests/colocate/test_startup.py keeps `import
colocate.main` free of the API client, and benchmarks/startup_bench.py measures the commands.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Final

from colocate import __version__
from colocate.cli import errors, flags
from colocate.cli.jsonlog import json_logging
from colocate.cli.parser import Parser, Subparsers, add_commands
from colocate.cluster.client import ClusterUnavailable
from colocate.cluster.plugins import PluginError

CommandGroup = Callable[[Subparsers], None]

log = logging.getLogger("colocate.main")

#: every subcommand group, in the order `colocate --help` lists them: the module whose
#: `register_commands` adds it, and the top-level commands it adds (a test keeps the two equal)
GROUPS: Final = (
    ("webhook.commands", ("serve", "apply")),
    ("certs.cli", ("certs",)),
    ("scheduler_plugins.scheduler.cli", ("scheduler",)),
    ("scheduler_plugins.koordlet.cli", ("koordlet",)),
    ("scheduler_plugins.descheduler.cli", ("descheduler",)),
    ("scheduler_plugins.manager.cli", ("manager",)),
    ("webhook.configurations", ("manifests",)),
    ("webhook.rollout.commands", ("test", "audit")),
    ("colocate.plugins", ("plugins",)),
    ("colocate.whatif.cli", ("whatif",)),
)


def command_groups(argv: Sequence[str] | None = None) -> list[CommandGroup]:
    """The groups `argv` needs, imported now: the one owning its command; none for a bare
    `--version`; every group when `argv` is None, names no command we have, or asks for help."""
    modules = [module for module, _ in GROUPS]
    if argv is not None:
        owners = {command: module for module, commands in GROUPS for command in commands}
        named = next((owners[word] for word in argv if word in owners), None)
        if named is not None:
            modules = [named]
        elif "--version" in argv and not {"-h", "--help"} & set(argv):
            modules = []
    registers: list[CommandGroup] = [importlib.import_module(module).register_commands for module in modules]
    return registers


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole `colocate` parser, or (given `argv`) just enough of it to parse `argv`."""
    parser = Parser(
        prog="colocate",
        description="Koordinator-compatible colocation admission webhook and scheduling plugins.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    flags.add_log_level(parser)
    subparsers = add_commands(parser, dest="command")
    for register in command_groups(argv):
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
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
        except Exception as exc:
            from colocate.cluster.files import ScanError  # imported only here: start-up stays light

            if isinstance(exc, ScanError):  # a --cluster directory past a scan limit: the line says which
                return errors.report(exc)
            raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
