"""`--admission-plugins`: the one flag, and its one loader, of every command that runs the admission chain.

`serve`, `apply`, `test`, `audit` and `whatif` all judge with the chain the server runs, so they all
take the same installed admission plugins, spelled and checked the same way (`webhook.plugins`).
"""

from __future__ import annotations

import argparse

from colocate.cli.errors import UsageError
from colocate.cli.parser import Container

DEST = "admission_plugins"


def add_admission_plugins(container: Container) -> argparse.Action:
    return container.add_argument(
        "--admission-plugins",
        dest=DEST,
        default="",
        metavar="NAME[:/PATH...],...",
        help="installed admission plugins to enable, run after each route's in-tree plugins in this order; "
        "NAME:/PATH joins only that of its routes (`colocate plugins list`)",
    )


def admission_plugins(args: argparse.Namespace) -> tuple[str, ...]:
    """`--admission-plugins`, checked now (each name installed, importable, its routes known)."""
    from policies.apis.field_errors import ConfigError
    from webhook.plugins import parse_names
    from webhook.registry import default_routes

    try:
        names = parse_names(getattr(args, DEST))
        default_routes(names)
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    return names
