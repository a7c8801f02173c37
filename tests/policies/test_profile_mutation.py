"""Koordinator's `cluster_colocation_profile.go`: which profiles apply, in which order, and what
each step writes."""

import pytest

from policies.admission.plugin import Denied
from policies.apis.constants import LABEL_KOORDINATOR_PRIORITY, LABEL_QOS_CLASS
from tests.support.admission import make_snapshot, mutate
from tests.support.builders import make_namespace, make_pod, make_priority_class, make_profile


def labels(pod):
    return pod["metadata"].get("labels", {})


def test_labels_and_annotations_are_set_and_overwrite():
    pod = make_pod(labels={"a": "old"}, annotations={"x": "1"})
    out = mutate(pod, make_snapshot(make_profile(labels={"a": "new", "b": "2"}, annotations={"x": "2"})))
    assert labels(out) == {"a": "new", "b": "2"}
    assert out["metadata"]["annotations"]["x"] == "2"


def test_label_keys_mapping_copies_and_creates_empty_when_source_missing():
    pod = make_pod(labels={"src": "v"})
    out = mutate(pod, make_snapshot(make_profile(labelKeysMapping={"src": "dst", "missing": "dst2"})))
    assert labels(out) == {"src": "v", "dst": "v", "dst2": ""}


def test_annotation_keys_mapping_behaves_like_labels():
    pod = make_pod(annotations={"src": "v"})
    out = mutate(pod, make_snapshot(make_profile(annotationKeysMapping={"src": "dst", "gone": "dst2"})))
    assert out["metadata"]["annotations"]["dst"] == "v" and out["metadata"]["annotations"]["dst2"] == ""


def test_label_suffixes_apply_after_mapping_and_never_create_keys():
    pod = make_pod(labels={"test-label": "test-label-value"})
    out = mutate(
        pod,
        make_snapshot(
            make_profile(labelKeysMapping={"test-label": "mapped"}, labelSuffixes={"mapped": "suffix-0", "absent": "x"})
        ),
    )
    assert labels(out)["mapped"] == "test-label-valuesuffix-0"
    assert "absent" not in labels(out)


def test_scheduler_name_qos_and_koordinator_priority():
    out = mutate(
        make_pod(),
        make_snapshot(make_profile(schedulerName="koord-scheduler", qosClass="LS", koordinatorPriority=1111)),
    )
    assert out["spec"]["schedulerName"] == "koord-scheduler"
    assert labels(out)[LABEL_QOS_CLASS] == "LS" and labels(out)[LABEL_KOORDINATOR_PRIORITY] == "1111"


def test_priority_class_sets_name_value_and_preemption_policy():
    snapshot = make_snapshot(make_profile(priorityClassName="koord-prod"))
    out = mutate(make_pod(), snapshot)
    assert out["spec"]["priorityClassName"] == "koord-prod"
    assert out["spec"]["priority"] == 9000
    assert out["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


def test_priority_class_without_policy_removes_the_pods_policy():
    snapshot = make_snapshot(
        make_priority_class("plain", 100, preemption_policy=None),
        make_profile(priorityClassName="plain"),
        priority_classes=False,
    )
    out = mutate(make_pod(preemptionPolicy="Never"), snapshot)
    assert out["spec"]["priority"] == 100 and "preemptionPolicy" not in out["spec"]


def test_unknown_priority_class_denies_with_500_naming_the_class():
    with pytest.raises(Denied) as denial:
        mutate(make_pod(), make_snapshot(make_profile(priorityClassName="koord-gold")))
    assert denial.value.code == 500 and "koord-gold" in denial.value.message


def test_patch_runs_last_and_can_override_earlier_steps():
    profile = make_profile(
        qosClass="LS",
        patch={"metadata": {"labels": {LABEL_QOS_CLASS: "BE"}}, "spec": {"terminationGracePeriodSeconds": 30}},
    )
    out = mutate(make_pod(), make_snapshot(profile))
    assert labels(out)[LABEL_QOS_CLASS] == "BE" and out["spec"]["terminationGracePeriodSeconds"] == 30


def test_profiles_apply_in_name_order_and_the_last_writer_wins():
    snapshot = make_snapshot(
        make_profile("b-profile", labels={"who": "b"}, qosClass="BE"),
        make_profile("a-profile", labels={"who": "a"}, qosClass="LS"),
    )
    out = mutate(make_pod(), snapshot)
    assert labels(out)["who"] == "b" and labels(out)[LABEL_QOS_CLASS] == "BE"


class TestMatching:
    def test_selector_non_match_drops_the_profile(self):
        snapshot = make_snapshot(make_profile(selector={"matchLabels": {"app": "x"}}, labels={"hit": "1"}))
        assert "hit" not in labels(mutate(make_pod(labels={"app": "y"}), snapshot))
        assert labels(mutate(make_pod(labels={"app": "x"}), snapshot))["hit"] == "1"

    def test_namespace_selector_uses_the_namespace_objects_labels(self):
        profile = make_profile(namespaceSelector={"matchLabels": {"colocate": "yes"}}, labels={"hit": "1"})
        snapshot = make_snapshot(profile, make_namespace("on", {"colocate": "yes"}), make_namespace("off"))
        assert labels(mutate(make_pod(namespace="on"), snapshot))["hit"] == "1"
        assert "hit" not in labels(mutate(make_pod(namespace="off"), snapshot))

    def test_unknown_namespace_keeps_the_profile(self):
        """Koordinator's quirk: a namespace that cannot be fetched makes a namespace-selecting
        profile match."""
        profile = make_profile(namespaceSelector={"matchLabels": {"colocate": "yes"}}, labels={"hit": "1"})
        assert labels(mutate(make_pod(namespace="nowhere"), make_snapshot(profile)))["hit"] == "1"

    def test_invalid_selector_keeps_the_profile(self):
        profile = make_profile(selector={"matchExpressions": [{"key": "k", "operator": "Bogus"}]}, labels={"hit": "1"})
        assert labels(mutate(make_pod(), make_snapshot(profile)))["hit"] == "1"

    def test_pod_without_namespace_is_matched_against_the_request_namespace(self):
        profile = make_profile(namespaceSelector={"matchLabels": {"colocate": "yes"}}, labels={"hit": "1"})
        snapshot = make_snapshot(profile, make_namespace("on", {"colocate": "yes"}), make_namespace("default"))
        pod = make_pod(namespace="")
        del pod["metadata"]["namespace"]
        out = mutate(pod, snapshot, namespace="on")
        assert labels(out)["hit"] == "1" and "namespace" not in out["metadata"]


class TestProbability:
    @pytest.mark.parametrize(
        "probability, draw, applied",
        [
            (0, 0, False),
            (100, 99, True),
            (50, 50, True),
            (50, 51, False),
            ("50%", 49, True),
            ("50%", 99, False),
        ],
    )
    def test_skip_when_the_draw_exceeds_the_percent(self, probability, draw, applied):
        snapshot = make_snapshot(make_profile(probability=probability, labels={"hit": "1"}))
        assert ("hit" in labels(mutate(make_pod(), snapshot, rand=draw))) is applied

    def test_skipped_profile_still_triggers_the_resource_rewrite(self):
        """Koordinator's quirk: the rewrite runs when a profile matched, even if probability skipped
        it."""
        snapshot = make_snapshot(make_profile(probability=0, qosClass="BE"))
        pod = make_pod(qos="BE", requests={"cpu": "1"})
        out = mutate(pod, snapshot)
        assert out["spec"]["containers"][0]["resources"]["requests"] == {"kubernetes.io/batch-cpu": "1k"}


def test_update_and_delete_are_never_mutated():
    snapshot = make_snapshot(make_profile(labels={"hit": "1"}))
    for operation in ("UPDATE", "DELETE", "CONNECT"):
        pod = make_pod(labels={"pod.koordinator.sh/mutating-update": "true"})
        assert mutate(pod, snapshot, operation=operation) == pod


def test_no_profile_no_change():
    pod = make_pod(requests={"cpu": "1"})
    assert mutate(pod, make_snapshot()) == pod
