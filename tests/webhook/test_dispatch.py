"""Which webhooks kube-apiserver calls for a request: rules, objectSelector, namespaceSelector.

Cases follow k8s.io/apiserver/pkg/admission/plugin/webhook/predicates (rules, object, namespace).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from policies.admission.plugin import AdmissionRequest, GroupVersionResource
from webhook.dispatch import Rule, Webhook, WebhookConfigurationError

PODS = GroupVersionResource("", "v1", "pods")
NODES = GroupVersionResource("", "v1", "nodes")
NAMESPACES = GroupVersionResource("", "v1", "namespaces")
LABELS = {"team-a": {"tier": "gold"}, "infra": {"control-plane": "true"}}


def request(
    operation: str = "CREATE",
    resource: GroupVersionResource = PODS,
    sub_resource: str = "",
    namespace: str = "team-a",
    obj: Mapping[str, Any] | None = None,
    old: Mapping[str, Any] | None = None,
) -> AdmissionRequest:
    return AdmissionRequest("u", operation, resource, sub_resource, "", namespace, "", obj, old)


def labelled(name: str = "x", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def webhook(
    resources: tuple[str, ...] = ("pods",),
    operations: tuple[str, ...] = ("*",),
    scope: str = "*",
    namespace_selector: Any = None,
    object_selector: Any = None,
) -> Webhook:
    return Webhook.from_configuration(
        {
            "name": "w",
            "rules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": list(resources),
                    "operations": list(operations),
                    "scope": scope,
                }
            ],
            "namespaceSelector": namespace_selector,
            "objectSelector": object_selector,
        }
    )


def called(hook: Webhook, req: AdmissionRequest) -> bool:
    return hook.should_call(req, LABELS.get)


@pytest.mark.parametrize(
    "resources, resource, sub_resource, expected",
    [
        (("pods",), PODS, "", True),
        (("pods",), PODS, "status", False),
        (("*",), PODS, "", True),
        (("*",), PODS, "status", False),  # `*` is every resource, without its subresources
        (("*/*",), PODS, "status", True),
        (("pods/*",), PODS, "status", True),
        (("pods/*",), PODS, "", True),  # rules.go: a `*` subresource matches "no subresource" too
        (("*/*",), PODS, "", True),
        (("*/status",), NODES, "status", True),
        (("nodes/status",), NODES, "", False),
    ],
)
def test_resources_and_subresources(
    resources: tuple[str, ...], resource: GroupVersionResource, sub_resource: str, expected: bool
) -> None:
    assert called(webhook(resources), request(resource=resource, sub_resource=sub_resource, namespace="")) is expected


def test_operations_groups_and_versions_match_exactly_or_by_star() -> None:
    assert called(webhook(operations=("CREATE",)), request("CREATE"))
    assert not called(webhook(operations=("CREATE",)), request("UPDATE", old=labelled()))
    rule = Rule(("*",), ("apps",), ("*",), ("*",))
    assert not rule.matches(request())
    assert Rule(("*",), ("*",), ("v2",), ("*",)).matches(request()) is False


@pytest.mark.parametrize(
    "scope, resource, namespace, expected",
    [
        ("Namespaced", PODS, "team-a", True),
        ("Namespaced", NODES, "", False),
        ("Cluster", NODES, "", True),
        ("Cluster", PODS, "team-a", False),
        ("Cluster", NAMESPACES, "team-a", True),  # a Namespace is cluster-scoped, whatever its request says
        ("Namespaced", NAMESPACES, "team-a", False),
    ],
)
def test_scope(scope: str, resource: GroupVersionResource, namespace: str, expected: bool) -> None:
    assert called(webhook(("*",), scope=scope), request(resource=resource, namespace=namespace)) is expected


OPT_IN = {"matchExpressions": [{"key": "opt-in", "operator": "In", "values": ["true"]}]}


@pytest.mark.parametrize(
    "operation, obj, old, expected",
    [
        ("CREATE", labelled(**{"opt-in": "true"}), None, True),
        ("CREATE", labelled(), None, False),
        ("UPDATE", labelled(), labelled(**{"opt-in": "true"}), True),  # removing the label is still sent
        ("UPDATE", labelled(**{"opt-in": "true"}), labelled(), True),
        ("UPDATE", labelled(), labelled(), False),
        ("DELETE", None, labelled(**{"opt-in": "true"}), True),  # DELETE has only the old object
        ("DELETE", None, labelled(), False),
    ],
)
def test_the_object_selector_matches_the_object_or_the_old_object(
    operation: str, obj: Any, old: Any, expected: bool
) -> None:
    assert called(webhook(object_selector=OPT_IN), request(operation, obj=obj, old=old)) is expected


def test_an_empty_object_selector_matches_even_without_objects() -> None:
    assert called(webhook(object_selector={}), request("DELETE"))


NOT_CONTROL_PLANE = {"matchExpressions": [{"key": "control-plane", "operator": "DoesNotExist"}]}
NOT_SYSTEM = {
    "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]
}


def test_the_namespace_selector_sees_the_namespace_labels_of_the_snapshot() -> None:
    hook = webhook(namespace_selector=NOT_CONTROL_PLANE)
    assert called(hook, request(namespace="team-a"))
    assert not called(hook, request(namespace="infra"))
    assert (
        hook.why_not_called(request(namespace="infra"), LABELS.get)
        == "the namespaceSelector does not match namespace 'infra'"
    )


def test_every_namespace_carries_its_name_label_even_when_unknown() -> None:
    hook = webhook(namespace_selector=NOT_SYSTEM)
    assert not called(hook, request(namespace="kube-system"))  # not in the snapshot, still excluded by name
    assert called(hook, request(namespace="team-a"))
    by_name = webhook(namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": "team-a"}})
    assert called(by_name, request(namespace="team-a"))


def test_cluster_scoped_objects_are_never_exempted_by_namespace() -> None:
    hook = webhook(("nodes",), namespace_selector={"matchLabels": {"never": "matches"}})
    assert called(hook, request(resource=NODES, namespace=""))


def test_a_namespace_is_matched_on_its_own_labels() -> None:
    hook = webhook(("namespaces",), namespace_selector=NOT_CONTROL_PLANE)
    assert called(hook, request(resource=NAMESPACES, namespace="", obj=labelled("new")))
    assert not called(hook, request(resource=NAMESPACES, namespace="", obj=labelled("new", **{"control-plane": "x"})))
    # UPDATE: the new labels count, not the stored ones
    assert called(
        hook,
        request(
            "UPDATE",
            NAMESPACES,
            namespace="infra",
            obj=labelled("infra"),
            old=labelled("infra", **{"control-plane": "true"}),
        ),
    )
    # DELETE: the stored namespace's labels
    assert not called(hook, request("DELETE", NAMESPACES, namespace="infra", old=labelled("infra")))
    named = webhook(("namespaces",), namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": "new"}})
    assert called(named, request(resource=NAMESPACES, namespace="", obj=labelled("new")))


def test_reasons_name_the_first_check_that_fails() -> None:
    hook = webhook(operations=("CREATE",), object_selector=OPT_IN)
    assert hook.why_not_called(request("DELETE", old=labelled()), LABELS.get) == "no rule matches DELETE v1/pods"
    assert (
        hook.why_not_called(request(obj=labelled()), LABELS.get)
        == "the objectSelector does not match the object's labels"
    )
    assert hook.why_not_called(request(obj=labelled(**{"opt-in": "true"})), LABELS.get) == ""


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"name": "w", "matchConditions": [{"name": "c", "expression": "true"}]}, "matchConditions are not supported"),
        ({"name": "w", "objectSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}, "values"),
        ({"name": "w", "namespaceSelector": "everything"}, "must be an object"),
        ({"name": "w", "rules": [{"operations": "CREATE"}]}, "must be a list of strings"),
        ({"name": "w", "rules": [{"scope": "Galaxy"}]}, "scope"),
    ],
)
def test_configurations_the_api_server_would_refuse_are_refused(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(WebhookConfigurationError, match=message):
        Webhook.from_configuration(entry)
