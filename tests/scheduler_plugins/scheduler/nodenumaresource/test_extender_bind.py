"""The extender's bind verb runs Reserve and PreBind in a cycle of its own (no PreFilter): CPUs and
GPUs are still chosen and written on the pod."""

import json

from aiohttp.test_utils import TestClient, TestServer

from scheduler_plugins.scheduler.extender.server import make_app
from scheduler_plugins.scheduler.extender.service import ExtenderService
from scheduler_plugins.scheduler.framework.config import load_config
from scheduler_plugins.scheduler.registry import in_tree_registry
from tests.scheduler_plugins.scheduler.deviceshare.test_plugin import device, gpu_node, gpu_pod
from tests.scheduler_plugins.scheduler.nodenumaresource.test_plugin import lsr
from tests.scheduler_plugins.scheduler.nodenumaresource.topologies import make_nrt
from tests.support.builders import make_metric
from tests.support.paths import REPO
from tests.support.scheduling import make_framework

CONFIG = REPO / "manifests" / "scheduler" / "scheduler-config.yaml"


async def test_bind_writes_the_cpuset_and_the_gpus_with_the_shipped_profile():
    objects = [
        gpu_node("g1", cards=1),
        device("g1"),
        make_nrt("g1"),
        make_metric("g1", cpu="1", memory="1Gi"),
        lsr("cache"),
        gpu_pod("half", gpu_core=50, gpu_memory_ratio=50),
    ]
    fwk, cluster = make_framework(objects, load_config(CONFIG, in_tree_registry()))
    async with TestClient(TestServer(make_app(ExtenderService(fwk, cluster)))) as client:
        for namespace, name in (("prod", "cache"), ("ml", "half")):
            resp = await client.post(
                "/scheduler/bind",
                data=json.dumps({"PodName": name, "PodNamespace": namespace, "PodUID": "", "Node": "g1"}),
            )
            assert (await resp.json()) == {"Error": ""}
    cache, _ = cluster.find_pod("prod", "cache")
    half, node = cluster.find_pod("ml", "half")
    assert node == "g1"
    assert json.loads(cache.annotations["scheduling.koordinator.sh/resource-status"]) == {"cpuset": "0-1,8-9"}
    assert json.loads(half.annotations["scheduling.koordinator.sh/device-allocated"])["gpu"][0]["minor"] == 0
