"""NodeNUMAResource through the scheduling loop: bound CPUs written at PreBind and read back."""

import json

from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.explain import explain
from scheduler_plugins.scheduler.wiring import build_framework
from tests.scheduler_plugins.scheduler.nodenumaresource.topologies import make_nrt
from tests.support.builders import make_node, make_pod

STATUS = "scheduling.koordinator.sh/resource-status"
NUMA = "NodeNUMAResource"
OFF = {"disabled": [{"name": "LoadAwareScheduling"}]}
PROFILE = {
    "profiles": [
        {
            "plugins": {
                "preFilter": {"enabled": [{"name": NUMA}], **OFF},
                "filter": {"enabled": [{"name": NUMA}], **OFF},
                "score": OFF,
                "reserve": {"enabled": [{"name": NUMA}], **OFF},
                "preBind": {"enabled": [{"name": NUMA}]},
            }
        }
    ]
}


def lsr(name, cpu="4", memory="8Gi", node=None, annotations=None, qos="LSR"):
    resources = {"cpu": cpu, "memory": memory}
    return make_pod(
        name, "prod", qos=qos, priority=9500, requests=resources, limits=resources, node=node, annotations=annotations
    )


def scheduler(objects):
    cluster = ClusterState.from_objects(objects)
    config = parse_config(PROFILE, in_tree_registry())
    return cluster, Scheduler(build_framework(config, in_tree_registry(), cluster), cluster)


def status_of(cluster, name):
    pod, _ = cluster.find_pod("prod", name)
    return json.loads(pod.annotations.get(STATUS, "null"))


NODE = make_node("n1", cpu="16", memory="64Gi")


def test_an_lsr_pod_gets_whole_cores_next_to_the_cpus_already_bound():
    held = lsr("held", cpu="2", node="n1", annotations={STATUS: '{"cpuset":"0,8"}'})
    cluster, sched = scheduler([NODE, make_nrt("n1"), held, lsr("new")])
    assert sched.schedule_one(cluster.pending["prod/new"]).scheduled
    assert status_of(cluster, "new") == {"cpuset": "1-2,9-10"}
    spec, _ = cluster.find_pod("prod", "new")
    assert json.loads(spec.annotations["scheduling.koordinator.sh/resource-spec"]) == {
        "preferredCPUBindPolicy": "FullPCPUs"
    }
    cluster.add_pod(lsr("third"))
    assert sched.schedule_one(cluster.pending["prod/third"]).scheduled
    # socket 0 has one whole core left: the pod goes whole to socket 1 rather than span both
    assert status_of(cluster, "third") == {"cpuset": "4-5,12-13"}


def test_pods_that_may_not_use_cpusets_are_left_alone():
    cluster, sched = scheduler([NODE, make_nrt("n1"), lsr("ls", qos="LS")])
    assert sched.schedule_one(cluster.pending["prod/ls"]).scheduled
    assert status_of(cluster, "ls") is None


def test_fractional_cpus_cannot_be_bound():
    cluster, sched = scheduler([NODE, make_nrt("n1"), lsr("half", cpu="2500m")])
    placement = sched.schedule_one(cluster.pending["prod/half"])
    assert placement.status.code.name == "UnschedulableAndUnresolvable"
    assert placement.status.message == "the requested CPUs must be integer"


def test_a_node_without_a_cpu_topology_cannot_bind():
    cluster, sched = scheduler([NODE, lsr("p")])
    assert "node(s) invalid CPU Topology" in sched.schedule_one(cluster.pending["prod/p"]).message


def test_a_required_policy_fails_on_a_node_without_enough_free_cpus():
    spec = {"scheduling.koordinator.sh/resource-spec": '{"requiredCPUBindPolicy":"FullPCPUs"}'}
    kubelet = make_node(
        "n1", cpu="16", memory="64Gi", annotations={"node.koordinator.sh/reservation": '{"reservedCPUs":"0-13"}'}
    )
    cluster, sched = scheduler([kubelet, make_nrt("n1"), lsr("p", annotations=spec), lsr("two", cpu="2")])
    assert sched.schedule_one(cluster.pending["prod/two"]).scheduled
    assert status_of(cluster, "two") == {"cpuset": "14-15"}
    assert "not enough cpus available to satisfy request" in sched.schedule_one(cluster.pending["prod/p"]).message


def test_single_numa_node_policy_admits_what_fits_one_numa_node():
    spec = {"scheduling.koordinator.sh/numa-topology-spec": '{"numaTopologyPolicy":"SingleNUMANode"}'}
    cluster, sched = scheduler(
        [
            NODE,
            make_nrt("n1", memory_per_numa="32Gi"),
            lsr("big", cpu="10", annotations=spec),
            lsr("fits", cpu="6", annotations=spec),
        ]
    )
    assert "node(s) NUMA Topology affinity error" in sched.schedule_one(cluster.pending["prod/big"]).message
    assert sched.schedule_one(cluster.pending["prod/fits"]).scheduled
    assert status_of(cluster, "fits") == {
        "cpuset": "0-2,8-10",
        "numaNodeResources": [{"node": 0, "resources": {"cpu": "6", "memory": "8Gi"}}],
    }


def test_a_node_numa_policy_must_match_the_pods():
    spec = {"scheduling.koordinator.sh/numa-topology-spec": '{"numaTopologyPolicy":"Restricted"}'}
    node = make_node(
        "n1", cpu="16", memory="64Gi", labels={"node.koordinator.sh/numa-topology-policy": "SingleNUMANode"}
    )
    cluster, sched = scheduler([node, make_nrt("n1"), lsr("p", annotations=spec)])
    assert "node(s) NUMA Topology policy not match" in sched.schedule_one(cluster.pending["prod/p"]).message


def test_explain_shows_the_cpus_each_feasible_node_would_give():
    cluster, sched = scheduler([NODE, make_nrt("n1")])
    report = explain(sched.framework, cluster, PodInfo(lsr("p", cpu="2")))
    assert report["nodes"][0]["details"] == {NUMA: {"cpuset": "0,8"}}


def test_the_batch_filter_agrees_with_the_per_node_filter():
    from scheduler_plugins.scheduler.framework.cycle_state import CycleState

    labelled = make_node(
        "a-numa", cpu="16", memory="64Gi", labels={"node.koordinator.sh/numa-topology-policy": "SingleNUMANode"}
    )
    forced = make_node(
        "b-forced", cpu="16", memory="64Gi", labels={"node.koordinator.sh/cpu-bind-policy": "FullPCPUsOnly"}
    )
    objects = [labelled, forced, make_node("c-plain", cpu="16", memory="64Gi"), make_nrt("c-plain")]
    cluster, sched = scheduler(objects)
    plugin = sched.framework.plugins[NUMA]
    nodes = cluster.node_list()
    for pod in (lsr("ls", qos="LS"), lsr("bound"), lsr("odd", cpu="1500m", qos="LS")):
        state = CycleState()
        plugin.pre_filter(state, PodInfo(pod))
        mask = plugin.vector.filter_mask(state, PodInfo(pod), nodes, slice(None))
        assert mask.tolist() == [plugin.filter(state, PodInfo(pod), n).is_success for n in nodes]
    state = CycleState()
    plugin.pre_filter(state, PodInfo(lsr("bound")))
    assert plugin.vector.filter_mask(state, PodInfo(lsr("bound")), nodes, slice(None)).tolist() == [False, False, True]


def test_score_uses_the_numa_nodes_a_numa_policy_would_use():
    from scheduler_plugins.scheduler.framework.cycle_state import CycleState

    spec = {"scheduling.koordinator.sh/numa-topology-spec": '{"numaTopologyPolicy":"SingleNUMANode"}'}
    held = lsr(
        "held",
        cpu="4",
        node="n1",
        annotations={
            STATUS: json.dumps(
                {"cpuset": "0-1,8-9", "numaNodeResources": [{"node": 0, "resources": {"cpu": "4", "memory": "16Gi"}}]}
            )
        },
    )
    cluster, sched = scheduler([NODE, make_nrt("n1", memory_per_numa="32Gi"), held])
    plugin = sched.framework.plugins[NUMA]
    node = cluster.node_list()[0]
    # SingleNUMANode packs onto NUMA node 0 (4 of its 8 CPUs and 16 of its 32Gi held): with the pod
    # 6 CPUs and 24Gi are used, 25 % free of each. Without a policy the whole node counts: cpu
    # (16 - 4 - 2) / 16 = 62 %, memory (64 - 8 - 8) / 64 = 75 %.
    for pod, expected in ((lsr("numa", cpu="2", annotations=spec), 25), (lsr("plain", cpu="2"), (62 + 75) // 2)):
        state = CycleState()
        plugin.pre_filter(state, PodInfo(pod))
        assert plugin.score(state, PodInfo(pod), node)[0] == expected
