"""`colocate whatif`'s koordlet keeps what it made of a node's objects between rounds (the NodeSLO's
parse, the pods' views, the state): a NodeSLO, a pod set or a NodeMetric the store replaced is read
in the very next round."""

from __future__ import annotations

from typing import Any

from colocate.cluster.store import ClusterStore
from colocate.whatif.components import Koordlet, SimClock
from colocate.whatif.usage import CPU_SUPPRESS
from policies.apis.kinds import NODE_METRIC_KIND, NODE_SLO_KIND
from tests.support.builders import make_metric, make_node, make_node_slo, make_pod, pod_metric

NODE = make_node("n1", capacity={"cpu": "20", "memory": "64Gi"}, allocatable={"cpu": "20", "memory": "64Gi"})
LS = make_pod("web", node="n1", requests={"cpu": "8"}, uid=True)
BE = make_pod("batch", node="n1", qos="BE", requests={"kubernetes.io/batch-cpu": "2000"}, uid=True)


def slo(percent: int) -> dict[str, Any]:
    return make_node_slo(
        "n1", threshold={"enable": True, "cpuSuppressThresholdPercent": percent, "cpuSuppressPolicy": "cfsQuota"}
    )


def metric(web: str, batch: str) -> dict[str, Any]:
    return make_metric("n1", cpu="12", pods=[pod_metric("web", cpu=web), pod_metric("batch", cpu=batch)])


def suppressed(koordlet: Koordlet, store: ClusterStore, pods: tuple[dict[str, Any], ...]) -> int:
    report = koordlet.round(NODE, pods, store, None)
    return int(report.strategies[CPU_SUPPRESS]["suppressMilliCPU"])


def test_a_replaced_nodeslo_pod_set_or_nodemetric_is_read_in_the_next_round() -> None:
    store = ClusterStore()
    store.put("Node", NODE)
    store.put(NODE_SLO_KIND, slo(70))
    store.put(NODE_METRIC_KIND, metric("8", "2"))
    koordlet = Koordlet(None, SimClock(0.0))
    both = (LS, BE)  # the same tuple while the pods do not change, as the run's pod index keeps it
    # 70 % of 20 cores, less the web pod's 8 and the system's 2 (12 used by 10 of pods)
    assert suppressed(koordlet, store, both) == 14000 - 8000 - 2000
    assert koordlet.threshold_percent("n1") == 70
    store.put(NODE_SLO_KIND, slo(60))
    assert suppressed(koordlet, store, both) == 12000 - 8000 - 2000
    assert koordlet.threshold_percent("n1") == 60
    # without the BE pod object, its usage counts as another non-BE pod's
    assert suppressed(koordlet, store, (LS,)) == 12000 - 10000 - 2000
    store.put(NODE_METRIC_KIND, metric("6", "4"))
    assert suppressed(koordlet, store, both) == 12000 - 6000 - 2000
