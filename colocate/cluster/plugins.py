"""Out-of-tree plugins: installed distributions' entry points, one group per surface.

The one discovery path for every component (the scheduler, the koordlet, the descheduler and the
admission chain): `importlib.metadata` entry points, read once per process and loaded lazily, so
that a package whose import fails costs nothing until its plugin is enabled. The group names are a
contract (docs/plugins.md):

* `colocate.scheduler.plugins`   — a scheduler `PluginSpec`
* `colocate.koordlet.strategies` — a koordlet `StrategyEntry`
* `colocate.descheduler.plugins` — a descheduler `PluginSpec`
* `colocate.webhook.plugins`     — a webhook `AdmissionPluginSpec`

An entry point's name is the plugin's name, the one users write in the configuration. Two
distributions giving the same name, or a distribution giving an in-tree plugin's name, is a
`PluginError` naming both sources; so is a plugin whose import fails, once it is enabled: the message
is one line naming the distribution, the command exits 2 with it.

This module knows nothing of the components: each one's registry merges `discovered(surface)` into
its own table (`scheduler_plugins.plugin_table.PluginTable.merge_discovered`, the koordlet's and the
webhook's own lists) and asks `load` for the object when a name is enabled.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Final, TypeVar, cast

#: the entry-point group of each surface (a contract: plugin packages name these in their metadata)
GROUPS: Final[Mapping[str, str]] = {
    "scheduler": "colocate.scheduler.plugins",
    "koordlet": "colocate.koordlet.strategies",
    "descheduler": "colocate.descheduler.plugins",
    "webhook": "colocate.webhook.plugins",
}
SURFACES: Final = tuple(GROUPS)
#: the source of a plugin shipped in colocate itself
IN_TREE: Final = "in-tree"
#: what plugin code may raise that its component contains (docs/plugins.md, "What a plugin may not
#: do"): every exception, and the two that would otherwise end the process, a plugin calling
#: `sys.exit()` or raising KeyboardInterrupt. Never asyncio.CancelledError or GeneratorExit: those
#: are the runtime's own, and stopping must still stop.
PLUGIN_FAILURES: Final = (Exception, SystemExit, KeyboardInterrupt)

T = TypeVar("T")


class PluginError(ValueError):
    """An out-of-tree plugin cannot be used: a name clash, or an import that failed. One line."""


@dataclass(frozen=True)
class Discovered:
    """One entry point of a surface's group, not yet imported."""

    name: str
    surface: str
    distribution: str
    #: `module:attribute`, as the distribution's metadata says
    value: str
    entry_point: metadata.EntryPoint

    @property
    def group(self) -> str:
        return GROUPS[self.surface]

    def describe(self) -> str:
        return f"{self.surface} plugin {self.name} ({self.value}) from distribution {self.distribution}"

    def load(self, kind: type[T]) -> T:
        """Import the plugin's object; a failure, or an object of the wrong kind or name, is a PluginError."""
        return cast(T, _load(self, kind))


def _load(found: Discovered, kind: type[Any]) -> Any:
    # cached per entry point: a module is imported once, and a failure is reported the same way each time
    key = (found.surface, found.name)
    if key not in _loaded:
        try:
            obj = found.entry_point.load()
        except Exception as exc:  # noqa: BLE001 - any import-time error of a third-party package
            detail = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            _loaded[key] = PluginError(f"{found.describe()} failed to import: {type(exc).__name__}: {detail}")
        else:
            if not isinstance(obj, kind):
                _loaded[key] = PluginError(
                    f"{found.describe()} is a {type(obj).__name__}, not a {kind.__name__} "
                    f"(group {found.group} names {kind.__name__} objects)"
                )
            elif getattr(obj, "name", found.name) != found.name:
                _loaded[key] = PluginError(
                    f"{found.describe()} is named {getattr(obj, 'name', '')!r}: the entry point's name must be "
                    "the plugin's name"
                )
            else:
                _loaded[key] = obj
    result = _loaded[key]
    if isinstance(result, PluginError):
        raise PluginError(str(result))
    return result


_loaded: dict[tuple[str, str], Any] = {}


@functools.cache
def _scan() -> tuple[tuple[Discovered, ...], tuple[str, ...]]:
    """Every entry point of the four groups, and the clashes between distributions (read once)."""
    found: list[Discovered] = []
    clashes: list[str] = []
    seen: dict[tuple[str, str], Discovered] = {}
    surfaces = {group: surface for surface, group in GROUPS.items()}
    for distribution in metadata.distributions():
        ours = [(surfaces[ep.group], ep) for ep in distribution.entry_points if ep.group in surfaces]
        if not ours:
            continue  # its METADATA is not even parsed: start-up pays for entry_points.txt only
        dist_name = distribution.metadata["Name"] or "(unnamed distribution)"
        for surface, entry_point in ours:
            item = Discovered(entry_point.name, surface, dist_name, entry_point.value, entry_point)
            other = seen.get((surface, item.name))
            if other is not None:
                if other.distribution != dist_name:
                    clashes.append(
                        f"{surface} plugin {item.name} is provided by two distributions: "
                        f"{other.distribution} ({other.value}) and {dist_name} ({item.value})"
                    )
                continue
            seen[(surface, item.name)] = item
            found.append(item)
    found.sort(key=lambda d: (SURFACES.index(d.surface), d.name))
    return tuple(found), tuple(clashes)


def discovered(surface: str, in_tree: Collection[str] = ()) -> list[Discovered]:
    """The out-of-tree plugins of `surface`, by name. A name two distributions give, or one of
    `in_tree` (the component's own names), is a PluginError naming both sources."""
    found, clashes = _scan()
    for clash in clashes:
        if clash.startswith(f"{surface} plugin "):
            raise PluginError(clash)
    mine = [d for d in found if d.surface == surface]
    for item in mine:
        if item.name in in_tree:
            raise PluginError(f"{item.describe()} clashes with the in-tree {surface} plugin {item.name}")
    return mine


def problems() -> list[str]:
    """Every clash between distributions, one line each (`colocate plugins list` reports them)."""
    return list(_scan()[1])


def rescan() -> None:
    """Forget what was discovered and loaded: for tests that change sys.path (a process scans once)."""
    _scan.cache_clear()
    _loaded.clear()
