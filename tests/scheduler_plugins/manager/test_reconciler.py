"""The reconciler's memory: what it writes, and what it does not write again."""

from __future__ import annotations

from typing import Any

from colocate.cluster.store import ClusterStore
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.manager.cluster import MANAGER_KINDS, snapshot_of
from scheduler_plugins.manager.reconciler import Reconciler, SpecWrite, StatusWrite
from scheduler_plugins.manager.writer import StoreWriter
from tests.scheduler_plugins.manager.helpers import cluster
from tests.support.builders import NOW


def store_of(objects: list[dict[str, Any]]) -> ClusterStore:
    store = ClusterStore(MANAGER_KINDS)
    for obj in objects:
        store.put(obj["kind"], obj)
    return store


def apply(reconciler: Reconciler, store: ClusterStore) -> list[Any]:
    result = reconciler.reconcile(snapshot_of(store))
    writer = StoreWriter(store)
    for action in result.actions:
        done = writer.apply(action)
        assert done is not None
        if isinstance(action, StatusWrite):
            reconciler.written(action.node, reconciler.clock())
        if isinstance(action, SpecWrite):
            stored = done.stored
            if stored is not None and action.kind == "NodeSLO" and PRUNE:
                stored = prune(stored)  # what a server that prunes `extensions` keeps (and answers)
                store.put("NodeSLO", stored)
            reconciler.spec_written(action, stored)
    return result.actions


PRUNE = True


def prune(slo: Any) -> dict[str, Any]:
    return {**slo, "spec": {k: v for k, v in slo["spec"].items() if k != "extensions"}}


def test_a_spec_the_server_stores_differently_is_not_rewritten_in_a_loop() -> None:
    store = store_of(cluster())
    reconciler = Reconciler(fixed_clock(parse_time(NOW) or 0.0))
    first = apply(reconciler, store)
    assert {type(a).__name__ for a in first} >= {"StatusWrite", "SpecWrite"}
    assert apply(reconciler, store) == []  # the server's version of the last write: no NodeSLO write loop
    slo = dict(store.get("NodeSLO", ("", "node-1")) or {})
    store.put("NodeSLO", {**slo, "spec": {**slo["spec"], "cpuBurstStrategy": {"policy": "auto"}}})
    assert [type(a).__name__ for a in apply(reconciler, store)] == ["SpecWrite"]  # someone else's change: undone


def test_a_forgotten_node_is_written_again() -> None:
    """A deleted NodeMetric drops the node's last-write clock (Koordinator's SyncContext)."""
    store = store_of(cluster())
    reconciler = Reconciler(fixed_clock(parse_time(NOW) or 0.0))
    apply(reconciler, store)
    assert apply(reconciler, store) == []
    reconciler.forget(["node-1"])
    assert any(isinstance(a, StatusWrite) for a in apply(reconciler, store))


def test_a_spec_compared_once_is_compared_again_when_replaced_and_forgotten_with_its_node() -> None:
    """`_differs` keeps its last answer only while the stored and wanted specs are the objects compared."""
    store = store_of(cluster())
    reconciler = Reconciler(fixed_clock(parse_time(NOW) or 0.0))
    apply(reconciler, store)
    for _ in range(3):
        assert apply(reconciler, store) == []
    slo = dict(store.get("NodeSLO", ("", "node-1")) or {})
    store.put("NodeSLO", {**slo, "spec": {**slo["spec"], "cpuBurstStrategy": {"policy": "auto"}}})
    assert [type(a).__name__ for a in apply(reconciler, store)] == ["SpecWrite"]
    assert apply(reconciler, store) == []  # undone, and quiet again
    assert len(reconciler._compared) <= 2  # one per kind and node
    reconciler.forget(["node-1"])
    assert not reconciler._compared


def test_refused_inputs_raise_one_event_and_count_each_round() -> None:
    """A negative prod usage in node-1's NodeMetric: one Warning Event while the refusal holds, and
    `colocate_manager_inputs_refused_total{reason="NegativeUsage"}` once per round."""
    from prometheus_client import CollectorRegistry

    from scheduler_plugins.manager.metrics import ManagerMetrics
    from scheduler_plugins.manager.reconciler import REASON_REFUSED, NodeEvent
    from scheduler_plugins.manager.service import apply_round
    from tests.scheduler_plugins.manager.helpers import prod_metric

    store = store_of(cluster())
    store.put("NodeMetric", prod_metric("-30"))
    reconciler = Reconciler(fixed_clock(parse_time(NOW) or 0.0))
    registry = CollectorRegistry()
    metrics = ManagerMetrics(registry)
    rounds = []
    for _ in range(2):
        result = reconciler.reconcile(snapshot_of(store))
        apply_round(result, reconciler, StoreWriter(store), metrics)
        rounds.append([a for a in result.actions if isinstance(a, NodeEvent) and a.reason == REASON_REFUSED])
    assert [len(events) for events in rounds] == [1, 0]
    assert "NegativeUsage" in rounds[0][0].message
    node = store.get("Node", ("", "node-1")) or {}
    assert int(node["status"]["allocatable"]["kubernetes.io/batch-cpu"]) <= 32000
    counted = registry.get_sample_value("colocate_manager_inputs_refused_total", {"reason": "NegativeUsage"})
    assert counted == 2


def test_a_config_nested_deep_keeps_the_last_good_one_at_every_depth() -> None:
    """A 100,000-deep colocation-config raised RecursionError out of reconcile (and `manager run`
    exited 1 on every start); at any depth past the limit the last good config stays in force."""
    from tests.scheduler_plugins.manager.helpers import slo_config

    store = store_of(cluster())
    reconciler = Reconciler(fixed_clock(parse_time(NOW) or 0.0))
    reconciler.reconcile(snapshot_of(store))
    good = reconciler.config
    assert good is not None and good.colocation.cluster.enable
    for depth in (255, 999, 1000, 5000, 100_000):
        for deep in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
            store.put("ConfigMap", slo_config(deep))
            result = reconciler.reconcile(snapshot_of(store))
            assert reconciler.config is not None and reconciler.config.colocation == good.colocation
            assert [i.reason for i in result.config_issues] == ["ColocationCfgUnmarshalFailed"]
            assert "nested more than 254 levels deep" in result.config_issues[0].message
            assert not result.failed and result.plans
