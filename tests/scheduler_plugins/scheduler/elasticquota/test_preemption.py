"""ElasticQuota's PostFilter and its over-quota monitor: a quota preempts its own lower-priority
pods, and takes back what it lent (`pkg/scheduler/plugins/elasticquota/preempt_test.go`
`TestPostFilter`, `TestCanPreempt`; `quota_overuse_revoke_test.go`
`TestQuotaOverUsedRevokeController_GetToRevokePodList`, `TestQuotaOverUsedGroupMonitor_Monitor`)."""

from colocate.cluster.store import ClusterStore
from scheduler_plugins.scheduler.cluster.state import SCHEDULER_KINDS, ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.wiring import build_framework
from tests.support.builders import make_node, make_pod, make_quota

QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"


def profile(**args):
    return {
        "profiles": [
            {
                "plugins": {
                    "preFilter": {"enabled": [{"name": "ElasticQuota"}]},
                    "postFilter": {"enabled": [{"name": "ElasticQuota"}]},
                    "reserve": {"enabled": [{"name": "ElasticQuota"}]},
                },
                "pluginConfig": [{"name": "ElasticQuota", "args": args}],
            }
        ]
    }


def quota_pod(name, quota, cpu="4", node=None, priority=5500, labels=None, start="2024-01-01T00:00:00Z"):
    pod = make_pod(
        name,
        "work",
        labels={QUOTA_LABEL: quota, **(labels or {})},
        requests={"cpu": cpu, "memory": "1Gi"},
        node=node,
        priority=priority,
    )
    pod["metadata"]["uid"] = "uid-" + name
    if node:
        pod["status"] = {"phase": "Running", "startTime": start}
    return pod


def world(objects, **args):
    store = ClusterStore(SCHEDULER_KINDS)
    for kind in SCHEDULER_KINDS:
        store.replace(kind, [o for o in objects if o.get("kind") == kind])
    cluster = ClusterState.of_store(store)
    fwk = build_framework(parse_config(profile(**args), in_tree_registry()), in_tree_registry(), cluster)
    return cluster, Scheduler(fwk, cluster), fwk


NODES = [make_node("n1", cpu="8", memory="32Gi"), make_node("n2", cpu="8", memory="32Gi")]


def test_a_pod_over_its_quota_preempts_a_lower_priority_pod_of_the_same_quota():
    objects = [
        *NODES,
        make_quota("team-a", min={"cpu": "4"}, max={"cpu": "8"}),
        make_quota("team-b", min={"cpu": "4"}, max={"cpu": "8"}),
        quota_pod("a-batch-0", "team-a", node="n1", start="2024-01-01T00:00:00Z"),
        quota_pod("a-batch-1", "team-a", node="n1", start="2024-01-01T00:05:00Z"),
        quota_pod("b-free-0", "team-b", node="n2", priority=3500),
    ]
    cluster, scheduler, _ = world(objects)
    placement = scheduler.schedule_one(PodInfo(quota_pod("a-prod", "team-a", priority=9500)))
    assert placement.scheduled and placement.preempted_by == "ElasticQuota"
    # one victim is enough for the quota (8 - 4 + 4 <= 8); the later-started batch pod goes; the
    # other quota's lower-priority pod is never a victim
    assert [v["pod"] for v in placement.victims] == ["work/a-batch-1"]
    assert "work/b-free-0" in cluster.nodes["n2"].pods


def test_non_preemptible_pods_and_equal_priorities_are_never_victims():
    objects = [
        *NODES,
        make_quota("team-a", min={"cpu": "4"}, max={"cpu": "8"}),
        quota_pod("keep", "team-a", node="n1", labels={"quota.scheduling.koordinator.sh/preemptible": "false"}),
        quota_pod("peer", "team-a", node="n2", priority=9500),
    ]
    cluster, scheduler, _ = world(objects)
    placement = scheduler.schedule_one(PodInfo(quota_pod("a-prod", "team-a", priority=9500)))
    assert not placement.scheduled and not placement.victims
    assert "Insufficient quotas" in placement.message


def test_a_quota_takes_back_what_it_lent_once_the_borrower_stays_over_its_runtime():
    # team-b borrowed all 16 cpu while team-a asked nothing; team-a now asks for its min (8)
    objects = [
        *NODES,
        make_quota("team-a", min={"cpu": "8"}, max={"cpu": "16"}),
        make_quota("team-b", min={"cpu": "0"}, max={"cpu": "16"}),
        *(
            quota_pod(f"b-{i}", "team-b", node=f"n{1 + i // 2}", priority=100 + i, start=f"2024-01-01T00:0{i}:00Z")
            for i in range(4)
        ),
        quota_pod("a-0", "team-a", cpu="8", priority=100),  # no Koordinator class: plain cpu, like b's
    ]
    cluster, scheduler, fwk = world(objects, monitorAllQuotas=True, delayEvictTime="120s")
    plugin = fwk.plugins["ElasticQuota"]
    assert plugin.manager.state_of("team-b").runtime["cpu"] == 8000  # what team-b may keep now
    placement = scheduler.schedule_one(cluster.pending["work/a-0"])
    assert not placement.scheduled  # the nodes are full of team-b's pods, none of them team-a's to preempt
    revoker = plugin.revoker
    assert revoker.enabled and revoker.due(1000.0) == {}  # over its runtime, but not for delayEvictTime yet
    assert revoker.due(1100.0) == {}
    due = revoker.due(1121.0)
    # the fewest, least important pods that bring team-b back within its runtime
    assert [p.key for p in due["team-b"]] == ["work/b-1", "work/b-0"]
    for pod in due["team-b"]:
        fwk.handle.client.evict_pod(pod.namespace, pod.name)
    placement = scheduler.schedule_one(cluster.pending["work/a-0"])
    assert placement.scheduled and placement.node == "n1"
    assert revoker.due(2000.0) == {}  # team-b fits its runtime again


def test_the_monitor_is_off_unless_monitor_all_quotas():
    cluster, scheduler, fwk = world([*NODES, make_quota("team-a", max={"cpu": "8"})])
    assert not fwk.plugins["ElasticQuota"].revoker.enabled


async def test_the_extender_runs_the_monitor_and_evicts_what_is_due():
    import asyncio
    import itertools

    from scheduler_plugins.scheduler.extender.server import revoke_forever
    from scheduler_plugins.scheduler.extender.service import ExtenderService
    from tests.support.wait import wait_for

    objects = [
        *NODES,
        make_quota("team-a", min={"cpu": "8"}, max={"cpu": "16"}),
        make_quota("team-b", min={"cpu": "0"}, max={"cpu": "16"}),
        *(quota_pod(f"b-{i}", "team-b", node=f"n{1 + i // 2}", priority=100 + i) for i in range(4)),
        quota_pod("a-0", "team-a", cpu="8", priority=100),
    ]
    store = ClusterStore(SCHEDULER_KINDS)
    for kind in SCHEDULER_KINDS:
        store.replace(kind, [o for o in objects if o.get("kind") == kind])
    cluster = ClusterState.of_store(store)
    ticks = itertools.count(1000.0, 10.0)
    config = parse_config(profile(monitorAllQuotas=True, delayEvictTime="15s"), in_tree_registry())
    fwk = build_framework(config, in_tree_registry(), cluster, clock=lambda: next(ticks))
    service = ExtenderService(fwk, cluster)
    task = asyncio.create_task(revoke_forever(service, fwk.plugins["ElasticQuota"].revoker, 0.01))
    try:
        await wait_for(lambda: not cluster.nodes["n1"].pods, timeout=10, message="team-b's pods on n1 to be evicted")
    finally:
        task.cancel()
    assert sorted(cluster.nodes["n1"].pods) == [] and len(cluster.nodes["n2"].pods) == 2  # b-0, b-1 evicted
