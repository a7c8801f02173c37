"""Each scheduler plugin's optional vector path (`plugin.vector`: `filter_mask`, `score_array`) gives
its plain `filter` and `score`, node by node, on the same inputs: random clusters and the edge
cases (no nodes, a subset in any order, a node without pods allocatable, a resource no node has,
DaemonSet and reserve pods, PreFilter not run, reservation affinity)."""

import json
import random

import pytest

from scheduler_plugins.scheduler.framework import interfaces as fi
from scheduler_plugins.scheduler.framework.columns import node_indexes
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from tests.scheduler_plugins.scheduler.test_batch_agrees import (
    ARGS,
    QUOTA_DEVICE_NUMA,
    quota_device_numa_cluster,
    random_cluster,
    random_pod,
)
from tests.scheduler_plugins.scheduler.test_reservation import available
from tests.support.builders import make_metric, make_node, make_pod
from tests.support.scheduling import make_config, make_framework

VECTOR_PLUGINS = ("NodeResourcesFit", "LoadAwareScheduling", "DeviceShare", "NodeNUMAResource", "Reservation")


def assert_vector_equals_plain(fwk, name, state, pod, nodes) -> None:
    """`name`'s vector path against its plain methods on `nodes` (their table indexes as the
    framework computes them), in the cycle `state`."""
    plugin = fwk.plugins[name]
    vector = fi.vector_path(plugin)
    index = node_indexes(nodes)
    if isinstance(vector, fi.VectorFilter):
        mask = vector.filter_mask(state, pod, nodes, index)
        assert mask is not None and len(mask) == len(nodes)
        assert mask.tolist() == [plugin.filter(state, pod, n).is_success for n in nodes], name
    if isinstance(vector, fi.VectorScore):
        scores = vector.score_array(state, pod, nodes, index)
        if scores is not None:
            assert scores.tolist() == [plugin.score(state, pod, n)[0] for n in nodes], name


def check_every_vector(fwk, cluster, pod, rng, pre_filter=True) -> set[str]:
    """Every vector path of the framework's plugins against the plain methods, on all nodes and a
    shuffled subset, after the cycle's PreFilter (or without it); the plugins checked."""
    state = CycleState()
    if pre_filter:
        pod, _, status = fwk.run_pre_filter(state, pod)
        if not status.is_success:
            return set()
    nodes = cluster.node_list()
    checked = set()
    for name in fwk.plugins:
        if fi.vector_path(fwk.plugins[name]) is None:
            continue
        for subset in (nodes, rng.sample(nodes, rng.randint(0, len(nodes))), []):
            assert_vector_equals_plain(fwk, name, state, pod, subset)
        checked.add(name)
    return checked


def test_the_five_plugins_have_a_vector_path_and_the_others_none():
    fwk, _ = make_framework([make_node("n1", cpu="4", memory="8Gi")])
    with_vector = {name for name, plugin in fwk.plugins.items() if fi.vector_path(plugin) is not None}
    assert with_vector == set(VECTOR_PLUGINS) & set(fwk.plugins)


@pytest.mark.parametrize("seed", range(30))
def test_noderesourcesfit_and_loadaware_vectors_equal_the_plain_methods(seed):
    rng = random.Random(seed)
    config = make_config({"LoadAwareScheduling": rng.choice(ARGS)})
    fwk, cluster = make_framework(random_cluster(rng), config)
    for _ in range(3):
        pod = PodInfo(random_pod(rng))
        checked = check_every_vector(fwk, cluster, pod, rng, pre_filter=rng.random() < 0.8)
        assert {"NodeResourcesFit", "LoadAwareScheduling"} <= checked
        target = rng.choice(cluster.node_list()).name  # changed rows for the next pod
        cluster.assume(pod, target)
        fwk.plugins["LoadAwareScheduling"].reserve(CycleState(), pod, target)


def test_noderesourcesfit_vector_edge_cases():
    """A node that does not say how many pods it takes (kubelet's 110), one with no cpu at all, a
    scoring resource no node has, and a pod that requests nothing."""
    no_pods = make_node("no-pods", cpu="4", memory="8Gi")
    del no_pods["status"]["allocatable"]["pods"]
    full = make_node("full", cpu="2", memory="8Gi")
    full["status"]["allocatable"]["pods"] = "1"
    objects = [no_pods, full, make_node("no-cpu", cpu="0", memory="8Gi")]
    objects.append(make_pod("there", requests={"cpu": "1"}, node="full"))
    config = make_config(
        {
            "NodeResourcesFit": {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 3}],
                }
            }
        }
    )
    fwk, cluster = make_framework(objects, config)
    rng = random.Random(0)
    for pod in (make_pod("none"), make_pod("some", requests={"cpu": "500m", "memory": "1Gi"})):
        assert "NodeResourcesFit" in check_every_vector(fwk, cluster, PodInfo(pod), rng)


def test_loadaware_vector_edge_cases():
    """Nodes over the default thresholds: one whose annotation sets every threshold to 0 (nothing
    to filter), one without a NodeMetric, one with an expired report; a DaemonSet pod passes all."""
    zero = json.dumps({"usageThresholds": {"cpu": 0, "memory": 0}})
    objects = [
        make_node("zero", cpu="4", memory="8Gi", annotations={"scheduling.koordinator.sh/usage-thresholds": zero}),
        make_node("busy", cpu="4", memory="8Gi"),
        make_node("unreported", cpu="4", memory="8Gi"),
        make_node("stale", cpu="4", memory="8Gi"),
    ]
    objects += [make_metric(n, cpu="3900m", memory="7Gi") for n in ("zero", "busy")]
    objects.append(make_metric("stale", cpu="3900m", memory="7Gi", update_time="2024-05-01T08:00:00Z"))
    for args in ARGS:
        fwk, cluster = make_framework(objects, make_config({"LoadAwareScheduling": args}))
        for owner in (None, "DaemonSet"):
            pod = make_pod("p", qos="LS", requests={"cpu": "1", "memory": "1Gi"}, owner_kind=owner)
            assert "LoadAwareScheduling" in check_every_vector(fwk, cluster, PodInfo(pod), random.Random(2))


@pytest.mark.parametrize("seed", range(6))
def test_deviceshare_and_numa_vectors_equal_the_plain_filter(seed):
    """GPU and CPU-topology nodes with LSR, shared-GPU and LS pods, some already bound."""
    rng = random.Random(seed)
    objects = quota_device_numa_cluster(rng, 40, 30)
    labels = (
        {"node.koordinator.sh/cpu-bind-policy": "FullPCPUsOnly"},
        {"node.koordinator.sh/numa-topology-policy": "SingleNUMANode"},
    )
    for obj in objects:
        if obj["kind"] == "Node" and rng.random() < 0.3:
            obj["metadata"]["labels"] = dict(rng.choice(labels))
    fwk, cluster = make_framework(objects, parse_config(QUOTA_DEVICE_NUMA, in_tree_registry()))
    odd = [  # LS pods that bind no CPU: a fraction of a core, and more than one NUMA node holds
        make_pod(f"odd-{cpu}", qos="LS", requests={"cpu": cpu, "memory": "1Gi"}, limits={"cpu": cpu, "memory": "1Gi"})
        for cpu in ("1500m", "12")
    ]
    for pod in [*map(PodInfo, odd), *rng.sample(list(cluster.pending.values()), 8)]:
        checked = check_every_vector(fwk, cluster, pod, rng, pre_filter=rng.random() < 0.9)
        assert not checked or {"DeviceShare", "NodeNUMAResource"} <= checked
        target = rng.choice(cluster.node_list()).name
        cluster.assume(pod, target)


@pytest.mark.parametrize("seed", range(20))
def test_reservation_vector_equals_the_plain_filter(seed):
    """Owners, reservation affinity (to a reservation that exists or not) and strangers, over
    reservations on random nodes with every allocate policy."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 8))]
    objects = [make_node(n, cpu=str(rng.randint(2, 6)), memory="8Gi") for n in names]
    for i in range(rng.randint(0, 6)):
        owner = rng.choice([{"object": {"name": "owner"}}, {"labelSelector": {"matchLabels": {"app": "web"}}}])
        objects.append(
            available(
                f"r{i}",
                node=rng.choice(names),
                cpu=str(rng.randint(1, 3)),
                owner=owner,
                allocatePolicy=rng.choice(["", "Aligned", "Restricted"]),
            )
        )
    fwk, cluster = make_framework(objects)
    for name in ("owner", "web-1", "stranger"):
        annotations = None
        if rng.random() < 0.4:
            wanted = json.dumps({"name": f"r{rng.randint(0, 7)}"})
            annotations = {"scheduling.koordinator.sh/reservation-affinity": wanted}
        pod = make_pod(
            name,
            requests={"cpu": str(rng.randint(1, 4)), "memory": "1Gi"},
            labels={"app": "web"} if name == "web-1" else None,
            annotations=annotations,
        )
        checked = check_every_vector(fwk, cluster, PodInfo(pod), rng)
        assert not checked or "Reservation" in checked


def test_reservation_vector_for_a_reserve_pod_asks_every_node():
    """A pending reservation's reserve pod: every node is asked of the plain `filter`."""
    pending = available("r1", cpu="3", node=None)
    fwk, cluster = make_framework(
        [make_node("n1", cpu="4", memory="8Gi"), make_node("n2", cpu="2", memory="8Gi"), pending]
    )
    reserve_pods = [p for p in cluster.pending.values() if p.key.startswith("Reservation/")]
    assert reserve_pods
    assert "Reservation" in check_every_vector(fwk, cluster, reserve_pods[0], random.Random(1))
