"""The registry refuses what kube-apiserver would refuse, and plugins no registration would ever call."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from policies.admission.plugin import CREATE, DELETE, UPDATE, AdmissionContext, Read
from webhook.registry import Registration, Registry, RegistryError, Route, default_routes


class DeletePlugin:
    name = "OnDelete"
    operations = frozenset({DELETE})
    reads: frozenset[Read] = frozenset()

    def validate(self, obj: Any, ctx: AdmissionContext) -> None:
        return None


def configmap_route(**registration: Any) -> Route:
    route = default_routes().by_path()["/validate-configmap"]
    return replace(route, registrations=(replace(route.registrations[0], **registration),))


def test_the_default_registry_is_consistent() -> None:
    for route in default_routes().routes:
        assert route.problems() == []


def test_every_plugin_acts_only_on_operations_its_route_is_registered_for() -> None:
    for route in default_routes().routes:
        registered = {op for registration in route.registrations for op in registration.operations}
        for plugin in route.plugins:
            assert plugin.operations <= registered, (route.path, plugin.name)


def test_a_plugin_acting_on_an_operation_no_registration_sends_is_refused() -> None:
    route = configmap_route(operations=(CREATE, UPDATE))
    with pytest.raises(RegistryError, match="plugin OnDelete acts on DELETE"):
        Registry((replace(route, plugins=(DeletePlugin(),)),))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"timeout_seconds": 31}, "timeoutSeconds must be 1..30"),
        ({"timeout_seconds": 0}, "timeoutSeconds must be 1..30"),
        ({"admission_review_versions": ()}, "admissionReviewVersions"),
        ({"admission_review_versions": ("v2",)}, "admissionReviewVersions"),
        ({"operations": ("PATCH",)}, "operations must be some of"),
        ({"object_selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}, "not a valid label selector"),
    ],
)
def test_a_registration_the_api_server_would_refuse_is_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        Registry((configmap_route(**change),))


def test_timeouts_default_by_route_type() -> None:
    routes = default_routes().by_path()
    pod_create = routes["/mutate-pod"].registrations[0]
    assert routes["/mutate-pod"].timeout_seconds(pod_create) == 3
    assert routes["/validate-pod"].timeout_seconds(routes["/validate-pod"].registrations[0]) == 5
    assert routes["/mutate-pod"].timeout_seconds(replace(pod_create, timeout_seconds=7)) == 7


def test_registrations_become_webhooks_in_order() -> None:
    route = default_routes().by_path()["/mutate-pod"]
    assert [w.name for w in route.webhooks] == [r.name for r in route.registrations]
    (rule,) = route.webhooks[1].rules
    assert (rule.operations, rule.api_groups, rule.api_versions, rule.resources) == (
        ("UPDATE",),
        ("",),
        ("v1",),
        ("pods",),
    )
    assert isinstance(route.registrations[0], Registration)
