"""What a NodeInput sums of its pods once (the HP pods and the prod request), read by the batch and
mid calculations every round: only active pods count, each in its own class."""

from __future__ import annotations

from scheduler_plugins.manager.noderesource.inputs import metric_input, node_input
from scheduler_plugins.manager.noderesource.plugins.batchresource.batch import hp_sums
from scheduler_plugins.manager.noderesource.plugins.midresource.mid import prod_requested
from tests.scheduler_plugins.manager.noderesource.builders import metric, node, pod, pod_metric

GI = 1024**3


def test_prod_request_counts_active_prod_pods_only() -> None:
    pods = [
        pod("prod", "2", "4Gi", qos="LS", priority=9000),
        pod("done", "8", "8Gi", qos="LS", priority=9000, phase="Succeeded"),
        pod("mid", "1", "1Gi", qos="LS", priority=7500),
        pod("batch", "3", "3Gi", qos="BE", priority=5500),
    ]
    assert prod_requested(node_input(node(), pods)) == (2000, 4 * GI * 1000)


def test_hp_sums_read_mid_and_prod_pods_with_their_metrics_and_lse_requests() -> None:
    pods = [
        pod("ls", "2", "4Gi", qos="LS", priority=9000),
        pod("lse", "4", "2Gi", qos="LSE", priority=9000),
        pod("mid", "1", "1Gi", qos="LS", priority=7500),
        pod("gone", "8", "8Gi", qos="LS", priority=9000, phase="Failed"),
        pod("batch", "3", "3Gi", qos="BE", priority=5500),
    ]
    reading = metric_input(
        metric(
            [
                pod_metric("ls", "1", "5Gi"),
                pod_metric("lse", "1", "1Gi"),
                pod_metric("batch", "3", "3Gi", "koord-batch"),
                pod_metric("other", "500m", "1Gi", "koord-prod"),
            ]
        )
    )
    assert reading is not None
    sums = hp_sums(node_input(node(), pods), reading)
    milli = GI * 1000
    # ls uses 1 / 5Gi, lse counts its 4 cpus requested and 1Gi used, mid (no metric) its request,
    # "other" (a metric of no listed pod, above batch) its usage; batch and the Failed pod nothing
    assert sums.request == (7000, 7 * milli)
    assert sums.used == (1000 + 4000 + 1000 + 500, 5 * milli + 1 * milli + 1 * milli + 1 * milli)
    assert sums.max_used_request == (2000 + 4000 + 500, 5 * milli + 2 * milli + 1 * milli)
