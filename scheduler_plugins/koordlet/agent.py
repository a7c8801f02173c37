"""The node agent (`colocate koordlet run`, whose command is `command.py`): its loops on one event loop.

* states — the Node, its NodeSLO, its Pods (field selector `spec.nodeName=<node>`), its
  NodeResourceTopology and NodeMetric, from the API server through the shared cluster store; or
  from a node directory, re-read every few seconds. Usage always comes from the machine.
* collector — every `--collect-res-used-interval-seconds`, `/proc` and the cgroup files into the
  metric cache; below 1 s the QoS manager is disabled (as koordlet does).
* strategies — each enabled strategy on its own interval: its round is computed on the loop (pure),
  then the runner applies it in a worker thread (the executor's writes, the Evictor's evictions),
  or only logs it with `--dry-run`. CgroupReconcile also runs at once when the NodeSLO or the pods
  change (the states-informer callbacks).
* reporter — with an API server, the NodeMetric status every `reportIntervalSeconds`.
* HTTP — /healthz, /readyz, /metrics (started by `command.serve`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from colocate.cli.eventloop import wait_set
from colocate.cluster.kinds import WatchedKind
from colocate.cluster.store import ClusterStore, Object, ObjectKey
from policies.apis.constants import NODE_RESOURCE_TOPOLOGY_KIND
from policies.apis.cpuset import parse_cpuset
from policies.apis.kinds import NODE_METRIC_KIND, NODE_SLO_KIND
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite, ResourceExecutor, WriteStats
from scheduler_plugins.koordlet.cgroups.ids import RefusedPath
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout, detect_version
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.evictor import Evictor, EvictOutcome
from scheduler_plugins.koordlet.framework import (
    HOST_STRATEGIES,
    ExtensionRegistry,
    QOSManager,
    RoundReport,
    StrategyEntry,
    builtin_strategies,
    default_extensions,
)
from scheduler_plugins.koordlet.host import HostFiles, HostRoots, HostView
from scheduler_plugins.koordlet.metricsadvisor.cache import MetricCache
from scheduler_plugins.koordlet.metricsadvisor.collector import Collector, usage_from_cache
from scheduler_plugins.koordlet.metricsadvisor.reporter import CollectPolicy, node_metric_status, write_status
from scheduler_plugins.koordlet.node_round import round_input
from scheduler_plugins.koordlet.pods import pod_view
from scheduler_plugins.koordlet.prometheus import AgentMetrics
from scheduler_plugins.koordlet.refusals import EventQueue, Recorder, Refusals
from scheduler_plugins.koordlet.slo_keeper import EVENT_REASON as SLO_EVENT_REASON
from scheduler_plugins.koordlet.slo_keeper import SKIPPED_EVENT_REASON as SLO_SKIPPED_EVENT_REASON
from scheduler_plugins.koordlet.slo_keeper import NodeSLOKeeper
from scheduler_plugins.koordlet.states import CallbackType, NodeState, NodeStates, node_state
from scheduler_plugins.koordlet.strategies.base import Eviction, RoundInput, StrategyOptions
from scheduler_plugins.koordlet.topology import CPUInfo, machine_processors

log = logging.getLogger("colocate.koordlet")
MIN_COLLECT_INTERVAL = 1.0
SYNC_TIMEOUT = 120.0


def watched_kinds(node_name: str) -> list[WatchedKind]:
    by_name = f"metadata.name={node_name}"
    return [
        WatchedKind.of("Node", field_selector=by_name),
        WatchedKind.of(NODE_SLO_KIND, field_selector=by_name),
        WatchedKind.of("Pod", field_selector=f"spec.nodeName={node_name}"),
        WatchedKind.of(NODE_RESOURCE_TOPOLOGY_KIND, field_selector=by_name),
        WatchedKind.of(NODE_METRIC_KIND, field_selector=by_name),
    ]


@dataclass(frozen=True)
class AgentSettings:
    node_name: str
    cgroup_root: Path
    driver: CgroupDriver = CgroupDriver.CGROUPFS
    dry_run: bool = False
    only_evict_by_api: bool = False
    proc: Path = Path("/proc")
    node_dir: Path | None = None
    #: /sys and the resctrl mount (BlkIOReconcile, SystemConfig, RdtResctrl); /proc is `proc`
    sys_root: Path = Path("/sys")
    resctrl_root: Path = Path("/sys/fs/resctrl")
    reload_interval: float = 2.0
    host: str = "0.0.0.0"
    port: int = 9316
    extension_gates: dict[str, bool] = field(default_factory=dict)
    #: the installed strategies enabled in `--qos-extension-plugins`, run after the built-in ones
    plugin_strategies: tuple[StrategyEntry, ...] = ()


class _SyncedIndex:
    """Sets `event` (on the loop) once the store is synced."""

    def __init__(self, store: ClusterStore, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        self.store, self.loop, self.event = store, loop, event

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        pass

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        pass

    def changes_applied(self) -> None:
        if self.store.synced():
            self.loop.call_soon_threadsafe(self.event.set)


class Agent:
    """The node agent; `api` None means no API server (node directory, no reports, no evictions)."""

    def __init__(
        self,
        settings: AgentSettings,
        options: StrategyOptions,
        store: ClusterStore,
        api: Any = None,
        extensions: ExtensionRegistry | None = None,
        clock: Callable[[], float] = time.time,
        processors: Sequence[CPUInfo] | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.settings, self.options, self.store, self.api = settings, options, store, api
        self.clock = clock
        self.layout = CgroupLayout(settings.cgroup_root, detect_version(settings.cgroup_root), settings.driver)
        self.registry = registry or CollectorRegistry()
        self.metrics = AgentMetrics(self.registry)
        self.events = EventQueue(self._recorder())
        self.refusals = Refusals(self.metrics.path_refusals, self.events)
        self.slo_keeper = NodeSLOKeeper(self._slo_rejected, self._slo_key_skipped)
        self.executor = ResourceExecutor(
            self.layout, clock, dry_run=settings.dry_run, on_write=self._written, on_outside=self.refusals.outside
        )
        self.host_roots = HostRoots(settings.proc, settings.sys_root, settings.resctrl_root, settings.cgroup_root)
        self.host = HostView(self.host_roots)
        self.host_files = HostFiles(
            self.host_roots,
            clock,
            dry_run=settings.dry_run,
            on_write=lambda w: self.metrics.host_writes.labels(w.strategy).inc(),
        )
        self.cache = MetricCache()
        self.collector = Collector(self.layout, self.cache, settings.proc, on_refused=self.refusals.pod)
        self.manager = QOSManager(
            options, [*builtin_strategies(), *settings.plugin_strategies], timer=time.perf_counter
        )
        self.extensions = extensions or default_extensions()
        self.processors = tuple(processors if processors is not None else machine_processors())
        self.evictor = self._evictor()
        self.collected = False
        self.synced = asyncio.Event()
        self.reconcile_now = asyncio.Event()
        self.last_reports: dict[str, RoundReport] = {}
        self._warned: set[tuple[str, str]] = set()

    def _recorder(self) -> Recorder | None:
        if self.api is None:
            return None
        from colocate.cluster.events import EventRecorder

        return EventRecorder(self.api, "koordlet", self.settings.node_name)

    def _evictor(self) -> Evictor:
        client = None
        if self.api is not None:
            from colocate.cluster.eviction import EvictionClient

            client = EvictionClient(self.api)
        recorder = self.events.recorder
        return Evictor(client, recorder, self.settings.only_evict_by_api, self.settings.dry_run, self._procs_files)

    def _procs_files(self, eviction: Eviction) -> list[Path]:
        """The cgroup.procs files of the pod's cgroup, each checked to resolve inside the root:
        nothing outside it is ever killed."""
        try:
            view = pod_view(eviction.pod, self.layout, self.refusals.pod)
        except RefusedPath as refused:
            self.refusals.pod(eviction.pod, refused)
            return []
        subsystem = "cpu" if self.layout.version is CgroupVersion.V1 else ""
        base = self.layout.dir(view.dir, subsystem)
        if not self.layout.inside(base):
            self.refusals.outside(str(base), eviction.pod)
            return []
        files = []
        for procs in sorted(base.rglob("cgroup.procs")) if base.is_dir() else []:
            if self.layout.inside(procs):
                files.append(procs)
            else:
                self.refusals.outside(str(procs), eviction.pod)
        return files

    def _slo_rejected(self, slo: Object, message: str) -> None:
        self.metrics.node_slo_rejected.inc()
        self.events.warn(slo, SLO_EVENT_REASON, message)

    def _slo_key_skipped(self, slo: Object, where: str, message: str) -> None:
        self.metrics.node_slo_skipped_keys.labels(where.rpartition(".")[2]).inc()
        self.events.warn(slo, SLO_SKIPPED_EVENT_REASON, message)

    def state(self) -> NodeState:
        """The node's objects now, with the last good NodeSLO."""
        return node_state(self.store, self.settings.node_name, self.slo_keeper)

    def _written(self, write: CgroupWrite, text: str) -> None:
        self.metrics.writes.labels(write.strategy, write.resource.file(self.layout.version)).inc()

    def ready(self) -> bool:
        return self.store.synced() and self.collected

    # --- one step of each loop (synchronous: tests and the benchmark call them) ------------------
    def collect_once(self) -> None:
        started = time.perf_counter()
        self.collector.collect(self.state(), self.clock())
        self.metrics.collect_seconds.observe(time.perf_counter() - started)
        self.collected = True
        self.events.flush()

    def round_input(self) -> RoundInput:
        state = self.state()
        now = self.clock()
        window = self.options.collect_interval
        if state.node_slo is not None and state.node_slo.threshold.cpu_evict_time_window_seconds:
            window = max(window, float(state.node_slo.threshold.cpu_evict_time_window_seconds))
        usage = usage_from_cache(
            self.cache, state, now, max_age=2 * self.options.collect_interval + 1, be_window=window
        )
        return round_input(
            state,
            usage,
            self.layout,
            now,
            read=self.executor.read,
            processors=self.processors,
            host=self.host,
            on_refused=self.refusals.pod,
            subdirs=self.executor.subdirs,
        )

    def compute(self, names: Sequence[str]) -> RoundReport:
        report = self.manager.run_round(self.round_input(), names)
        for name in report.failed:
            self.metrics.strategy_failures.labels(name).inc()
        for name, seconds in report.durations.items():
            self.metrics.round_seconds.labels(name).observe(seconds)
        suppress = report.strategies.get("CPUSuppress") or {}
        if "suppressMilliCPU" in suppress:
            cores: float | None = None
            policy = str(suppress.get("policy"))
            if policy == "cpuset":
                cores = len(parse_cpuset(str(suppress.get("cpus") or "")))
            else:
                quota = suppress.get("cfsQuota")
                cores = None if quota is None else round(int(quota) / 100_000, 3)
            if cores is not None:
                self.metrics.suppressed_cpus.labels(policy).set(cores)
        for name in names:
            self.last_reports[name] = report
            if name in HOST_STRATEGIES:
                lacking = report.unavailable.get(name, {})
                for interface in HOST_STRATEGIES[name]:
                    self.metrics.interface_unavailable.labels(name, interface).set(1 if interface in lacking else 0)
                for interface, why in lacking.items():
                    if (name, interface) not in self._warned:
                        self._warned.add((name, interface))
                        log.warning("%s cannot act on this node: %s: %s", name, interface, why)
        return report

    def apply(self, report: RoundReport) -> tuple[WriteStats, list[EvictOutcome]]:
        """Blocking: the cgroup writes, then the evictions."""
        stats = self.executor.apply(report.writes)
        for failed in stats.failures:
            self.metrics.write_failures.labels(failed.strategy).inc()
        host = self.host_files.apply(report.host_writes)
        for error in host.errors[:3]:
            log.warning("host file write failed: %s", error)
        for error in stats.errors[:3]:
            log.debug("cgroup write failed: %s", error)
        outcomes = []
        for eviction in report.evictions:
            outcome = self.evictor.evict(eviction)
            self.metrics.evictions.labels(eviction.strategy, outcome.outcome).inc()
            outcomes.append(outcome)
        self.events.flush()
        return stats, outcomes

    def report_once(self) -> bool:
        state = self.state()
        policy = CollectPolicy.of(state.node_metric)
        status = node_metric_status(self.cache, state, self.clock(), self.clock(), policy)
        ok = write_status(self.api, self.settings.node_name, status)
        self.metrics.reports.labels("ok" if ok else "failed").inc()
        return ok

    # --- the loops -------------------------------------------------------------------------------
    async def _every(self, interval: float, step: Callable[[], Any], wake: asyncio.Event | None = None) -> None:
        while True:
            try:
                await step()
            except Exception:
                log.exception("koordlet loop step failed")
            if wake is None:
                await asyncio.sleep(interval)
                continue
            await wait_set(wake, interval)
            wake.clear()

    async def _collect(self) -> None:
        await asyncio.to_thread(self.collect_once)

    def _strategy_step(self, name: str) -> Callable[[], Any]:
        async def step() -> None:
            report = self.compute([name])
            if report.writes or report.evictions or report.host_writes:
                await asyncio.to_thread(self.apply, report)

        return step

    async def _report(self) -> None:
        await asyncio.to_thread(self.report_once)

    def _report_interval(self) -> float:
        return CollectPolicy.of(self.state().node_metric).report_interval

    async def run(self, source: Callable[[], Any]) -> None:
        """Run until cancelled; `source` is the coroutine that keeps the store current."""
        loop = asyncio.get_running_loop()
        states = NodeStates(self.store, self.settings.node_name, loop, self.slo_keeper)
        self.store.subscribe(states)
        self.store.subscribe(_SyncedIndex(self.store, loop, self.synced))
        for kind in (CallbackType.NODE_SLO_SPEC, CallbackType.ALL_PODS):
            states.callbacks.register(
                kind,
                "CgroupReconcile",
                "reconcile cgroups when the NodeSLO or pods change",
                lambda _t, _o, _target: self.reconcile_now.set(),
            )
        tasks = [
            asyncio.create_task(source(), name="koordlet-source"),
            asyncio.create_task(states.callbacks.run(), name="koordlet-callbacks"),
        ]
        try:
            await asyncio.wait_for(self.synced.wait(), SYNC_TIMEOUT)
            tasks.append(asyncio.create_task(self._every(self.options.collect_interval, self._collect)))
            if self.options.collect_interval < MIN_COLLECT_INTERVAL:
                log.warning("collect interval %.2fs < 1s: the QoS manager is disabled", self.options.collect_interval)
            else:
                self.manager.setup(self)
                for strategy in self.manager.enabled():
                    wake = self.reconcile_now if strategy.name == "CgroupReconcile" else None
                    tasks.append(
                        asyncio.create_task(
                            self._every(strategy.interval, self._strategy_step(strategy.name), wake),
                            name=f"koordlet-{strategy.name}",
                        )
                    )
                self.extensions.setup_all(self.api, self.cache, states)
                for name, plugin in self.extensions.enabled(self.settings.extension_gates):
                    tasks.append(asyncio.create_task(plugin.run(), name=f"koordlet-ext-{name}"))
            if self.api is not None:
                tasks.append(asyncio.create_task(self._report_loop()))
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _report_loop(self) -> None:
        await asyncio.sleep(min(self._report_interval(), 2 * self.options.collect_interval))
        while True:
            try:
                await self._report()
            except Exception:
                log.exception("NodeMetric report failed")
            await asyncio.sleep(self._report_interval())
