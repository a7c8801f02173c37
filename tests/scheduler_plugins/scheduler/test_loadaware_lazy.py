"""LoadAwareScheduling reads a NodeMetric when a pod needs it, not when it arrives: what Filter
and Score see is always the NodeMetric the store holds now (the store replaces a NodeMetric when
it changes), pods bound in between are counted once, and expiry is judged at the time of the
Filter, from the metric's `updateTime`, as before."""

from __future__ import annotations

from typing import Any

import pytest

import policies.apis.nodemetric
from colocate.cluster.store import ClusterStore
from policies.apis.timestamps import parse_time
from scheduler_plugins.scheduler.cluster.state import SCHEDULER_KINDS, ClusterState
from scheduler_plugins.scheduler.framework.columns import node_indexes
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.simulate import schedule_pending
from scheduler_plugins.scheduler.wiring import build_framework
from tests.support.builders import NOW, make_metric, make_node, make_pod, pod_metric
from tests.support.scheduling import make_config

LA = "LoadAwareScheduling"
REQ = {"cpu": "10", "memory": "10Gi"}  # estimate 8500m cpu
SMALL = {"cpu": "1", "memory": "1Gi"}
OK = ("Success", [])
CPU_OVER = ("Unschedulable", ["node(s) cpu usage exceed threshold"])
EXPIRED = ("Unschedulable", ["node(s) nodeMetric expired"])


class Clock:
    def __init__(self, at: str) -> None:
        self.now = parse_time(at) or 0.0

    def __call__(self) -> float:
        return self.now


class Cluster:
    """A scheduler following a store, as the extender and `colocate whatif` run it."""

    def __init__(self, nodes: int = 1) -> None:
        self.store = ClusterStore(SCHEDULER_KINDS)
        for i in range(nodes):
            self.store.put("Node", make_node(self.name(i), cpu="100", memory="1000Gi"))
        self.state = ClusterState.of_store(self.store)
        self.clock = Clock(NOW)
        self.framework = build_framework(make_config(), in_tree_registry(), self.state, self.clock)
        self.plugin: Any = self.framework.plugins[LA]

    @staticmethod
    def name(i: int) -> str:
        return f"node-{i + 1}"

    def put_metric(self, name: str = "node-1", **kwargs: Any) -> None:
        self.store.put("NodeMetric", make_metric(name, **kwargs))

    def filter(self, pod: dict[str, Any], node: str = "node-1") -> tuple[str, list[str]]:
        status = self.plugin.filter(CycleState(), PodInfo(pod), self.state.nodes[node])
        return status.code.name, list(status.reasons)

    def batch_passes(self, pod: dict[str, Any]) -> list[bool]:
        nodes = self.state.node_list()
        index = node_indexes(nodes)
        return [bool(x) for x in self.plugin.vector.filter_mask(CycleState(), PodInfo(pod), nodes, index)]

    def usage_cpu(self, node: str = "node-1") -> int:
        return int(self.plugin.cache.estimated_usage(node, False, "", 0.0)[self.plugin.resources.index("cpu")])


def test_a_nodemetric_replaced_in_the_store_is_what_the_next_filter_sees() -> None:
    cluster = Cluster()
    pod = make_pod(requests=SMALL, limits=SMALL)
    cluster.put_metric(cpu="20")
    assert cluster.filter(pod) == OK and cluster.batch_passes(pod) == [True]
    cluster.put_metric(cpu="90")
    assert cluster.filter(pod) == CPU_OVER and cluster.batch_passes(pod) == [False]
    cluster.put_metric(cpu="20")
    assert cluster.batch_passes(pod) == [True] and cluster.filter(pod) == OK
    cluster.store.delete("NodeMetric", make_metric("node-1"))  # no koordlet: never rejected
    assert cluster.filter(pod) == OK and cluster.batch_passes(pod) == [True]


def test_a_metric_replaced_twice_before_a_pod_is_scheduled_counts_only_the_last() -> None:
    cluster = Cluster()
    pod = make_pod(requests=SMALL, limits=SMALL)
    cluster.put_metric(cpu="20")
    cluster.put_metric(cpu="90")
    cluster.put_metric(cpu="30")
    assert cluster.filter(pod) == OK
    assert cluster.usage_cpu() == 30000


@pytest.mark.parametrize("read_between", [False, True])
def test_pods_bound_while_a_metric_is_unread_are_counted_once(read_between: bool) -> None:
    """The same usage whether the node's load was read between the changes or not: the metric
    reflects pod a (scheduled long before), not pod b (bound after), and c came and went."""
    cluster = Cluster()
    cluster.store.put("Pod", make_pod("a", requests=REQ, node="node-1", scheduled_at="2024-05-01T09:00:00Z"))
    cluster.put_metric(cpu="20", pods=[pod_metric("a", cpu="2")])
    if read_between:
        assert cluster.usage_cpu() == 20000
    cluster.store.put("Pod", make_pod("b", requests=REQ, node="node-1"))
    cluster.store.put("Pod", make_pod("c", requests=REQ, node="node-1"))
    if read_between:
        assert cluster.usage_cpu() == 37000
    cluster.store.delete("Pod", make_pod("c", node="node-1"))
    assert cluster.usage_cpu() == 28500
    cluster.put_metric(cpu="21", update_time="2024-05-01T10:00:30Z", pods=[pod_metric("a", cpu="2")])
    cluster.store.put("Pod", make_pod("c", requests=REQ, node="node-1"))
    assert cluster.usage_cpu() == 21000 + 8500 + 8500  # b and c are newer than the report window


def test_an_expired_metric_still_filters_as_before() -> None:
    """Expiry is judged when Filter runs, from the metric's `updateTime`: a metric read while
    fresh expires as the clock passes `nodeMetricExpirationSeconds` (180 s), with no new put."""
    cluster = Cluster()
    pod = make_pod(requests=SMALL, limits=SMALL)
    cluster.put_metric(cpu="20", update_time="2024-05-01T10:00:00Z")
    assert cluster.filter(pod) == OK and cluster.batch_passes(pod) == [True]
    cluster.clock.now += 119  # 10:02:59, 179 s after the update
    assert cluster.filter(pod) == OK and cluster.batch_passes(pod) == [True]
    cluster.clock.now += 1
    assert cluster.filter(pod) == EXPIRED and cluster.batch_passes(pod) == [False]
    cluster.put_metric(cpu="20", update_time="2024-05-01T10:02:30Z")
    assert cluster.filter(pod) == OK and cluster.batch_passes(pod) == [True]
    cluster.put_metric(cpu="20", update_time=None)  # no updateTime counts as expired
    assert cluster.batch_passes(pod) == [False] and cluster.filter(pod) == EXPIRED


def _read(cluster: Cluster, name: str) -> bool:
    """Whether the NodeMetric the store holds for the node has been read: the one NodeMetric
    reading (`policies.apis.nodemetric.read_node_metric`) keeps each node's last reading with the
    status it read. Observed there rather than by patching the reader, which the compiled
    modules' callers would not see (docs/development.md)."""
    stored = cluster.store.get("NodeMetric", ("", name))
    cached = policies.apis.nodemetric._read_cache.get(name)
    return stored is not None and cached is not None and cached[1] is stored.get("status")


def test_nodemetrics_put_without_a_pending_pod_are_not_read() -> None:
    """A koordlet's report every 60 s per node costs the scheduler nothing until a pod needs it:
    the scheduling pass with nothing pending reads none, one pod reads every node's."""
    cluster = Cluster(nodes=20)
    names = [Cluster.name(i) for i in range(20)]
    scheduler = Scheduler(cluster.framework, cluster.state)
    for minute in range(3):
        for name in names:
            cluster.put_metric(name, cpu=str(10 + minute), update_time=f"2024-05-01T10:0{minute}:30Z")
        assert schedule_pending(scheduler, cluster.state) == ([], [])
        assert [n for n in names if _read(cluster, n)] == []
    cluster.store.put("Pod", make_pod("new", requests=SMALL, limits=SMALL))
    placements, _ = schedule_pending(scheduler, cluster.state)
    assert len(placements) == 1 and placements[0].node
    assert [n for n in names if _read(cluster, n)] == names


def test_a_nodemetric_that_cannot_be_read_counts_as_none(caplog: pytest.LogCaptureFixture) -> None:
    """A malformed quantity: the node is judged as one without a NodeMetric (never rejected),
    with one warning naming it, until the NodeMetric is replaced. Koordinator's informer cannot
    decode such an object, so its lister has none. (Read eagerly, it used to raise out of the
    store's put: in the extender, an event applied half-way.)"""
    cluster = Cluster()
    pod = make_pod(requests=SMALL, limits=SMALL)
    cluster.put_metric(cpu="90")
    assert cluster.filter(pod) == CPU_OVER
    cluster.put_metric(cpu="ninety")
    with caplog.at_level("WARNING"):
        assert cluster.filter(pod) == OK and cluster.batch_passes(pod) == [True]
        assert cluster.filter(pod) == OK
    assert [r.getMessage() for r in caplog.records if "node-1" in r.getMessage()] == [
        "NodeMetric node-1 cannot be read (quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got 'ninety'): its node counts as one without a NodeMetric"
    ]
    cluster.put_metric(cpu="90")
    assert cluster.filter(pod) == CPU_OVER and cluster.batch_passes(pod) == [False]
