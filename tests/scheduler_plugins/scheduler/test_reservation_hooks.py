"""The reservation hooks of NodeNUMAResource, DeviceShare and ElasticQuota (Koordinator's
`nodenumaresource/reservation.go` RestoreReservation/tryAllocateFromReusable, tests
`TestRestoreReservation`, `TestPlugin_Reserve`; `deviceshare/reservation.go`, tests
`Test_Plugin_ReservationRestore`, `Test_tryAllocateFromReservation`): what a Reservation holds is
set aside for everyone else and offered to its owners; its quota counts it once."""

import json

import pytest

from colocate.cluster.files import load_directory
from colocate.main import main
from scheduler_plugins.scheduler.cluster.state import SCHEDULER_KINDS, ClusterState
from scheduler_plugins.scheduler.framework.config import load_config, parse_config
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.simulator.simulate import simulate
from scheduler_plugins.scheduler.wiring import build_framework
from tests.scheduler_plugins.scheduler.deviceshare.test_plugin import device, gpu_node
from tests.scheduler_plugins.scheduler.nodenumaresource.topologies import make_nrt
from tests.support.builders import make_node, make_pod, make_quota, make_reservation
from tests.support.paths import REPO

STATUS = "scheduling.koordinator.sh/resource-status"
DEVICES = "scheduling.koordinator.sh/device-allocated"
AFFINITY = "scheduling.koordinator.sh/reservation-affinity"
QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
PLUGINS = ("NodeNUMAResource", "DeviceShare", "ElasticQuota")


def world(objects):
    numa_gpu = [{"name": n} for n in PLUGINS[:2]]
    plugins = {p: {"enabled": numa_gpu} for p in ("filter", "preBind")}
    plugins.update({p: {"enabled": [{"name": n} for n in PLUGINS]} for p in ("preFilter", "reserve")})
    profile = {"profiles": [{"plugins": plugins}]}
    cluster = ClusterState.from_objects(objects)
    framework = build_framework(parse_config(profile, in_tree_registry()), in_tree_registry(), cluster)
    return cluster, Scheduler(framework, cluster)


def reservation(name, requests, owner="owner", policy=None, labels=None, qos="LSR", status=None, **spec):
    obj = make_reservation(name)
    obj["metadata"]["uid"] = f"uid-{name}"
    obj["spec"]["owners"] = [{"object": {"name": owner}}]
    obj["spec"]["template"] = {
        "metadata": {
            "namespace": "prod",
            "labels": {**({"koordinator.sh/qosClass": qos} if qos else {}), **(labels or {})},
        },
        "spec": {
            "priorityClassName": "koord-prod",
            "priority": 9500,
            "containers": [{"name": "main", "resources": {"requests": requests, "limits": requests}}],
        },
    }
    if policy:
        obj["spec"]["allocatePolicy"] = policy
    if status:
        obj["status"] = status
    obj["spec"].update(spec)
    return obj


def lsr(name, cpu="4", annotations=None, labels=None, **extra):
    requests = {"cpu": cpu, "memory": "1Gi", **extra}
    return make_pod(
        name,
        "prod",
        qos="LSR",
        priority=9500,
        requests=requests,
        limits=requests,
        annotations=annotations,
        labels=labels,
    )


def place(cluster, sched, key):
    return sched.schedule_one(cluster.pending[key])


def annotation(cluster, name, key):
    pod, _ = cluster.find_pod("prod", name)
    return json.loads(pod.annotations.get(key, "null"))


CPUS_4 = {"cpu": "4", "memory": "1Gi"}
NUMA_NODE = [make_node("n1", cpu="16", memory="64Gi"), make_nrt("n1")]


def test_the_cpus_a_reservation_holds_go_to_its_owner_and_to_no_one_else():
    cluster, sched = world([*NUMA_NODE, reservation("r1", CPUS_4), lsr("other"), lsr("owner")])
    assert place(cluster, sched, "Reservation/r1").node == "n1"
    held = json.loads(cluster.reservations.infos["r1"].metadata["annotations"][STATUS])
    assert held == {"cpuset": "0-1,8-9"}  # written on the Reservation at PreBind
    assert place(cluster, sched, "prod/other").scheduled
    assert annotation(cluster, "other", STATUS) == {"cpuset": "2-3,10-11"}  # not the reserved CPUs
    placement = place(cluster, sched, "prod/owner")
    assert placement.reservation == "r1"
    assert annotation(cluster, "owner", STATUS) == {"cpuset": "0-1,8-9"}  # exactly the reserved CPUs


@pytest.mark.parametrize(
    "policy, cpu, outcome",
    [
        # TestPlugin_Reserve: Aligned/Default take all the reserved CPUs and the rest from the node
        ("Aligned", "6", "0-2,8-10"),
        (None, "6", "0-2,8-10"),
        ("Aligned", "2", "0,8"),
        # Restricted: only from the reservation (with affinity: the reason names the reservation)
        ("Restricted", "2", "0,8"),
        ("Restricted", "6", "Reservation(s) Insufficient cpu, requested: 6000, used: 0, capacity: 4000"),
    ],
)
def test_allocate_policies_decide_where_an_owners_cpus_come_from(policy, cpu, outcome):
    affinity = {AFFINITY: json.dumps({"name": "r1"})}
    cluster, sched = world([*NUMA_NODE, reservation("r1", CPUS_4, policy=policy), lsr("owner", cpu, affinity)])
    assert place(cluster, sched, "Reservation/r1").scheduled
    placement = place(cluster, sched, "prod/owner")
    if outcome.startswith("Reservation(s)"):
        assert not placement.scheduled and outcome in placement.message
    else:
        assert placement.reservation == "r1" and annotation(cluster, "owner", STATUS) == {"cpuset": outcome}


def test_a_restricted_owner_gets_only_the_reserved_cpus():
    # the reservation reserves 4 cpu but binds only 2 CPUs: its size admits the owner, its CPUs do not
    obj = reservation("r1", CPUS_4, policy="Restricted", status={"phase": "Available", "nodeName": "n1"})
    obj["metadata"]["annotations"] = {STATUS: '{"cpuset":"0,8"}'}
    owner = lsr("owner", "4", {AFFINITY: json.dumps({"name": "r1"})})
    cluster, sched = world([*NUMA_NODE, obj, owner])
    placement = place(cluster, sched, "prod/owner")
    assert not placement.scheduled
    assert "Reservation(s) not enough cpus available to satisfy request" in placement.message


def test_a_released_reservation_gives_its_cpus_back():
    obj = reservation("r1", CPUS_4, ttl="1h", status={"phase": "Available", "nodeName": "n1"})
    obj["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"  # long expired
    obj["metadata"]["annotations"] = {STATUS: '{"cpuset":"0-1,8-9"}'}
    cluster, sched = world([*NUMA_NODE, obj, lsr("other")])
    assert place(cluster, sched, "prod/other").scheduled
    assert annotation(cluster, "other", STATUS) == {"cpuset": "0-1,8-9"}


def test_a_second_owner_gets_what_the_first_left():
    owners = [{"labelSelector": {"matchLabels": {"app": "web"}}}]
    obj = reservation("r1", {"cpu": "8", "memory": "2Gi"}, allocateOnce=False)
    obj["spec"]["owners"] = owners
    web = [lsr(f"web-{i}", "4", labels={"app": "web"}) for i in range(2)]
    cluster, sched = world([*NUMA_NODE, obj, *web, lsr("other", "8")])
    assert place(cluster, sched, "Reservation/r1").scheduled
    assert place(cluster, sched, "prod/web-0").reservation == "r1"
    assert place(cluster, sched, "prod/web-1").reservation == "r1"
    cpus = [set(annotation(cluster, f"web-{i}", STATUS)["cpuset"].replace("-", ",").split(",")) for i in range(2)]
    assert not cpus[0] & cpus[1]
    assert place(cluster, sched, "prod/other").scheduled  # the other socket
    assert annotation(cluster, "other", STATUS) == {"cpuset": "4-7,12-15"}


GPU = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}


def gpu_world(*objects, cards=2):
    return world([gpu_node("g1", cards=cards), device("g1", cards=cards), *objects])


def minors(cluster, name):
    return [g["minor"] for g in (annotation(cluster, name, DEVICES) or {}).get("gpu", [])]


def test_the_gpu_a_reservation_holds_goes_to_its_owner_and_to_no_one_else():
    others = [make_pod(f"other-{i}", "prod", requests=GPU, limits=GPU) for i in range(2)]
    owner = make_pod("owner", "prod", requests=GPU, limits=GPU)
    cluster, sched = gpu_world(reservation("r1", GPU, qos=None), *others, owner)
    assert place(cluster, sched, "Reservation/r1").scheduled
    reserved = json.loads(cluster.reservations.infos["r1"].metadata["annotations"][DEVICES])["gpu"][0]["minor"]
    assert place(cluster, sched, "prod/other-0").scheduled
    assert minors(cluster, "other-0") == [1 - reserved]
    assert not place(cluster, sched, "prod/other-1").scheduled
    assert place(cluster, sched, "prod/owner").reservation == "r1"
    assert minors(cluster, "owner") == [reserved]


HALF = {"cpu": "1", "memory": "1Gi", "koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"}


@pytest.mark.parametrize(
    "policy, request_core, outcome",
    [
        # Test_tryAllocateFromReservation: "allocate from Aligned policy reservation"
        ("Aligned", "50", "reservation"),
        # "allocate from Restricted policy reservation"
        ("Restricted", "50", "reservation"),
        # more than the reservation holds: Restricted refuses (the Reservation plugin already)
        ("Restricted", "60", "Reservation(s) Insufficient koordinator.sh/gpu-core"),
        # Aligned takes the rest from the node, on the reserved card first
        ("Aligned", "60", "reservation"),
    ],
)
def test_allocate_policies_decide_where_an_owners_gpu_share_comes_from(policy, request_core, outcome):
    asked = {**HALF, "koordinator.sh/gpu-core": request_core, "koordinator.sh/gpu-memory-ratio": request_core}
    owner = make_pod("owner", "prod", requests=asked, limits=asked, annotations={AFFINITY: json.dumps({"name": "r1"})})
    cluster, sched = gpu_world(reservation("r1", HALF, policy=policy, qos=None), owner)
    assert place(cluster, sched, "Reservation/r1").scheduled
    reserved = json.loads(cluster.reservations.infos["r1"].metadata["annotations"][DEVICES])["gpu"][0]["minor"]
    placement = place(cluster, sched, "prod/owner")
    if outcome.startswith("Reservation(s)"):
        assert not placement.scheduled and outcome in placement.message
    else:
        assert placement.reservation == "r1"
        assert minors(cluster, "owner") == [reserved]


def test_a_restricted_owner_gets_only_what_the_reservation_holds_of_its_cards():
    # Test_tryAllocateFromReservation "failed to allocate from Restricted policy reservation since
    # node remains resources but reservation not fits": the reservation admits 100 gpu-core by
    # size but holds only half of card 0; card 1 is free
    whole = {**HALF, "koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory-ratio": "100"}
    obj = reservation("r1", whole, policy="Restricted", qos=None, status={"phase": "Available", "nodeName": "g1"})
    half_card = {
        "koordinator.sh/gpu-core": "50",
        "koordinator.sh/gpu-memory-ratio": "50",
        "koordinator.sh/gpu-memory": "32Gi",
    }
    obj["metadata"]["annotations"] = {DEVICES: json.dumps({"gpu": [{"minor": 0, "resources": half_card}]})}
    asked = {**HALF, "koordinator.sh/gpu-core": "60", "koordinator.sh/gpu-memory-ratio": "60"}
    owner = make_pod("owner", "prod", requests=asked, limits=asked, annotations={AFFINITY: json.dumps({"name": "r1"})})
    cluster, sched = gpu_world(obj, owner)
    placement = place(cluster, sched, "prod/owner")
    assert not placement.scheduled and "Reservation(s) Insufficient gpu devices" in placement.message


def test_a_quota_counts_a_reservation_and_its_owner_once():
    quota = make_quota("team", "prod", min={"cpu": "4"}, max={"cpu": "5"})
    labels = {QUOTA_LABEL: "team"}
    plain = {"cpu": "4", "memory": "1Gi"}
    owner = make_pod("owner", "prod", labels=labels, requests=plain)
    other = make_pod("other", "prod", labels=labels, requests=plain)
    r1 = reservation("r1", plain, labels=labels, qos=None)
    cluster, sched = world([make_node("n1", cpu="16", memory="64Gi"), quota, r1, owner, other])
    eq = sched.framework.plugins["ElasticQuota"]
    assert place(cluster, sched, "Reservation/r1").scheduled
    assert eq.manager.state_of("team").used["cpu"] == 4000  # the reservation holds 4 of the quota's 5
    refused = place(cluster, sched, "prod/other")
    assert not refused.scheduled and "Insufficient quotas, quotaName: team" in refused.message
    assert place(cluster, sched, "prod/owner").reservation == "r1"  # 4 + 4 > 5, but it is the same 4
    assert eq.manager.state_of("team").used["cpu"] == 4000


EXAMPLE = REPO / "manifests" / "scheduler" / "examples" / "reservation-hooks"
CONFIG = REPO / "manifests" / "scheduler" / "scheduler-config.yaml"


def test_simulate_example_reserved_cpus_and_gpu_go_to_their_owners_and_a_running_pod_is_pre_allocated(capsys):
    code = main(["scheduler", "simulate", "--cluster", str(EXAMPLE), "--config", str(CONFIG), "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    placements = {p["pod"]: p for p in report["placements"]}
    assert placements["shop/db-0"]["reservation"] == "r-db"
    assert placements["shop/train-0"]["reservation"] == "r-train"
    assert placements["shop/other-gpu-2"]["node"] is None  # the reserved card was not given to it
    assert placements["Reservation/r-move"]["node"] == "node-2"  # full, but it takes web-0 over
    rows = {r["name"]: r for r in report["reservations"]}
    assert rows["r-move"] == {
        "name": "r-move",
        "node": "node-2",
        "phase": "Available",
        "holding": True,
        "owners": ["shop/web-0"],
    }
    # the same run through the API, to read the CPUs and cards each pod got
    cluster = ClusterState.of_store(load_directory(EXAMPLE, SCHEDULER_KINDS))
    sched = Scheduler(build_framework(load_config(CONFIG, in_tree_registry()), in_tree_registry(), cluster), cluster)
    simulate(sched, cluster)
    reserved = cluster.reservations.infos

    def held(name, key):
        return json.loads(reserved[name].metadata["annotations"][key])

    def got(name, key):
        pod, _ = cluster.find_pod("shop", name)
        return json.loads(pod.annotations[key])

    assert got("db-0", STATUS) == held("r-db", STATUS)  # exactly the reserved CPUs
    assert got("other-lsr", STATUS)["cpuset"] != held("r-db", STATUS)["cpuset"]
    assert got("train-0", DEVICES)["gpu"][0]["minor"] == held("r-train", DEVICES)["gpu"][0]["minor"]
    assert got("other-gpu", DEVICES)["gpu"][0]["minor"] != held("r-train", DEVICES)["gpu"][0]["minor"]
    web, _ = cluster.find_pod("shop", "web-0")
    assert json.loads(web.annotations["scheduling.koordinator.sh/reservation-allocated"])["name"] == "r-move"


def takeover(requests, qos="LSR"):
    obj = reservation("r-move", requests, policy="Restricted", qos=qos, preAllocation=True, allocateOnce=False)
    obj["spec"]["owners"] = [{"labelSelector": {"matchLabels": {"app": "web"}}}]
    obj["metadata"]["labels"]["scheduling.koordinator.sh/pre-allocation-required"] = "true"
    return obj


def test_a_pre_allocation_reservation_takes_over_the_cpus_of_the_pod():
    # nodenumaresource TestPlugin_AllocateReservationPreAllocationFromPreAllocatablePods: the reserve
    # pod pre-allocates a superset of the pod's CPUs; here the node has no other CPU left
    web = lsr("web-0", annotations={STATUS: '{"cpuset":"4-5,12-13"}'}, labels={"app": "web"})
    web["spec"]["nodeName"] = "n1"
    rest = lsr("busy", "12", annotations={STATUS: '{"cpuset":"0-3,6-11,14-15"}'})
    rest["spec"]["nodeName"] = "n1"
    cluster, sched = world([*NUMA_NODE, takeover(CPUS_4), web, rest])
    assert place(cluster, sched, "Reservation/r-move").node == "n1"
    assert json.loads(cluster.reservations.infos["r-move"].metadata["annotations"][STATUS]) == {"cpuset": "4-5,12-13"}
    assert annotation(cluster, "web-0", "scheduling.koordinator.sh/reservation-allocated")["name"] == "r-move"


def test_a_pre_allocation_reservation_takes_over_the_card_of_the_pod():
    # deviceshare Test_Plugin_RestoreReservationPreAllocation / Test_isDeviceAllocationsInclude
    card = {
        "koordinator.sh/gpu-core": "100",
        "koordinator.sh/gpu-memory-ratio": "100",
        "koordinator.sh/gpu-memory": "64Gi",
    }
    web = make_pod("web-0", "prod", requests=GPU, limits=GPU, labels={"app": "web"}, node="g1")
    web["metadata"]["annotations"] = {DEVICES: json.dumps({"gpu": [{"minor": 1, "resources": card}]})}
    other = make_pod("busy", "prod", requests=GPU, limits=GPU, node="g1")
    other["metadata"]["annotations"] = {DEVICES: json.dumps({"gpu": [{"minor": 0, "resources": card}]})}
    cluster, sched = gpu_world(takeover(GPU, qos=None), web, other)
    assert place(cluster, sched, "Reservation/r-move").node == "g1"
    held = json.loads(cluster.reservations.infos["r-move"].metadata["annotations"][DEVICES])
    assert [g["minor"] for g in held["gpu"]] == [1]


def test_the_reservation_nominated_is_one_whose_cpus_can_serve_the_pod():
    # FilterNominateReservation (nodenumaresource TestPlugin_FilterNominateReservation): r-a is
    # preferred (reservation-order 1) but holds only 2 of its 4 cpu as CPUs; r-b holds 4
    def held(name, cpuset, order=None):
        obj = reservation(name, CPUS_4, policy="Restricted", status={"phase": "Available", "nodeName": "n1"})
        obj["metadata"]["annotations"] = {STATUS: json.dumps({"cpuset": cpuset})}
        if order:
            obj["metadata"]["labels"]["scheduling.koordinator.sh/reservation-order"] = order
        return obj

    cluster, sched = world([*NUMA_NODE, held("r-a", "0,8", "1"), held("r-b", "1-2,9-10"), lsr("owner")])
    placement = place(cluster, sched, "prod/owner")
    assert placement.reservation == "r-b"
    assert annotation(cluster, "owner", STATUS) == {"cpuset": "1-2,9-10"}
