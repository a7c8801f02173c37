"""Preemption reaches the plugins that keep their own per-node state, through their PreFilter
extensions (kube's `SelectVictimsOnNode` calling `RunPreFilterExtensionRemovePod`/`AddPod`;
Koordinator's `nodenumaresource/preempt.go` and `deviceshare/plugin.go` AddPod/RemovePod): the CPUs
or GPUs a victim holds are free once it is gone, and a victim that holds none is given back."""

import json

from colocate.main import main
from policies.apis.devices import DEVICE_TYPE_GPU, DeviceAllocation, allocations_json
from scheduler_plugins.scheduler.extender.service import ExtenderService
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.framework.status import unschedulable
from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.scheduler_plugins.scheduler.nodenumaresource.topologies import make_nrt
from tests.support.builders import NOW, make_metric, make_node, make_pod, pod_metric
from tests.support.scheduling import make_config, make_framework

STATUS = "scheduling.koordinator.sh/resource-status"
SPEC = "scheduling.koordinator.sh/resource-spec"
ALLOCATED = "scheduling.koordinator.sh/device-allocated"
RUNNING = {"phase": "Running", "startTime": "2024-05-01T08:00:00Z"}


def enabled(*names):
    """The default profile with these plugins enabled at every point they implement."""
    on = {"enabled": [{"name": n} for n in names]}
    return make_config(plugins={p: on for p in ("preFilter", "filter", "reserve", "preBind")})


def bound(name, node, priority, requests, annotations=None, qos=None):
    pod = make_pod(
        name, "ml", node=node, priority=priority, requests=requests, limits=requests, annotations=annotations, qos=qos
    )
    pod["metadata"]["uid"] = "uid-" + name
    pod["status"] = dict(RUNNING)
    return pod


def preempt(objects, config, pod):
    fwk, cluster = make_framework(objects, config)
    placement = Scheduler(fwk, cluster).schedule_one(PodInfo(pod))
    return placement, cluster


# --- NodeNUMAResource ----------------------------------------------------------------------------
NUMA_NODE = make_node("n1", cpu="64", memory="128Gi")  # NodeResourcesFit never binds: only the CPUs do
# a lower-priority prod pod holding 12 of the 16 CPUs, and a batch pod holding none
HOLDER = bound("holder", "n1", 9100, {"cpu": "12", "memory": "4Gi"}, {STATUS: '{"cpuset":"0-5,8-13"}'}, "LSR")
BATCH = bound("batch", "n1", 5500, {"cpu": "2", "memory": "4Gi"})
LSR = make_pod(
    "lsr",
    "ml",
    qos="LSR",
    priority=9900,
    requests={"cpu": "8", "memory": "4Gi"},
    limits={"cpu": "8", "memory": "4Gi"},
    annotations={SPEC: json.dumps({"requiredCPUBindPolicy": "FullPCPUs"})},
)


def test_a_pod_that_needs_bound_cpus_preempts_the_pod_holding_them_and_only_it():
    placement, cluster = preempt([NUMA_NODE, make_nrt("n1"), HOLDER, BATCH, LSR], enabled("NodeNUMAResource"), LSR)
    assert placement.scheduled and placement.node == "n1"
    # the batch pod holds no CPU: removing it frees nothing the pod needs, so it is given back
    assert [v["pod"] for v in placement.victims] == ["ml/holder"]
    assert "ml/batch" in cluster.nodes["n1"].pods
    pod, _ = cluster.find_pod("ml", "lsr")
    assert len(json.loads(pod.annotations[STATUS])["cpuset"].replace("-", ",").split(",")) >= 2


def test_the_dry_run_does_not_leave_the_victims_cpus_free_for_the_next_cycle():
    fwk, cluster = make_framework([NUMA_NODE, make_nrt("n1"), HOLDER, BATCH], enabled("NodeNUMAResource"))
    numa = fwk.plugins["NodeNUMAResource"]
    state = CycleState()
    pod, _, _ = fwk.run_pre_filter(state, PodInfo(LSR))
    # what `explain` runs: the evaluator's trials remove the victims on clones of the state
    chosen, _, _ = fwk.plugins["DefaultPreemption"].select(state, pod, {"n1": unschedulable("no cpus")})
    assert chosen is not None and [v.pod.key for v in chosen.victims] == ["ml/holder"]
    assert not fwk.run_filter(state, pod, cluster.nodes["n1"]).is_success  # the holder still counts here
    assert "ml/holder" in numa.allocations["n1"]


# --- DeviceShare -----------------------------------------------------------------------------------
GPU_NODE = make_node("g1", cpu="32", memory="128Gi", extra={"nvidia.com/gpu": "2"})
DEVICE = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "Device",
    "metadata": {"name": "g1"},
    "spec": {
        "devices": [
            {
                "type": "gpu",
                "minor": i,
                "health": True,
                "resources": {
                    "koordinator.sh/gpu-core": "100",
                    "koordinator.sh/gpu-memory-ratio": "100",
                    "koordinator.sh/gpu-memory": "64Gi",
                },
            }
            for i in range(2)
        ]
    },
}
FULL = {"koordinator.sh/gpu-core": 100, "koordinator.sh/gpu-memory-ratio": 100, "koordinator.sh/gpu-memory": 64 << 30}


def on_card(minor):
    return {ALLOCATED: allocations_json({DEVICE_TYPE_GPU: [DeviceAllocation(minor, FULL)]})}


def test_a_pod_that_needs_a_gpu_preempts_the_lower_priority_pod_on_the_card():
    # card 0 is held by a batch pod, card 1 by a prod pod: only the batch pod may go
    trainer = bound("trainer", "g1", 5500, {"cpu": "1", "nvidia.com/gpu": "1"}, on_card(0))
    serving = bound("serving", "g1", 9500, {"cpu": "1", "nvidia.com/gpu": "1"}, on_card(1))
    idle = bound("idle", "g1", 3500, {"cpu": "1"})
    pod = make_pod("infer", "ml", priority=9500, requests={"cpu": "1", "nvidia.com/gpu": "1"})
    placement, cluster = preempt([GPU_NODE, DEVICE, trainer, serving, idle, pod], enabled("DeviceShare"), pod)
    assert placement.scheduled and placement.node == "g1"
    assert [v["pod"] for v in placement.victims] == ["ml/trainer"]
    assert "ml/idle" in cluster.nodes["g1"].pods  # holds no card: given back
    bound_pod, _ = cluster.find_pod("ml", "infer")
    assert json.loads(bound_pod.annotations[ALLOCATED])["gpu"][0]["minor"] == 0


async def test_the_extender_keeps_a_node_where_the_gpu_victim_makes_room():
    trainer = bound("trainer", "g1", 5500, {"cpu": "1", "nvidia.com/gpu": "1"}, on_card(0))
    serving = bound("serving", "g1", 5500, {"cpu": "1", "nvidia.com/gpu": "1"}, on_card(1))
    fwk, cluster = make_framework([GPU_NODE, DEVICE, trainer, serving], enabled("DeviceShare"))
    pod = make_pod("infer", "ml", priority=9500, requests={"cpu": "1", "nvidia.com/gpu": "1"})
    victims = {"Pods": [{"UID": "uid-trainer"}, {"UID": "uid-serving"}], "NumPDBViolations": 0}
    result = ExtenderService(fwk, cluster).preempt({"Pod": pod, "NodeNameToMetaVictims": {"g1": victims}})
    # before, DeviceShare still counted both cards held and the node was dropped; one card is enough
    assert list(result["NodeNameToMetaVictims"]) == ["g1"]
    assert len(result["NodeNameToMetaVictims"]["g1"]["Pods"]) == 1


# --- LoadAwareScheduling ---------------------------------------------------------------------------
def test_load_aware_has_no_pre_filter_extensions():
    """Koordinator's LoadAwareScheduling returns nil from `PreFilterExtensions()`
    (`pkg/scheduler/plugins/loadaware/load_aware.go`): its Filter reads the NodeMetric and its own
    assign cache, never the trial's node, so preemption's trials never change what it sees.
    NodeNUMAResource, DeviceShare, ElasticQuota and Reservation return themselves, as here."""
    on = {"enabled": [{"name": n} for n in ("LoadAwareScheduling", "NodeNUMAResource", "DeviceShare", "ElasticQuota")]}
    fwk, _ = make_framework([], make_config(plugins={"preFilter": on}))
    names = {type(p).__module__.split(".")[-2] for p in fwk.pre_filter_extensions}
    assert names == {"nodenumaresource", "deviceshare", "elasticquota", "reservation"}


def _full_node(cpu, just_placed=False):
    """A node of `cpu` cores with four 1-cpu pods at priority 1000, one under a budget that allows
    no disruption; the NodeMetric shows them using 100m each. Pods scheduled long before it are
    reflected by it; pods `just_placed` (no PodScheduled time: now) are still estimated by the
    assign cache, 850m each."""
    node = make_node("n1", cpu=str(cpu), memory="16Gi")
    pods = []
    for i in range(4):
        started = f"2024-05-01T08:0{i}:00Z"
        scheduled = None if just_placed else started
        requests = {"cpu": "1", "memory": "1Gi"}
        p = make_pod(f"low-{i}", "ml", node="n1", priority=1000, requests=requests, scheduled_at=scheduled)
        p["metadata"]["uid"] = f"uid-low-{i}"
        p.setdefault("status", {}).update(phase="Running", startTime=started)
        pods.append(p)
    pods[0]["metadata"]["labels"] = {"app": "guarded"}
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded", "namespace": "ml"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        "status": {"disruptionsAllowed": 0},
    }
    metric = make_metric(
        "n1", cpu="400m", memory="4Gi", pods=[pod_metric(f"low-{i}", "ml", cpu="100m") for i in range(4)]
    )
    return [node, *pods, budget, metric]


URGENT = make_pod("urgent", "ml", priority=9000, requests={"cpu": "2", "memory": "1Gi"})


def test_preemption_evicts_only_what_the_preemptor_needs_on_a_node_with_a_node_metric():
    """kube-scheduler's `selectVictimsOnNode` reprieves the budgeted pod first, then every pod the
    preemptor can do without: a 2-cpu pod on a full 4-cpu node evicts two pods, on a 5-cpu node one.
    LoadAware sees the NodeMetric (10% used, with the preemptor's estimate under 65%) whatever the
    trial."""
    for cpu, victims in ((4, 2), (5, 1)):
        placement, cluster = preempt([*_full_node(cpu), URGENT], None, URGENT)
        assert placement.nominated_node == "n1" and placement.preempted_by == "DefaultPreemption"
        assert len(placement.victims) == victims, (cpu, placement.victims)
        assert "ml/low-0" in cluster.nodes["n1"].pods  # its budget allows no disruption: reprieved


def test_a_reprieve_never_turns_load_aware_against_the_trial():
    """The same pods just placed: the assign cache estimates them (3.4 of 4 cpu, over the 65%
    threshold). Before, LoadAware's PreFilter extensions took the victims' estimates off the trial
    node and a reprieve put them back, so every reprieve but the budgeted pod's was refused and
    preemption named three victims (on a 5-cpu node too). Koordinator's LoadAware has no PreFilter
    extensions: the node is over its threshold with or without the victims, so it is no candidate
    and nothing is preempted until the koordlet's next report."""
    for cpu in (4, 5):
        placement, cluster = preempt([*_full_node(cpu, just_placed=True), URGENT], None, URGENT)
        assert not placement.victims and not placement.nominated_node, (cpu, placement.victims)
        assert len(cluster.nodes["n1"].pods) == 4


def test_load_aware_refuses_a_node_over_its_threshold_whatever_the_victims():
    """n1's NodeMetric shows 12 of 16 cpu used (75% > the 65% threshold), 10 of them by a
    lower-priority pod. Koordinator's LoadAware has no PreFilter extensions: evicting that pod would
    not change what its Filter sees until the koordlet reports again, so n1 is no candidate and no
    pod is preempted."""
    node = make_node("n1", cpu="16", memory="64Gi")
    hungry = bound("hungry", "n1", 9100, {"cpu": "4", "memory": "1Gi"})
    idle = bound("idle", "n1", 9000, {"cpu": "1", "memory": "1Gi"})
    metric = make_metric(
        "n1", cpu="12", memory="8Gi", pods=[pod_metric("hungry", "ml", cpu="10"), pod_metric("idle", "ml", cpu="100m")]
    )
    pod = make_pod("web", "ml", priority=9500, requests={"cpu": "1", "memory": "1Gi"})
    placement, cluster = preempt([node, hungry, idle, metric, pod], None, pod)
    assert not placement.scheduled and not placement.nominated_node and not placement.victims
    assert {"ml/hungry", "ml/idle"} <= set(cluster.nodes["n1"].pods)
    assert placement.failed_nodes["n1"].reasons == ("node(s) cpu usage exceed threshold",)


# --- nominated pods ------------------------------------------------------------------------------
def test_simulate_keeps_a_nominated_pods_room_from_a_later_lower_priority_pod(tmp_path, capsys):
    """kube's RunFilterPluginsWithNominatedPods: the prod pod preempted on n1 earlier (its victim is
    still terminating) and is nominated there; a lower-priority pod arriving after it must not take the room
    the victim frees, and the prod pod does not preempt again while its victim terminates."""
    node = make_node("n1", cpu="4", memory="8Gi")
    # all three are koord-prod (priorities 9000-9999), so they compete for the same cpu
    victim = bound("victim", "n1", 9100, {"cpu": "2", "memory": "1Gi"})
    victim["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:30Z"
    victim["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    prod = make_pod("prod", "ml", priority=9500, requests={"cpu": "4", "memory": "1Gi"})
    prod["status"] = {"nominatedNodeName": "n1"}
    later = make_pod("later", "ml", priority=9200, requests={"cpu": "2", "memory": "1Gi"})
    (tmp_path / "cluster.yaml").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [node, victim, prod, later]})
    )
    assert main(["scheduler", "simulate", "--cluster", str(tmp_path), "--now", NOW, "-o", "json"]) == 0
    placements = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["placements"]}
    assert placements["ml/prod"]["node"] is None and placements["ml/prod"]["nominatedNode"] == "n1"
    assert "preemptedBy" not in placements["ml/prod"]  # it waits for its victim, it does not preempt again
    # 2 cpu are free on n1, but they are promised to ml/prod
    assert placements["ml/later"]["node"] is None and placements["ml/later"]["reasons"] == {"n1": "Insufficient cpu"}


def test_filter_counts_nominated_pods_of_equal_or_higher_priority_only():
    node = make_node("n1", cpu="4", memory="8Gi")
    fwk, cluster = make_framework([node, make_pod("prod", "ml", priority=9500, requests={"cpu": "3"})])
    sched = Scheduler(fwk, cluster)
    fwk.handle.nominator.add(cluster.pending["ml/prod"], "n1")
    lower = make_pod("lower", "ml", priority=9100, requests={"cpu": "2"})
    higher = make_pod("higher", "ml", priority=9900, requests={"cpu": "2"})
    equal = make_pod("equal", "ml", priority=9500, requests={"cpu": "2"})
    for pod in (lower, equal, higher):
        cluster.add_pod(pod)
    assert not sched.schedule_one(cluster.pending["ml/lower"]).scheduled
    assert not sched.schedule_one(cluster.pending["ml/equal"]).scheduled
    assert sched.schedule_one(cluster.pending["ml/higher"]).node == "n1"  # outranks the nominated pod
    fwk.handle.nominator.delete("ml/prod")
    assert sched.schedule_one(cluster.pending["ml/equal"]).node == "n1"  # the nomination is gone: 2 cpu left


# --- Reservation -----------------------------------------------------------------------------------
RESERVED_NODE = make_node("n1", cpu="8", memory="32Gi")


def web_reservation(policy="Default", cpu="4"):
    """r1 holds `cpu` on n1 for pods labelled app=web."""
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": "r1", "uid": "r1-uid"},
        "spec": {
            "owners": [{"labelSelector": {"matchLabels": {"app": "web"}}}],
            "allocatePolicy": policy,
            "allocateOnce": False,
            "template": {"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}]}},
        },
        "status": {"phase": "Available", "nodeName": "n1", "allocatable": {"cpu": cpu}},
    }


def web(name, priority, cpu, node=None, in_r1=False):
    annotations = (
        {"scheduling.koordinator.sh/reservation-allocated": '{"name": "r1", "uid": "r1-uid"}'} if in_r1 else None
    )
    pod = make_pod(
        name, "ml", labels={"app": "web"}, priority=priority, requests={"cpu": cpu}, node=node, annotations=annotations
    )
    if node:
        pod["metadata"]["uid"] = "uid-" + name
        pod["status"] = dict(RUNNING)
    return pod


def test_a_victim_outside_the_reservation_frees_the_node_for_the_reservations_owner():
    """Koordinator's Reservation `RemovePod` adds a victim's requests to the node's `preemptible`,
    and `filterWithReservations` counts them free (`TestFilterWithPreemption`,
    `TestPreFilterExtensionRemovePod`): a web pod needing 6 cpu on n1 — 4 held for it by r1, the
    other 4 taken by a lower-priority pod — preempts that pod."""
    filler = bound("filler", "n1", 9100, {"cpu": "4"})
    pod = web("web", 9500, "6")
    placement, cluster = preempt([RESERVED_NODE, web_reservation(), filler, pod], None, pod)
    assert placement.nominated_node == "n1" and [v["pod"] for v in placement.victims] == ["ml/filler"]
    assert placement.scheduled and placement.node == "n1"


def test_a_victim_inside_a_restricted_reservation_frees_the_reservation():
    """`AddPod`/`RemovePod` keep a victim that allocated from a reservation apart
    (`preemptibleInRRs`): with the Restricted policy, an owner may use only what r1 has left, and a
    lower-priority owner's 3 cpu in r1 are r1's again once it is a victim. The pod must use r1
    (its reservation affinity names it), so the other lower-priority pod, outside r1, frees nothing
    it can use and is given back."""
    old = web("old-web", 9100, "3", node="n1", in_r1=True)
    filler = bound("filler", "n1", 9100, {"cpu": "3"})
    pod = web("web", 9500, "4")
    pod["metadata"]["annotations"] = {"scheduling.koordinator.sh/reservation-affinity": '{"name": "r1"}'}
    placement, cluster = preempt([RESERVED_NODE, web_reservation("Restricted"), old, filler, pod], None, pod)
    assert placement.nominated_node == "n1" and [v["pod"] for v in placement.victims] == ["ml/old-web"]
    assert "ml/filler" in cluster.nodes["n1"].pods
