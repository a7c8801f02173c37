"""Coscheduling (Koordinator's `pkg/scheduler/plugins/coscheduling/`): a gang is placed whole or not
at all, in the simulator."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.apis.timestamps import parse_time
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import load_config, parse_config
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.simulate import simulate
from scheduler_plugins.scheduler.wiring import build_framework
from tests.support.builders import make_node, make_pod

NOW = parse_time("2024-05-01T10:00:00Z")
GANG = "gang.scheduling.koordinator.sh/"


def member(name, gang="job", min_available=3, cpu="1", mode=None, wait=None, total=None, **kw):
    annotations = {GANG + "name": gang, GANG + "min-available": str(min_available)}
    if mode:
        annotations[GANG + "mode"] = mode
    if wait:
        annotations[GANG + "waiting-time"] = wait
    if total:
        annotations[GANG + "total-number"] = str(total)
    return make_pod(name, annotations=annotations, requests={"cpu": cpu}, **kw)


def setup(objects, nodes=1, cpu="2"):
    cluster = ClusterState.from_objects(
        [make_node(f"n{i}", cpu=cpu, memory="8Gi") for i in range(nodes)] + list(objects)
    )
    clock = {"now": NOW}
    fwk = build_framework(
        load_config(None, in_tree_registry()), in_tree_registry(), cluster, clock=lambda: clock["now"]
    )
    return Scheduler(fwk, cluster), cluster, clock


def outcome(report):
    return {p.pod.split("/")[1]: (p.node or None, p.status.code.name) for p in report.unqueued + report.placements}


def test_a_gang_that_fits_is_bound_whole():
    scheduler, cluster, _ = setup([member(f"m{i}") for i in range(3)], nodes=2)
    report = simulate(scheduler, cluster)
    assert all(code == "Success" for _, code in outcome(report).values())
    assert sum(len(n.pods) for n in cluster.nodes.values()) == 3


def test_a_strict_gang_that_does_not_fit_is_not_bound_at_all():
    scheduler, cluster, _ = setup([member(f"m{i}") for i in range(3)], nodes=1)  # room for 2
    report = simulate(scheduler, cluster)
    assert {node for node, _ in outcome(report).values()} == {None}
    assert all(not n.pods for n in cluster.nodes.values())
    messages = " ".join(p.message for p in report.placements)
    assert "Gang 'default/job' gets rejected due to member Pod" in messages


def test_a_gang_with_fewer_members_than_min_available_is_held_back():
    scheduler, cluster, _ = setup([member("m0"), member("m1")], nodes=2)
    report = simulate(scheduler, cluster)
    assert not report.placements
    assert all("child pod not collect enough" in p.message for p in report.unqueued)


def test_members_waiting_on_permit_time_out_and_are_all_rejected():
    scheduler, cluster, clock = setup([member(f"m{i}", wait="30s") for i in range(3)], nodes=2)
    pods = {p.name: p for p in cluster.pending.values()}
    first, second = scheduler.schedule_one(pods["m0"]), scheduler.schedule_one(pods["m1"])
    assert first.status.code.name == "Wait" and first.node
    assert sum(len(n.pods) for n in cluster.nodes.values()) == 2  # assumed while waiting
    clock["now"] = NOW + 31
    scheduler.expire_waiting()
    for placement in (first, second):
        assert not placement.scheduled and placement.node == ""
        assert "timeout" in placement.message
    assert all(not n.pods for n in cluster.nodes.values())


def test_non_strict_keeps_the_others_waiting_and_a_later_member_completes_the_gang():
    # m1 fits nowhere; Strict would reject m0; NonStrict waits on and m2 + m3 complete the gang.
    pods = [
        member("m0", mode="NonStrict", total=4),
        member("m1", cpu="9", mode="NonStrict", total=4),
        member("m2", mode="NonStrict", total=4),
        member("m3", mode="NonStrict", total=4),
    ]
    scheduler, cluster, _ = setup(pods, nodes=2)
    result = outcome(simulate(scheduler, cluster))
    assert result["m1"] == (None, "Unschedulable")
    assert all(result[m][1] == "Success" for m in ("m0", "m2", "m3"))


def test_strict_rejects_the_waiting_members_when_one_is_unschedulable():
    pods = [member("m0", total=4), member("m1", cpu="9", total=4), member("m2", total=4), member("m3", total=4)]
    scheduler, cluster, _ = setup(pods, nodes=2)
    result = outcome(simulate(scheduler, cluster))
    assert {node for node, _ in result.values()} == {None}


def test_a_pod_group_defines_the_gang():
    group = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "default"},
        "spec": {"minMember": 2, "scheduleTimeoutSeconds": 10},
    }
    pods = [
        make_pod(f"m{i}", labels={"pod-group.scheduling.sigs.k8s.io": "pg"}, requests={"cpu": "1"}) for i in range(2)
    ]
    scheduler, cluster, _ = setup([group, *pods], nodes=1)
    result = outcome(simulate(scheduler, cluster))
    assert result == {"m0": ("n0", "Success"), "m1": ("n0", "Success")}
    spec = scheduler.framework.plugins["Coscheduling"].gangs["default/pg"].spec
    assert (spec.min_member, spec.wait_time) == (2, 10.0)


def test_next_pod_keeps_a_gang_together_in_the_queue():
    others = [make_pod(f"x{i}", requests={"cpu": "1"}, priority=5) for i in range(2)]
    gang = [member(f"m{i}", min_available=2, priority=5) for i in range(2)]
    gang[1]["metadata"]["creationTimestamp"] = "2024-05-01T10:00:00Z"  # queued after the others
    others[0]["metadata"]["creationTimestamp"] = "2024-05-01T09:00:00Z"
    others[1]["metadata"]["creationTimestamp"] = "2024-05-01T09:30:00Z"
    gang[0]["metadata"]["creationTimestamp"] = "2024-05-01T09:10:00Z"
    scheduler, cluster, _ = setup(others + gang, nodes=2)
    report = simulate(scheduler, cluster)
    assert [p.pod for p in report.placements] == ["default/x0", "default/m0", "default/m1", "default/x1"]


def test_coscheduling_args_are_validated_with_the_field_path():
    from policies.apis.field_errors import ConfigError

    with pytest.raises(ConfigError, match=r"pluginConfig\[0\]\.args\.defaultTimeout"):
        parse_config(
            {"profiles": [{"pluginConfig": [{"name": "Coscheduling", "args": {"defaultTimeout": "0s"}}]}]},
            in_tree_registry(),
        )


@settings(max_examples=60, deadline=None)
@given(order=st.permutations(list(range(9))), capacity=st.integers(min_value=2, max_value=6), strict=st.booleans())
def test_whatever_the_order_of_arrivals_a_gang_is_never_partially_bound(order, capacity, strict):
    mode = None if strict else "NonStrict"
    gang = [member(f"m{i}", min_available=5, total=6, mode=mode) for i in range(6)]
    loners = [make_pod(f"x{i}", requests={"cpu": "1"}) for i in range(3)]
    pods = gang + loners
    arrivals = [pods[i] for i in order]
    for minute, pod in enumerate(arrivals):
        pod["metadata"]["creationTimestamp"] = f"2024-05-01T09:{minute:02d}:00Z"
    scheduler, cluster, _ = setup(arrivals, nodes=1, cpu=str(capacity))
    simulate(scheduler, cluster)
    bound = [k for n in cluster.nodes.values() for k in n.pods if k.startswith("default/m")]
    assert len(bound) == 0 or len(bound) >= 5
    assert not scheduler.framework.handle.waiting  # nobody left parked


def test_a_pod_reaching_permit_wait_is_reported_as_waiting_until_it_settles():
    scheduler, cluster, _ = setup([member(f"m{i}") for i in range(3)], nodes=2)
    pods = sorted(cluster.pending.values(), key=lambda p: p.name)
    first = scheduler.schedule_one(pods[0])
    assert first.as_dict()["code"] == "Wait"
    scheduler.schedule_one(pods[1])
    scheduler.schedule_one(pods[2])
    assert first.scheduled and first.as_dict()["code"] == "Success"
    assert isinstance(pods[0], PodInfo)


async def extender_binds(pods, bound, nodes=2):
    """POST filter for every member, then bind `bound` of them concurrently; the Error answers."""
    import asyncio

    from aiohttp.test_utils import TestClient, TestServer

    from scheduler_plugins.scheduler.extender.server import make_app
    from scheduler_plugins.scheduler.extender.service import ExtenderService

    scheduler, cluster, _ = setup(pods, nodes=nodes)
    service = ExtenderService(scheduler.framework, cluster)
    async with TestClient(TestServer(make_app(service))) as client:
        for pod in pods:
            response = await client.post("/scheduler/filter", json={"Pod": pod, "NodeNames": ["n0", "n1"]})
            assert (await response.json())["NodeNames"] == ["n0", "n1"]

        async def bind(pod, node):
            response = await client.post(
                "/scheduler/bind",
                json={"PodName": pod["metadata"]["name"], "PodNamespace": "default", "PodUID": "", "Node": node},
            )
            return (await response.json())["Error"]

        errors = await asyncio.gather(*(bind(pod, f"n{i % nodes}") for i, pod in enumerate(pods[:bound])))
    return errors, cluster


async def test_through_the_extender_binds_are_held_until_the_gang_is_complete():
    errors, cluster = await extender_binds([member(f"m{i}", wait="30s") for i in range(3)], bound=3)
    assert errors == ["", "", ""]
    assert sorted(k for n in cluster.nodes.values() for k in n.pods) == ["default/m0", "default/m1", "default/m2"]


async def test_through_the_extender_every_held_bind_fails_when_the_gang_times_out():
    errors, cluster = await extender_binds([member(f"m{i}", wait="200ms") for i in range(3)], bound=2)
    assert len(errors) == 2 and all("timeout" in e or "rejected" in e for e in errors)
    assert all(not n.pods for n in cluster.nodes.values())


def test_gangs_of_one_group_are_released_together():
    groups = '["default/a", "default/b"]'
    pods = []
    for gang in ("a", "b"):
        for i in range(2):
            obj = member(f"{gang}{i}", gang=gang, min_available=2)
            obj["metadata"]["annotations"][GANG + "groups"] = groups
            pods.append(obj)
    scheduler, cluster, _ = setup(pods, nodes=2)
    by_name = {p.name: p for p in cluster.pending.values()}
    a0, a1 = scheduler.schedule_one(by_name["a0"]), scheduler.schedule_one(by_name["a1"])
    assert a1.status.code.name == "Wait"  # gang a is complete, but b is not yet
    scheduler.schedule_one(by_name["b0"])
    scheduler.schedule_one(by_name["b1"])
    assert a0.scheduled and a1.scheduled


def test_only_waiting_policy_does_not_let_a_late_member_through_on_past_success():
    pods = [member(f"m{i}", min_available=2, total=3) for i in range(3)]
    for obj in pods:
        obj["metadata"]["annotations"][GANG + "match-policy"] = "only-waiting"
    scheduler, cluster, _ = setup(pods, nodes=2)
    by_name = {p.name: p for p in cluster.pending.values()}
    first, second = scheduler.schedule_one(by_name["m0"]), scheduler.schedule_one(by_name["m1"])
    assert first.scheduled and second.scheduled
    late = scheduler.schedule_one(by_name["m2"])
    assert late.status.code.name == "Wait"  # once-satisfied would have let it bind at once


def test_a_rejected_gang_is_scheduled_again_in_the_next_round_once_room_appears():
    scheduler, cluster, _ = setup([member(f"m{i}") for i in range(3)], nodes=1)  # room for 2
    members = sorted(cluster.pending.values(), key=lambda p: p.name)
    first_round = [scheduler.schedule_one(p) for p in members]
    assert not any(p.scheduled for p in first_round)
    cluster.add_node(make_node("n9", cpu="2", memory="8Gi"))
    second_round = [scheduler.schedule_one(p) for p in members]
    assert all(p.scheduled for p in second_round)
