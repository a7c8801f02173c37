"""The extension points (Koordinator's `pkg/descheduler/framework/types.go`): one small interface
per point; a plugin implements only what it does, and the framework finds out which by looking
(`runtime_checkable`).

Contracts:
* `DeschedulePlugin.deschedule` / `BalancePlugin.balance` get the round's candidate nodes (ready,
  matching the global and the profile node selector); they evict only through `handle.evictor`
  and report an error as a `Status`, never by raising.
* `FilterPlugin.filter` says whether a pod may be considered at all; `pre_eviction_filter` is asked
  again right before the eviction. Both must be pure reads.
* `EvictPlugin.evict` evicts one pod and says whether it did; a refusal (a disruption budget) is a
  False with the reason recorded, not an exception. Only the first enabled Evict plugin is called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scheduler_plugins.descheduler.framework.report import MigrationEntry

Object = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's outcome: success, or an error message."""

    err: str | None = None

    @property
    def ok(self) -> bool:
        return self.err is None


SUCCESS = Status()


@dataclass(frozen=True, slots=True)
class EvictOptions:
    #: the plugin asking; the Evictor fills it from the running plugin when empty
    plugin_name: str = ""
    reason: str = ""
    grace_period_seconds: int | None = None


@runtime_checkable
class Plugin(Protocol):
    @property
    def name(self) -> str: ...


@runtime_checkable
class DeschedulePlugin(Plugin, Protocol):
    def deschedule(self, nodes: Sequence[Object]) -> Status: ...


@runtime_checkable
class BalancePlugin(Plugin, Protocol):
    def balance(self, nodes: Sequence[Object]) -> Status: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, pod: Object) -> bool: ...

    def pre_eviction_filter(self, pod: Object) -> bool: ...


@runtime_checkable
class EvictPlugin(Plugin, Protocol):
    def evict(self, pod: Object, options: EvictOptions) -> bool: ...


@runtime_checkable
class MigratingEvictPlugin(EvictPlugin, Protocol):
    """An Evict plugin that turns evictions into PodMigrationJobs (the MigrationController).

    `plan` says, without writing anything, what job an eviction would create (the Evictor asks it
    under dry run); `reconcile` advances the jobs once, after the round's plugins ran."""

    def plan(self, pod: Object, options: EvictOptions) -> bool: ...

    def reconcile(self) -> list[MigrationEntry]: ...
