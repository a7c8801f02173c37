"""The Reservation keys a migration's replacement relies on (Koordinator's
`pkg/scheduler/plugins/reservation` `TestMatchReservation`, `TestReservationAffinity*`,
`TestExactMatchReservation`): affinity selector terms and tolerations, reservation taints,
`exact-match-reservation`. A 3-cpu node holds a 3-cpu reservation: its owner is placed there only
by consuming it, so "scheduled" below means "matched"."""

import json

import pytest

from tests.scheduler_plugins.scheduler.test_reservation import available, pod, setup

AFFINITY = "scheduling.koordinator.sh/reservation-affinity"
EXACT = "scheduling.koordinator.sh/exact-match-reservation"


def consumed(reservation, annotations=None, cpu="3"):
    scheduler, cluster, _ = setup(reservation, nodes=("n1",), cpu="3")
    placement = scheduler.schedule_one(pod("owner", cpu=cpu, annotations=annotations))
    return placement.scheduled and placement.reservation == "r1"


def labelled(**labels):
    obj = available(cpu="3")
    obj["metadata"]["labels"] = labels
    return obj


@pytest.mark.parametrize(
    "terms, matched",
    [
        ([{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["migration"]}]}], True),
        ([{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["other"]}]}], False),
        (
            [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["other"]}]},
                {"matchExpressions": [{"key": "pool", "operator": "Exists"}]},
            ],
            True,  # terms are ORed
        ),
        ([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["r1"]}]}], True),
        ([{"matchExpressions": [{"key": "pool", "operator": "DoesNotExist"}]}], False),
    ],
)
def test_affinity_selector_terms_choose_the_reservation(terms, matched):
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"reservationSelectorTerms": terms}}
    assert consumed(labelled(pool="migration"), {AFFINITY: json.dumps(affinity)}) is matched


@pytest.mark.parametrize(
    "tolerations, matched",
    [
        (None, False),
        ([{"key": "dedicated", "operator": "Equal", "value": "migration", "effect": "NoSchedule"}], True),
        ([{"key": "dedicated", "operator": "Exists"}], True),
        ([{"key": "dedicated", "operator": "Equal", "value": "other"}], False),
    ],
)
def test_a_tainted_reservation_serves_only_pods_whose_affinity_tolerates_it(tolerations, matched):
    reservation = available(cpu="3", taints=[{"key": "dedicated", "value": "migration", "effect": "NoSchedule"}])
    affinity = {"reservationSelector": {}} if tolerations is None else {"tolerations": tolerations}
    assert consumed(reservation, {AFFINITY: json.dumps(affinity)}) is matched


def test_a_prefer_no_schedule_taint_does_not_keep_anyone_out():
    reservation = available(cpu="3", taints=[{"key": "soft", "effect": "PreferNoSchedule"}])
    assert consumed(reservation)


def test_an_unschedulable_reservation_serves_a_pod_that_tolerates_unschedulable():
    toleration = {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}
    assert consumed(available(cpu="3", unschedulable=True), {AFFINITY: json.dumps(toleration)})
    assert not consumed(available(cpu="3", unschedulable=True))


@pytest.mark.parametrize(
    "names, cpu, matched",
    [
        (["cpu"], "3", True),
        (["cpu"], "2", False),  # it would fit, but exactly 3 cpu were asked for
        (["cpu", "nvidia.com/gpu"], "3", True),  # neither has a GPU: equal
        (["memory"], "3", False),  # the reservation holds no memory request of 1Gi
    ],
)
def test_exact_match_reservation(names, cpu, matched):
    assert consumed(available(cpu="3"), {EXACT: json.dumps({"resourceNames": names})}, cpu=cpu) is matched


def test_a_malformed_exact_match_matches_no_reservation():
    assert not consumed(available(cpu="3"), {EXACT: "{not json"})
