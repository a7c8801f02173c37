"""The batch (numpy) forms of Filter and Score must give the per-node answers, node by node, on
random clusters covering the edge cases: stale, missing and partial metrics, prod and aggregated
thresholds, per-node annotations, raw allocatable, batch pods, DaemonSet pods, full nodes."""

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_plugins.scheduler.framework.columns import node_indexes
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_metric, make_node, make_pod, pod_metric
from tests.support.scheduling import make_config, make_framework

ARGS = [
    None,
    {"prodUsageThresholds": {"cpu": 50}, "scoreAccordingProdUsage": True},
    {"aggregated": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95", "scoreAggregationType": "avg"}},
    {"filterExpiredNodeMetrics": False, "dominantResourceWeight": 2},
    {"enableScheduleWhenNodeMetricsExpired": True, "usageThresholds": {"memory": 80}},
]
TIMES = ["2024-05-01T10:00:00Z", "2024-05-01T09:50:00Z", None]


def random_cluster(rng: random.Random):
    objects = []
    for i in range(rng.randint(1, 25)):
        name = f"n{i}"
        annotations = {}
        if rng.random() < 0.2:
            annotations["scheduling.koordinator.sh/usage-thresholds"] = json.dumps(
                {
                    "usageThresholds": {"cpu": rng.randint(0, 100)},
                    "prodUsageThresholds": {"memory": rng.randint(1, 100)},
                }
            )
        raw = {"cpu": str(rng.randint(1, 32))} if rng.random() < 0.2 else None
        extra = {"kubernetes.io/batch-cpu": str(rng.randint(0, 20000))} if rng.random() < 0.7 else {}
        node = make_node(
            name,
            cpu=str(rng.randint(0, 32)),
            memory=f"{rng.randint(1, 128)}Gi",
            extra=extra,
            annotations=annotations,
            raw_allocatable=raw,
        )
        node["status"]["allocatable"]["pods"] = str(rng.randint(1, 5))
        objects.append(node)
        if rng.random() < 0.8:
            aggregated = [
                {
                    "duration": "5m",
                    "usage": {
                        "p95": {"resources": {"cpu": f"{rng.randint(0, 32)}"}},
                        "avg": {"resources": {"cpu": f"{rng.randint(0, 32)}"}},
                    },
                }
            ]
            objects.append(
                make_metric(
                    name,
                    cpu=f"{rng.randint(0, 40000)}m" if rng.random() < 0.9 else None,
                    memory=f"{rng.randint(0, 130)}Gi",
                    update_time=rng.choice(TIMES),
                    aggregated=aggregated if rng.random() < 0.5 else None,
                    no_node_metric=rng.random() < 0.1,
                    pods=[pod_metric(f"p{i}-0", cpu="1")] if rng.random() < 0.5 else None,
                )
            )
        for j in range(rng.randint(0, 3)):
            objects.append(
                make_pod(
                    f"p{i}-{j}",
                    qos=rng.choice(["LS", "BE"]),
                    priority=rng.choice([9500, 5500]),
                    requests={"cpu": f"{rng.randint(0, 4000)}m"},
                    node=name,
                    scheduled_at=rng.choice([None, "2024-05-01T09:00:00Z"]),
                )
            )
    return objects


def random_pod(rng: random.Random):
    if rng.random() < 0.5:
        requests = {"cpu": f"{rng.randint(0, 8000)}m", "memory": f"{rng.randint(0, 16)}Gi"}
        return make_pod(
            "new",
            qos="LS",
            priority=9500,
            requests=requests,
            limits=requests,
            owner_kind="DaemonSet" if rng.random() < 0.1 else None,
        )
    return make_pod("new", qos="BE", priority=5500, requests={"kubernetes.io/batch-cpu": str(rng.randint(0, 9000))})


def assert_batch_agrees(fwk, pod, nodes, index) -> None:
    """Each vector path's Filter mask and Score array equal its plugin's per-node answers on `nodes`."""
    for name in ("NodeResourcesFit", "LoadAwareScheduling"):
        plugin = fwk.plugins[name]
        state = CycleState()
        mask = plugin.vector.filter_mask(state, pod, nodes, index).tolist()
        assert mask == [plugin.filter(state, pod, n).is_success for n in nodes], name
        scores = plugin.vector.score_array(state, pod, nodes, index).tolist()
        assert scores == [plugin.score(state, pod, n)[0] for n in nodes], name


@pytest.mark.parametrize("seed", range(40))
def test_batch_filter_and_score_agree_with_per_node(seed):
    rng = random.Random(seed)
    config = make_config({"LoadAwareScheduling": rng.choice(ARGS)})
    fwk, cluster = make_framework(random_cluster(rng), config)
    nodes = cluster.node_list()
    index = node_indexes(nodes)
    for _ in range(3):
        pod = PodInfo(random_pod(rng))
        assert_batch_agrees(fwk, pod, nodes, index)
        # then place it somewhere, so the next round sees changed rows
        target = rng.choice(nodes).name
        cluster.assume(pod, target)
        fwk.plugins["LoadAwareScheduling"].reserve(CycleState(), pod, target)
        cluster.forget(pod, target) if rng.random() < 0.3 else None


def simulate_placements(objects, batch: bool, percentage: int = 0):
    from scheduler_plugins.scheduler.framework.scheduling import Scheduler
    from scheduler_plugins.scheduler.simulator.simulate import simulate

    fwk, cluster = make_framework(objects, make_config(percentageOfNodesToScore=percentage))
    if not batch:
        fwk.batch = False
    report = simulate(Scheduler(fwk, cluster, percentage), cluster)
    return [
        (p.pod, p.node, p.score, p.message, {n: s.as_dict() for n, s in p.failed_nodes.items()})
        for p in report.placements
    ]


@pytest.mark.parametrize("seed, percentage", [(1, 0), (2, 0), (3, 30)])
def test_simulation_is_the_same_with_and_without_batch_plugins(seed, percentage):
    rng = random.Random(seed)
    objects = []
    for i in range(150):  # above 100 nodes, so node sampling and its rotation are exercised
        objects.append(
            make_node(
                f"n{i:03d}",
                cpu=str(rng.randint(2, 16)),
                memory="64Gi",
                extra={"kubernetes.io/batch-cpu": str(rng.randint(0, 8000))},
            )
        )
        if rng.random() < 0.9:
            objects.append(
                make_metric(
                    f"n{i:03d}", cpu=f"{rng.randint(0, 12000)}m", memory="8Gi", update_time=rng.choice(TIMES[:2])
                )
            )
    for j in range(60):
        pod = random_pod(rng)
        pod["metadata"]["name"] = f"pod-{j}"
        objects.append(pod)
    with_batch = simulate_placements(objects, True, percentage)
    assert with_batch == simulate_placements(objects, False, percentage)
    assert any(node for _, node, *_ in with_batch) and any(not node for _, node, *_ in with_batch)


@pytest.mark.parametrize("seed", range(20))
def test_batch_forms_agree_on_any_subset_of_nodes_in_any_order(seed):
    """The framework hands batch plugins windows of the node list and the feasible subset: table
    indexes that are a slice, an array in any order, or rows past a deleted node's empty slot."""
    rng = random.Random(1000 + seed)
    config = make_config({"LoadAwareScheduling": rng.choice(ARGS)})
    objects = random_cluster(rng)
    rng.shuffle(objects)  # table order is insertion order, not name order
    fwk, cluster = make_framework(objects, config)
    if len(cluster.nodes) > 2 and rng.random() < 0.5:
        cluster.delete_node(rng.choice(sorted(cluster.nodes)))
    nodes = cluster.node_list()
    for _ in range(3):
        subset = rng.sample(nodes, rng.randint(1, len(nodes)))
        index = node_indexes(subset)
        pod = PodInfo(random_pod(rng))
        assert_batch_agrees(fwk, pod, subset, index)


def sampling_cluster(rng: random.Random, nodes: int, pods: int, shuffle: bool) -> list[dict]:
    """Nodes of very different sizes (so big pods fit few of them and the filter walks far past
    its first window), most with fresh metrics; pods of every size; one reservation owner."""
    objects = []
    for i in range(nodes):
        objects.append(
            make_node(
                f"n{i:03d}",
                cpu=str(rng.choice([1, 2, 4, 16, 64])),
                memory="64Gi",
                extra={"kubernetes.io/batch-cpu": str(rng.randint(0, 8000))},
            )
        )
        if rng.random() < 0.9:
            objects.append(
                make_metric(
                    f"n{i:03d}", cpu=f"{rng.randint(0, 12000)}m", memory="8Gi", update_time=rng.choice(TIMES[:2])
                )
            )
    if shuffle:
        rng.shuffle(objects)
    for j in range(pods):
        pod = random_pod(rng)
        if rng.random() < 0.3:  # a big pod: few nodes fit it
            pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": str(rng.choice([8, 24, 48]))}
        pod["metadata"]["name"] = f"pod-{j}"
        objects.append(pod)
    objects.append(
        {
            "apiVersion": "scheduling.koordinator.sh/v1alpha1",
            "kind": "Reservation",
            "metadata": {"name": "r-1", "uid": "r-1"},
            "spec": {
                "owners": [{"object": {"name": "pod-3", "namespace": "default"}}],
                "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
            },
            "status": {"phase": "Available", "nodeName": "n007"},
        }
    )
    return objects


@pytest.mark.parametrize(
    "seed, nodes, percentage, shuffle",
    [(4, 300, 0, False), (5, 300, 0, True), (6, 400, 10, True), (7, 250, 50, False), (8, 120, 0, True)],
)
def test_windowed_batch_filter_walks_and_stops_as_the_per_node_walk(seed, nodes, percentage, shuffle):
    """Same placements, scores, failure messages and rejected nodes (which also pins where each
    cycle stopped and so where the next one starts) with the batch forms and node by node."""
    objects = sampling_cluster(random.Random(seed), nodes, 80, shuffle)
    with_batch = simulate_placements(objects, True, percentage)
    assert with_batch == simulate_placements(objects, False, percentage)
    assert any(node for _, node, *_ in with_batch) and any(not node for _, node, *_ in with_batch)


def drive(objects, batch: bool, percentage: int) -> list[tuple]:
    """Schedule every pending pod in queue order; after each cycle, where the next one starts."""
    from scheduler_plugins.scheduler.framework.scheduling import Scheduler

    fwk, cluster = make_framework(objects, make_config(percentageOfNodesToScore=percentage))
    fwk.batch = batch
    scheduler = Scheduler(fwk, cluster, percentage)
    out = []
    for pod in fwk.sort_pods(list(cluster.pending.values())):
        placement = scheduler.schedule_one(pod)
        out.append((placement.pod, placement.node, placement.score, scheduler.next_start_node_index))
    return out


@pytest.mark.parametrize("seed, nodes, percentage", [(11, 300, 0), (12, 260, 20), (13, 500, 0)])
def test_each_cycle_stops_where_the_per_node_walk_stops(seed, nodes, percentage):
    objects = sampling_cluster(random.Random(seed), nodes, 60, shuffle=True)
    assert drive(objects, True, percentage) == drive(objects, False, percentage)


@pytest.mark.parametrize("seed", range(12))
def test_find_feasible_batch_and_per_node_give_the_same_walk(seed):
    """Any start, any number wanted: the same feasible nodes in the same order, the same rejected
    nodes with the same statuses, the same count of nodes processed."""
    rng = random.Random(2000 + seed)
    fwk, cluster = make_framework(sampling_cluster(rng, rng.randint(1, 400), 0, shuffle=rng.random() < 0.5))
    nodes = cluster.node_list()
    for _ in range(5):
        pod = PodInfo(random_pod(rng))
        if rng.random() < 0.4:
            pod = PodInfo(make_pod("big", qos="LS", priority=9500, requests={"cpu": str(rng.choice([8, 24, 48]))}))
        wanted, start = rng.randint(1, len(nodes)), rng.randrange(len(nodes))
        walks = []
        for batch in (True, False):
            fwk.batch = batch
            state = CycleState()
            pod_, _, status = fwk.run_pre_filter(state, pod)
            assert status.is_success
            feasible, failed, processed = fwk.find_feasible(state, pod_, nodes, wanted, start)
            walks.append(
                ([n.name for n in feasible], {k: v.as_dict() for k, v in failed.items()}, list(failed), processed)
            )
        assert walks[0] == walks[1]


QUOTA_DEVICE_NUMA = {
    "profiles": [
        {
            "plugins": {
                "preFilter": {"enabled": [{"name": p} for p in ("NodeNUMAResource", "DeviceShare", "ElasticQuota")]},
                "filter": {"enabled": [{"name": "NodeNUMAResource"}, {"name": "DeviceShare"}]},
                "preScore": {"enabled": [{"name": "DeviceShare"}]},
                "score": {"enabled": [{"name": "DeviceShare", "weight": 1}]},
                "reserve": {"enabled": [{"name": p} for p in ("NodeNUMAResource", "DeviceShare", "ElasticQuota")]},
                "preBind": {"enabled": [{"name": "NodeNUMAResource"}, {"name": "DeviceShare"}]},
            }
        }
    ]
}


def quota_device_numa_cluster(rng: random.Random, nodes: int, pods: int) -> list[dict]:
    """GPU nodes (a fifth), CPU topologies, a small quota tree, and LSR / shared-GPU / LS pods."""
    topology = json.dumps(
        {
            "detail": [
                {"id": t * 8 + s * 4 + c, "core": s * 4 + c, "socket": s, "node": s}
                for t in range(2)
                for s in range(2)
                for c in range(4)
            ]
        }
    )
    gpu = {
        "nvidia.com/gpu": "2",
        "koordinator.sh/gpu-core": "200",
        "koordinator.sh/gpu-memory-ratio": "200",
        "koordinator.sh/gpu-memory": "160Gi",
    }
    objects: list[dict] = []
    for i in range(nodes):
        name = f"n{i:03d}"
        allocatable = {"cpu": str(rng.choice([4, 16])), "memory": "64Gi", "pods": "110", **(gpu if i % 5 == 0 else {})}
        objects.append({"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}})
        objects.append(make_metric(name, cpu=f"{rng.randint(0, 4000)}m", memory="8Gi"))
        objects.append(
            {
                "kind": "NodeResourceTopology",
                "metadata": {"name": name, "annotations": {"node.koordinator.sh/cpu-topology": topology}},
            }
        )
        if i % 5 == 0:
            objects.append(
                {
                    "kind": "Device",
                    "metadata": {"name": name},
                    "spec": {
                        "devices": [
                            {
                                "type": "gpu",
                                "minor": m,
                                "health": True,
                                "resources": {"koordinator.sh/gpu-memory": "80Gi"},
                            }
                            for m in range(2)
                        ]
                    },
                }
            )
    objects.append(
        {
            "kind": "ElasticQuota",
            "metadata": {"name": "leaf", "namespace": "quotas"},
            "spec": {"min": {"cpu": "10", "memory": "40Gi"}, "max": {"cpu": "60", "memory": "400Gi"}},
        }
    )
    for j in range(pods):
        labels = {"quota.scheduling.koordinator.sh/name": "leaf", "koordinator.sh/qosClass": "LS"}
        requests = {"cpu": str(rng.choice([1, 2, 6])), "memory": "4Gi"}
        kind = rng.randrange(3)
        if kind == 0:
            labels["koordinator.sh/qosClass"] = "LSR"
        elif kind == 1:
            requests.update(
                {"koordinator.sh/gpu-core": str(rng.choice([50, 100])), "koordinator.sh/gpu-memory-ratio": "50"}
            )
        objects.append(
            {
                "kind": "Pod",
                "metadata": {"name": f"pod-{j:03d}", "namespace": "bench", "labels": labels},
                "spec": {
                    "priority": 9500,
                    "containers": [{"name": "c", "resources": {"requests": requests, "limits": requests}}],
                },
            }
        )
    return objects


def test_quota_device_numa_walk_is_the_same_with_and_without_batch_forms():
    """Per-node batch forms (DeviceShare, NodeNUMAResource) in windows, and each rejected node's
    reason asked of the first plugin that rejects it: the same as asking every plugin in order."""
    objects = quota_device_numa_cluster(random.Random(21), 160, 50)
    runs = []
    for batch in (True, False):
        from scheduler_plugins.scheduler.framework.config import parse_config
        from scheduler_plugins.scheduler.framework.scheduling import Scheduler
        from scheduler_plugins.scheduler.registry import in_tree_registry

        fwk, cluster = make_framework(objects, parse_config(QUOTA_DEVICE_NUMA, in_tree_registry()))
        fwk.batch = batch
        scheduler = Scheduler(fwk, cluster, 0)
        runs.append(
            [
                (
                    p.pod,
                    p.node,
                    p.score,
                    p.message,
                    scheduler.next_start_node_index,
                    {n: s.as_dict() for n, s in p.failed_nodes.items()},
                )
                for p in (scheduler.schedule_one(pod) for pod in fwk.sort_pods(list(cluster.pending.values())))
            ]
        )
    assert runs[0] == runs[1]
    assert any(node for _, node, *_ in runs[0]) and any(not node for _, node, *_ in runs[0])


@given(st.integers(1, 3000), st.data())
def test_filter_windows_cover_every_position_once_in_rotation_order(total, data):
    from scheduler_plugins.scheduler.framework.batch import windows

    start, size = data.draw(st.integers(0, total - 1)), data.draw(st.integers(1, total + 10))
    runs = list(windows(start, total, size))
    walked = [i for low, high in runs for i in range(low, high)]
    assert walked == [(start + k) % total for k in range(total)]
    assert all(high > low for low, high in runs)
    assert runs[0][1] - runs[0][0] == min(size, total - start)


@pytest.mark.parametrize(
    "top, own, expected", [(None, None, 0), (30, None, 30), (30, 70, 70), (None, 0, 0), (80, 0, 0)]
)
def test_a_profile_percentage_of_nodes_to_score_wins_over_the_top_level_one(top, own, expected):
    """As KubeSchedulerProfile.percentageOfNodesToScore in kube-scheduler (schedule_one.go)."""
    from scheduler_plugins.scheduler.framework.config import parse_config
    from scheduler_plugins.scheduler.framework.scheduling import Scheduler, num_feasible_nodes_to_find
    from scheduler_plugins.scheduler.registry import in_tree_registry

    doc: dict = {"profiles": [{} if own is None else {"percentageOfNodesToScore": own}]}
    if top is not None:
        doc["percentageOfNodesToScore"] = top
    config = parse_config(doc, in_tree_registry())
    fwk, cluster = make_framework([make_node("n1", cpu="1", memory="1Gi")], config)
    scheduler = Scheduler(fwk, cluster, config.percentage_of_nodes_to_score)
    assert scheduler.percentage == expected
    assert num_feasible_nodes_to_find(scheduler.percentage, 5000) == {0: 500, 30: 1500, 70: 3500}[expected]


@pytest.mark.parametrize("seed", range(30))
def test_the_batch_refresh_leaves_the_per_node_filter_and_score_as_they_were(seed):
    """The batch columns share their per-node values with the plugin's per-node memo (Filter's
    checks and Score's usage per variant, read again for the reasons of rejected nodes): a twin
    framework whose batch forms never ran gives the same statuses, reasons and scores."""
    rng = random.Random(seed)
    config = make_config({"LoadAwareScheduling": rng.choice(ARGS)})
    objects = random_cluster(rng)
    pods = [PodInfo(random_pod(rng)) for _ in range(4)]
    fwk, cluster = make_framework(objects, config)
    twin, twin_cluster = make_framework(objects, config)
    nodes, twin_nodes = cluster.node_list(), twin_cluster.node_list()
    index = node_indexes(nodes)
    plugin, twin_plugin = fwk.plugins["LoadAwareScheduling"], twin.plugins["LoadAwareScheduling"]
    for pod in pods:  # the batch forms first (they fill the memo), then the per-node ones
        plugin.vector.filter_mask(CycleState(), pod, nodes, index)
        plugin.vector.score_array(CycleState(), pod, nodes, index)
        for node, twin_node in zip(nodes, twin_nodes, strict=True):
            got, want = plugin.filter(CycleState(), pod, node), twin_plugin.filter(CycleState(), pod, twin_node)
            assert (got.code, got.reasons) == (want.code, want.reasons), node.name
            assert plugin.score(CycleState(), pod, node)[0] == twin_plugin.score(CycleState(), pod, twin_node)[0]
