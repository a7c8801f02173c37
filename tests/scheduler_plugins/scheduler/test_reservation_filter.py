"""Reservation's Filter against Koordinator's own cases: `Test_filterWithReservations` in
`pkg/scheduler/plugins/reservation/plugin_test.go`, transcribed case by case.

Koordinator's test states the node's requests as `podRequested` (every pod, reservations holding
included) and `rAllocated`; here the same node is built from objects: a filler pod, the
reservation (which holds what it has left) and the owners already using it."""

from __future__ import annotations

import json

import pytest

from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import load_config
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.wiring import build_framework
from tests.support.builders import make_node, make_pod, make_reservation

NODE = "test-node"
AFFINITY = "scheduling.koordinator.sh/reservation-affinity"
ALLOCATED = "scheduling.koordinator.sh/reservation-allocated"
GI = 1024**3


def reservation(policy, allocatable, owners_using=0, reserved=None):
    obj = make_reservation("test-r", labels={"pool": "test"})
    if reserved is not None:  # apiext.AnnotationNodeReservation on the Reservation
        obj["metadata"]["annotations"] = {"node.koordinator.sh/reservation": json.dumps({"resources": reserved})}
    obj["metadata"]["uid"] = "123456"
    obj["spec"].update(allocatePolicy=policy, allocateOnce=False, owners=[{"labelSelector": {}}])
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = dict(allocatable)
    obj["status"] = {"phase": "Available", "nodeName": NODE, "allocatable": dict(allocatable)}
    users = [
        make_pod(
            f"test-pod-{i}",
            node=NODE,
            requests={"cpu": "1"},
            annotations={ALLOCATED: json.dumps({"name": "test-r", "uid": "123456"})},
        )
        for i in range(owners_using)
    ]
    return [obj, *users]


def filter_status(objects, requests, affinity):
    node = make_node(
        NODE,
        allocatable={
            "cpu": "32",
            "memory": "32Gi",
            "pods": "100",
            "kubernetes.io/batch-cpu": "7500",
            "kubernetes.io/batch-memory": "10Gi",
        },
    )
    cluster = ClusterState.from_objects([node, *objects])
    fwk = build_framework(load_config(None, in_tree_registry()), in_tree_registry(), cluster, clock=lambda: 0.0)
    annotations = {AFFINITY: json.dumps(affinity)} if affinity is not None else None
    pod = PodInfo(make_pod("incoming", requests=requests, annotations=annotations))
    state = CycleState()
    pod, _, status = fwk.run_pre_filter(state, pod)
    assert status.is_success, status
    plugin = fwk.plugins["Reservation"]
    pod, restored, _, _ = plugin.before_filter(state, pod, cluster.nodes[NODE])
    return plugin.filter(state, pod, restored)


def filler(cpu, memory="24Gi", **extra):
    return make_pod("filler", node=NODE, requests={"cpu": cpu, "memory": memory, **extra})


SELECTOR = {"reservationSelector": {"pool": "test"}}  # hasAffinity, no reservation name
NAMED = {"name": "test-r"}  # hasAffinity and reservationName
BATCH_USED = {"kubernetes.io/batch-cpu": "1500", "kubernetes.io/batch-memory": "2Gi"}

# (Go test case name, objects on the node, pod requests, affinity, want reasons; () = success)
CASES = [
    (
        "filter aligned reservation with nodeInfo",
        [filler("24"), *reservation("Aligned", {"cpu": "6"})],
        {"cpu": "8", "memory": "8Gi"},
        SELECTOR,
        (),
    ),
    (
        "failed to filter aligned reservation with nodeInfo",
        [filler("26"), *reservation("Aligned", {"cpu": "6"})],  # no remaining resources
        {"cpu": "8", "memory": "8Gi"},
        SELECTOR,
        ("Insufficient cpu by node",),
    ),
    (
        "filter restricted reservation with nodeInfo",
        [filler("24"), *reservation("Restricted", {"cpu": "6"})],
        {"cpu": "6", "memory": "8Gi"},
        None,
        (),
    ),
    (
        "filter restricted reservation with affinity",
        [filler("24"), *reservation("Restricted", {"cpu": "6"})],
        {"cpu": "6", "memory": "8Gi"},
        SELECTOR,
        (),
    ),
    (
        "filter restricted reservation with nodeInfo and matched requests are zero",
        [filler("24", **BATCH_USED), *reservation("Restricted", {"cpu": "6"})],
        {"kubernetes.io/batch-cpu": "6000", "kubernetes.io/batch-memory": "8Gi"},
        SELECTOR,
        (),
    ),
    (
        "failed to filter restricted reservation with nodeInfo",
        [filler("24"), *reservation("Restricted", {"cpu": "6"})],
        {"cpu": "8", "memory": "8Gi"},
        SELECTOR,
        ("Reservation(s) Insufficient cpu",),
    ),
    (
        "failed to filter restricted reservation since exceeding max pods",
        [filler("23"), *reservation("Restricted", {"cpu": "7", "pods": "2"}, owners_using=2)],
        {"cpu": "3"},
        SELECTOR,
        ("Reservation(s) Too many pods",),
    ),
    (
        "failed to filter restricted reservation since unmatched resources are insufficient",
        [filler("24", **BATCH_USED), *reservation("Restricted", {"cpu": "6"})],
        {"kubernetes.io/batch-cpu": "8000", "kubernetes.io/batch-memory": "8Gi"},
        SELECTOR,
        ("Insufficient kubernetes.io/batch-cpu by node",),
    ),
    (
        "filter restricted reservation and ignore matched requests are zero without affinity",
        [filler("24", **BATCH_USED), *reservation("Restricted", {"cpu": "6"})],
        {"kubernetes.io/batch-cpu": "8000", "kubernetes.io/batch-memory": "8Gi"},
        None,
        ("Insufficient kubernetes.io/batch-cpu by node",),
    ),
    (
        "failed to filter restricted reservation due to reserved",
        [filler("24"), *reservation("Restricted", {"cpu": "6"}, reserved={"cpu": "2"})],
        {"cpu": "6", "memory": "8Gi"},
        SELECTOR,
        ("Reservation(s) Insufficient cpu",),
    ),
    (
        "failed to filter restricted reservation with reservation name since exceeding max pods",
        [filler("23"), *reservation("Restricted", {"cpu": "7", "pods": "2"}, owners_using=2)],
        {"cpu": "3"},
        NAMED,
        ("Reservation(s) Too many pods, requested: 1, used: 2, capacity: 2",),
    ),
]


@pytest.mark.parametrize(
    "objects,requests,affinity,want", [pytest.param(*c[1:], id=f"Test_filterWithReservations/{c[0]}") for c in CASES]
)
def test_filter_with_reservations_as_koordinator(objects, requests, affinity, want):
    status = filter_status(objects, requests, affinity)
    assert status.reasons == want
    assert status.is_success is (want == ())
    if want:
        assert status.code.name == "Unschedulable"


def test_an_aligned_owner_larger_than_its_reservation_is_scheduled_on_node_plus_reservation():
    """What a user notices: the pod of 8 cpu lands on the node through its 6-cpu Aligned
    reservation (2 cpu free besides it), as in Koordinator; it used to be rejected."""
    status = filter_status([filler("24"), *reservation("Aligned", {"cpu": "6"})], {"cpu": "8"}, None)
    assert status.is_success


def test_the_aligned_owner_is_scheduled_through_its_reservation_end_to_end():
    from scheduler_plugins.scheduler.framework.scheduling import Scheduler

    cluster = ClusterState.from_objects(
        [make_node(NODE, cpu="32", memory="32Gi"), filler("24"), *reservation("Aligned", {"cpu": "6"})]
    )
    fwk = build_framework(load_config(None, in_tree_registry()), in_tree_registry(), cluster, clock=lambda: 0.0)
    placement = Scheduler(fwk, cluster).schedule_one(PodInfo(make_pod("owner", requests={"cpu": "8"})))
    assert placement.scheduled and placement.reservation == "test-r"
    assert cluster.nodes[NODE].requested["cpu"] == 32000
