"""The extender's `preempt` verb (kube-scheduler's `HTTPExtender.ProcessPreemption`,
`extender_test.go` `TestPreemptionExtender*`): of the victims kube-scheduler chose, colocate keeps
the nodes where its plugins let the pod fit, and on each the fewest victims."""

import json

import pytest
from aiohttp.test_utils import TestClient, TestServer

from scheduler_plugins.scheduler.extender.server import make_app
from scheduler_plugins.scheduler.extender.service import ExtenderService
from tests.support.builders import make_node, make_pod
from tests.support.scheduling import make_framework


def bound(name, node, cpu, priority=5500):
    pod = make_pod(name, "ml", node=node, priority=priority, requests={"cpu": cpu, "memory": "1Gi"})
    pod["metadata"]["uid"] = "uid-" + name
    pod["status"] = {"phase": "Running", "startTime": "2024-05-01T08:00:00Z"}
    return pod


PREEMPTOR = make_pod("prod", "shop", priority=9500, requests={"cpu": "4", "memory": "1Gi"})


@pytest.fixture
async def client():
    objects = [
        make_node("n1", cpu="8", memory="32Gi"),
        make_node("n2", cpu="8", memory="32Gi"),
        bound("a", "n1", "4", priority=100),
        bound("b", "n1", "4", priority=100),
        bound("c", "n2", "8", priority=100),
    ]
    fwk, cluster = make_framework(objects)
    async with TestClient(TestServer(make_app(ExtenderService(fwk, cluster)))) as c:
        yield c


async def post(client, body, status=200):
    resp = await client.post("/scheduler/preempt", data=json.dumps(body))
    assert resp.status == status, await resp.text()
    return await resp.json()


def meta(*uids):
    return {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": 0}


async def test_preempt_keeps_the_fewest_victims_colocate_agrees_with(client):
    result = await post(
        client,
        {"Pod": PREEMPTOR, "NodeNameToMetaVictims": {"n1": meta("uid-a", "uid-b"), "n2": meta("uid-c")}},
    )
    # one of n1's two victims is enough for 4 cpu: the other is given back
    assert result == {"NodeNameToMetaVictims": {"n1": meta("uid-b"), "n2": meta("uid-c")}}


async def test_preempt_drops_a_node_where_the_victims_do_not_make_room_or_are_unknown(client):
    result = await post(
        client,
        {"Pod": PREEMPTOR, "NodeNameToMetaVictims": {"n2": meta(), "n1": meta("uid-ghost"), "n9": meta("uid-c")}},
    )
    assert result == {"NodeNameToMetaVictims": {}}


async def test_preempt_accepts_whole_victim_pods_and_answers_with_uids(client):
    victims = {"n2": {"Pods": [bound("c", "n2", "8", priority=100)], "NumPDBViolations": 0}}
    result = await post(client, {"pod": PREEMPTOR, "nodeNameToVictims": victims})
    assert result == {"NodeNameToMetaVictims": {"n2": meta("uid-c")}}


@pytest.mark.parametrize(
    "body",
    [[], {"Pod": PREEMPTOR}, {"Pod": PREEMPTOR, "NodeNameToMetaVictims": {"n1": {"Pods": [{}]}}}, {"Pod": 3}],
)
async def test_a_malformed_preemption_body_is_a_400_not_a_crash(client, body):
    result = await post(client, body, status=400)
    assert result["Error"]
