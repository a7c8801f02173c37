"""Batch / mid resource rewrite (`mutatePodResourceSpec`, Koordinator's
`cluster_colocation_profile.go`)."""

import pytest

from tests.support.admission import make_snapshot, mutate
from tests.support.builders import make_container, make_pod, make_profile

BATCH = make_snapshot(make_profile(qosClass="BE", priorityClassName="koord-batch"))
MID = make_snapshot(make_profile(qosClass="LS", priorityClassName="koord-mid"))


def resources(pod, index=0, section="containers"):
    return pod["spec"][section][index].get("resources", {})


@pytest.mark.parametrize(
    "cpu, batch_cpu", [("1", "1k"), ("500m", "500"), ("1.5", "1500"), ("2", "2k"), ("100m", "100")]
)
def test_cpu_becomes_integer_milli_cores(cpu, batch_cpu):
    out = mutate(make_pod(requests={"cpu": cpu}, limits={"cpu": cpu}), BATCH)
    assert resources(out) == {
        "requests": {"kubernetes.io/batch-cpu": batch_cpu},
        "limits": {"kubernetes.io/batch-cpu": batch_cpu},
    }


def test_memory_moves_unchanged():
    out = mutate(make_pod(requests={"memory": "4096Mi"}, limits={"memory": "4Gi"}), BATCH)
    assert resources(out) == {
        "requests": {"kubernetes.io/batch-memory": "4096Mi"},
        "limits": {"kubernetes.io/batch-memory": "4Gi"},
    }


def test_mid_priority_uses_mid_resources():
    out = mutate(make_pod(requests={"cpu": "1", "memory": "1Gi"}), MID)
    assert resources(out) == {"requests": {"kubernetes.io/mid-cpu": "1k", "kubernetes.io/mid-memory": "1Gi"}}


def test_requests_are_back_filled_from_limits_but_limits_never_invented():
    out = mutate(
        make_pod(containers=[make_container("a", limits={"cpu": "1"}), make_container("b", requests={"cpu": "1"})]),
        BATCH,
    )
    assert resources(out, 0) == {
        "limits": {"kubernetes.io/batch-cpu": "1k"},
        "requests": {"kubernetes.io/batch-cpu": "1k"},
    }
    assert resources(out, 1) == {"requests": {"kubernetes.io/batch-cpu": "1k"}}


def test_init_containers_and_overhead_are_rewritten():
    pod = make_pod(
        requests={"cpu": "1"},
        init_containers=[make_container("init", limits={"cpu": "2", "memory": "1Gi"})],
        overhead={"cpu": "250m", "memory": "64Mi"},
    )
    out = mutate(pod, BATCH)
    assert resources(out, 0, "initContainers")["requests"] == {
        "kubernetes.io/batch-cpu": "2k",
        "kubernetes.io/batch-memory": "1Gi",
    }
    assert out["spec"]["overhead"] == {"kubernetes.io/batch-cpu": "250", "kubernetes.io/batch-memory": "64Mi"}


def test_other_resources_are_untouched():
    pod = make_pod(requests={"cpu": "1", "nvidia.com/gpu": "1", "ephemeral-storage": "1Gi", "unknown-resource": "5"})
    out = mutate(pod, BATCH)
    assert resources(out)["requests"] == {
        "kubernetes.io/batch-cpu": "1k",
        "nvidia.com/gpu": "1",
        "ephemeral-storage": "1Gi",
        "unknown-resource": "5",
    }


@pytest.mark.parametrize("priority_class", ["koord-prod", "koord-free"])
def test_prod_and_free_are_not_rewritten(priority_class):
    snapshot = make_snapshot(make_profile(priorityClassName=priority_class))
    out = mutate(make_pod(requests={"cpu": "1"}), snapshot)
    assert resources(out) == {"requests": {"cpu": "1"}}


def test_qos_be_alone_triggers_the_batch_rewrite_through_the_defaulted_class():
    out = mutate(make_pod(requests={"cpu": "1"}), make_snapshot(make_profile(qosClass="BE")))
    assert resources(out) == {"requests": {"kubernetes.io/batch-cpu": "1k"}}


def test_pod_without_resources_defaults_to_batch_but_has_nothing_to_rewrite():
    pod = make_pod()
    out = mutate(pod, make_snapshot(make_profile(labels={"x": "y"})))
    assert out["spec"] == pod["spec"]


def test_skip_update_resources_on_the_profile_metadata_disables_the_rewrite():
    profile = make_profile(
        qosClass="BE",
        priorityClassName="koord-batch",
        metadata_annotations={"config.koordinator.sh/skip-update-resources": "true"},
    )
    out = mutate(make_pod(requests={"cpu": "1"}), make_snapshot(profile))
    assert resources(out) == {"requests": {"cpu": "1"}}


def test_skip_key_in_spec_annotations_is_only_copied():
    """Koordinator's quirk: only the profile's own metadata annotation skips the rewrite."""
    profile = make_profile(qosClass="BE", annotations={"config.koordinator.sh/skip-update-resources": "true"})
    out = mutate(make_pod(requests={"cpu": "1"}), make_snapshot(profile))
    assert resources(out) == {"requests": {"kubernetes.io/batch-cpu": "1k"}}
    assert out["metadata"]["annotations"]["config.koordinator.sh/skip-update-resources"] == "true"


def test_skip_from_a_probability_skipped_profile_still_counts():
    skipper = make_profile("a", probability=0, metadata_annotations={"config.koordinator.sh/skip-update-resources": ""})
    out = mutate(make_pod(requests={"cpu": "1"}), make_snapshot(skipper, make_profile("b", qosClass="BE")))
    assert resources(out) == {"requests": {"cpu": "1"}}
