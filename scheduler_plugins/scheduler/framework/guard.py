"""An out-of-tree plugin that raises: its Status is Error, as kube-scheduler makes a plugin's error.

A plugin reports failures as `Status` values; an exception escaping an installed distribution's
plugin is turned into one at the edge of the scheduling cycle, so one broken package fails the pod it
was scheduling (`Code.Error`, the plugin named) and not the command or the extender; so does a
plugin calling `sys.exit()` or raising KeyboardInterrupt (`PLUGIN_FAILURES`). `guard` wraps
the public methods of such a plugin's instance (the class keeps them, so the framework's
`runtime_checkable` extension-point checks see the same plugin) to raise `PluginRaised`, which the
scheduling loop, `explain` and the extender's verbs catch. In-tree plugins are not wrapped: an
exception there is a bug in colocate, and stays loud.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from colocate.cluster.plugins import PLUGIN_FAILURES
from scheduler_plugins.scheduler.framework.status import Code, Status

log = logging.getLogger("colocate.scheduler")


class PluginRaised(Exception):
    """`plugin` raised `error` at an extension point: the cycle's outcome is `status()`."""

    def __init__(self, plugin: str, method: str, error: BaseException) -> None:
        super().__init__(f"plugin {plugin} raised in {method}: {type(error).__name__}: {error}")
        self.plugin, self.method, self.error = plugin, method, error

    def status(self) -> Status:
        return Status(Code.Error, (str(self),), self.plugin)


def _guarded(method: Callable[..., Any], plugin: str, name: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except PluginRaised:
            raise
        except PLUGIN_FAILURES as exc:
            log.error("scheduler plugin %s raised in %s: %r", plugin, name, exc)
            raise PluginRaised(plugin, name, exc) from exc

    return call


def guard(plugin: object, name: str) -> None:
    """Wrap every public method of `plugin` (an instance) so that an exception becomes PluginRaised."""
    for attr, _ in inspect.getmembers(type(plugin), inspect.isfunction):
        if attr.startswith("_"):
            continue
        try:
            setattr(plugin, attr, _guarded(getattr(plugin, attr), name, attr))
        except AttributeError:  # __slots__ without __dict__: left unguarded (docs/plugins.md says so)
            return
