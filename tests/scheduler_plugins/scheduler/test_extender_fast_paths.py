"""The extender's shortcuts answer exactly as the plain path: a NodeNames list resolved once and
reused (until a node is added or deleted), its names reused in the answers."""

import json
import random

from aiohttp.test_utils import TestClient, TestServer

from scheduler_plugins.scheduler.extender.server import make_app
from scheduler_plugins.scheduler.extender.service import ExtenderService
from tests.support.builders import make_metric, make_node, make_pod
from tests.support.scheduling import make_framework

LS_POD = make_pod("web", "shop", qos="LS", requests={"cpu": "4", "memory": "8Gi"})


def random_objects(rng: random.Random, count: int) -> list[dict]:
    objects = []
    for i in range(count):
        objects.append(make_node(f"n{i:02d}", cpu=str(rng.choice([2, 8, 32])), memory="64Gi"))
        if rng.random() < 0.8:
            objects.append(make_metric(f"n{i:02d}", cpu=str(rng.randint(0, 30)), memory="10Gi"))
    return objects


async def round_trip(client, names: list[str], pod: dict) -> tuple[dict, list]:
    filtered = await (await client.post("/scheduler/filter", data=json.dumps({"Pod": pod, "NodeNames": names}))).json()
    scored = await (
        await client.post("/scheduler/prioritize", data=json.dumps({"Pod": pod, "NodeNames": names}))
    ).json()
    return filtered, scored


async def test_repeated_name_lists_get_the_answers_a_fresh_extender_gives():
    """Same lists over and over (resolved once), with nodes added and deleted in between: every
    answer equals the one an extender that never saw a list before gives."""
    rng = random.Random(7)
    objects = random_objects(rng, 30)
    fwk, cluster = make_framework(objects)
    lists = [[f"n{i:02d}" for i in range(30)] + ["ghost", "n40"], [f"n{i:02d}" for i in range(0, 40, 3)]]
    async with TestClient(TestServer(make_app(ExtenderService(fwk, cluster)))) as client:
        for step in range(12):
            if step == 4:
                cluster.add_node(make_node("n40", cpu="64", memory="64Gi"))
                objects.append(make_node("n40", cpu="64", memory="64Gi"))
            if step == 8:
                cluster.delete_node("n03")
                objects = [o for o in objects if o["metadata"]["name"] != "n03"]
            names = list(lists[step % 2])  # a new list object with equal content, as a decoded body is
            pod = make_pod(f"p{step}", qos="LS", requests={"cpu": str(rng.randint(1, 8))})
            got = await round_trip(client, names, pod)
            fresh_fwk, fresh_cluster = make_framework(objects)
            async with TestClient(TestServer(make_app(ExtenderService(fresh_fwk, fresh_cluster)))) as fresh:
                assert got == await round_trip(fresh, names, pod), step


async def test_filter_answers_every_name_when_every_node_passes():
    fwk, cluster = make_framework([make_node(f"n{i:02d}", cpu="8", memory="16Gi") for i in range(5)])
    names = ["n04", "n00", "n02"]
    async with TestClient(TestServer(make_app(ExtenderService(fwk, cluster)))) as client:
        filtered, scored = await round_trip(client, names, LS_POD)
    assert filtered["NodeNames"] == names and not filtered["FailedNodes"]
    assert [h["Host"] for h in scored] == names


def test_the_service_warms_the_plugins_up_before_the_first_request():
    """Built from a loaded snapshot, the extender has LoadAwareScheduling's per-node rows ready, so
    the first filter does not build them (and `serve` freezes them with the snapshot)."""
    fwk, cluster = make_framework(random_objects(random.Random(5), 12))
    ExtenderService(fwk, cluster)
    columns = fwk.plugins["LoadAwareScheduling"].vector
    assert len(columns.valid) == len(cluster.by_index) and not len(columns.rows.take())
