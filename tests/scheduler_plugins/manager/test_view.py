"""What makes the manager reconcile a node (`pkg/slo-controller/noderesource` event handlers,
`nodemetric_event_handler.go`, `config/configmap_event_handler.go`)."""

from __future__ import annotations

from colocate.cluster.store import ClusterStore
from scheduler_plugins.manager.cluster import MANAGER_KINDS, ManagerView
from tests.scheduler_plugins.manager.helpers import prod_metric, slo_config
from tests.support.builders import make_node


def view() -> tuple[ClusterStore, ManagerView]:
    store = ClusterStore(MANAGER_KINDS)
    the_view = ManagerView(store)
    the_view.take_changes()
    return store, the_view


def test_node_metric_creation_triggers_nothing_but_a_status_change_does() -> None:
    store, the_view = view()
    store.put("NodeMetric", prod_metric("2"))
    assert the_view.take_changes().nodes == set()
    store.put("NodeMetric", prod_metric("3"))
    assert the_view.take_changes().nodes == {"node-1"}
    store.delete("NodeMetric", prod_metric("3"))
    changes = the_view.take_changes()
    assert changes.forgotten == {"node-1"} and changes.nodes == {"node-1"}  # its last-write clock is dropped


def test_node_changes_and_config_changes() -> None:
    store, the_view = view()
    store.put("Node", make_node("node-1", cpu="4", memory="8Gi"))
    assert the_view.take_changes().nodes == {"node-1"}
    store.put("ConfigMap", slo_config())
    assert the_view.take_changes().config
    store.put("ConfigMap", {**slo_config(), "metadata": {**slo_config()["metadata"], "labels": {"a": "b"}}})
    assert not the_view.take_changes().config  # the data did not change
    store.delete("ConfigMap", slo_config())
    assert not the_view.take_changes().config and the_view.snapshot().configmap is not None  # ignored until restart
