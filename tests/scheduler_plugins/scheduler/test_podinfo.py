import pytest

from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_pod


@pytest.mark.parametrize(
    "pod, qos, priority_class",
    [
        (make_pod(), "BE", "koord-batch"),  # NOTE: an empty pod is BestEffort -> BE -> koord-batch
        (make_pod(requests={"cpu": "1"}, limits={"cpu": "1", "memory": "1Gi"}), "LS", "koord-prod"),
        (make_pod(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}), "LSR", "koord-prod"),
        (make_pod(qos="BE", priority=9500), "BE", "koord-prod"),
        (make_pod(qos="LS", priority=5500), "LS", "koord-batch"),
        (make_pod(qos="LS", priority=4500), "LS", "koord-prod"),  # out of band -> from QoS
        (make_pod(qos="BE", priority_class="koord-mid", priority=9500), "BE", "koord-mid"),
        (make_pod(qos="LS", priority_class="bogus", priority=5500), "LS", "koord-prod"),  # unknown label -> ""
        (make_pod(qos="NOPE"), "BE", "koord-batch"),
        (make_pod(qos="SYSTEM"), "SYSTEM", "koord-prod"),
    ],
)
def test_qos_and_priority_class_derivation(pod, qos, priority_class):
    info = PodInfo(pod)
    assert (info.qos_class, info.priority_class) == (qos, priority_class)


def test_pod_requests_follow_kubernetes_rules_for_init_and_sidecar_containers():
    pod = make_pod(requests={"cpu": "500m", "memory": "1Gi"})
    pod["spec"]["initContainers"] = [
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}},
    ]
    pod["spec"]["overhead"] = {"cpu": "100m"}
    info = PodInfo(pod)
    # steady state 500m + 200m sidecar = 700m; init peak 200m + 2 = 2200m; + 100m overhead
    assert info.requests == {"cpu": 2300, "memory": 1024**3}


def test_non_zero_requests_default_missing_cpu_and_memory_but_keep_explicit_zero():
    info = PodInfo(make_pod(requests={"cpu": "0"}))
    assert info.non_zero_requests == {"cpu": 0, "memory": 200 * 1024 * 1024}


def test_batch_pod_requests_are_counted_in_the_batch_band():
    info = PodInfo(make_pod(qos="BE", priority=5500, requests={"cpu": "2", "kubernetes.io/batch-memory": "1Gi"}))
    assert info.qos_requests == {"kubernetes.io/batch-cpu": 2000, "kubernetes.io/batch-memory": 1024**3}
