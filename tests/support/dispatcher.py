"""An admission dispatcher that calls webhooks the way kube-apiserver does, over real HTTPS.

Given webhook configurations (as applied from `manifests/`, caBundle filled in), it sends an object
through every matching mutating webhook (configurations by name, webhooks in order, applying each
JSONPatch), then every matching validating one. Like kube-apiserver it: turns a `service`
reference into `https://<name>.<namespace>.svc:<port><path>` and resolves that name to the
Service's endpoints (`endpoints(namespace, name)`, kube-proxy's job; tests pass loopback
addresses), verifies the server against the caBundle and that DNS name, matches rules, namespace
and object selectors (`webhook.dispatch`, the one implementation `colocate apply` uses too),
sends the first AdmissionReview version of `admissionReviewVersions` it speaks, enforces
timeoutSeconds and applies failurePolicy.

Like Go's HTTP transport under kube-apiserver, it retries a POST once, on a new connection, only
when a kept-alive connection failed before a byte of the request was written to it (Go's
`nothingWrittenError`: `shouldRetryRequest` retries a non-idempotent request for nothing else).
A connection the server closed while idle is dropped from the pool unharmed; but one closed right
after a response that did not say `Connection: close` can be picked up for the next request, which
is then written and lost: that admission fails, as it would in a cluster. A refused or failed new
connection is not retried.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import socket
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import jsonpatch
from aiohttp.abc import AbstractResolver, ResolveResult

from policies.admission.plugin import AdmissionRequest, GroupVersionResource
from webhook.dispatch import Rule, Webhook

Endpoints = Callable[[str, str], Sequence[tuple[str, int]]]
_uids = itertools.count(1)
REVIEW_VERSIONS = ("v1", "v1beta1")  # what kube-apiserver can send


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True
    sub_resource: str = ""


POD = Resource("", "v1", "pods", "Pod")


@dataclass
class Admission:
    allowed: bool
    object: dict[str, Any] | None
    message: str = ""
    code: int = 200
    called: list[str] = field(default_factory=list)  # webhook names, in call order
    warnings: list[str] = field(default_factory=list)  # what kubectl prints as "Warning: ..."
    audit_annotations: dict[str, str] = field(default_factory=dict)  # "<webhook name>/<key>", as audit logs hold them


class _Attempt:
    """What one try of a request did on its connection (filled in by `_TRACE`'s callbacks)."""

    def __init__(self) -> None:
        self.reused = False
        self.written = False

    def retriable(self) -> bool:
        """Go retries a POST only on a reused connection to which nothing was written."""
        return self.reused and not self.written


async def _on_reuse(session: aiohttp.ClientSession, context: Any, params: Any) -> None:
    context.trace_request_ctx.reused = True


async def _on_headers_sent(session: aiohttp.ClientSession, context: Any, params: Any) -> None:
    context.trace_request_ctx.written = True


def _trace() -> aiohttp.TraceConfig:
    trace = aiohttp.TraceConfig()
    trace.on_connection_reuseconn.append(_on_reuse)
    trace.on_request_headers_sent.append(_on_headers_sent)
    return trace


class _ServiceResolver(AbstractResolver):
    """`<name>.<namespace>.svc` → the Service's endpoints, each with its own port (kube-proxy)."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        name, namespace, *_ = host.split(".") + ["", ""]
        addresses = list(self.endpoints(namespace, name))
        if not addresses:
            raise OSError(f"service {namespace}/{name} has no ready endpoints")
        return [
            ResolveResult(hostname=host, host=ip, port=p, family=socket.AF_INET, proto=0, flags=socket.AI_NUMERICHOST)
            for ip, p in addresses
        ]

    async def close(self) -> None:
        pass


def _request(
    resource: Resource, operation: str, namespace: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None
) -> AdmissionRequest:
    """The attributes kube-apiserver matches webhooks on; cluster-scoped requests have no namespace."""
    gvr = GroupVersionResource(resource.group, resource.version, resource.resource)
    return AdmissionRequest(
        "match",
        operation,
        gvr,
        resource.sub_resource,
        resource.kind,
        namespace if resource.namespaced else "",
        object=obj,
        old_object=old,
    )


def rule_matches(rule: Mapping[str, Any], resource: Resource, operation: str) -> bool:
    namespace = "default" if resource.namespaced else ""
    return Rule.from_configuration(rule).matches(_request(resource, operation, namespace, None, None))


class Dispatcher:
    def __init__(
        self,
        configurations: Callable[[], Sequence[Mapping[str, Any]]],
        endpoints: Endpoints,
        namespace_labels: Callable[[str], Mapping[str, str] | None],
        *,
        keep_alive: bool = True,
    ) -> None:
        """`keep_alive=False`: a new TCP and TLS connection for every call (a handshake each time)."""
        self.configurations, self.endpoints, self.namespace_labels = configurations, endpoints, namespace_labels
        self.keep_alive = keep_alive
        self._sessions: dict[str, aiohttp.ClientSession] = {}

    async def close(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()

    async def __aenter__(self) -> Dispatcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _session(self, ca_bundle: str) -> aiohttp.ClientSession:
        if ca_bundle not in self._sessions:
            context = ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode() if ca_bundle else None)
            connector = aiohttp.TCPConnector(
                ssl=context, resolver=_ServiceResolver(self.endpoints), limit=0, force_close=not self.keep_alive
            )
            self._sessions[ca_bundle] = aiohttp.ClientSession(connector=connector, trace_configs=[_trace()])
        return self._sessions[ca_bundle]

    def _webhooks(self, kind: str) -> list[Mapping[str, Any]]:
        configurations = sorted(
            (c for c in self.configurations() if c.get("kind") == kind), key=lambda c: c["metadata"]["name"]
        )
        return [w for c in configurations for w in c.get("webhooks") or ()]

    def _matches(
        self,
        webhook: Mapping[str, Any],
        resource: Resource,
        operation: str,
        namespace: str,
        obj: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None,
    ) -> bool:
        request = _request(resource, operation, namespace, obj, old)
        return Webhook.from_configuration(webhook).should_call(request, self.namespace_labels)

    async def _call(self, webhook: Mapping[str, Any], review: dict[str, Any]) -> dict[str, Any]:
        client = webhook.get("clientConfig") or {}
        service = client.get("service")
        if service:
            host = f"{service['name']}.{service['namespace']}.svc"
            url = f"https://{host}:{service.get('port', 443)}{service.get('path', '')}"
        else:
            url = client["url"]
        timeout = aiohttp.ClientTimeout(total=float(webhook.get("timeoutSeconds", 10)))
        session = self._session(client.get("caBundle", ""))
        for attempt in (1, 2):
            tried = _Attempt()
            try:
                async with session.post(url, json=review, timeout=timeout, trace_request_ctx=tried) as response:
                    if response.status != 200:
                        raise RuntimeError(f"HTTP {response.status}: {(await response.text())[:200]}")
                    answer = await response.json()
                    break
            except aiohttp.ClientConnectorError:
                raise
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                if attempt == 2 or not tried.retriable():
                    raise
        result = answer.get("response") or {}
        if result.get("uid") != review["request"]["uid"]:
            raise RuntimeError(f"response uid {result.get('uid')!r} does not match the request")
        return result

    async def admit(
        self,
        obj: dict[str, Any] | None,
        *,
        operation: str = "CREATE",
        resource: Resource = POD,
        namespace: str = "",
        old: dict[str, Any] | None = None,
    ) -> Admission:
        """Run `obj` through every matching webhook; the admitted object, or why it was refused."""
        namespace = namespace or ((obj or old or {}).get("metadata") or {}).get("namespace", "")
        current = copy.deepcopy(obj)
        called: list[str] = []
        warnings: list[str] = []
        annotations: dict[str, str] = {}
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for webhook in self._webhooks(kind):
                if not self._matches(webhook, resource, operation, namespace, current, old):
                    continue
                called.append(webhook["name"])
                review = self._review(resource, operation, namespace, current, old, _review_version(webhook))
                try:
                    result = await self._call(webhook, review)
                except (TimeoutError, aiohttp.ClientError, OSError, RuntimeError, ValueError) as exc:
                    if webhook.get("failurePolicy", "Fail") == "Ignore":
                        continue
                    message = f'failed calling webhook "{webhook["name"]}": {type(exc).__name__}: {exc}'
                    return Admission(False, None, message, 500, called)
                warnings.extend(result.get("warnings") or ())
                annotations.update(
                    {f"{webhook['name']}/{key}": value for key, value in (result.get("auditAnnotations") or {}).items()}
                )
                if not result.get("allowed"):
                    status = result.get("status") or {}
                    message = f'admission webhook "{webhook["name"]}" denied the request: {status.get("message", "")}'
                    return Admission(False, None, message, int(status.get("code") or 403), called)
                if result.get("patch") and kind.startswith("Mutating"):
                    patch = json.loads(base64.b64decode(result["patch"]))
                    current = jsonpatch.apply_patch(current, patch)
        return Admission(True, current, called=called, warnings=warnings, audit_annotations=annotations)

    @staticmethod
    def _review(
        resource: Resource, operation: str, namespace: str, obj: Any, old: Any, version: str = "v1"
    ) -> dict[str, Any]:
        name = ((obj or old or {}).get("metadata") or {}).get("name", "")
        gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
        gvr = {"group": resource.group, "version": resource.version, "resource": resource.resource}
        request = {
            "uid": f"dispatch-{next(_uids)}",
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": name,
            "namespace": namespace if resource.namespaced else "",
            "operation": operation,
            "userInfo": {"username": "system:admin", "groups": ["system:masters"]},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
            "options": None,
        }
        if resource.sub_resource:
            request["subResource"] = request["requestSubResource"] = resource.sub_resource
        return {"apiVersion": f"admission.k8s.io/{version}", "kind": "AdmissionReview", "request": request}


def _review_version(webhook: Mapping[str, Any]) -> str:
    """The first version the webhook accepts that kube-apiserver speaks (it refuses configurations without one)."""
    return next(str(v) for v in webhook.get("admissionReviewVersions") or () if v in REVIEW_VERSIONS)
