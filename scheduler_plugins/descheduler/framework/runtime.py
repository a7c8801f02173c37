"""Profiles and the descheduling round (Koordinator's
`pkg/descheduler/framework/runtime/framework.go`, `pkg/descheduler/descheduler.go`).

A round: the ready nodes matching the global node selector (fewer than two: an error, the round is
skipped); the limiter is reset; every profile's Deschedule plugins run, then every profile's
Balance plugins, each profile on the nodes its own selector matches. Plugins run in configured
order; their errors are collected, and an error aborts the remaining profiles of that phase. Then
a migrating Evict plugin (the MigrationController) advances its PodMigrationJobs once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from colocate.cluster.plugins import IN_TREE, PLUGIN_FAILURES, PluginError
from policies.apis.field_errors import ConfigError
from policies.apis.objects import labels_of
from policies.apis.selectors import LabelSelector
from scheduler_plugins.clock import Clock
from scheduler_plugins.descheduler.cluster import Snapshot, is_ready
from scheduler_plugins.descheduler.framework.config import DeschedulerConfig, Profile
from scheduler_plugins.descheduler.framework.evictor import EvictionLimiter, EvictionLimits, Evictor, running
from scheduler_plugins.descheduler.framework.handle import EventSink, EvictionBackend, Handle, MigrationBackend
from scheduler_plugins.descheduler.framework.interfaces import (
    BalancePlugin,
    DeschedulePlugin,
    EvictPlugin,
    FilterPlugin,
    MigratingEvictPlugin,
    Object,
    Plugin,
    Status,
)
from scheduler_plugins.descheduler.framework.registry import Registry
from scheduler_plugins.descheduler.framework.report import MigrationEntry, RoundReport

log = logging.getLogger("colocate.descheduler")

POINT_TYPES: dict[str, type] = {
    "deschedule": DeschedulePlugin,
    "balance": BalancePlugin,
    "evict": EvictPlugin,
    "filter": FilterPlugin,
}


def _matching(nodes: Sequence[Object], selector: LabelSelector | None) -> list[Object]:
    if selector is None or selector.is_empty:
        return list(nodes)
    return [node for node in nodes if selector.matches(labels_of(node))]


@dataclass
class ProfileRuntime:
    name: str
    node_selector: LabelSelector | None
    handle: Handle
    deschedule: tuple[DeschedulePlugin, ...]
    balance: tuple[BalancePlugin, ...]

    def run_deschedule_plugins(self, nodes: Sequence[Object], failed: list[str] | None = None) -> list[str]:
        return self._run(self.deschedule, lambda p: p.deschedule(nodes), failed)

    def run_balance_plugins(self, nodes: Sequence[Object], failed: list[str] | None = None) -> list[str]:
        return self._run(self.balance, lambda p: p.balance(nodes), failed)

    def _run(self, plugins: Sequence[Plugin], call: Callable[..., Status], failed: list[str] | None) -> list[str]:
        """The plugins' errors. A plugin that raises is skipped for the round (its evictions so far
        stand), noted in `failed`, and the next plugin runs: one broken package stops nothing else."""
        errors = []
        for plugin in plugins:
            try:
                with running(plugin.name):
                    status = call(plugin)
            except PLUGIN_FAILURES as exc:  # a plugin's bug (or its sys.exit()) is contained to the plugin
                line = f"profile {self.name}: plugin {plugin.name} raised {type(exc).__name__}: {exc}; skipped"
                log.error("%s", line)
                if failed is not None:
                    failed.append(line)
                continue
            if not status.ok:
                errors.append(f"{plugin.name}: {status.err}")
        return errors


def _instantiate(registry: Registry, name: str, profile: Profile, handle: Handle) -> Plugin:
    source = registry.source(name)
    if source == IN_TREE:
        return registry[name].factory(profile.args.get(name), handle)
    try:
        return registry[name].factory(profile.args.get(name), handle)
    except PLUGIN_FAILURES as exc:  # a third-party constructor: one line, exit 2
        raise PluginError(f"descheduler plugin {name} from distribution {source} failed to start: {exc!r}") from exc


def _build_profile(
    profile: Profile,
    index: int,
    registry: Registry,
    limiter: EvictionLimiter,
    dry_run: bool,
    clock: Clock,
    evictions: EvictionBackend,
    events: EventSink | None,
    migrations: MigrationBackend | None,
) -> ProfileRuntime:
    evictor = Evictor((), (), limiter, dry_run)
    handle = Handle(evictor, dry_run, clock, evictions, events, migrations)
    instances: dict[str, Plugin] = {}
    by_point: dict[str, list[Plugin]] = {point: [] for point in POINT_TYPES}
    for point, names in profile.plugins.items():
        for position, name in enumerate(names):
            if name not in instances:
                instances[name] = _instantiate(registry, name, profile, handle)
            plugin = instances[name]
            if not isinstance(plugin, POINT_TYPES[point]):
                raise ConfigError(
                    f"profiles[{index}].plugins.{point}.enabled[{position}].name",
                    f'plugin "{name}" does not extend {point}',
                )
            by_point[point].append(plugin)
    evictor.filters = tuple(p for p in by_point["filter"] if isinstance(p, FilterPlugin))
    evictor.evicts = tuple(p for p in by_point["evict"] if isinstance(p, EvictPlugin))
    return ProfileRuntime(
        profile.name,
        profile.node_selector,
        handle,
        tuple(p for p in by_point["deschedule"] if isinstance(p, DeschedulePlugin)),
        tuple(p for p in by_point["balance"] if isinstance(p, BalancePlugin)),
    )


class Descheduler:
    """The profiles of one configuration, built once (plugins keep state across rounds: LowNodeLoad's
    anomaly detectors); `run_round` runs one round over a snapshot."""

    def __init__(
        self,
        config: DeschedulerConfig,
        registry: Registry,
        clock: Clock,
        evictions: EvictionBackend,
        events: EventSink | None = None,
        dry_run: bool | None = None,
        migrations: MigrationBackend | None = None,
    ) -> None:
        self.config = config
        self.dry_run = config.dry_run if dry_run is None else dry_run
        self.limiter = EvictionLimiter(EvictionLimits(config.max_per_node, config.max_per_namespace, config.max_total))
        self.profiles = [
            _build_profile(p, i, registry, self.limiter, self.dry_run, clock, evictions, events, migrations)
            for i, p in enumerate(config.profiles)
        ]

    def run_round(self, number: int, snapshot: Snapshot) -> RoundReport:
        report = RoundReport(number, dry_run=self.dry_run)
        nodes = [n for n in _matching(snapshot.nodes, self.config.node_selector) if is_ready(n)]
        if len(nodes) <= 1:
            message = "the cluster size is 0 or 1 meaning eviction causes service disruption or degradation"
            log.error("%s; skipping the round", message)
            report.errors.append(message)
            return report
        self.limiter.reset()
        for profile in self.profiles:
            profile.handle.snapshot = snapshot
            profile.handle.evictor.report = report
        for phase in ("deschedule", "balance"):
            for profile in self.profiles:
                candidates = _matching(nodes, profile.node_selector)
                errors = (
                    profile.run_deschedule_plugins(candidates, report.failed_plugins)
                    if phase == "deschedule"
                    else profile.run_balance_plugins(candidates, report.failed_plugins)
                )
                if errors:
                    report.errors.extend(f"profile {profile.name}: {e}" for e in errors)
                    log.error("%s plugins of profile %s failed: %s", phase, profile.name, "; ".join(errors))
                    break
        if not self.dry_run:
            entries = self.reconcile_migrations()
            names = {e.job for e in entries}
            report.migrations[:] = [m for m in report.migrations if m.job not in names] + entries
            report.settle_migrations()
        return report

    def reconcile_migrations(self) -> list[MigrationEntry]:
        """One pass of every migrating Evict plugin over its PodMigrationJobs (after each round,
        and between rounds when running continuously: Koordinator requeues a job every 3s)."""
        entries: list[MigrationEntry] = []
        for profile in self.profiles:
            for plugin in profile.handle.evictor.evicts[:1]:
                if isinstance(plugin, MigratingEvictPlugin):
                    entries.extend(plugin.reconcile())
        return entries

    def scavenged_total(self) -> int:
        """PodMigrationJobs the migrating plugins' scavengers deleted since the start."""
        total = 0
        for profile in self.profiles:
            for plugin in profile.handle.evictor.evicts[:1]:
                scavenged = getattr(plugin, "scavenged", 0)  # a MigrationController's, else none
                total += scavenged if isinstance(scavenged, int) else 0
        return total
