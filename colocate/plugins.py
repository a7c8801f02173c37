"""`colocate plugins list`: every plugin of the four surfaces, in-tree and installed.

The surfaces' tables are the components' own (`scheduler_plugins.scheduler.registry`,
`scheduler_plugins.descheduler.registry`, the koordlet's strategy table, the webhook's routes);
installed distributions join them through `colocate.cluster.plugins`. Listing imports every installed
plugin, so a package whose import fails is reported here, one line on stderr naming its
distribution, and listed with its `error`; that is not a failure of the command (exit 0), a name
clash is (exit 2, after the list).
"""

from __future__ import annotations

import argparse
import json
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from colocate.cli import errors
from colocate.cli.output import add_output, table
from colocate.cli.parser import Subparsers, add_command_group
from colocate.cluster.plugins import IN_TREE, Discovered, PluginError, discovered, problems

Row = dict[str, Any]


def register_commands(subparsers: Subparsers) -> None:
    commands = add_command_group(
        subparsers, "plugins", help="the plugins of the scheduler, koordlet, descheduler and webhook"
    )
    listing = commands.add_parser(
        "list",
        help="every plugin: name, surface, source (in-tree or its distribution), extension points or hooks",
    )
    add_output(listing, ("table", "json"), default="table")
    listing.set_defaults(func=run_list)


def _protocol_methods(protocol: type) -> set[str]:
    names: set[str] = set()
    for base in protocol.__mro__:
        if base in (object, typing.Protocol, typing.Generic):
            continue
        names.update(n for n, v in vars(base).items() if not n.startswith("_") and callable(v))
    return names


def _class_of(factory: Callable[..., Any]) -> type | None:
    """The class a factory builds: itself, or its return annotation."""
    if isinstance(factory, type):
        return factory
    try:
        returned = typing.get_type_hints(factory).get("return")
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: points unknown
        return None
    return returned if isinstance(returned, type) else None


def implemented(factory: Callable[..., Any], protocols: Mapping[str, type]) -> list[str]:
    """The extension points (keys of `protocols`) whose methods the factory's class has."""
    cls = _class_of(factory)
    if cls is None:
        return []
    return [point for point, protocol in protocols.items() if all(hasattr(cls, m) for m in _protocol_methods(protocol))]


def _table_rows(surface: str, registry: Any, kind: type, protocols: Mapping[str, type]) -> Iterable[Row]:
    """The rows of a PluginTable (scheduler, descheduler); on a clash the in-tree rows, then the error."""
    try:
        registry.merge_discovered(surface, kind)
        clash = None
    except PluginError as exc:
        clash = exc
    for name in registry.names():
        yield {"name": name, "surface": surface, "source": registry.source(name)} | _guarded(
            lambda n: {"extensionPoints": implemented(registry[n].factory, protocols)}, name
        )
    if clash is not None:
        raise clash


def _scheduler_rows() -> Iterable[Row]:
    from scheduler_plugins.scheduler.framework.interfaces import EXTENSION_POINTS
    from scheduler_plugins.scheduler.framework.registry import PluginSpec
    from scheduler_plugins.scheduler.registry import in_tree_registry

    return _table_rows("scheduler", in_tree_registry(), PluginSpec, EXTENSION_POINTS)


def _descheduler_rows() -> Iterable[Row]:
    from scheduler_plugins.descheduler.framework.registry import PluginSpec
    from scheduler_plugins.descheduler.framework.runtime import POINT_TYPES
    from scheduler_plugins.descheduler.registry import in_tree_registry

    return _table_rows("descheduler", in_tree_registry(), PluginSpec, POINT_TYPES)


def _koordlet_rows() -> Iterable[Row]:
    from scheduler_plugins.koordlet.framework import StrategyEntry, builtin_strategies

    builtin = builtin_strategies()
    for entry in builtin:
        yield {
            "name": entry.name,
            "surface": "koordlet",
            "source": IN_TREE,
            "hooks": ["round"],
            "gates": list(entry.gates),
        }
    for found in discovered("koordlet", [e.name for e in builtin]):
        yield _row(found) | _guarded(lambda f: {"hooks": ["round"], "gates": [f.load(StrategyEntry).name]}, found)


def _webhook_rows() -> Iterable[Row]:
    from webhook.plugins import AdmissionPluginSpec
    from webhook.registry import in_tree_plugin_names, in_tree_routes

    routes = in_tree_routes()
    for name in in_tree_plugin_names():
        paths = [r.path for r in routes if any(p.name == name for p in r.plugins)]
        hooks = sorted({"mutate" if r.mutating else "validate" for r in routes if r.path in paths})
        yield {"name": name, "surface": "webhook", "source": IN_TREE, "hooks": hooks, "routes": paths}
    by_path = {r.path: r for r in routes}

    def described(found: Discovered) -> Row:
        spec = found.load(AdmissionPluginSpec)
        hooks = sorted({"mutate" if by_path[p].mutating else "validate" for p in spec.routes if p in by_path})
        return {"hooks": hooks, "routes": list(spec.routes)}

    for found in discovered("webhook", in_tree_plugin_names()):
        yield _row(found) | _guarded(described, found)


def _row(found: Discovered) -> Row:
    return {"name": found.name, "surface": found.surface, "source": found.distribution}


def _guarded(describe: Callable[..., Row], *args: Any) -> Row:
    """What `describe(*args)` says of a plugin, or its import failure, reported on stderr once."""
    try:
        return describe(*args)
    except PluginError as exc:
        print(f"warning: {errors.one_line(str(exc))}", file=sys.stderr)
        return {"error": str(exc)}


def collect() -> tuple[list[Row], list[str]]:
    """Every plugin of the four surfaces, and the clashes (a surface with one lists none of its installed)."""
    rows: list[Row] = []
    clashes = problems()
    for surface_rows in (_scheduler_rows, _koordlet_rows, _descheduler_rows, _webhook_rows):
        try:
            rows.extend(surface_rows())
        except PluginError as exc:
            if str(exc) not in clashes:
                clashes.append(str(exc))
    return rows, clashes


def _points(row: Row) -> str:
    if "error" in row:
        return "(failed to import)"
    return ",".join(row.get("extensionPoints") or row.get("hooks") or [])


def run_list(args: argparse.Namespace) -> int:
    rows, clashes = collect()
    if args.output == "json":
        print(json.dumps(rows, indent=2))
    else:
        print(
            table(
                ("SURFACE", "NAME", "SOURCE", "POINTS"),
                [(r["surface"], r["name"], r["source"], _points(r)) for r in rows],
            )
        )
    for clash in clashes:
        errors.report(clash)
    return errors.EXIT_USAGE if clashes else errors.EXIT_OK
