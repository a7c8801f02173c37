"""The live components of colocate, built over one in-memory `ClusterStore`, one phase each.

Each phase calls the code the component runs in a cluster, through its round façade, the one its
offline command uses too: the admission chain of `serve` and `apply` (`webhook.chain.run_chain`
over a `SnapshotIndex`), the manager's rounds (`manager run --cluster`: `ManagerRounds` of
`scheduler_plugins.manager.service`, written by a `StoreWriter`), the scheduler's runner
(`scheduler simulate`: `scheduler_plugins.scheduler.runner.SchedulerRunner`, with a scheduling
queue), one koordlet round per node as values (`koordlet plan`: `node_round.round_input`, then
`QOSManager.run_round`) and the descheduler's runner (`descheduler run --cluster`:
`scheduler_plugins.descheduler.runner.DeschedulerRunner`, evicting in the store). Nothing here
decides: it hands each component its inputs and the store its writes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import jsonpatch
from prometheus_client import CollectorRegistry

from colocate.cluster.store import ClusterStore, Object, ObjectKey
from policies.admission.plugin import AdmissionRequest
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.kinds import NODE_METRIC_KIND, NODE_SLO_KIND
from scheduler_plugins.clock import format_time
from scheduler_plugins.descheduler.runner import DeschedulerConfig, DeschedulerRunner, StoreEvictions
from scheduler_plugins.koordlet.node_round import (
    BECPU,
    CgroupDriver,
    CgroupLayout,
    CgroupVersion,
    CPUInfo,
    NodeSLO,
    NodeState,
    PodView,
    QOSManager,
    Resource,
    RoundReport,
    StrategyOptions,
    ThresholdStrategy,
    Usage,
    builtin_strategies,
    is_active,
    koordlet_gates,
    node_processors,
    pod_view,
    round_input,
    usage_of_node_metric,
)
from scheduler_plugins.manager.service import (
    ManagerMetrics,
    ManagerRounds,
    ManagerView,
    Reconciler,
    Round,
    StoreWriter,
)
from scheduler_plugins.scheduler.runner import (
    ClientError,
    ClusterState,
    SchedulerConfig,
    SchedulerRunner,
    SchedulingQueue,
    bound_copy,
    scheduler_gates,
)
from webhook.chain import ChainResult, request_for, run_chain
from webhook.registry import Registry, default_routes
from webhook.snapshots import SnapshotIndex
from webhook.watched import watched_kinds


class SimClock:
    """The one clock of a run: every component reads it; the loop moves it."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class StoreClient:
    """The scheduler's API client over the store: a binding, a patch or a deletion is a write to the
    store, which every component's view then follows (as a watch would)."""

    def __init__(self, store: ClusterStore, cluster: ClusterState, clock: SimClock) -> None:
        self.store, self.cluster, self.clock = store, cluster, clock

    def _pod(self, namespace: str, name: str) -> Object:
        pod = self.store.get("Pod", (namespace, name))
        if pod is None:
            raise ClientError(404, f"pods {namespace}/{name} not found")
        return pod

    def patch(self, kind: str, namespace: str, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]:
        current = self.store.get(kind, (namespace, name))
        if current is None:
            raise ClientError(404, f"{kind} {namespace}/{name} not found")
        patched: dict[str, Any] = jsonpatch.apply_patch(dict(current), patch)
        self.store.put(kind, patched)
        return patched

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        self._pod(namespace, name)
        pod, bound_to = self.cluster.find_pod(namespace, name)
        if pod is None:
            raise ClientError(404, f"pods {namespace}/{name} not found")
        if bound_to and bound_to != node_name:
            raise ClientError(409, f"pod {namespace}/{name} is already assigned to node {bound_to}")
        bound = bound_copy(pod, node_name, self.clock).obj
        status = bound.setdefault("status", {})
        status["phase"], status["startTime"] = "Running", format_time(self.clock())  # the kubelet starts it
        self.store.put("Pod", bound)

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        self.store.delete("Pod", self._pod(namespace, name))

    def evict_pod(self, namespace: str, name: str) -> None:
        result = StoreEvictions(self.store).evict(namespace, name)
        if result.code >= 400 and result.code != 404:
            raise ClientError(result.code, result.message)


class Admission:
    """`serve`'s admission chain over the store's current objects (profiles, namespaces, quotas)."""

    def __init__(self, store: ClusterStore, rand: random.Random, admission_plugins: Sequence[str] = ()) -> None:
        self.registry: Registry = default_routes(tuple(admission_plugins))
        kinds = frozenset(w.kind for w in watched_kinds(self.registry))
        self.index = _FilteredSnapshotIndex(store, kinds)
        self.rand = rand
        self._snapshot: ClusterSnapshot | None = None

    def snapshot(self) -> ClusterSnapshot:
        if self._snapshot is None or self.index.dirty.is_set():
            self._snapshot = self.index.build()
        return self._snapshot

    def admit(self, pod: dict[str, Any]) -> ChainResult:
        request: AdmissionRequest = request_for(pod, self.registry, "CREATE")
        return run_chain(request, self.registry, self.snapshot(), rand_int=self.rand.randrange)


class _FilteredSnapshotIndex(SnapshotIndex):
    """A `SnapshotIndex` told only of the kinds the webhook watches."""

    def __init__(self, store: ClusterStore, kinds: frozenset[str]) -> None:
        self.kinds = kinds
        super().__init__(store, strict=True)

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        if kind in self.kinds:
            super().object_put(kind, key, obj, old, source)

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        if kind in self.kinds:
            super().object_deleted(kind, key, old)


class Manager:
    """koord-manager's slo-controller: a round over the nodes whose inputs changed (all at first,
    after a config change and every `resync` seconds of the run's clock)."""

    def __init__(self, store: ClusterStore, clock: SimClock, resync: float = 300.0) -> None:
        self.rounds = ManagerRounds(
            Reconciler(clock), ManagerView(store), StoreWriter(store), ManagerMetrics(CollectorRegistry())
        )
        self.clock, self.resync = clock, resync
        self.last_full: float | None = None

    def round(self) -> Round | None:
        """The round (its writes in the store), None when no node's inputs changed."""
        now = self.clock()
        due = self.rounds.due(self.last_full is None or now - self.last_full >= self.resync)
        if due is None:
            return None
        result = self.rounds.run(due)
        if due.names is None:
            self.last_full = now
        return result


#: Koordinator's default `cpuSuppressThresholdPercent`, for a node without a NodeSLO (made once:
#: the record asks for it per node and step)
DEFAULT_CPU_SUPPRESS_THRESHOLD_PERCENT: Final = ThresholdStrategy().cpu_suppress_threshold_percent


class _NodeKoordlet:
    """One node's koordlet between rounds: its QoS manager (cool times, recovered policies), the
    cgroup files it wrote (what it reads back next round), its processors, and what it made of the
    objects it read last, kept while they are the very objects (the store replaces an object when it
    changes, never edits it): the NodeSLO's parse, the node's state and its pods' views."""

    __slots__ = (
        "manager",
        "files",
        "read",
        "processors",
        "slo_obj",
        "slo",
        "slo_error",
        "state",
        "node",
        "pods",
        "metric",
        "topology",
        "views",
    )

    def __init__(self, manager: QOSManager) -> None:
        self.manager = manager
        self.files: dict[tuple[str, str], object] = {}
        self.read: Callable[[str, Resource], Any] = self._read
        self.processors: tuple[CPUInfo, ...] | None = None
        self.slo_obj: Object | None = None
        self.slo: NodeSLO | None = None
        self.slo_error: str | None = None
        self.state: NodeState | None = None
        #: what `state` holds (the Node, the pods, the NodeMetric and the NodeResourceTopology), and
        #: the views of those pods
        self.node: Object | None = None
        self.pods: tuple[Object, ...] | None = None
        self.metric: Object | None = None
        self.topology: Object | None = None
        self.views: tuple[PodView, ...] = ()

    def _read(self, cgroup: str, resource: Resource) -> Any:
        return self.files.get((cgroup, resource.name))


class Koordlet:
    """One koordlet per node: its QoS manager keeps state across rounds (cool times); the cgroup
    files it wrote are what it reads back next round."""

    def __init__(self, gates: str | None, clock: SimClock) -> None:
        self.options = StrategyOptions(gates=koordlet_gates(gates))
        self.layout = CgroupLayout(Path("/"), CgroupVersion.V1, CgroupDriver.CGROUPFS)
        self.clock = clock
        #: one per node (bounded by the run's nodes)
        self._nodes: dict[str, _NodeKoordlet] = {}
        self.thresholds: dict[str, int] = {}
        #: each pod's view, parsed once per stored object (the live koordlet keeps its pods between
        #: rounds too); a node's views are kept while its pods are the very tuple read before
        self._views: dict[int, tuple[Object, PodView | None]] = {}

    def threshold_percent(self, node: str) -> int:
        """The node's `cpuSuppressThresholdPercent` (the NodeSLO's, else Koordinator's default)."""
        return self.thresholds.get(node, DEFAULT_CPU_SUPPRESS_THRESHOLD_PERCENT)

    def round(
        self,
        node: Object,
        pods: tuple[Object, ...],
        store: ClusterStore,
        be_cpu: BECPU | None,
        names: tuple[str, ...] | None = None,
        usage: Usage | None = None,
    ) -> RoundReport:
        """One round of the enabled strategies (of `names` only), its cgroup writes remembered.
        `usage`: what the node's metric cache holds now, when it is not yet the stored NodeMetric's
        (the koordlet reads its own cache, numbers, not the object it reports)."""
        name = str(node["metadata"]["name"])
        agent = self._nodes.get(name)
        if agent is None:
            agent = self._nodes[name] = _NodeKoordlet(QOSManager(self.options, builtin_strategies()))
        slo_obj = store.get(NODE_SLO_KIND, ("", name))
        if slo_obj is not agent.slo_obj:
            self._parse_slo(name, agent, slo_obj)
        metric = store.get(NODE_METRIC_KIND, ("", name))
        topology = store.get("NodeResourceTopology", ("", name))
        state = agent.state
        # the objects the state holds are compared as the agent keeps them (its own slots: the
        # state object itself is not read unless it is kept)
        if (
            state is None
            or metric is not agent.metric
            or node is not agent.node
            or pods is not agent.pods
            or topology is not agent.topology
        ):
            if pods is not agent.pods:
                view = self._view
                agent.views = tuple(v for p in pods if (v := view(p)) is not None)
            state = agent.state = NodeState(node, agent.slo, agent.slo_error, pods, topology, metric)
            agent.node, agent.pods, agent.metric, agent.topology = node, pods, metric, topology
        if usage is None:
            usage = usage_of_node_metric(metric, be_cpu)
        elif usage.be_cpu is not be_cpu:
            usage = Usage(usage.node, usage.pods, usage.host_apps, be_cpu)
        cpus = agent.processors
        if cpus is None:
            cpus = agent.processors = node_processors(node, topology)
        inp = round_input(
            state, usage, self.layout, self.clock.now, read=agent.read, processors=cpus, views=agent.views
        )
        report = agent.manager.run_round(inp, names)
        files = agent.files
        for write in report.writes:
            files[(write.cgroup, write.resource.name)] = write.value
        return report

    def _parse_slo(self, name: str, agent: _NodeKoordlet, obj: Object | None) -> None:
        """The NodeSLO `obj` parsed (its error kept instead when it is refused)."""
        slo, error = None, None
        if obj is not None:
            try:
                slo = NodeSLO.parse(obj)
            except ValueError as exc:
                error = f"NodeSLO {name}: {exc}"
        if slo is not None:
            self.thresholds[name] = slo.threshold.cpu_suppress_threshold_percent
        agent.slo_obj, agent.slo, agent.slo_error = obj, slo, error
        agent.state = None

    def _view(self, pod: Object) -> PodView | None:
        """The pod's view, None when it is not active (both depend on the pod object only)."""
        cached = self._views.get(id(pod))
        if cached is not None and cached[0] is pod:
            return cached[1]
        view = pod_view(pod, self.layout) if is_active(pod) else None
        self._views[id(pod)] = (pod, view)
        return view

    @property
    def views_cached(self) -> int:
        return len(self._views)

    def forget_pods(self, live: set[int]) -> None:
        """Drop the views of pods no longer stored (bounded by the live pods)."""
        for key in [k for k in self._views if k not in live]:
            del self._views[key]


def descheduler_over(store: ClusterStore, config: DeschedulerConfig, clock: SimClock) -> DeschedulerRunner:
    """The descheduler: a round every `deschedulingInterval` (never when 0), evicting in the store;
    its PodMigrationJobs advance every step in between (`DeschedulerRunner.step`)."""
    return DeschedulerRunner.over_store(store, config, clock)


def scheduler_over(store: ClusterStore, config: SchedulerConfig, clock: SimClock) -> SchedulerRunner:
    """kube-scheduler with the profile of the configuration and its scheduling queue, over the
    store: a step's pass (`SchedulerRunner.step`) attempts the pending pods the queue has ready
    (new ones, and those a cluster event or the unschedulable flush moved back, past their
    backoff); bindings and deletions are writes to the store."""
    cluster = ClusterState.of_store(store)
    queue = SchedulingQueue()
    store.subscribe(queue)
    client = StoreClient(store, cluster, clock)
    return SchedulerRunner(config, cluster, clock, client=client, features=scheduler_gates(), queue=queue)
