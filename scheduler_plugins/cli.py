"""`colocate scheduler ...` subcommands (owned by scheduler_plugins)."""
from __future__ import annotations

import argparse


def register_commands(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the `scheduler` command group. Subcommands are added as they are built."""
    scheduler = subparsers.add_parser("scheduler", help="scheduling framework, extender and simulator")
    scheduler.add_subparsers(dest="scheduler_command", metavar="SUBCOMMAND").required = True
