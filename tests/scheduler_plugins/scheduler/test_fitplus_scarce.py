"""NodeResourcesFitPlus and ScarceResourceAvoidance (Koordinator's
`pkg/scheduler/plugins/noderesourcefitplus/`, `pkg/scheduler/plugins/scarceresourceavoidance/`)."""

import pytest

from tests.support.builders import make_node, make_pod
from tests.support.scheduling import plugin_of, score_node

GPU_ARGS = {
    "resources": {
        "nvidia.com/gpu": {"type": "MostAllocated", "weight": 2},
        "cpu": {"type": "LeastAllocated", "weight": 1},
        "memory": {"type": "LeastAllocated", "weight": 1},
    }
}
GPU_NODE = make_node(cpu="96", memory="512Gi", extra={"nvidia.com/gpu": "8", "ephemeral-storage": "1Ti"})
EXISTING = make_pod("old", requests={"cpu": "16", "memory": "32Gi", "nvidia.com/gpu": "4"}, node="node-1")


def fitplus(pod, args=GPU_ARGS, placed=(EXISTING,)):
    plugin, cluster = plugin_of([GPU_NODE, *placed], "NodeResourcesFitPlus", args)
    return score_node(plugin, cluster, pod)


def test_worked_example():
    pod = make_pod(requests={"cpu": "16", "memory": "32Gi", "nvidia.com/gpu": "2", "ephemeral-storage": "10Gi"})
    assert fitplus(pod) == 75  # cpu 66, memory 87, gpu 75 x2 -> 303 / 4


@pytest.mark.parametrize(
    "case, pod, expected",
    [
        ("resources absent from args are ignored", make_pod(requests={"ephemeral-storage": "10Gi"}), 100),
        ("only cpu requested", make_pod(requests={"cpu": "16"}), 66),
        ("gpu only: most allocated", make_pod(requests={"nvidia.com/gpu": "4"}), 100),
    ],
)
def test_fitplus(case, pod, expected):
    assert fitplus(pod) == expected, case


@pytest.mark.parametrize(
    "case, node_extra, pod_requests, scarce, expected",
    [
        (
            "pod wastes the gpu node",
            {"nvidia.com/gpu": "8", "xx.xx/xx": "1"},
            {"cpu": "1", "memory": "1Gi"},
            ["nvidia.com/gpu"],
            50,
        ),
        ("plain node", {}, {"cpu": "1", "memory": "1Gi"}, ["nvidia.com/gpu"], 100),
        ("pod asks for the gpu", {"nvidia.com/gpu": "8"}, {"cpu": "1", "nvidia.com/gpu": "1"}, ["nvidia.com/gpu"], 100),
        (
            "only scarce resources left over",
            {"nvidia.com/gpu": "8"},
            {"cpu": "1", "memory": "1Gi"},
            ["nvidia.com/gpu"],
            0,
        ),
        ("no scarce resources configured", {"nvidia.com/gpu": "8"}, {"cpu": "1"}, [], 100),
    ],
)
def test_scarce_resource_avoidance(case, node_extra, pod_requests, scarce, expected):
    node = make_node(cpu="8", memory="8Gi", extra=node_extra)
    plugin, cluster = plugin_of([node], "ScarceResourceAvoidance", {"resources": scarce})
    assert score_node(plugin, cluster, make_pod(requests=pod_requests)) == expected, case
