"""The QoS manager's framework (Koordinator's `pkg/koordlet/qosmanager`): the one table of
built-in strategies, the extension plugins, and one round of every enabled strategy.

`builtin_strategies()` is the table — name, the gates that enable it, the interval flag, the
factory — in one visible place; a duplicate name is an error. A strategy's `enabled()` is its
gate (fixed at start-up); the NodeSLO switch (`resourceUsedThresholdWithBE.enable`) is read by
the strategy every round, because a disabled CPUSuppress still has to recover the cgroups.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from colocate.cluster.plugins import PLUGIN_FAILURES, discovered
from policies.apis.feature_gates import parse_gate_map
from scheduler_plugins.koordlet import features, host
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite
from scheduler_plugins.koordlet.host import HostWrite
from scheduler_plugins.koordlet.strategies.base import Eviction, RoundInput, Strategy, StrategyOptions
from scheduler_plugins.koordlet.strategies.blkio import BlkIOReconcile
from scheduler_plugins.koordlet.strategies.cgroupreconcile import CgroupReconcile
from scheduler_plugins.koordlet.strategies.cpuburst import CPUBurst
from scheduler_plugins.koordlet.strategies.cpuevict import CPUEvict
from scheduler_plugins.koordlet.strategies.cpusuppress import CPUSuppress
from scheduler_plugins.koordlet.strategies.memoryevict import MemoryEvict
from scheduler_plugins.koordlet.strategies.resctrl import ResctrlReconcile
from scheduler_plugins.koordlet.strategies.systemconfig import SystemConfig

log = logging.getLogger("colocate.koordlet")


@dataclass(frozen=True)
class StrategyEntry:
    """A row of the strategy table; an out-of-tree strategy's entry point names one of these
    (`colocate.koordlet.strategies`), whose gate is its name in `--qos-extension-plugins`."""

    name: str  # without Koordinator's typo: CPUSuppress, not CPUSuppresss
    koordinator_name: str
    gates: tuple[str, ...]
    interval_flag: str
    factory: Callable[[StrategyOptions], Strategy]


def builtin_strategies() -> list[StrategyEntry]:
    """Every built-in strategy, in the order a round runs them."""
    table = [
        StrategyEntry(
            "CPUSuppress", "CPUSuppresss", (features.BE_CPU_SUPPRESS,), "cpu-suppress-interval-seconds", CPUSuppress
        ),
        StrategyEntry(
            "CPUEvict",
            "CPUEvict",
            (features.BE_CPU_EVICT, features.CPU_EVICT, features.CPU_ALLOCATABLE_EVICT),
            "cpu-evict-interval-seconds",
            CPUEvict,
        ),
        StrategyEntry(
            "MemoryEvict",
            "memoryEvict",
            (features.BE_MEMORY_EVICT, features.MEMORY_EVICT, features.MEMORY_ALLOCATABLE_EVICT),
            "memory-evict-interval-seconds",
            MemoryEvict,
        ),
        StrategyEntry(
            "CgroupReconcile",
            "CgroupReconcile",
            (features.CGROUP_RECONCILE,),
            "reconcile-interval-seconds",
            CgroupReconcile,
        ),
        StrategyEntry("CPUBurst", "CPUBurst", (features.CPU_BURST,), "reconcile-interval-seconds", CPUBurst),
        StrategyEntry(
            "BlkIOReconcile",
            "BlkioReconcile",
            (features.BLKIO_RECONCILE,),
            "reconcile-interval-seconds",
            BlkIOReconcile,
        ),
        StrategyEntry(
            "SystemConfig",
            "SystemConfigReconcile",
            (features.SYSTEM_CONFIG,),
            "reconcile-interval-seconds",
            SystemConfig,
        ),
        StrategyEntry(
            "ResctrlReconcile",
            "ResctrlReconcile",
            (features.RDT_RESCTRL,),
            "reconcile-interval-seconds",
            ResctrlReconcile,
        ),
    ]
    names = [e.name for e in table]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate strategy names in {names}")
    return table


#: the strategies that need host interfaces, and which (the closed labels of koordlet_interface_unavailable)
HOST_STRATEGIES: dict[str, tuple[str, ...]] = {
    "BlkIOReconcile": (host.INTERFACE_BLKIO, host.INTERFACE_IO),
    "SystemConfig": (
        host.INTERFACE_PROC_SYS_VM,
        host.INTERFACE_MEMCG_REAPER,
        host.INTERFACE_PROC_SYS_KERNEL,
        host.INTERFACE_PAGE_CACHE_LIMIT,
        host.INTERFACE_SCHED_FEATURES,
    ),
    "ResctrlReconcile": (host.INTERFACE_RESCTRL,),
}


def plugin_gates() -> dict[str, bool]:
    """The installed distributions' strategies (`colocate.cluster.plugins`), each a gate of
    `--qos-extension-plugins`, off by default (not imported; a clash is a PluginError)."""
    builtin = [e.name for e in builtin_strategies()]
    return {found.name: False for found in discovered("koordlet", builtin)}


def plugin_strategies(gates: Mapping[str, bool]) -> list[StrategyEntry]:
    """The entries of the installed strategies whose gate is on, imported now (PluginError if not)."""
    builtin = [e.name for e in builtin_strategies()]
    return [found.load(StrategyEntry) for found in discovered("koordlet", builtin) if gates.get(found.name)]


@dataclass(init=False)
class RoundReport:
    """One round of every strategy: what `plan` prints and the runner applies. Every field
    defaults to empty, in `__init__` (written out: the generated one calls a factory per field)."""

    strategies: dict[str, dict[str, Any]]
    writes: list[CgroupWrite]
    evictions: list[Eviction]
    durations: dict[str, float]
    host_writes: list[HostWrite]
    #: strategy -> interface -> why the node lacks it
    unavailable: dict[str, dict[str, str]]
    #: the strategies that raised this round (skipped: none of their writes or evictions are kept)
    failed: list[str]

    def __init__(
        self,
        strategies: dict[str, dict[str, Any]] | None = None,
        writes: list[CgroupWrite] | None = None,
        evictions: list[Eviction] | None = None,
        durations: dict[str, float] | None = None,
        host_writes: list[HostWrite] | None = None,
        unavailable: dict[str, dict[str, str]] | None = None,
        failed: list[str] | None = None,
    ) -> None:
        # the generated __init__'s, without a factory call per field: every node makes one or two
        # each step of a whatif run
        self.strategies = {} if strategies is None else strategies
        self.writes = [] if writes is None else writes
        self.evictions = [] if evictions is None else evictions
        self.durations = {} if durations is None else durations
        self.host_writes = [] if host_writes is None else host_writes
        self.unavailable = {} if unavailable is None else unavailable
        self.failed = [] if failed is None else failed


class QOSManager:
    """The built-in strategies, instantiated once (they keep state: cool times, recovered policies)."""

    def __init__(
        self,
        options: StrategyOptions,
        table: Sequence[StrategyEntry] | None = None,
        timer: Callable[[], float] | None = None,
    ) -> None:
        self.options = options
        self.entries = list(table if table is not None else builtin_strategies())
        self.strategies: dict[str, Strategy] = {e.name: e.factory(options) for e in self.entries}
        self._timer = timer
        #: each strategy with its gate, asked once: `enabled()` is fixed at start-up (the gates and
        #: intervals are flags), so a round does not ask again
        self._gated: tuple[tuple[str, Strategy, bool], ...] = tuple(
            (name, strategy, strategy.enabled()) for name, strategy in self.strategies.items()
        )

    def setup(self, ctx: Any) -> None:
        for strategy in self.strategies.values():
            strategy.setup(ctx)

    def enabled(self) -> list[Strategy]:
        return [strategy for _, strategy, on in self._gated if on]

    def run_round(self, inp: RoundInput, names: Sequence[str] | None = None) -> RoundReport:
        """One round of the enabled strategies (of `names` only, when given)."""
        report = RoundReport()
        statuses, timer = report.strategies, self._timer
        for name, strategy, on in self._gated:
            if names is not None and name not in names:
                continue
            if not on:
                statuses[name] = {"enabled": False}
                continue
            started = timer() if timer else 0.0
            try:
                result = strategy.round(inp)
            except PLUGIN_FAILURES as exc:  # one strategy's bug (or sys.exit()) skips its round, not the others'
                log.error("strategy %s raised %s: %s; skipped this round", name, type(exc).__name__, exc)
                statuses[name] = {"enabled": True, "error": f"{type(exc).__name__}: {exc}"[:500]}
                report.failed.append(name)
                continue
            if timer:
                report.durations[name] = timer() - started
            statuses[name] = {"enabled": True, **result.status}
            if result.writes:
                report.writes += result.writes
            if result.evictions:
                report.evictions += result.evictions
            if result.host_writes:
                report.host_writes += result.host_writes
            if result.unavailable:
                report.unavailable[name] = dict(result.unavailable)
        return report


# --- extension plugins ---------------------------------------------------------------


class ExtensionPlugin(Protocol):
    def init_flags(self, parser: argparse.ArgumentParser) -> None: ...

    def setup(self, kube_client: Any, metric_cache: Any, states: Any) -> None: ...

    async def run(self) -> None: ...


@dataclass(frozen=True)
class FeatureSpec:
    default: bool
    pre_release: str = "Alpha"


class ExtensionRegistry:
    """QoS extension plugins by feature name, each behind its own gate (`--qos-extension-plugins`)."""

    def __init__(self) -> None:
        self._plugins: dict[str, tuple[FeatureSpec, ExtensionPlugin]] = {}

    def register(self, feature: str, spec: FeatureSpec, plugin: ExtensionPlugin) -> None:
        """RegisterQOSExtPlugin: a taken name is an error."""
        if feature in self._plugins:
            raise ValueError(f"QoS extension plugin {feature!r} is already registered")
        self._plugins[feature] = (spec, plugin)

    def init_flags(self, parser: argparse.ArgumentParser) -> None:
        for _, plugin in self._plugins.values():
            plugin.init_flags(parser)

    def gates(self, text: str, strategies: Mapping[str, bool] | None = None) -> dict[str, bool]:
        """The plugins' gates, and the installed strategies' (`strategies`: `plugin_gates()`): their
        defaults with `--qos-extension-plugins`; unknown key ⇒ ConfigError."""
        defaults = {**(strategies or {}), **{name: spec.default for name, (spec, _) in self._plugins.items()}}
        return {**defaults, **parse_gate_map(text, defaults, "--qos-extension-plugins")}

    def setup_all(self, kube_client: Any, metric_cache: Any, states: Any) -> None:
        for _, plugin in self._plugins.values():
            plugin.setup(kube_client, metric_cache, states)

    def enabled(self, gates: Mapping[str, bool]) -> list[tuple[str, ExtensionPlugin]]:
        return [(name, plugin) for name, (_, plugin) in self._plugins.items() if gates.get(name)]


def default_extensions() -> ExtensionRegistry:
    """The extension plugins colocate ships: none yet; a deployment registers its own here."""
    return ExtensionRegistry()
