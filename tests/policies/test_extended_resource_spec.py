"""The extended-resource-spec annotation (Koordinator's `extended_resource_spec.go`)."""

import json

import pytest

from policies.admission.plugin import Denied
from tests.support.admission import make_snapshot, mutate
from tests.support.builders import make_container, make_pod, make_profile

KEY = "node.koordinator.sh/extended-resource-spec"


def annotation(pod):
    return pod["metadata"].get("annotations", {}).get(KEY)


def test_annotation_copies_batch_resources_of_containers_in_canonical_form():
    pod = make_pod(
        qos="BE",
        containers=[
            make_container(
                "test-container-a", requests={"cpu": "1", "memory": "4Gi"}, limits={"cpu": "1", "memory": "4Gi"}
            )
        ],
    )
    out = mutate(pod, make_snapshot(make_profile(qosClass="BE", priorityClassName="koord-batch")))
    assert annotation(out) == (
        '{"containers":{"test-container-a":{"limits":{"kubernetes.io/batch-cpu":"1k",'
        '"kubernetes.io/batch-memory":"4Gi"},"requests":{"kubernetes.io/batch-cpu":"1k",'
        '"kubernetes.io/batch-memory":"4Gi"}}}}'
    )


def test_user_written_batch_resources_get_the_annotation_without_profiles():
    pod = make_pod(requests={"kubernetes.io/batch-cpu": "1000"})
    out = mutate(pod, make_snapshot())
    assert json.loads(annotation(out)) == {"containers": {"main": {"requests": {"kubernetes.io/batch-cpu": "1k"}}}}


def test_init_containers_do_not_feed_the_annotation():
    pod = make_pod(
        requests={"cpu": "1"}, init_containers=[make_container("init", requests={"kubernetes.io/batch-cpu": "1"})]
    )
    assert annotation(mutate(pod, make_snapshot())) is None


def test_stale_annotation_is_rewritten_to_empty_object():
    pod = make_pod(annotations={KEY: '{"containers":{"old":{"requests":{"kubernetes.io/batch-cpu":"1k"}}}}'})
    assert annotation(mutate(pod, make_snapshot())) == "{}"


def test_equal_annotation_by_value_is_left_alone():
    text = '{"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"1000"}}}}'
    pod = make_pod(requests={"kubernetes.io/batch-cpu": "1k"}, annotations={KEY: text})
    assert annotation(mutate(pod, make_snapshot())) == text


def test_invalid_annotation_json_fails_the_request_with_500():
    pod = make_pod(annotations={KEY: "{not json"})
    with pytest.raises(Denied) as denial:
        mutate(pod, make_snapshot())
    assert denial.value.code == 500 and KEY in denial.value.message
