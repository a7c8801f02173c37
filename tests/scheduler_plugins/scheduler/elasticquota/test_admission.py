"""Quota admission through the scheduling loop, as pods arrive and finish (Koordinator's
`elasticquota/plugin.go` PreFilter)."""

from colocate.cluster.store import ClusterStore
from scheduler_plugins.scheduler.cluster.state import SCHEDULER_KINDS, ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.features import scheduler_gates
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.simulate import simulate
from scheduler_plugins.scheduler.wiring import build_framework
from tests.support.builders import make_node, make_pod, make_quota

QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
PROFILE = {
    "profiles": [
        {
            "plugins": {
                "preFilter": {"enabled": [{"name": "ElasticQuota"}]},
                "reserve": {"enabled": [{"name": "ElasticQuota"}]},
            }
        }
    ]
}


def quota_pod(name, quota, cpu="4", node=None, **kw):
    return make_pod(name, "work", labels={QUOTA_LABEL: quota}, requests={"cpu": cpu, "memory": "1Gi"}, node=node, **kw)


def world(objects, features=None):
    store = ClusterStore(SCHEDULER_KINDS)
    for kind in SCHEDULER_KINDS:
        store.replace(kind, [o for o in objects if o.get("kind") == kind])
    cluster = ClusterState.of_store(store)
    config = parse_config(PROFILE, in_tree_registry())
    fwk = build_framework(config, in_tree_registry(), cluster, features=features or scheduler_gates())
    return store, cluster, Scheduler(fwk, cluster)


NODES = [make_node("n1", cpu="8", memory="32Gi"), make_node("n2", cpu="8", memory="32Gi")]
QUOTAS = [
    make_quota("team-a", min={"cpu": "4"}, max={"cpu": "12"}),
    make_quota("team-b", min={"cpu": "4"}, max={"cpu": "12"}),
]


def test_a_quota_admits_pods_up_to_its_runtime_and_refuses_the_next():
    pods = [quota_pod(f"a-{i}", "team-a", created=f"2024-01-01T00:00:0{i}Z") for i in range(4)]
    _, cluster, scheduler = world([*NODES, *QUOTAS, *pods, quota_pod("b-0", "team-b")])
    report = simulate(scheduler, cluster).as_dict()
    outcome = {p["pod"]: p for p in report["placements"]}
    # 16 cpu: team-b asks 4 (its min), team-a asks 16 limited to its max 12 -> runtime 12
    assert [outcome[f"work/a-{i}"]["node"] is not None for i in range(4)] == [True, True, True, False]
    assert outcome["work/b-0"]["node"] is not None
    message = outcome["work/a-3"]["message"]
    assert "Insufficient quotas, quotaName: team-a, runtime: cpu=12, used: cpu=12" in message
    assert "pod's request: cpu=4, exceedDimensions: [cpu]" in message


def test_a_finished_pod_frees_its_quota_for_the_next_pod():
    running = [quota_pod(f"a-{i}", "team-a", node="n1" if i < 2 else "n2") for i in range(3)]
    store, cluster, scheduler = world([*NODES, *QUOTAS, *running])
    quota = scheduler.framework.plugins["ElasticQuota"]
    late = quota_pod("a-late", "team-a")
    store.put("Pod", late)
    assert quota.manager.states()["team-a"].request == {"cpu": 16000, "memory": 4 << 30}
    assert not scheduler.schedule_one(cluster.pending["work/a-late"]).scheduled
    finished = quota_pod("a-0", "team-a", node="n1", phase="Succeeded")
    store.put("Pod", finished)
    placement = scheduler.schedule_one(cluster.pending["work/a-late"])
    assert placement.scheduled
    states = quota.manager.states()
    assert states["team-a"].used["cpu"] == 12000 and states["team-a"].runtime["cpu"] == 12000
    store.delete("Pod", finished)
    store.delete("Pod", running[1])
    assert quota.manager.states()["team-a"].used["cpu"] == 8000


def test_a_pod_the_state_does_not_hold_counts_in_its_quotas_request_while_judged():
    # the extender's case: the pod being scheduled is not in the watched state, so without it the
    # quota would ask for nothing and get a runtime of 0
    _, _, scheduler = world([*NODES, make_quota("solo", min={"cpu": "0"}, max={"cpu": "20"})])
    quota = scheduler.framework.plugins["ElasticQuota"]
    _, _, status = scheduler.framework.run_pre_filter(CycleState(), PodInfo(quota_pod("x", "solo", cpu="6")))
    assert status.is_success
    _, _, status = scheduler.framework.run_pre_filter(CycleState(), PodInfo(quota_pod("y", "solo", cpu="21")))
    assert "runtime: cpu=16" in status.message  # the cluster has 16 cpu
    assert not quota.manager.knows("work/x") and quota.manager.states()["solo"].request == {}


def test_guarantee_usage_gate_keeps_what_a_quota_already_runs():
    objects = [
        *NODES,
        make_quota("a", min={"cpu": "2"}, max={"cpu": "16"}),
        make_quota("b", min={"cpu": "2"}, max={"cpu": "16"}),
        quota_pod("a-0", "a", cpu="6", node="n1"),
        quota_pod("a-1", "a", cpu="4", node="n2"),
        *[quota_pod(f"b-{i}", "b") for i in range(4)],
    ]
    _, _, off = world(objects)
    _, _, on = world(objects, scheduler_gates("ElasticQuotaGuaranteeUsage=true"))
    plain = off.framework.plugins["ElasticQuota"].manager.states()
    guaranteed = on.framework.plugins["ElasticQuota"].manager.states()
    # 16 cpu; a asks 10 (all running), b 16. Without the gate both get 2 + 6 by equal weight, less
    # than a runs; with it a's running 10 cpu are a floor and b gets the rest.
    assert (plain["a"].runtime["cpu"], plain["b"].runtime["cpu"]) == (8000, 8000)
    assert guaranteed["a"].guaranteed["cpu"] == 10000
    assert (guaranteed["a"].runtime["cpu"], guaranteed["b"].runtime["cpu"]) == (10000, 6000)
