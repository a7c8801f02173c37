"""Whether kube-apiserver calls an admission webhook for a request: its rules and its two selectors.

One implementation for both callers: `colocate apply` (over the registry's registrations) and the
tests' HTTPS dispatcher (over webhook configuration objects as applied to a cluster). It follows
kube-apiserver (k8s.io/apiserver/pkg/admission/plugin/webhook/predicates):

- rules (`rules/rules.go`): the operation, API group, version and `resource[/subresource]` each
  match exactly or by `*` (`*` alone is every resource without a subresource; a `*` subresource
  also matches none, so `pods/*` is pods and all its subresources); scope `Cluster` is a
  cluster-scoped request or a Namespace, `Namespaced` a request in a namespace that is not for a
  Namespace, `*` (the default) both;
- objectSelector (`object/matcher.go`): the labels of the object OR of the old object match (so a
  DELETE, which has no object, is matched on the old one, and an UPDATE that removes the label is
  still sent); an empty selector matches every request;
- namespaceSelector (`namespace/matcher.go`): never consulted for a cluster-scoped request (no
  namespace) unless it is for a Namespace; a Namespace CREATE or UPDATE is matched on its own labels;
  every other request on the labels of its namespace, which always carry
  `kubernetes.io/metadata.name=<name>` (the API server sets that label on every Namespace).

Not modelled: `matchPolicy: Equivalent` (requests through another API version of the same
resource) and `matchConditions` (CEL); a configuration that uses matchConditions is refused.
Where kube-apiserver answers 404 because the request's namespace does not exist, the namespace is
taken to exist without labels: `colocate apply` reads a partial directory of objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from policies.admission.plugin import CREATE, UPDATE, AdmissionRequest
from policies.apis.objects import labels_of, name_of
from policies.apis.selectors import LabelSelector, SelectorShapeError, compile_selector

NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
ALL: Final = "*"

NamespaceLabels = Callable[[str], Mapping[str, str] | None]


class WebhookConfigurationError(ValueError):
    """A webhook entry kube-apiserver would refuse, or one this module cannot match faithfully."""


def _strings(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise WebhookConfigurationError(f"{where}: must be a list of strings")
    return tuple(raw)


def compile_webhook_selector(raw: Any, where: str) -> LabelSelector:
    """A webhook's objectSelector or namespaceSelector; an invalid one is an error, not a match."""
    try:
        compiled = compile_selector(raw, where)
    except SelectorShapeError as exc:
        raise WebhookConfigurationError(str(exc)) from exc
    if not isinstance(compiled, LabelSelector):
        raise WebhookConfigurationError(compiled.error)
    return compiled


def _one_of(value: str, allowed: Sequence[str]) -> bool:
    return ALL in allowed or value in allowed


@dataclass(frozen=True, slots=True)
class Rule:
    """One entry of a webhook's `rules`."""

    operations: tuple[str, ...]
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str = ALL

    @classmethod
    def from_configuration(cls, raw: Mapping[str, Any], where: str = "rule") -> Rule:
        scope = raw.get("scope", ALL)
        if scope not in (ALL, "Cluster", "Namespaced"):
            raise WebhookConfigurationError(f"{where}.scope: must be *, Cluster or Namespaced, not {scope!r}")
        return cls(
            _strings(raw.get("operations"), f"{where}.operations"),
            _strings(raw.get("apiGroups"), f"{where}.apiGroups"),
            _strings(raw.get("apiVersions"), f"{where}.apiVersions"),
            _strings(raw.get("resources"), f"{where}.resources"),
            scope,
        )

    def matches(self, request: AdmissionRequest) -> bool:
        resource = request.resource
        return (
            _one_of(request.operation, self.operations)
            and _one_of(resource.group, self.api_groups)
            and _one_of(resource.version, self.api_versions)
            and self._resource_matches(request)
            and self._scope_matches(request)
        )

    def _resource_matches(self, request: AdmissionRequest) -> bool:
        for entry in self.resources:
            resource, _, sub_resource = entry.partition("/")
            if resource in (ALL, request.resource.resource) and sub_resource in (ALL, request.sub_resource):
                return True
        return False

    def _scope_matches(self, request: AdmissionRequest) -> bool:
        if self.scope == "Namespaced":
            return not _is_namespace(request) and bool(request.namespace)
        if self.scope == "Cluster":
            return _is_namespace(request) or not request.namespace
        return True


def _is_namespace(request: AdmissionRequest) -> bool:
    resource = request.resource
    return (resource.group, resource.version, resource.resource) == ("", "v1", "namespaces")


@dataclass(frozen=True, slots=True)
class Webhook:
    """What kube-apiserver matches a request against before it calls one webhook."""

    name: str
    rules: tuple[Rule, ...]
    namespace_selector: LabelSelector = LabelSelector()
    object_selector: LabelSelector = LabelSelector()

    @classmethod
    def from_configuration(cls, entry: Mapping[str, Any]) -> Webhook:
        """One element of a Mutating/ValidatingWebhookConfiguration's `webhooks`."""
        name = str(entry.get("name") or "")
        if entry.get("matchConditions"):
            raise WebhookConfigurationError(f"webhook {name}: matchConditions are not supported")
        rules = entry.get("rules") or []
        if not isinstance(rules, list):
            raise WebhookConfigurationError(f"webhook {name}: rules must be a list")
        return cls(
            name,
            tuple(Rule.from_configuration(r, f"webhook {name} rules[{i}]") for i, r in enumerate(rules)),
            compile_webhook_selector(entry.get("namespaceSelector"), f"webhook {name} namespaceSelector"),
            compile_webhook_selector(entry.get("objectSelector"), f"webhook {name} objectSelector"),
        )

    def should_call(self, request: AdmissionRequest, namespace_labels: NamespaceLabels) -> bool:
        return not self.why_not_called(request, namespace_labels)

    def why_not_called(self, request: AdmissionRequest, namespace_labels: NamespaceLabels) -> str:
        """Why kube-apiserver would not call this webhook for `request`; "" when it would."""
        if not any(rule.matches(request) for rule in self.rules):
            return f"no rule matches {request.operation} {_resource_text(request)}"
        if not self._object_selected(request):
            return "the objectSelector does not match the object's labels"
        if not self._namespace_selected(request, namespace_labels):
            return f"the namespaceSelector does not match namespace {_namespace_name(request)!r}"
        return ""

    def _object_selected(self, request: AdmissionRequest) -> bool:
        if self.object_selector.is_empty:
            return True
        return any(
            obj is not None and self.object_selector.matches(labels_of(obj))
            for obj in (request.object, request.old_object)
        )

    def _namespace_selected(self, request: AdmissionRequest, namespace_labels: NamespaceLabels) -> bool:
        if not request.namespace and not _is_namespace(request):
            return True  # a cluster-scoped object is never exempted by namespace
        if self.namespace_selector.is_empty:
            return True
        return self.namespace_selector.matches(request_namespace_labels(request, namespace_labels))


def _resource_text(request: AdmissionRequest) -> str:
    resource = request.resource
    name = f"{resource.resource}/{request.sub_resource}" if request.sub_resource else resource.resource
    return f"{resource.group}/{resource.version}/{name}" if resource.group else f"{resource.version}/{name}"


def _namespace_name(request: AdmissionRequest) -> str:
    if _is_namespace(request):
        return request.namespace or name_of(request.object or request.old_object or {})
    return request.namespace


def request_namespace_labels(request: AdmissionRequest, namespace_labels: NamespaceLabels) -> Mapping[str, str]:
    """The labels a namespaceSelector is evaluated on for `request` (see the module docstring)."""
    name = _namespace_name(request)
    if _is_namespace(request) and not request.sub_resource and request.operation in (CREATE, UPDATE):
        labels: Mapping[str, str] = labels_of(request.object or {})
    else:
        stored = namespace_labels(name)
        if stored is None and _is_namespace(request):
            stored = labels_of(request.old_object or {})
        labels = stored or {}
    return {**labels, NAMESPACE_NAME_LABEL: name}
