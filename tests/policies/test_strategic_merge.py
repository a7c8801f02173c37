"""The profile `patch`: Kubernetes strategic merge patch semantics for the Pod type."""

import pytest

from policies.apis.strategic_merge import POD_SCHEMA, StrategicMergeError, strategic_merge
from tests.support.builders import make_container, make_pod


def smp(pod, patch):
    return strategic_merge(pod, patch, POD_SCHEMA)


def test_maps_merge_and_null_deletes():
    pod = make_pod(labels={"a": "1", "b": "2"})
    out = smp(pod, {"metadata": {"labels": {"b": None, "c": "3"}}})
    assert out["metadata"]["labels"] == {"a": "1", "c": "3"}


def test_containers_merge_by_name_and_new_ones_append():
    pod = make_pod(containers=[make_container("a", env=[{"name": "X", "value": "1"}]), make_container("b")])
    out = smp(
        pod,
        {
            "spec": {
                "containers": [
                    {"name": "a", "image": "new", "env": [{"name": "Y", "value": "2"}]},
                    {"name": "c", "image": "sidecar"},
                ]
            }
        },
    )
    names = [c["name"] for c in out["spec"]["containers"]]
    assert names == ["a", "b", "c"]
    assert out["spec"]["containers"][0]["image"] == "new"
    assert out["spec"]["containers"][0]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]


def test_lists_without_merge_key_are_replaced():
    pod = make_pod(tolerations=[{"key": "a", "operator": "Exists"}])
    out = smp(pod, {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}})
    assert out["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_volume_mounts_merge_by_mount_path():
    pod = make_pod(containers=[make_container("a", volumeMounts=[{"name": "v1", "mountPath": "/a"}])])
    out = smp(pod, {"spec": {"containers": [{"name": "a", "volumeMounts": [{"name": "v2", "mountPath": "/a"}]}]}})
    assert out["spec"]["containers"][0]["volumeMounts"] == [{"name": "v2", "mountPath": "/a"}]


def test_patch_delete_directive_removes_a_list_element():
    pod = make_pod(containers=[make_container("a"), make_container("b")])
    out = smp(pod, {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["b"]


def test_patch_replace_directive_replaces_a_map_and_a_list():
    pod = make_pod(nodeSelector={"a": "1", "b": "2"}, containers=[make_container("a"), make_container("b")])
    out = smp(
        pod,
        {
            "spec": {
                "nodeSelector": {"$patch": "replace", "c": "3"},
                "containers": [{"$patch": "replace"}, {"name": "z", "image": "i"}],
            }
        },
    )
    assert out["spec"]["nodeSelector"] == {"c": "3"}
    assert out["spec"]["containers"] == [{"name": "z", "image": "i"}]


def test_finalizers_merge_as_a_set_and_delete_from_primitive_list():
    pod = make_pod()
    pod["metadata"]["finalizers"] = ["a", "b"]
    out = smp(pod, {"metadata": {"finalizers": ["b", "c"], "$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b", "c"]


def test_element_without_merge_key_is_an_error():
    with pytest.raises(StrategicMergeError):
        smp(make_pod(), {"spec": {"containers": [{"image": "x"}]}})


def test_the_original_is_not_modified():
    pod = make_pod(labels={"a": "1"})
    smp(pod, {"metadata": {"labels": {"a": None}}})
    assert pod["metadata"]["labels"] == {"a": "1"}
