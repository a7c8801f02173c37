"""`colocate apply` calls a registration only when kube-apiserver would: operation, objectSelector,
namespaceSelector (against the Namespace objects of the cluster directory)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import yaml

from policies.apis.constants import LABEL_MUTATING_UPDATE, LABEL_QOS_CLASS
from tests.support.admission import make_snapshot
from tests.support.builders import make_namespace, make_pod, make_profile
from webhook.apply import ApplyOptions, run_apply
from webhook.chain import ChainResult, request_for, run_chain
from webhook.registry import default_routes

REGISTRY = default_routes()
BATCH = make_profile("batch", qosClass="BE", priorityClassName="koord-batch")


def lsr_pod_without_cpu(namespace: str = "default") -> dict[str, Any]:
    """/validate-pod refuses it wherever it is called: LSR needs whole CPUs."""
    return make_pod(namespace=namespace, qos="LSR", priority=9500)


def chain(
    obj: dict[str, Any], *cluster: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None
) -> ChainResult:
    request = request_for(obj, REGISTRY, operation, old)
    return run_chain(request, REGISTRY, make_snapshot(*cluster), rand_int=lambda n: 0)


def test_a_pod_create_is_mutated_and_validated() -> None:
    result = chain(make_pod(), BATCH)
    assert result.called == ["mpod-create.koordinator.sh", "vpod.koordinator.sh"]
    assert result.object is not None and result.object["metadata"]["labels"][LABEL_QOS_CLASS] == "BE"


def test_an_update_of_a_pod_without_the_opt_in_label_is_not_sent_to_mpod_update() -> None:
    old = make_pod()
    result = chain(make_pod(labels={"app": "x"}), BATCH, operation="UPDATE", old=old)
    assert result.allowed and result.called == ["vpod.koordinator.sh"]
    assert (
        dict(result.not_called)["mpod-update.koordinator.sh"] == "the objectSelector does not match the object's labels"
    )
    assert dict(result.not_called)["mpod-create.koordinator.sh"] == "no rule matches UPDATE v1/pods"


def test_an_update_of_an_opted_in_pod_is_sent_to_mpod_update_which_changes_nothing() -> None:
    pod = make_pod(labels={LABEL_MUTATING_UPDATE: "true"})
    result = chain(pod, BATCH, operation="UPDATE", old=pod)
    assert result.called == ["mpod-update.koordinator.sh", "vpod.koordinator.sh"]
    assert result.object == pod  # the pod mutating webhook acts on CREATE only (mutating_handler.go)


def test_removing_the_opt_in_label_is_still_sent_because_the_old_object_matches() -> None:
    old = make_pod(labels={LABEL_MUTATING_UPDATE: "true"})
    result = chain(make_pod(), operation="UPDATE", old=old)
    assert "mpod-update.koordinator.sh" in result.called


def test_a_pod_in_a_control_plane_namespace_is_neither_mutated_nor_validated() -> None:
    infra = make_namespace("infra", {"control-plane": "etcd"})
    result = chain(make_pod(namespace="infra"), BATCH, infra)
    assert result.allowed and result.called == []
    assert result.object == make_pod(namespace="infra")
    refused_elsewhere = chain(lsr_pod_without_cpu(), infra)
    assert not refused_elsewhere.allowed and refused_elsewhere.denied_by == "/validate-pod"
    assert chain(lsr_pod_without_cpu("infra"), infra).allowed


def test_a_namespace_missing_from_the_directory_counts_as_unlabelled() -> None:
    result = chain(make_pod(namespace="nowhere"), BATCH)
    assert result.called == ["mpod-create.koordinator.sh", "vpod.koordinator.sh"]


def test_a_pod_delete_calls_nothing_and_a_quota_delete_calls_the_quota_validation() -> None:
    pod = make_pod()
    assert chain(pod, operation="DELETE", old=pod).called == []
    quota = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "team-x", "namespace": "default"},
        "spec": {},
    }
    result = chain(quota, quota, operation="DELETE", old=quota)
    assert result.called == ["velasticquota.koordinator.sh"]


def test_a_configmap_not_labelled_as_the_slo_config_is_not_validated() -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
        "data": {"cpu-burst-config": '{"clusterStrategy": {"cpuBurstPercent": 0}}'},
    }
    result = chain(config)
    assert result.allowed and result.called == []


def test_nodes_are_cluster_scoped_even_when_the_file_names_a_namespace() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "namespace": "stray"}}
    assert request_for(node, REGISTRY, "UPDATE", node).namespace == ""


def test_explain_says_which_webhooks_were_called_and_why_others_were_not(tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(make_pod()))
    new.write_text(yaml.safe_dump(make_pod(labels={"app": "x"})))
    state = tmp_path / "state"
    state.mkdir()
    out, err = io.StringIO(), io.StringIO()
    code = run_apply(
        ApplyOptions(cluster=state, files=(str(new),), operation="UPDATE", old_object=str(old), explain=True),
        stdout=out,
        stderr=err,
    )
    assert code == 0 and json.loads(out.getvalue())["metadata"]["labels"] == {"app": "x"}
    lines = err.getvalue().splitlines()
    assert lines[0] == "webhooks called, in order: vpod.koordinator.sh"
    assert "not called: mpod-update.koordinator.sh: the objectSelector does not match the object's labels" in lines
