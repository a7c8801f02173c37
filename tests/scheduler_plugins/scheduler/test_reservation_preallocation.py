"""Reservation pre-allocation, the resize annotation and the allocate-policy conflict between
reserve pods (Koordinator's `pkg/scheduler/plugins/reservation`: `TestBeforePreFilterForReservationPreAllocation`,
`Test_filterWithPreAllocatablePods`, `TestPreAllocation`, `TestFilter`; `pkg/util/reservation`
`TestSetReservationAvailable`)."""

import json

import pytest

from scheduler_plugins.scheduler.framework.handle import ClientError
from tests.scheduler_plugins.scheduler.test_reservation import available, setup
from tests.support.builders import make_pod, make_reservation

ALLOCATED = "scheduling.koordinator.sh/reservation-allocated"
RESIZE = "scheduling.koordinator.sh/reservation-resize-allocatable"
REQUIRED = "scheduling.koordinator.sh/pre-allocation-required"


def pending(name="r-pa", cpu="3", policy="Restricted", pre_allocation=True, required=False, **spec):
    obj = make_reservation(name)
    obj["metadata"]["uid"] = f"uid-{name}"
    if required:
        obj["metadata"]["labels"][REQUIRED] = "true"
    obj["spec"]["owners"] = [{"labelSelector": {"matchLabels": {"app": "web"}}}]
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": cpu}
    obj["spec"].update(allocatePolicy=policy, preAllocation=pre_allocation, allocateOnce=False, **spec)
    return obj


def running(name="web-0", cpu="3", node="n1", labels=None):
    return make_pod(name, requests={"cpu": cpu}, labels={"app": "web"} if labels is None else labels, node=node)


def place(scheduler, cluster, name="r-pa"):
    return scheduler.schedule_one(cluster.pending[f"Reservation/{name}"])


def allocated_to(cluster, key, node="n1"):
    raw = cluster.nodes[node].pods[key].annotations.get(ALLOCATED)
    return json.loads(raw)["name"] if raw else None


def test_a_pre_allocation_reservation_takes_over_a_running_pod():
    # TestPreAllocation "preallocation reservation binds to owner pod": the node is full (4 cpu, the
    # pod uses 3, the reservation asks 3): only by taking the pod over does the reservation fit
    scheduler, cluster, _ = setup(pending(), running(), nodes=("n1",))
    placement = place(scheduler, cluster)
    assert placement.scheduled and placement.node == "n1"
    assert allocated_to(cluster, "default/web-0") == "r-pa"
    assert cluster.nodes["n1"].requested["cpu"] == 3000  # the pod holds what the reservation holds
    status = cluster.reservations.infos["r-pa"].status
    assert status["phase"] == "Available" and status["currentOwners"][0]["name"] == "web-0"
    # the pod goes (a migration evicts it): the reservation holds its 3 cpu for the replacement
    cluster.delete_pod("default/web-0", "n1")
    assert cluster.nodes["n1"].requested["cpu"] == 3000
    assert cluster.reservations.remaining(cluster.reservations.infos["r-pa"]) == {"cpu": 3000}


@pytest.mark.parametrize(
    "objects, message",
    [
        # PreFilter: ErrReasonReservationPreAllocationRequired, no candidate anywhere
        (
            [pending(required=True), running(labels={"app": "db"})],
            "node(s) no pod match reservation with pre allocation required",
        ),
        # transformer: PreAllocation is only available on a Restricted Reservation
        (
            [pending(policy="Aligned"), running()],
            "node(s) reservation pre allocation is unsupported with current attributes",
        ),
        # ErrReasonReservationClusterModeDisabled: colocate has no cluster mode to enable
        (
            [pending(preAllocationPolicy={"mode": "Cluster"}), running()],
            "reservation requires cluster mode pre-allocation which is disabled",
        ),
        # Test_filterWithPreAllocatablePods "filter with pre allocation pods": a pod larger than the
        # Restricted reservation cannot be pre-allocated
        ([pending(required=True), running(cpu="4")], "Reservation(s) Insufficient cpu"),
        # "failed to filter with pre allocation not required: with pre-allocatable pods": the node
        # cannot hold the reservation with one (small) candidate given back, though it could with
        # every candidate gone (what NodeResourcesFit sees)
        (
            [pending(), running(cpu="1"), running("web-1", cpu="1"), running("busy", cpu="1", labels={})],
            "Insufficient cpu by node",
        ),
    ],
)
def test_a_pre_allocation_reservation_is_refused(objects, message):
    scheduler, cluster, _ = setup(*objects, nodes=("n1",))
    placement = place(scheduler, cluster)
    assert not placement.scheduled and message in placement.message
    assert all(ALLOCATED not in p.annotations for p in cluster.nodes["n1"].pods.values())


def test_without_a_fitting_pod_and_not_required_the_reservation_takes_free_capacity():
    # "filter with pre allocation not required: without pre-allocatable pods"
    scheduler, cluster, _ = setup(pending(cpu="1"), running(labels={"app": "db"}), nodes=("n1",))
    placement = place(scheduler, cluster)
    assert placement.scheduled
    assert cluster.reservations.allocations.get("r-pa", {}) == {}
    assert cluster.nodes["n1"].requested["cpu"] == 4000


def test_the_candidate_must_accept_the_reservation():
    # checkPreAllocatableMatched: the candidate's own reservation affinity names another reservation
    pod = running()
    pod["metadata"]["annotations"] = {"scheduling.koordinator.sh/reservation-affinity": '{"name": "r-other"}'}
    scheduler, cluster, _ = setup(pending(required=True), pod, nodes=("n1",))
    assert "no pod match reservation with pre allocation required" in place(scheduler, cluster).message


def test_the_resize_annotation_sets_what_the_reservation_holds_once_available():
    obj = make_reservation("r1")
    obj["metadata"]["annotations"] = {RESIZE: json.dumps({"resources": {"cpu": "2"}})}
    scheduler, cluster, _ = setup(obj, nodes=("n1",))
    assert place(scheduler, cluster, "r1").scheduled
    assert cluster.reservations.infos["r1"].status["allocatable"] == {"cpu": "2000m"}
    assert cluster.nodes["n1"].requested["cpu"] == 2000


def test_a_malformed_resize_annotation_is_ignored():
    obj = make_reservation("r1")
    obj["metadata"]["annotations"] = {RESIZE: "{not json"}
    scheduler, cluster, _ = setup(obj, nodes=("n1",))
    assert place(scheduler, cluster, "r1").scheduled
    assert cluster.reservations.infos["r1"].status["allocatable"] == {"cpu": "1000m"}


@pytest.mark.parametrize(
    "mine, theirs, conflict",
    [
        ("", "Aligned", True),  # TestFilter "ReservationAllocatePolicyDefault cannot coexist with Aligned policy"
        ("", "Restricted", True),  # "... cannot coexist with Restricted policy"
        ("Aligned", "Restricted", False),  # "Aligned policy can coexist with Restricted policy"
        ("Restricted", "Aligned", False),  # "Restricted policy can coexist with Aligned policy"
        ("Aligned", "", True),
        ("", "", False),
    ],
)
def test_reserve_pods_of_conflicting_allocate_policies_do_not_share_a_node(mine, theirs, conflict):
    existing = available("r-old", cpu="1", **({"allocatePolicy": theirs} if theirs else {}))
    new = make_reservation("r-new")
    if mine:
        new["spec"]["allocatePolicy"] = mine
    scheduler, cluster, _ = setup(existing, new, nodes=("n1",))
    placement = place(scheduler, cluster, "r-new")
    assert placement.scheduled is not conflict
    if conflict:
        assert "node(s) reservation allocate policy conflict" in placement.message


def test_a_failed_bind_gives_the_pre_allocated_pod_back():
    # Unreserve after PreBind (Koordinator's unreservePod): the pod loses reservation-allocated
    scheduler, cluster, _ = setup(pending(), running(), nodes=("n1",))
    client = scheduler.framework.handle.client
    patch = client.patch

    def refuse_status(kind, namespace, name, ops):
        if kind == "Reservation" and ops[0]["path"] == "/status":
            raise ClientError(500, "etcd is down")
        return patch(kind, namespace, name, ops)

    client.patch = refuse_status
    placement = place(scheduler, cluster)
    assert not placement.scheduled and "etcd is down" in placement.message
    assert allocated_to(cluster, "default/web-0") is None
    assert cluster.reservations.allocations.get("r-pa", {}) == {}
