"""The handler registry: every webhook route, declared once, in one table (`default_routes()`).

A route is what the server serves at a path; its registrations are what a
MutatingWebhookConfiguration / ValidatingWebhookConfiguration entry says about it (Koordinator's
webhook names, rules, failure policies and selectors, spec section 2). Everything else is derived
from this table: the webhook configurations (`colocate manifests webhooks`), the routes and
registrations `colocate apply` calls for an object, and, from what the routes' plugins declare they
read, the kinds the server watches and the RBAC rules it needs (`webhook.watched`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final, Literal, TypedDict

from policies.admission.configmap import configmap_validating_plugins
from policies.admission.elastic_quota import quota_mutating_plugins, quota_validating_plugins
from policies.admission.node import node_status_mutating_plugins, node_validating_plugins
from policies.admission.plugin import CREATE, DELETE, OPERATIONS, UPDATE, MutatingPlugin, Read, ValidatingPlugin
from policies.admission.pod_mutation import pod_mutating_plugins
from policies.admission.pod_validation import pod_validating_plugins
from policies.admission.reservation import reservation_mutating_plugins, reservation_validating_plugins
from policies.apis.constants import (
    ELASTIC_QUOTA_GROUP,
    ELASTIC_QUOTA_KIND,
    LABEL_CONFIGMAP_TYPE,
    LABEL_MUTATING_UPDATE,
    RESERVATION_GROUP,
    RESERVATION_KIND,
    SLO_CONFIG_TYPE,
)
from policies.apis.field_errors import ConfigError
from policies.apis.objects import copy_pod_for_mutation, json_copy
from webhook.dispatch import Rule, Webhook, WebhookConfigurationError, compile_webhook_selector

FailurePolicy = Literal["Fail", "Ignore"]
SideEffects = Literal["None", "NoneOnDryRun"]  # what admissionregistration.k8s.io/v1 allows
ReinvocationPolicy = Literal["Never", "IfNeeded"]

# kube-apiserver's bounds for timeoutSeconds, and the AdmissionReview versions it can send.
TIMEOUT_RANGE: Final = range(1, 31)
REVIEW_VERSIONS: Final = ("v1", "v1beta1")
# colocate's timeouts: a mutating webhook holds up every later one, so it gets less time.
MUTATING_TIMEOUT_SECONDS: Final = 3
VALIDATING_TIMEOUT_SECONDS: Final = 5

# Namespaces labelled `control-plane` are never sent to the pod webhooks (patch_manifests.yaml).
CONTROL_PLANE_EXCLUSION: Mapping[str, Any] = {
    "matchExpressions": [{"key": "control-plane", "operator": "DoesNotExist"}]
}

# Only pods that opt in are sent to the UPDATE registration of /mutate-pod (patch_manifests.yaml).
MUTATING_UPDATE_OPT_IN: Mapping[str, Any] = {
    "matchExpressions": [{"key": LABEL_MUTATING_UPDATE, "operator": "In", "values": ["true"]}]
}


@dataclass(frozen=True)
class Registration:
    """One webhook entry of a webhook configuration object.

    `admission_review_versions` in order of preference: kube-apiserver sends the first it speaks.
    `timeout_seconds` None is the route's default (3 s mutating, 5 s validating).
    `in_own_namespace`: the objects it admits live in the webhook's own namespace (the
    slo-controller-config ConfigMap in koordinator-system), so a deployment must not exclude that
    namespace from it; its objectSelector is what keeps it narrow.
    """

    name: str
    operations: tuple[str, ...]
    failure_policy: FailurePolicy
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    admission_review_versions: tuple[str, ...] = REVIEW_VERSIONS
    timeout_seconds: int | None = None
    side_effects: SideEffects = "None"
    reinvocation_policy: ReinvocationPolicy = "Never"  # mutating registrations only
    in_own_namespace: bool = False


@dataclass(frozen=True)
class Route:
    path: str
    mutating: bool
    kind: str  # the object kind it admits, e.g. "Pod"
    api_group: str
    api_version: str
    resource: str
    sub_resource: str
    object_type: str  # Koordinator's metric label: pod, node, reservation, elasticquota, configmap
    registrations: tuple[Registration, ...]
    # Koordinator's pod validator admits a DELETE that carries no oldObject instead of refusing it.
    admits_empty_delete: bool = False
    # How a mutating route copies the request object before its plugins change it: a deep copy
    # unless the route knows exactly which parts its plugins write.
    copy_for_mutation: Callable[[dict[str, Any]], dict[str, Any]] = field(default=json_copy, compare=False)
    plugins: tuple[MutatingPlugin, ...] | tuple[ValidatingPlugin, ...] = field(default=(), compare=False)

    @property
    def webhook_type(self) -> str:
        return "mutate" if self.mutating else "validate"

    @property
    def rule_resource(self) -> str:
        """The resource as written in a webhook rule (`nodes/status`)."""
        return f"{self.resource}/{self.sub_resource}" if self.sub_resource else self.resource

    def timeout_seconds(self, registration: Registration) -> int:
        if registration.timeout_seconds is not None:
            return registration.timeout_seconds
        return MUTATING_TIMEOUT_SECONDS if self.mutating else VALIDATING_TIMEOUT_SECONDS

    @cached_property
    def webhooks(self) -> tuple[Webhook, ...]:
        """Each registration as kube-apiserver matches requests against it, in registration order."""
        return tuple(
            Webhook(
                registration.name,
                (Rule(registration.operations, (self.api_group,), (self.api_version,), (self.rule_resource,)),),
                compile_webhook_selector(registration.namespace_selector, f"{registration.name} namespaceSelector"),
                compile_webhook_selector(registration.object_selector, f"{registration.name} objectSelector"),
            )
            for registration in self.registrations
        )

    def reads(self) -> frozenset[Read]:
        """What the route's plugins read from the cluster snapshot."""
        return frozenset(read for plugin in self.plugins for read in plugin.reads)

    def problems(self) -> list[str]:
        """Why kube-apiserver would refuse this route's registrations, or its plugins could never act."""
        found: list[str] = []
        registered = {operation for registration in self.registrations for operation in registration.operations}
        for registration in self.registrations:
            where = f"{self.path} {registration.name}"
            if not registration.operations or not set(registration.operations) <= OPERATIONS:
                found.append(f"{where}: operations must be some of {', '.join(sorted(OPERATIONS))}")
            if not registration.admission_review_versions or not set(registration.admission_review_versions) <= set(
                REVIEW_VERSIONS
            ):
                found.append(f"{where}: admissionReviewVersions must be some of {', '.join(REVIEW_VERSIONS)}")
            if self.timeout_seconds(registration) not in TIMEOUT_RANGE:
                found.append(f"{where}: timeoutSeconds must be 1..30")
        try:
            self.webhooks  # noqa: B018 - compiles (and so checks) every selector
        except WebhookConfigurationError as exc:
            found.append(f"{self.path}: {exc}")
        for plugin in self.plugins:
            if unsent := plugin.operations - registered:
                found.append(
                    f"{self.path}: plugin {plugin.name} acts on {', '.join(sorted(unsent))}, "
                    "which no registration of the route sends"
                )
        return found


class RegistryError(ValueError):
    """The route table is inconsistent: a duplicate path or webhook name, or a registration
    kube-apiserver would refuse, or a plugin acting on an operation no registration sends."""


@dataclass(frozen=True)
class Registry:
    routes: tuple[Route, ...]

    def __post_init__(self) -> None:
        paths = [r.path for r in self.routes]
        names = [reg.name for r in self.routes for reg in r.registrations]
        for label, values in (("path", paths), ("webhook name", names)):
            duplicates = sorted({v for v in values if values.count(v) > 1})
            if duplicates:
                raise RegistryError(f"duplicate {label} in the handler registry: {', '.join(duplicates)}")
        problems = [problem for route in self.routes for problem in route.problems()]
        if problems:
            raise RegistryError("; ".join(problems))

    def by_path(self) -> dict[str, Route]:
        return {route.path: route for route in self.routes}

    def for_kind(self, kind: str) -> list[Route]:
        """Mutating routes first, then validating ones, as an API server calls them."""
        matching = [r for r in self.routes if r.kind == kind]
        return [r for r in matching if r.mutating] + [r for r in matching if not r.mutating]

    def kinds(self) -> list[str]:
        return sorted({r.kind for r in self.routes})

    def reads(self) -> frozenset[Read]:
        """What the plugins of every route read from the cluster snapshot."""
        return frozenset(read for route in self.routes for read in route.reads())


class Target(TypedDict, total=False):
    """What a pair of routes admits; shared by a resource's mutating and validating route."""

    kind: str
    api_group: str
    api_version: str
    resource: str
    sub_resource: str
    object_type: str


def pod_routes() -> Sequence[Route]:
    pods = Target(kind="Pod", api_group="", api_version="v1", resource="pods", sub_resource="", object_type="pod")
    return [
        Route(
            path="/mutate-pod",
            mutating=True,
            **pods,
            registrations=(
                Registration("mpod-create.koordinator.sh", (CREATE,), "Fail", CONTROL_PLANE_EXCLUSION),
                Registration(
                    "mpod-update.koordinator.sh", (UPDATE,), "Fail", CONTROL_PLANE_EXCLUSION, MUTATING_UPDATE_OPT_IN
                ),
            ),
            plugins=tuple(pod_mutating_plugins()),
            copy_for_mutation=copy_pod_for_mutation,
        ),
        Route(
            path="/validate-pod",
            mutating=False,
            **pods,
            registrations=(Registration("vpod.koordinator.sh", (CREATE, UPDATE), "Fail", CONTROL_PLANE_EXCLUSION),),
            admits_empty_delete=True,
            plugins=tuple(pod_validating_plugins()),
        ),
    ]


def node_routes() -> Sequence[Route]:
    """Status updates are amplified; label changes are checked against the node strategies
    (`pkg/webhook/node/`)."""
    node_status = Target(
        kind="Node", api_group="", api_version="v1", resource="nodes", sub_resource="status", object_type="node"
    )
    nodes = Target(kind="Node", api_group="", api_version="v1", resource="nodes", sub_resource="", object_type="node")
    return [
        Route(
            path="/mutate-node-status",
            mutating=True,
            **node_status,
            registrations=(Registration("mnode-status.koordinator.sh", (CREATE, UPDATE), "Ignore"),),
            plugins=tuple(node_status_mutating_plugins()),
        ),
        Route(
            path="/validate-node",
            mutating=False,
            **nodes,
            registrations=(Registration("vnode.koordinator.sh", (CREATE, UPDATE), "Ignore"),),
            plugins=tuple(node_validating_plugins()),
        ),
    ]


def reservation_routes() -> Sequence[Route]:
    """Profiles applied to Reservations (`pkg/webhook/reservation/mutating/`); the validating route
    is colocate's and admits all."""
    reservations = Target(
        kind=RESERVATION_KIND,
        api_group=RESERVATION_GROUP,
        api_version="v1alpha1",
        resource="reservations",
        sub_resource="",
        object_type="reservation",
    )
    return [
        Route(
            path="/mutate-reservation",
            mutating=True,
            **reservations,
            registrations=(Registration("mreservation-create.koordinator.sh", (CREATE,), "Fail"),),
            plugins=tuple(reservation_mutating_plugins()),
        ),
        Route(
            path="/validate-reservation",
            mutating=False,
            **reservations,
            registrations=(Registration("vreservation.koordinator.sh", (CREATE, UPDATE), "Fail"),),
            plugins=tuple(reservation_validating_plugins()),
        ),
    ]


def elastic_quota_routes() -> Sequence[Route]:
    """Quota defaulting and the quota-tree checks (`pkg/webhook/elasticquota/`)."""
    quotas = Target(
        kind=ELASTIC_QUOTA_KIND,
        api_group=ELASTIC_QUOTA_GROUP,
        api_version="v1alpha1",
        resource="elasticquotas",
        sub_resource="",
        object_type="elasticquota",
    )
    return [
        Route(
            path="/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
            mutating=True,
            **quotas,
            registrations=(Registration("melasticquota.koordinator.sh", (CREATE,), "Fail"),),
            plugins=tuple(quota_mutating_plugins()),
        ),
        Route(
            path="/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
            mutating=False,
            **quotas,
            registrations=(Registration("velasticquota.koordinator.sh", (CREATE, UPDATE, DELETE), "Fail"),),
            plugins=tuple(quota_validating_plugins()),
        ),
    ]


def configmap_routes() -> Sequence[Route]:
    """The slo-controller-config checks (`pkg/webhook/cm/`); only ConfigMaps labelled as that config
    are sent."""
    return [
        Route(
            path="/validate-configmap",
            mutating=False,
            kind="ConfigMap",
            api_group="",
            api_version="v1",
            resource="configmaps",
            sub_resource="",
            object_type="configmap",
            registrations=(
                Registration(
                    "vconfigmap.koordinator.sh",
                    (CREATE, UPDATE, DELETE),
                    "Fail",
                    object_selector={
                        "matchExpressions": [
                            {"key": LABEL_CONFIGMAP_TYPE, "operator": "In", "values": [SLO_CONFIG_TYPE]}
                        ]
                    },
                    admission_review_versions=("v1beta1",),
                    in_own_namespace=True,
                ),
            ),
            plugins=tuple(configmap_validating_plugins()),
        ),
    ]


def in_tree_routes() -> list[Route]:
    """Every route colocate serves with its in-tree plugins. Add a resource's routes here and nowhere else."""
    routes: list[Route] = []
    for group in (pod_routes, node_routes, reservation_routes, elastic_quota_routes, configmap_routes):
        routes.extend(group())
    return routes


def in_tree_plugin_names() -> list[str]:
    return sorted({plugin.name for route in in_tree_routes() for plugin in route.plugins})


def default_routes(admission_plugins: Sequence[str] = ()) -> Registry:
    """Every route, with the installed admission plugins `admission_plugins` (`--admission-plugins`)
    after each of their routes' in-tree plugins (`webhook.plugins`)."""
    routes = in_tree_routes()
    if admission_plugins:
        from webhook.plugins import enabled_specs, join

        routes = join(routes, enabled_specs(admission_plugins, in_tree_plugin_names()))
        try:
            return Registry(tuple(routes))
        except RegistryError as exc:
            raise ConfigError("--admission-plugins", str(exc)) from exc
    return Registry(tuple(routes))
