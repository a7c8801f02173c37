"""`colocate manifests webhooks` writes the webhook configurations from the registry, and the
checked-in `manifests/deploy/webhooks.yaml` is exactly its output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from colocate.main import main
from policies.admission.plugin import AdmissionRequest, GroupVersionResource
from webhook.configurations import Deployment, configurations, webhook_entries
from webhook.dispatch import Webhook
from webhook.registry import default_routes

WEBHOOKS_FILE = Path(__file__).resolve().parents[2] / "manifests" / "deploy" / "webhooks.yaml"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["manifests", "webhooks", *args])
    return code, capsys.readouterr().out


def test_the_checked_in_configurations_are_exactly_the_commands_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys)
    assert code == 0
    assert WEBHOOKS_FILE.read_text() == out, (
        f"{WEBHOOKS_FILE} is out of date: regenerate it with `colocate manifests webhooks > {WEBHOOKS_FILE}`"
    )


def test_json_output_is_one_list_of_both_configurations(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "-o", "json")
    document = json.loads(out)
    assert code == 0 and document["kind"] == "List"
    assert document["items"] == configurations(default_routes())


def test_another_namespace_moves_the_service_and_the_exclusion(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "--cert-namespace", "colocate", "--cert-service", "hook")
    webhooks = [w for configuration in yaml.safe_load_all(out) for w in configuration["webhooks"]]
    assert code == 0 and len(webhooks) == sum(len(r.registrations) for r in default_routes().routes)
    for webhook in webhooks:
        assert webhook["clientConfig"]["service"]["namespace"] == "colocate"
        assert webhook["clientConfig"]["service"]["name"] == "hook"
        excluded = ["kube-system"] if webhook["name"] == "vconfigmap.koordinator.sh" else ["kube-system", "colocate"]
        assert {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded} in webhook[
            "namespaceSelector"
        ]["matchExpressions"]


def test_the_slo_controller_config_in_the_webhooks_own_namespace_is_validated() -> None:
    """Koordinator keeps slo-controller-config in koordinator-system, the webhook's namespace: the
    deployment's exclusion of that namespace must not cover vconfigmap, or it is never called."""
    configmaps = GroupVersionResource("", "v1", "configmaps")
    config = {
        "metadata": {
            "name": "slo-controller-config",
            "namespace": "koordinator-system",
            "labels": {"koordinator.sh/configmap-type": "slo-controller-config"},
        }
    }
    hooks = [Webhook.from_configuration(w) for c in configurations(default_routes()) for w in c["webhooks"]]
    request = AdmissionRequest(
        "u", "UPDATE", configmaps, namespace="koordinator-system", object=config, old_object=config
    )
    labels = {"kubernetes.io/metadata.name": "koordinator-system", "control-plane": "koordinator"}
    assert [h.name for h in hooks if h.should_call(request, lambda name: labels)] == ["vconfigmap.koordinator.sh"]
    unlabelled = {"metadata": {"name": "other", "namespace": "koordinator-system"}}
    request = AdmissionRequest(
        "u", "UPDATE", configmaps, namespace="koordinator-system", object=unlabelled, old_object=unlabelled
    )
    assert not [h.name for h in hooks if h.should_call(request, lambda name: labels)]


def test_every_registration_field_is_written() -> None:
    routes = default_routes().by_path()
    written = {w["name"]: w for c in configurations(default_routes()) for w in c["webhooks"]}
    assert set(written) == {r.name for route in routes.values() for r in route.registrations}
    for route in routes.values():
        for registration in route.registrations:
            entry = written[registration.name]
            assert entry["admissionReviewVersions"] == list(registration.admission_review_versions)
            assert entry["failurePolicy"] == registration.failure_policy
            assert entry["sideEffects"] == registration.side_effects
            assert entry["timeoutSeconds"] == route.timeout_seconds(registration)
            assert entry["clientConfig"]["service"]["path"] == route.path
            assert entry.get("reinvocationPolicy") == (registration.reinvocation_policy if route.mutating else None)
    assert written["vconfigmap.koordinator.sh"]["admissionReviewVersions"] == ["v1beta1"]  # Koordinator's
    assert written["mpod-create.koordinator.sh"]["admissionReviewVersions"] == ["v1", "v1beta1"]


def test_the_written_webhooks_match_requests_as_the_registry_does() -> None:
    """Rules and objectSelector written are those apply matches on; the namespaceSelector adds only the
    deployment's exclusions."""
    deployment = Deployment()
    for route in default_routes().routes:
        entries = webhook_entries(default_routes(), route.mutating, deployment)
        for registered in route.webhooks:
            written = Webhook.from_configuration(next(e for e in entries if e["name"] == registered.name))
            assert written.rules == registered.rules
            assert written.object_selector == registered.object_selector
            assert set(registered.namespace_selector.requirements) <= set(written.namespace_selector.requirements)


def test_the_deployed_configurations_never_send_system_namespaces() -> None:
    pods = GroupVersionResource("", "v1", "pods")
    hooks = [Webhook.from_configuration(w) for c in configurations(default_routes()) for w in c["webhooks"]]
    for namespace in ("kube-system", "koordinator-system"):
        request = AdmissionRequest("u", "CREATE", pods, namespace=namespace, object={"metadata": {}})
        assert not any(hook.should_call(request, lambda name: None) for hook in hooks)
    request = AdmissionRequest("u", "CREATE", pods, namespace="default", object={"metadata": {}})
    assert [h.name for h in hooks if h.should_call(request, lambda name: None)] == [
        "mpod-create.koordinator.sh",
        "vpod.koordinator.sh",
    ]
