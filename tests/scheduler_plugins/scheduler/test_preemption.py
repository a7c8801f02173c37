"""Scheduler preemption: DefaultPreemption as a PostFilter with Koordinator's priority classes and
PodDisruptionBudget-aware victims (kube-scheduler's `defaultpreemption/default_preemption_test.go`:
`TestPostFilter`, `TestDryRunPreemption`, `TestSelectBestCandidate`,
`TestPodEligibleToPreemptOthers`; `preemption/preemption_test.go`)."""

import json

import pytest

from colocate.main import main
from policies.apis.field_errors import ConfigError
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.preemption import Candidate, Victim, pick_one_node
from scheduler_plugins.scheduler.framework.scheduling import Scheduler
from scheduler_plugins.scheduler.framework.status import Code, unschedulable
from scheduler_plugins.scheduler.plugins.defaultpreemption import DefaultPreemptionArgs, num_candidates, parse_args
from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_node, make_pod, make_reservation
from tests.support.paths import REPO
from tests.support.scheduling import make_framework

EXAMPLE = str(REPO / "manifests" / "scheduler" / "examples" / "preemption")
NOW = "2024-05-01T10:01:00Z"


def run(capsys, *argv):
    code = main(["scheduler", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def gpu_node(name, gpus=4):
    return make_node(name, allocatable={"cpu": "32", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": str(gpus)})


def gpu_pod(name, priority, node=None, gpus=1, start="2024-05-01T08:00:00Z", labels=None, **spec):
    pod = make_pod(
        name,
        "ml",
        labels=labels,
        priority=priority,
        node=node,
        requests={"cpu": "1", "nvidia.com/gpu": str(gpus)},
        **spec,
    )
    pod["metadata"]["uid"] = "uid-" + name
    if node:
        pod["status"] = {"phase": "Running", "startTime": start, "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


def budget(app, allowed):
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "ml"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": allowed},
    }


def schedule(objects, pod):
    fwk, cluster = make_framework(objects)
    placement = Scheduler(fwk, cluster).schedule_one(PodInfo(pod))
    return placement, cluster


def test_simulate_a_prod_pod_displaces_batch_pods_and_a_budget_protects_one(capsys):
    code, out, _ = run(capsys, "simulate", "--cluster", EXAMPLE, "--now", NOW, "-o", "json")
    report = json.loads(out)
    assert code == 0
    (placement,) = report["placements"]
    assert placement["node"] == "node-1" and placement["nominatedNode"] == "node-1"
    assert placement["preemptedBy"] == "DefaultPreemption"
    # without its budget train-a-0 (the latest-started batch pod) would go; the budget keeps it
    assert [v["pod"] for v in placement["victims"]] == ["ml/train-b-1", "ml/free-0"]
    assert all(v["node"] == "node-1" and not v["violatesPDB"] for v in placement["victims"])
    assert "5500 (koord-batch) < preemptor's 9500 (koord-prod)" in placement["victims"][0]["reason"]
    nodes = {n["name"]: n for n in report["nodes"]}
    assert nodes["node-1"]["podsBefore"] == 4 and nodes["node-1"]["podsAfter"] == 3  # two out, one in
    assert nodes["node-2"]["podsAfter"] == 4  # prod pods of the same priority are never victims


def test_explain_says_why_each_victim_was_chosen_and_each_other_pod_kept(capsys, tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text(
        json.dumps(gpu_pod("infer-0", 9500, gpus=2) | {"metadata": {"name": "infer-0", "namespace": "shop"}})
    )
    code, out, _ = run(capsys, "explain", "--cluster", EXAMPLE, "--pod", str(path), "--now", NOW, "-o", "json")
    report = json.loads(out)
    assert code == 1 and report["selected"] is None  # unschedulable now: preemption would make room
    (preemption,) = report["preemption"]
    assert preemption["plugin"] == "DefaultPreemption" and preemption["nominatedNode"] == "node-1"
    (candidate,) = [c for c in preemption["candidates"] if c["node"] == "node-1"]
    assert [v["pod"] for v in candidate["victims"]] == ["ml/train-b-1", "ml/free-0"]
    kept = {r["pod"]: r["reason"] for r in candidate["reprieved"]}
    assert "PodDisruptionBudget" in kept["ml/train-a-0"] and "PodDisruptionBudget" not in kept["ml/train-b-0"]
    # explain is a dry run: the victims are still there
    code, out, _ = run(capsys, "explain", "--cluster", EXAMPLE, "--pod", str(path), "--now", NOW)
    assert "ml/train-b-1  evict" in out and "ml/train-a-0  keep" in out


def test_without_a_budget_the_least_important_pods_are_the_victims():
    objects = [
        gpu_node("node-1"),
        gpu_pod("b-0", 5500, "node-1", start="2024-05-01T08:00:00Z"),
        gpu_pod("b-1", 5500, "node-1", start="2024-05-01T08:10:00Z"),
        gpu_pod("b-2", 5500, "node-1", start="2024-05-01T08:20:00Z"),
        gpu_pod("f-0", 3500, "node-1"),
    ]
    placement, cluster = schedule(objects, gpu_pod("p", 9500, gpus=2))
    assert placement.scheduled and [v["pod"] for v in placement.victims] == ["ml/b-2", "ml/f-0"]
    assert set(cluster.nodes["node-1"].pods) == {"ml/b-0", "ml/b-1", "ml/p"}


def test_a_pod_never_preempts_pods_of_its_own_priority_or_higher():
    objects = [gpu_node("node-1", 2), gpu_pod("mid", 7500, "node-1"), gpu_pod("prod", 9500, "node-1")]
    placement, cluster = schedule(objects, gpu_pod("p", 7500, gpus=1))
    assert not placement.scheduled and not placement.victims
    assert set(cluster.nodes["node-1"].pods) == {"ml/mid", "ml/prod"}


def test_a_pod_with_preemption_policy_never_does_not_preempt():
    objects = [gpu_node("node-1", 1), gpu_pod("batch", 5500, "node-1")]
    placement, cluster = schedule(objects, gpu_pod("p", 9500, preemptionPolicy="Never"))
    assert not placement.scheduled and "ml/batch" in cluster.nodes["node-1"].pods


def test_a_reservation_never_preempts():
    reservation = make_reservation("r-migrate")
    reservation["spec"]["owners"] = [{"object": {"name": "owner"}}]
    reservation["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": "1"}
    objects = [gpu_node("node-1", 1), gpu_pod("batch", 5500, "node-1"), reservation]
    fwk, cluster = make_framework(objects)
    reserve_pod = cluster.pending["Reservation/r-migrate"]
    placement = Scheduler(fwk, cluster).schedule_one(reserve_pod)
    assert not placement.scheduled and not placement.victims  # priority MaxInt32, and still no eviction
    assert "ml/batch" in cluster.nodes["node-1"].pods


def test_nothing_is_evicted_when_the_pod_would_not_fit_even_without_every_victim():
    objects = [gpu_node("node-1", 1), gpu_pod("batch", 5500, "node-1")]
    placement, cluster = schedule(objects, gpu_pod("p", 9500, gpus=2))
    assert not placement.scheduled and not placement.victims
    assert "ml/batch" in cluster.nodes["node-1"].pods


def test_the_node_whose_victims_violate_no_budget_is_chosen():
    objects = [
        gpu_node("node-1", 1),
        gpu_node("node-2", 1),
        gpu_pod("protected", 3500, "node-1", labels={"app": "a"}),
        gpu_pod("plain", 5500, "node-2", labels={"app": "b"}),
        budget("a", 0),
    ]
    placement, _ = schedule(objects, gpu_pod("p", 9500))
    # node-1's victim has the lower priority, but evicting it would violate its budget
    assert placement.node == "node-2" and [v["pod"] for v in placement.victims] == ["ml/plain"]


def test_a_budget_is_violated_when_no_other_node_can_help():
    objects = [gpu_node("node-1", 1), gpu_pod("protected", 3500, "node-1", labels={"app": "a"}), budget("a", 0)]
    placement, _ = schedule(objects, gpu_pod("p", 9500))
    assert placement.scheduled and placement.victims[0]["violatesPDB"] is True


def _victim(name, priority, start="2024-05-01T08:00:00Z"):
    pod = make_pod(name, priority=priority)
    pod["status"] = {"startTime": start}
    return Victim(PodInfo(pod), "")


@pytest.mark.parametrize(
    "candidates, chosen",
    [
        ([Candidate("a", [_victim("x", 100)], 1), Candidate("b", [_victim("y", 200)], 0)], "b"),
        ([Candidate("a", [_victim("x", 200)]), Candidate("b", [_victim("y", 100)])], "b"),
        ([Candidate("a", [_victim("x", 100), _victim("z", 50)]), Candidate("b", [_victim("y", 100)])], "b"),
        (
            [
                Candidate("a", [_victim("x", 100, "2024-05-01T08:00:00Z")]),
                Candidate("b", [_victim("y", 100, "2024-05-01T09:00:00Z")]),
            ],
            "b",  # the latest-started highest-priority victim
        ),
        ([Candidate("b", [_victim("x", 100)]), Candidate("a", [_victim("y", 100)])], "a"),
        ([Candidate("a", [_victim("x", 100)]), Candidate("b", [])], "b"),
    ],
)
def test_pick_one_node_for_preemption(candidates, chosen):
    assert pick_one_node(candidates).node == chosen


def test_candidate_count_and_args():
    assert num_candidates(DefaultPreemptionArgs(), 5000) == 500
    assert num_candidates(DefaultPreemptionArgs(), 50) == 50
    assert num_candidates(DefaultPreemptionArgs(10, 100), 400) == 100
    with pytest.raises(ConfigError, match="minCandidateNodesPercentage"):
        parse_args({"minCandidateNodesPercentage": 101}, "args")
    with pytest.raises(ConfigError, match="same time"):
        parse_args({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, "args")


def test_nodes_without_lower_priority_pods_are_passed_over_for_the_one_with_a_victim():
    # nodes are tried in name order: the first ones hold only pods of the preemptor's priority or
    # higher, which cannot yield a victim; the last one can
    objects = [
        gpu_node("node-a", 1),
        gpu_node("node-b", 1),
        gpu_node("node-c", 1),
        gpu_pod("same", 9500, "node-a"),
        gpu_pod("higher", 9800, "node-b"),
        gpu_pod("batch", 5500, "node-c"),
    ]
    placement, cluster = schedule(objects, gpu_pod("p", 9500))
    assert placement.nominated_node == "node-c" and [v["pod"] for v in placement.victims] == ["ml/batch"]
    assert "ml/same" in cluster.nodes["node-a"].pods and "ml/higher" in cluster.nodes["node-b"].pods


def test_when_no_node_has_a_victim_preemption_says_so():
    objects = [gpu_node("node-a", 1), gpu_node("node-b", 1), gpu_pod("x", 9500, "node-a"), gpu_pod("y", 9800, "node-b")]
    fwk, _ = make_framework(objects)
    rejected = {name: unschedulable("Insufficient nvidia.com/gpu") for name in ("node-a", "node-b")}
    result, status = fwk.plugins["DefaultPreemption"].post_filter(CycleState(), PodInfo(gpu_pod("p", 9500)), rejected)
    assert result is None and status.code is Code.Unschedulable
    assert status.message == "0/2 nodes are available: no preemption victims found for incoming pod."
