"""One pod's requests, as kube-scheduler's PodRequests computes them, are the same number in the
webhook (exact quantities) and in the scheduler (integer scalars of PodInfo)."""

import pytest

from policies.admission.plugin import Denied
from policies.apis.quantity import quantity_list, resource_list, scalar_of
from policies.apis.resources import pod_resources
from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.admission import validate
from tests.support.builders import make_container, make_pod

GI = 1024**3


def sidecar(name, requests=None, limits=None):
    return make_container(name, requests=requests, limits=limits, restartPolicy="Always")


PODS = {
    "containers only": (
        make_pod(
            containers=[make_container("a", requests={"cpu": "500m"}), make_container("b", requests={"cpu": "1"})]
        ),
        {"cpu": 1500},
    ),
    "a sidecar runs beside the containers, the init peak runs beside the sidecar, overhead on top": (
        make_pod(
            requests={"cpu": "500m", "memory": "1Gi"},
            overhead={"cpu": "100m"},
            init_containers=[
                sidecar("proxy", {"cpu": "200m"}),
                make_container("init", requests={"cpu": "2", "memory": "512Mi"}),
            ],
        ),
        {"cpu": 2300, "memory": GI},  # max(500m + 200m, 200m + 2) + 100m
    ),
    "an init container before the sidecar does not run beside it": (
        make_pod(
            requests={"cpu": "1"},
            init_containers=[make_container("init", requests={"cpu": "1500m"}), sidecar("proxy", {"cpu": "250m"})],
        ),
        {"cpu": 1500},  # max(1 + 250m, 1500m)
    ),
    "sidecars accumulate, and their memory counts in the steady state": (
        make_pod(
            requests={"cpu": "1"},
            overhead={"cpu": "250m", "memory": "64Mi"},
            init_containers=[
                sidecar("a", {"cpu": "500m", "memory": "128Mi"}),
                sidecar("b", {"cpu": "500m"}),
                make_container("late", requests={"memory": "1Gi"}),
            ],
        ),
        {"cpu": 2250, "memory": 128 * 2**20 + GI + 64 * 2**20},  # memory: max(128Mi, 128Mi + 1Gi) + 64Mi
    ),
    "pod-level requests replace the containers' total for cpu and memory, overhead on top": (
        make_pod(
            requests={"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
            overhead={"cpu": "100m"},
            resources={"requests": {"cpu": "2", "ephemeral-storage": "5Gi"}},
        ),
        {"cpu": 2100, "memory": GI, "ephemeral-storage": GI},  # ephemeral-storage is not pod-level
    ),
    "pod-level limits alone leave the containers' requests": (
        make_pod(requests={"cpu": "500m"}, resources={"limits": {"cpu": "4"}}),
        {"cpu": 500},
    ),
}


@pytest.mark.parametrize("pod, expected", PODS.values(), ids=PODS.keys())
def test_webhook_and_scheduler_compute_the_same_requests(pod, expected):
    exact = pod_resources(pod, "requests", quantity_list)
    webhook = {name: scalar_of(name, quantity.canonical()) for name, quantity in exact.items()}
    assert webhook == PodInfo(pod).requests == expected


def test_limits_follow_the_same_rules():
    pod = make_pod(
        limits={"cpu": "1"}, overhead={"cpu": "100m"}, init_containers=[sidecar("proxy", limits={"cpu": "500m"})]
    )
    assert PodInfo(pod).limits == resource_list({"cpu": "1600m"})
    assert pod_resources(pod, "limits", quantity_list)["cpu"].milli_value() == 1600


def test_overhead_is_added_only_to_limits_that_are_set():
    """`PodLimits`: a pod without a memory limit does not gain one from its overhead."""
    pod = make_pod(limits={"cpu": "1"}, overhead={"cpu": "100m", "memory": "64Mi"})
    assert PodInfo(pod).limits == resource_list({"cpu": "1100m"})
    assert set(pod_resources(pod, "limits", quantity_list)) == {"cpu"}


def test_pod_level_limits_replace_the_containers_limits():
    pod = make_pod(limits={"cpu": "1", "memory": "1Gi"}, resources={"limits": {"memory": "4Gi"}})
    assert PodInfo(pod).limits == resource_list({"cpu": "1", "memory": "4Gi"})


def test_non_missing_requests_apply_per_container_and_not_to_overhead():
    pod = make_pod(requests={"cpu": "0"}, overhead={"memory": "1Mi"}, init_containers=[sidecar("proxy")])
    # main: cpu 0 (explicit), memory 200Mi (missing); the sidecar: 100m and 200Mi
    assert PodInfo(pod).non_zero_requests == {"cpu": 100, "memory": 400 * 2**20 + 2**20}


def test_the_webhook_counts_a_sidecar_in_the_cpus_of_an_lsr_pod():
    """Before the webhook shared the scheduler's PodRequests it took max(1, 500m) = 1 CPU and admitted
    this pod; the sidecar keeps running, so the pod asks for 1500m, which LSR refuses."""
    pod = make_pod(qos="LSR", priority=9500, requests={"cpu": "1"}, init_containers=[sidecar("proxy", {"cpu": "500m"})])
    with pytest.raises(Denied) as error:
        validate(pod)
    assert error.value.message == (
        'pod.spec.containers[*].resources.requests: Invalid value: "1500m": '
        "the requested CPUs of LSR Pod must be integer"
    )
