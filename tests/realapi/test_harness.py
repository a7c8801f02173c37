"""The harness itself, against the real API server as a user would see it: namespaces and Pods,
a CRD of ours Established and enforcing its schema, a webhook registered by URL, an API server
restart, and the lazily started kube-controller-manager and kube-scheduler (tests/support/realapi.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.rest import ApiError, call
from tests.support.paths import REPO
from tests.support.realapi import RUN_LABEL, ControlPlane, RealApi
from tests.support.realapi_process import Component
from tests.support.served import Served
from tests.support.wait import wait_for_sync

pytestmark = pytest.mark.realapi

PROFILES_CRD = REPO / "manifests" / "crds" / "clustercolocationprofiles.yaml"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "registry.k8s.io/pause:3.9"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def profile(name: str, qos_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "config.koordinator.sh/v1alpha1",
        "kind": "ClusterColocationProfile",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "qosClass": qos_class},
    }


def test_a_pod_is_stored_with_the_defaults_the_server_gives_it(realapi: RealApi, realapi_namespace: str) -> None:
    stored = realapi.apply([pod("web")], realapi_namespace)[0]

    read = realapi.core.read_namespaced_pod("web", realapi_namespace)
    assert read.metadata.uid == stored["metadata"]["uid"]
    assert read.spec.containers[0].image == "registry.k8s.io/pause:3.9"
    assert read.spec.service_account_name == "default"
    assert read.spec.termination_grace_period_seconds == 30
    assert read.status.phase == "Pending"  # no scheduler or kubelet runs here


def test_a_pod_without_an_image_is_refused_with_its_field_path(realapi: RealApi, realapi_namespace: str) -> None:
    imageless = pod("no-image")
    del imageless["spec"]["containers"][0]["image"]

    with pytest.raises(ApiError) as refused:
        realapi.apply([imageless], realapi_namespace)

    assert refused.value.code == 422
    assert "spec.containers[0].image: Required value" in str(refused.value)


def test_the_profile_crd_is_established_and_enforces_its_schema(realapi: RealApi) -> None:
    crds = realapi.apply_file(PROFILES_CRD)
    realapi.wait_crds_established(crd["metadata"]["name"] for crd in crds)

    realapi.apply([profile("harness-be", "BE")])
    stored = realapi.get("config.koordinator.sh/v1alpha1", "ClusterColocationProfile", "harness-be")
    assert stored is not None and stored["spec"]["qosClass"] == "BE"
    with pytest.raises(ApiError) as refused:
        realapi.apply([profile("harness-bad", "BEST")])
    assert refused.value.code == 422
    assert "spec.qosClass" in str(refused.value)
    realapi.delete("config.koordinator.sh/v1alpha1", "ClusterColocationProfile", "harness-be")


def test_the_api_server_answers_again_after_a_restart_with_what_it_stored(
    realapi: RealApi, realapi_control_plane: ControlPlane, realapi_namespace: str
) -> None:
    realapi.core.create_namespaced_config_map(realapi_namespace, {"metadata": {"name": "kept"}, "data": {"a": "1"}})

    realapi_control_plane.stop_apiserver()
    with pytest.raises(ApiError) as down:
        call(realapi.client, "GET", "/readyz", timeout=(1.0, 2.0))
    assert down.value.code == 0  # nothing answers while it is down
    realapi_control_plane.start_apiserver()

    kept = realapi.core.read_namespaced_config_map("kept", realapi_namespace)
    assert kept.data == {"a": "1"}


def test_the_controller_manager_deletes_a_namespace_with_what_it_holds(
    realapi: RealApi, realapi_controller_manager: Component | None
) -> None:
    namespace = realapi.create_namespace("harness-doomed")
    realapi.core.create_namespaced_config_map(namespace, {"metadata": {"name": "doomed"}})

    realapi.delete_namespace(namespace)

    def gone() -> bool:
        return namespace not in {ns.metadata.name for ns in realapi.core.list_namespace().items}

    wait_for_sync(gone, timeout=60, interval=0.2, message=f"namespace {namespace} to be deleted")


def test_a_scheduler_with_the_tests_configuration_binds_a_pod(
    realapi: RealApi, realapi_namespace: str, realapi_scheduler: Callable[[Mapping[str, Any]], Component]
) -> None:
    node = f"node-{realapi_namespace}"
    realapi.add_node(node)
    try:
        realapi_scheduler({"apiVersion": "kubescheduler.config.k8s.io/v1beta1", "kind": "KubeSchedulerConfiguration"})
        realapi.apply([pod("scheduled")], realapi_namespace)

        bound = wait_for_sync(
            lambda: realapi.core.read_namespaced_pod("scheduled", realapi_namespace).spec.node_name,
            timeout=60,
            interval=0.2,
            message="kube-scheduler to bind the pod",
        )
        assert bound == node
    finally:
        realapi.core.delete_node(node)


def test_a_webhook_registered_by_url_mutates_pods_the_server_admits(
    realapi: RealApi, realapi_namespace: str, tmp_path: Path
) -> None:
    realapi.apply_file(REPO / "manifests" / "cluster" / "priorityclasses.yaml")
    webhook = Served(tmp_path).wait_ready()  # `colocate serve` with the example profiles, in its own process
    name = "harness.colocate.test"
    realapi.register_webhook(
        name,
        url=f"https://127.0.0.1:{webhook.port}/mutate-pod",
        ca_bundle=(webhook.certs / "ca.crt").read_bytes(),
        rules=[{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
        namespaceSelector={"matchLabels": {RUN_LABEL: realapi.run_id}},
    )
    try:
        labelled = pod("ls")
        labelled["metadata"]["labels"] = {"colocate.example.com/tier": "latency-sensitive"}
        stored = realapi.apply([labelled], realapi_namespace)[0]
    finally:
        realapi.delete("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", name)
        webhook.stop()

    assert stored["metadata"]["labels"]["koordinator.sh/qosClass"] == "LS"
    assert stored["spec"]["priorityClassName"] == "koord-prod"
    assert stored["spec"]["priority"] == 9000
