"""Reservation (Koordinator's `pkg/scheduler/plugins/reservation/`): owners consume what a
reservation holds, others cannot; allocateOnce; expiry releases; Unreserve rolls back; reserve pods
are scheduled and become Available."""

import json

import pytest

from policies.apis.timestamps import parse_time
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import load_config
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.simulate import simulate
from scheduler_plugins.scheduler.wiring import build_framework
from tests.support.builders import make_node, make_pod, make_reservation

ALLOCATED = "scheduling.koordinator.sh/reservation-allocated"
NOW = parse_time("2024-05-01T10:00:00Z")


def available(name="r1", node="n1", cpu="2", owner=None, **spec):
    obj = make_reservation(name)
    obj["metadata"]["uid"] = f"uid-{name}"
    obj["metadata"]["creationTimestamp"] = "2024-05-01T09:00:00Z"
    obj["spec"]["owners"] = [owner or {"object": {"name": "owner"}}]
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    obj["spec"].update(spec)
    if node:
        obj["status"] = {"phase": "Available", "nodeName": node}
    return obj


def setup(*objects, nodes=("n1", "n2"), cpu="4", now=NOW):
    cluster = ClusterState.from_objects([make_node(n, cpu=cpu, memory="8Gi") for n in nodes] + list(objects))
    clock = {"now": now}
    framework = build_framework(
        load_config(None, in_tree_registry()), in_tree_registry(), cluster, clock=lambda: clock["now"]
    )
    return Scheduler(framework, cluster), cluster, clock


def pod(name, cpu="2", **kw):
    return PodInfo(make_pod(name, requests={"cpu": cpu, "memory": "1Gi"}, **kw))


def test_an_available_reservation_holds_its_capacity_on_its_node():
    _, cluster, _ = setup(available(cpu="3"))
    assert cluster.nodes["n1"].requested["cpu"] == 3000


def test_the_owner_consumes_the_reservation_and_the_pod_names_it():
    scheduler, cluster, _ = setup(available(cpu="3"), nodes=("n1",))
    placement = scheduler.schedule_one(pod("owner", cpu="3"))
    assert placement.scheduled and placement.node == "n1"
    bound = cluster.nodes["n1"].pods["default/owner"]
    assert json.loads(bound.annotations[ALLOCATED]) == {"name": "r1", "uid": "uid-r1"}
    assert cluster.nodes["n1"].requested["cpu"] == 3000  # the owner replaced what the reservation held
    status = cluster.reservations.infos["r1"].status
    assert status["currentOwners"][0]["name"] == "owner"


def test_a_pod_that_is_not_an_owner_cannot_use_the_reserved_resources():
    scheduler, _, _ = setup(available(cpu="3"), nodes=("n1",))
    placement = scheduler.schedule_one(pod("stranger", cpu="3"))
    assert not placement.scheduled
    assert "Insufficient cpu" in placement.message


def test_the_owner_is_steered_to_the_node_of_its_reservation():
    scheduler, _, _ = setup(available(node="n2", cpu="1"))
    assert scheduler.schedule_one(pod("owner", cpu="1")).node == "n2"


def test_allocate_once_lets_only_one_owner_use_the_reservation():
    owners = {"labelSelector": {"matchLabels": {"app": "web"}}}
    scheduler, cluster, _ = setup(available(cpu="2", owner=owners), nodes=("n1",))
    first = scheduler.schedule_one(pod("web-1", cpu="2", labels={"app": "web"}))
    assert first.scheduled and ALLOCATED in cluster.nodes["n1"].pods["default/web-1"].annotations
    second = scheduler.schedule_one(pod("web-2", cpu="2", labels={"app": "web"}))
    assert second.scheduled  # on the free capacity of the node, not through the reservation
    assert ALLOCATED not in cluster.nodes["n1"].pods["default/web-2"].annotations


def test_without_allocate_once_several_owners_share_the_reservation():
    owners = {"labelSelector": {"matchLabels": {"app": "web"}}}
    scheduler, cluster, _ = setup(available(cpu="2", owner=owners, allocateOnce=False), nodes=("n1",), cpu="2")
    for name in ("web-1", "web-2"):
        assert scheduler.schedule_one(pod(name, cpu="1", labels={"app": "web"})).scheduled
    assert cluster.reservations.allocated("r1") == {"cpu": 2000, "memory": 2 * 1024**3}


def test_expiry_releases_the_resources():
    scheduler, _, clock = setup(available(cpu="3", ttl="2h"), nodes=("n1",))
    assert not scheduler.schedule_one(pod("stranger", cpu="3")).scheduled
    clock["now"] = NOW + 3600 + 1  # created 09:00 with a 2h TTL: expired at 11:00
    assert scheduler.schedule_one(pod("stranger", cpu="3")).scheduled


def test_an_expired_reservation_cannot_be_consumed_by_its_owner():
    scheduler, cluster, clock = setup(available(cpu="3", expires="2024-05-01T09:30:00Z"), nodes=("n1",))
    placement = scheduler.schedule_one(pod("owner", cpu="2"))
    assert placement.scheduled
    assert ALLOCATED not in cluster.nodes["n1"].pods["default/owner"].annotations


def test_unreserve_rolls_the_allocation_back():
    scheduler, cluster, _ = setup(available(cpu="3"), nodes=("n1",))
    fwk = scheduler.framework
    state = CycleState()
    owner = pod("owner", cpu="3")
    owner, _, status = fwk.run_pre_filter(state, owner)
    assert status.is_success
    assert fwk.run_reserve(state, owner, "n1").is_success
    assert cluster.reservations.allocated("r1")
    assert cluster.nodes["n1"].requested["cpu"] == 0  # the held entry shrank by the owner's request
    fwk.run_unreserve(state, owner, "n1")
    fwk.run_unreserve(state, owner, "n1")  # idempotent
    assert cluster.reservations.allocated("r1") == {}
    assert cluster.nodes["n1"].requested["cpu"] == 3000


def test_a_pod_with_reservation_affinity_must_use_a_reservation():
    affinity = {"scheduling.koordinator.sh/reservation-affinity": json.dumps({"name": "missing"})}
    scheduler, _, _ = setup(available(cpu="1"))
    placement = scheduler.schedule_one(pod("owner", cpu="1", annotations=affinity))
    assert not placement.scheduled
    assert "no reservations match reservation affinity" in placement.message


def test_restricted_policy_keeps_the_owner_within_the_reservation():
    scheduler, _, _ = setup(available(cpu="1", allocatePolicy="Restricted"), nodes=("n1",))
    affinity = {"scheduling.koordinator.sh/reservation-affinity": json.dumps({"name": "r1"})}
    placement = scheduler.schedule_one(pod("owner", cpu="2", annotations=affinity))
    assert not placement.scheduled and "Reservation(s) Insufficient cpu" in placement.message


def test_a_pending_reservation_is_scheduled_as_its_reserve_pod_then_consumed():
    pending = available(cpu="3", node=None)
    pending["spec"]["template"]["spec"]["nodeName"] = "n2"
    scheduler, cluster, _ = setup(pending, make_pod("owner", requests={"cpu": "3"}))
    report = simulate(scheduler, cluster)
    by_pod = {p.pod: p for p in report.placements}
    assert by_pod["Reservation/r1"].node == "n2"  # MaxInt32 priority: scheduled first, on its node
    assert by_pod["default/owner"].node == "n2"
    assert by_pod["default/owner"].reservation == "r1"
    info = cluster.reservations.infos["r1"]
    assert info.phase == "Available" and info.node_name == "n2"


@pytest.mark.parametrize(
    "owner, matches",
    [
        ({"object": {"name": "owner"}}, True),
        ({"object": {"name": "other"}}, False),
        ({"controller": {"kind": "Job", "name": "j"}}, True),
        ({"controller": {"kind": "Job", "name": "k"}}, False),
        ({"labelSelector": {"matchLabels": {"app": "web"}}}, True),
        ({}, True),
    ],
)
def test_owner_matching(owner, matches):
    from scheduler_plugins.scheduler.reservations import ReservationInfo

    info = ReservationInfo(available(owner=owner))
    target = make_pod("owner", labels={"app": "web"})
    target["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "j", "controller": True}]
    assert info.matches_owner(PodInfo(target)) is matches


async def test_through_the_extender_the_owner_filters_onto_its_reservation_and_bind_annotates_it():
    from aiohttp.test_utils import TestClient, TestServer

    from scheduler_plugins.scheduler.extender.server import make_app
    from scheduler_plugins.scheduler.extender.service import ExtenderService

    scheduler, cluster, _ = setup(available(cpu="3"), nodes=("n1", "n2"))
    owner = make_pod("owner", requests={"cpu": "3"})
    stranger = make_pod("stranger", requests={"cpu": "3"})
    async with TestClient(TestServer(make_app(ExtenderService(scheduler.framework, cluster)))) as client:
        for pod_obj, passing in ((stranger, ["n2"]), (owner, ["n1", "n2"])):
            response = await client.post("/scheduler/filter", json={"Pod": pod_obj, "NodeNames": ["n1", "n2"]})
            assert (await response.json())["NodeNames"] == passing
        response = await client.post("/scheduler/prioritize", json={"Pod": owner, "NodeNames": ["n1", "n2"]})
        scores = {h["Host"]: h["Score"] for h in await response.json()}
        assert scores["n1"] > scores["n2"]
        response = await client.post(
            "/scheduler/bind", json={"PodName": "owner", "PodNamespace": "default", "PodUID": "", "Node": "n1"}
        )
        assert (await response.json()) == {"Error": ""}
    assert json.loads(cluster.nodes["n1"].pods["default/owner"].annotations[ALLOCATED])["name"] == "r1"


def test_candidates_by_owner_name_never_miss_a_reservation_the_owner_matches():
    by_name = available("by-name", owner={"object": {"name": "owner"}})
    by_selector = available("by-selector", owner={"labelSelector": {"matchLabels": {"app": "web"}}})
    _, cluster, _ = setup(by_name, by_selector)
    names = lambda p: [r.name for r in cluster.reservations.candidates(p)]  # noqa: E731
    assert names(pod("owner")) == ["by-name", "by-selector"]
    assert names(pod("stranger")) == ["by-selector"]
    cluster.object_deleted("Reservation", ("", "by-selector"), by_selector)
    assert names(pod("stranger")) == []


@pytest.mark.parametrize("seed", range(30))
def test_the_batch_filter_path_agrees_with_filtering_node_by_node(seed):
    """With reservations, the framework filters a pod's matched nodes one by one (restored) and
    the rest in batch: the feasible set must be what `run_filter` says node by node."""
    import random

    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 8))]
    objects = []
    for i in range(rng.randint(0, 6)):
        owner = rng.choice([{"object": {"name": "owner"}}, {"labelSelector": {"matchLabels": {"app": "web"}}}, {}])
        policy = rng.choice(["", "Aligned", "Restricted"])
        objects.append(
            available(
                f"r{i}",
                node=rng.choice(names),
                cpu=str(rng.randint(1, 3)),
                owner=owner,
                allocatePolicy=policy,
                allocateOnce=rng.random() < 0.5,
            )
        )
    scheduler, cluster, _ = setup(*objects, nodes=names, cpu=str(rng.randint(2, 6)))
    fwk = scheduler.framework
    for name in ("owner", "web-1", "stranger"):
        annotations = None
        if rng.random() < 0.3:
            wanted = json.dumps({"name": f"r{rng.randint(0, 5)}"})
            annotations = {"scheduling.koordinator.sh/reservation-affinity": wanted}
        target = pod(
            name,
            cpu=str(rng.randint(1, 4)),
            labels={"app": "web"} if name == "web-1" else None,
            annotations=annotations,
        )
        state = CycleState()
        target, result, status = fwk.run_pre_filter(state, target)
        if not status.is_success:
            continue
        nodes = cluster.node_list()
        if result is not None and result.node_names is not None:
            nodes = [n for n in nodes if n.name in result.node_names]
        feasible, failed, _ = fwk.find_feasible(state, target, nodes, start=rng.randrange(len(nodes) or 1))
        one_by_one = {n.name for n in nodes if fwk.run_filter(state, target, n).is_success}
        assert {n.name for n in feasible} == one_by_one
        assert set(failed) == {n.name for n in nodes} - one_by_one


def test_a_pod_labelled_reservation_ignored_does_not_use_its_reservation():
    scheduler, cluster, _ = setup(available(cpu="3"), nodes=("n1",))
    placement = scheduler.schedule_one(
        pod("owner", cpu="3", labels={"scheduling.koordinator.sh/reservation-ignored": "true"})
    )
    assert not placement.scheduled and cluster.reservations.allocated("r1") == {}


def test_an_unschedulable_reservation_matches_nobody():
    scheduler, cluster, _ = setup(available(cpu="3", unschedulable=True), nodes=("n1",))
    assert not scheduler.schedule_one(pod("owner", cpu="3")).scheduled


@pytest.mark.parametrize("cpu, scheduled", [("3", True), ("4", False)])
def test_restricted_without_affinity_the_owner_may_still_fit_the_node_alone(cpu, scheduled):
    # 4 cpu node, reservation of 1 (Restricted, too small for the owner): an owner of 3 fits beside
    # it (3 free); one of 4 would need the reserved cpu, which Restricted forbids
    scheduler, cluster, _ = setup(available(cpu="1", allocatePolicy="Restricted"), nodes=("n1",))
    placement = scheduler.schedule_one(pod("owner", cpu=cpu))
    assert placement.scheduled is scheduled and placement.reservation == ""
    assert cluster.reservations.allocated("r1") == {}
