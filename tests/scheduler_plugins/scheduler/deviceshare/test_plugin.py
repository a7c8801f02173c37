"""DeviceShare through the scheduling loop: shared and whole GPUs, the device-allocated annotation."""

import json

from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.explain import explain
from scheduler_plugins.scheduler.wiring import build_framework
from tests.support.builders import make_node, make_pod

ALLOCATED = "scheduling.koordinator.sh/device-allocated"
DS = "DeviceShare"
OFF = {"disabled": [{"name": "LoadAwareScheduling"}]}
PROFILE = {
    "profiles": [
        {
            "plugins": {
                "preFilter": {"enabled": [{"name": DS}], **OFF},
                "filter": {"enabled": [{"name": DS}], **OFF},
                "score": {"enabled": [{"name": DS}], **OFF},
                "reserve": {"enabled": [{"name": DS}], **OFF},
                "preBind": {"enabled": [{"name": DS}]},
            }
        }
    ]
}


def gpu_node(name, cards=1, memory_gi=64):
    return make_node(
        name,
        cpu="32",
        memory="128Gi",
        extra={
            "nvidia.com/gpu": str(cards),
            "koordinator.sh/gpu-core": str(100 * cards),
            "koordinator.sh/gpu-memory-ratio": str(100 * cards),
            "koordinator.sh/gpu-memory": f"{memory_gi * cards}Gi",
        },
    )


def device(node, cards=1, memory="64Gi"):
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Device",
        "metadata": {"name": node},
        "spec": {
            "devices": [
                {
                    "type": "gpu",
                    "minor": i,
                    "health": True,
                    "resources": {
                        "koordinator.sh/gpu-core": "100",
                        "koordinator.sh/gpu-memory-ratio": "100",
                        "koordinator.sh/gpu-memory": memory,
                    },
                }
                for i in range(cards)
            ]
        },
    }


def gpu_pod(name, annotations=None, node=None, **gpu):
    requests = {"cpu": "1", **{f"koordinator.sh/{k.replace('_', '-')}": str(v) for k, v in gpu.items()}}
    return make_pod(name, "ml", requests=requests, limits=requests, annotations=annotations, node=node)


def whole(name, cards=1):
    requests = {"cpu": "1", "nvidia.com/gpu": str(cards)}
    return make_pod(name, "ml", requests=requests, limits=requests)


def world(objects):
    cluster = ClusterState.from_objects(objects)
    config = parse_config(PROFILE, in_tree_registry())
    return cluster, Scheduler(build_framework(config, in_tree_registry(), cluster), cluster)


def allocated(cluster, name):
    pod, _ = cluster.find_pod("ml", name)
    return json.loads(pod.annotations[ALLOCATED])


def test_two_pods_share_one_gpu_at_half_each_and_a_third_is_refused():
    cluster, sched = world(
        [gpu_node("g1"), device("g1"), *(gpu_pod(f"half-{i}", gpu_core=50, gpu_memory_ratio=50) for i in range(3))]
    )
    for i in range(2):
        assert sched.schedule_one(cluster.pending[f"ml/half-{i}"]).scheduled
        assert allocated(cluster, f"half-{i}") == {
            "gpu": [
                {
                    "minor": 0,
                    "resources": {
                        "koordinator.sh/gpu-core": "50",
                        "koordinator.sh/gpu-memory": "32Gi",
                        "koordinator.sh/gpu-memory-ratio": "50",
                    },
                }
            ]
        }
    third = cluster.pending["ml/half-2"]
    assert not sched.schedule_one(third).scheduled
    filters = {f["plugin"]: f for f in explain(sched.framework, cluster, third)["nodes"][0]["filters"]}
    assert filters[DS]["reasons"] == ["Insufficient gpu devices"]


def test_a_whole_gpu_needs_an_untouched_card():
    shared = gpu_pod(
        "shared",
        gpu_memory="8Gi",
        node="g1",
        annotations={
            ALLOCATED: '{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"0",'
            '"koordinator.sh/gpu-memory":"8Gi","koordinator.sh/gpu-memory-ratio":"12"}}]}'
        },
    )
    cluster, sched = world([gpu_node("g1", cards=2), device("g1", cards=2), shared, whole("one"), whole("two", 2)])
    assert sched.schedule_one(cluster.pending["ml/one"]).scheduled
    assert allocated(cluster, "one")["gpu"][0]["minor"] == 1
    assert not sched.schedule_one(cluster.pending["ml/two"]).scheduled


def test_nodes_without_gpus_cannot_be_chosen_and_least_allocated_spreads():
    cluster, sched = world(
        [
            gpu_node("g1"),
            device("g1"),
            gpu_node("g2"),
            device("g2"),
            make_node("plain", cpu="32"),
            gpu_pod("a", gpu_core=30, gpu_memory_ratio=30),
            gpu_pod("b", gpu_core=30, gpu_memory_ratio=30),
        ]
    )
    first = sched.schedule_one(cluster.pending["ml/a"])
    assert first.node == "g1"
    assert sched.schedule_one(cluster.pending["ml/b"]).node == "g2"  # the emptier GPU node scores higher


def test_an_invalid_gpu_request_is_refused_before_filtering():
    cluster, sched = world([gpu_node("g1"), device("g1"), gpu_pod("bad", gpu_core=150, gpu_memory_ratio=50)])
    placement = sched.schedule_one(cluster.pending["ml/bad"])
    assert placement.status.code.name == "UnschedulableAndUnresolvable"
    assert "invalid GPU request" in placement.status.message


def test_explain_shows_the_card_each_node_would_give():
    cluster, sched = world([gpu_node("g1"), device("g1"), make_node("plain", cpu="32")])
    report = explain(sched.framework, cluster, PodInfo(gpu_pod("p", gpu_memory="16Gi")))
    rows = {row["name"]: row for row in report["nodes"]}
    assert rows["g1"]["details"] == {
        DS: {
            "gpu": [
                {
                    "minor": 0,
                    "resources": {
                        "koordinator.sh/gpu-core": "0",
                        "koordinator.sh/gpu-memory": "16Gi",
                        "koordinator.sh/gpu-memory-ratio": "25",
                    },
                }
            ]
        }
    }
    assert rows["plain"]["filters"][-1]["reasons"] == ["Insufficient gpu devices"]
