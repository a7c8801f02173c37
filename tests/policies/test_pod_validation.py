"""Every `/validate-pod` rule (Koordinator's `pkg/webhook/pod/validating/`) with Koordinator's
messages."""

import pytest

from policies.admission.plugin import Denied
from tests.support.admission import make_snapshot, validate
from tests.support.builders import make_container, make_pod, make_quota


def denial(pod, **kwargs):
    with pytest.raises(Denied) as error:
        validate(pod, **kwargs)
    assert error.value.code == 400
    return error.value.message


def test_reserve_pod_annotation_is_forbidden():
    pod = make_pod(annotations={"scheduling.koordinator.sh/reserve-pod": ""})
    assert denial(pod) == "annotations.scheduling.koordinator.sh/reserve-pod: Forbidden: cannot set in annotations"


@pytest.mark.parametrize(
    "qos, priority, allowed",
    [
        ("BE", None, False),
        ("BE", 9500, False),
        ("BE", 7500, True),
        ("BE", 5500, True),
        ("BE", 3500, True),
        ("LSR", None, False),
        ("LSR", 9500, True),
        ("LSR", 7500, False),
        ("LSR", 5500, False),
        ("LSR", 3500, False),
        ("LS", None, True),
        ("LS", 5500, True),
        ("SYSTEM", 3500, True),
        (None, 5500, True),
    ],
)
def test_qos_and_priority_compatibility_matrix(qos, priority, allowed):
    pod = make_pod(qos=qos, priority=priority, requests={"cpu": "1"} if qos == "LSR" else None)
    if allowed:
        validate(pod)
    else:
        assert "cannot be used in combination" in denial(pod)


def test_incompatible_message_prints_empty_class_as_nothing():
    assert denial(make_pod(qos="BE")) == (
        "Pod: Forbidden: koordinator.sh/qosClass=BE and priorityClass= cannot be used in combination"
    )


def test_lse_is_not_restricted_by_the_matrix():
    validate(make_pod(qos="LSE", priority=5500, requests={"cpu": "2"}))


def test_priority_class_label_overrides_the_numeric_priority():
    pod = make_pod(qos="BE", priority=9500, labels={"koordinator.sh/priority-class": "koord-batch"})
    validate(pod)


def test_batch_resources_need_be():
    pod = make_pod(qos="LS", requests={"kubernetes.io/batch-cpu": "1k"})
    assert denial(pod) == (
        "labels.koordinator.sh/qosClass: Required value: must specify koordinator QoS BE "
        "with koordinator colocation resources"
    )


def test_zero_batch_resources_and_mid_resources_are_not_checked():
    validate(make_pod(qos="LS", requests={"kubernetes.io/batch-cpu": "0", "kubernetes.io/mid-cpu": "1k"}))


def test_several_errors_are_reported_together():
    pod = make_pod(qos="LSR", priority=9500, requests={"kubernetes.io/batch-cpu": "1k"})
    assert denial(pod) == (
        "[labels.koordinator.sh/qosClass: Required value: must specify koordinator QoS BE with koordinator "
        "colocation resources, pod.spec.containers[*].resources.requests: Required value: "
        "LSR Pod must declare the requested CPUs]"
    )


@pytest.mark.parametrize("qos", ["LSR", "LSE"])
def test_lsr_and_lse_need_cpus(qos):
    pod = make_pod(qos=qos, priority=9500, requests={"memory": "1Gi"})
    assert denial(pod) == (
        "pod.spec.containers[*].resources.requests: Required value: LSR Pod must declare the requested CPUs"
    )


def test_lsr_cpus_must_be_whole():
    pod = make_pod(qos="LSR", priority=9500, requests={"cpu": "100m"})
    assert denial(pod) == (
        'pod.spec.containers[*].resources.requests: Invalid value: "100m": '
        "the requested CPUs of LSR Pod must be integer"
    )


def test_cpu_is_summed_across_containers():
    pod = make_pod(
        qos="LSR",
        priority=9500,
        containers=[make_container("a", requests={"cpu": "500m"}), make_container("b", requests={"cpu": "500m"})],
    )
    validate(pod)


class TestUpdate:
    def test_qos_label_is_immutable(self):
        old = make_pod(qos="LS")
        assert denial(make_pod(qos="BE", priority=5500), operation="UPDATE", old=old).startswith(
            '[labels.koordinator.sh/qosClass: Invalid value: "BE": field is immutable'
        )

    def test_removing_the_qos_label_reports_empty_value(self):
        assert denial(make_pod(), operation="UPDATE", old=make_pod(qos="LS")) == (
            'labels.koordinator.sh/qosClass: Invalid value: "": field is immutable'
        )

    def test_priority_may_move_inside_a_band_but_not_across(self):
        validate(make_pod(priority=9100), operation="UPDATE", old=make_pod(priority=9900))
        assert denial(make_pod(priority=5500), operation="UPDATE", old=make_pod(priority=9500)) == (
            'spec.priority: Invalid value: "koord-batch": field is immutable'
        )

    def test_koordinator_priority_label_is_immutable(self):
        old = make_pod(labels={"koordinator.sh/priority": "1"})
        assert denial(make_pod(labels={"koordinator.sh/priority": "2"}), operation="UPDATE", old=old) == (
            'labels.koordinator.sh/priority: Invalid value: "2": field is immutable'
        )

    def test_preemptible_label_is_immutable(self):
        old = make_pod(labels={"quota.scheduling.koordinator.sh/preemptible": "true"})
        assert denial(make_pod(), operation="UPDATE", old=old) == "Preemptible label is forbidden modify now."


class TestQuota:
    def test_pod_may_not_be_charged_to_a_parent_quota(self):
        snapshot = make_snapshot(make_quota("team", is_parent=True))
        pod = make_pod("p1", labels={"quota.scheduling.koordinator.sh/name": "team"})
        assert denial(pod, snapshot=snapshot) == "pod can not be linked to a parentQuotaGroup,quota:team, pod:p1"

    def test_namespace_named_quota_and_namespaces_annotation_resolve_the_quota(self):
        snapshot = make_snapshot(
            make_quota("ns-a", "ns-a", is_parent=True), make_quota("shared", is_parent=True, namespaces=["ns-b"])
        )
        assert "quota:ns-a" in denial(make_pod(namespace="ns-a"), snapshot=snapshot)
        assert "quota:shared" in denial(make_pod(namespace="ns-b"), snapshot=snapshot)

    def test_leaf_quota_and_unknown_quota_are_fine(self):
        snapshot = make_snapshot(make_quota("leaf"))
        validate(make_pod(labels={"quota.scheduling.koordinator.sh/name": "leaf"}), snapshot=snapshot)
        validate(make_pod(labels={"quota.scheduling.koordinator.sh/name": "nowhere"}), snapshot=snapshot)
