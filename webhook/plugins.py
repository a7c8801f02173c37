"""Admission plugins from installed distributions (`colocate.webhook.plugins` entry points).

An entry point names an `AdmissionPluginSpec`: the plugin's name, the routes it joins (paths of
`webhook.registry.default_routes()`, e.g. `/mutate-pod`) and a factory of a `MutatingPlugin` (on a
mutating route) or a `ValidatingPlugin` (on a validating one). Nothing joins the chain until the
configuration enables it: `--admission-plugins NAME,...` (`webhook/plugin_flag.py`: `serve`,
`apply`, `test`, `audit`, `whatif`; `NAME:/path` joins only that one of its routes). The enabled
plugins run after the route's in-tree plugins, in the order the flag lists them.

A plugin that raises is handled as the route's failure policy says of a webhook that fails: on a
`Fail` route the request is denied (500, the plugin named, as for an in-tree plugin's bug); on an
`Ignore` route (every registration `Ignore`: the node routes) the plugin is skipped, its changes to
the object dropped, and the error logged, so the request is admitted as if the plugin were absent.
A plugin calling `sys.exit()` or raising KeyboardInterrupt has failed the same way.

On the HTTPS port a route with an installed plugin is served in a thread of its own, within the
route's deadline (`webhook.port`): a plugin that blocks delays its own requests only, and past the
deadline the request is answered as kube-apiserver answers a webhook that timed out, by the
route's failure policy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from colocate.cluster.plugins import PLUGIN_FAILURES, discovered
from policies.admission.plugin import AdmissionContext, Denied, MutatingPlugin, ValidatingPlugin
from policies.apis.field_errors import ConfigError
from policies.apis.objects import json_copy

log = logging.getLogger("colocate.admission")

FLAG = "--admission-plugins"


@dataclass(frozen=True)
class AdmissionPluginSpec:
    """What a `colocate.webhook.plugins` entry point names."""

    name: str
    #: the paths of the routes it joins, e.g. ("/mutate-pod",)
    routes: tuple[str, ...]
    factory: Callable[[], MutatingPlugin | ValidatingPlugin]


class PluginExited(RuntimeError):
    """An installed plugin raised SystemExit or KeyboardInterrupt: a failure of the plugin, handled
    as any other exception of it (it must not end the server)."""


class _Contained:
    """An installed plugin on a route: on an Ignore route its exceptions are logged and its changes
    dropped; on a Fail route they reach the chain, which denies the request. SystemExit and
    KeyboardInterrupt are exceptions of the plugin like any other (`PLUGIN_FAILURES`)."""

    def __init__(self, plugin: Any, ignore_errors: bool, path: str) -> None:
        self.plugin, self.ignore_errors, self.path = plugin, ignore_errors, path
        self.name: str = plugin.name
        self.operations = plugin.operations
        self.reads = plugin.reads
        self.explains_itself: bool = bool(getattr(plugin, "explains_itself", False))

    def _ignored(self, exc: BaseException) -> None:
        log.error("plugin %s failed on %s (failurePolicy Ignore: skipped): %r", self.name, self.path, exc)

    def _failed(self, exc: BaseException) -> Exception:
        """What the chain sees of a failure on a Fail route: an Exception, whatever was raised."""
        return exc if isinstance(exc, Exception) else PluginExited(f"{type(exc).__name__}{exc.args!r}")

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        before = None if not self.ignore_errors else json_copy(obj)
        try:
            self.plugin.mutate(obj, ctx)
        except Denied:  # a decision, not a failure: it goes through
            raise
        except PLUGIN_FAILURES as exc:
            if before is None:
                raise self._failed(exc) from exc
            self._ignored(exc)
            obj.clear()
            obj.update(before)

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None:
        try:
            self.plugin.validate(obj, ctx)
        except Denied:
            raise
        except PLUGIN_FAILURES as exc:
            if not self.ignore_errors:
                raise self._failed(exc) from exc
            self._ignored(exc)


def installed_on(route: Any) -> list[str]:
    """The names of the installed plugins on `route` (those that run with a deadline: `webhook.port`)."""
    return [plugin.name for plugin in route.plugins if isinstance(plugin, _Contained)]


@dataclass(frozen=True)
class Enabled:
    """One term of `--admission-plugins`: `NAME` (every route the plugin declares) or
    `NAME:/path[:/path...]` (only those of its routes)."""

    name: str
    routes: tuple[str, ...] = ()


def parse_names(text: str) -> tuple[str, ...]:
    """`--admission-plugins` as its terms, checked: `A,B:/mutate-pod`; a plugin twice is a ConfigError."""
    terms = tuple(t.strip() for t in text.split(",") if t.strip())
    names = [_enabled(term).name for term in terms]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(FLAG, f"{name} is listed twice")
    return terms


def _enabled(term: str) -> Enabled:
    name, *paths = (part.strip() for part in term.split(":"))
    if not name or any(not p.startswith("/") for p in paths):
        raise ConfigError(FLAG, f"{term!r}: expected NAME or NAME:/path[:/path...]")
    return Enabled(name, tuple(paths))


def enabled_specs(terms: Sequence[str], in_tree: Sequence[str]) -> list[AdmissionPluginSpec]:
    """The specs of `terms`, imported now, narrowed to the routes a term names: an unknown name or
    a route the plugin does not declare is a ConfigError, a broken package a PluginError."""
    found = {d.name: d for d in discovered("webhook", in_tree)}
    specs = []
    for term in terms:
        enabled = _enabled(term)
        if enabled.name not in found:
            known = ", ".join(sorted(found)) or "none installed"
            raise ConfigError(FLAG, f"no installed admission plugin named {enabled.name!r} (installed: {known})")
        spec = found[enabled.name].load(AdmissionPluginSpec)
        if enabled.routes:
            if undeclared := [p for p in enabled.routes if p not in spec.routes]:
                raise ConfigError(
                    FLAG,
                    f"admission plugin {spec.name} declares the routes {', '.join(spec.routes)}, "
                    f"not {', '.join(undeclared)}",
                )
            spec = replace(spec, routes=enabled.routes)
        specs.append(spec)
    return specs


def join(routes: Sequence[Any], specs: Sequence[AdmissionPluginSpec]) -> list[Any]:
    """`routes` (webhook.registry.Route) with each spec's plugin appended to the routes it names."""
    by_path = {route.path: route for route in routes}
    for spec in specs:
        for path in spec.routes:
            route = by_path.get(path)
            if route is None:
                raise ConfigError(FLAG, f"admission plugin {spec.name} joins {path}, which is no route")
            plugin = spec.factory()
            method = "mutate" if route.mutating else "validate"
            if not callable(getattr(plugin, method, None)):
                raise ConfigError(FLAG, f"admission plugin {spec.name} joins {path} but has no {method} method")
            ignore = all(r.failure_policy == "Ignore" for r in route.registrations)
            by_path[path] = replace(route, plugins=(*route.plugins, _Contained(plugin, ignore, path)))
    return [by_path[route.path] for route in routes]
