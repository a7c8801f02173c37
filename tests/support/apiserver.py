"""A stand-in for kube-apiserver on 127.0.0.1: the real REST list/watch wire protocol over HTTPS.

No real API server runs on these machines, so tests point the official client at this one through
a kubeconfig file. It serves, for every resource type it knows, list (paged with limit/continue),
watch (`?watch=1&resourceVersion=..&allowWatchBookmarks=true`, a chunked stream of JSON events:
ADDED, MODIFIED, DELETED, BOOKMARK, ERROR; an ERROR 410 for a compacted version), get, create
(POST), replace (PUT), patch (merge and JSON patch) and delete, the `status` subresource (PUT, or
a merge or JSON patch, of which only `status` is kept), and the `pods/binding` subresource
(POST a v1 Binding: sets spec.nodeName and PodScheduled, 409 when already bound or the UID
differs), and `pods/eviction` (POST a policy/v1 Eviction: 429 when a PodDisruptionBudget allows
no disruption, else the pod is deleted). Field selectors take `=`, `==` and `!=` on dotted
fields (`spec.nodeName!=`); a watch with one sends ADDED when a modified object starts matching
and DELETED when it stops, as kube-apiserver's watch cache does. A list or watch asked for
`Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` (a watch:
`as=PartialObjectMetadata`) answers with metadata only, as kube-apiserver's response transform does
(the first JSON clause of Accept decides; a list asked for `PartialObjectMetadata`, or a watch for the
`List`, is a 406 NotAcceptable). Faults are injected by the test: `drop_watches()`,
`store.compact()`, `fail_requests(n)`. Discovery answers what the eviction code asks (`/api/v1`'s
`pods/eviction`, `/apis/policy`), and `eviction_version="v1beta1"` plays Kubernetes 1.20, which
refuses a `policy/v1` Eviction with 400; `/readyz` answers 200 while the server runs.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonpatch
import yaml
from aiohttp import web

from certs.generate import ensure_serving_certs
from certs.material import CertPaths
from policies.apis.kinds import KINDS, Kind
from tests.support.apistore import Conflict, Event, Invalid, NotFound, Store, Watcher, merge_patch
from webhook.serve import tls_context

TOKEN = "stand-in-token"
PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "merge",
    "application/apply-patch+yaml": "merge",
}


def default_types() -> list[Kind]:
    return list(KINDS.values())


def _selects(selector: Any, obj: dict[str, Any]) -> bool:
    """A PodDisruptionBudget's label selector (matchLabels, matchExpressions); an empty one selects all."""
    selector = selector or {}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if (
            (operator == "In" and labels.get(key) not in values)
            or (operator == "NotIn" and labels.get(key) in values)
            or (operator == "Exists" and key not in labels)
            or (operator == "DoesNotExist" and key in labels)
        ):
            return False
    return True


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )


def _scaled(value: Any, total: int) -> int:
    """An int-or-percent of `total`, rounded up as the disruption controller does."""
    if isinstance(value, str) and value.endswith("%"):
        return -(-int(value[:-1]) * total // 100)
    return int(value)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _error(code: int, reason: str, message: str) -> web.Response:
    return web.json_response(_status(code, reason, message), status=code)


PARTIAL, PARTIAL_LIST = "PartialObjectMetadata", "PartialObjectMetadataList"


def metadata_target(accept: str) -> str:
    """`PartialObjectMetadata(List)` when the first JSON clause of `accept` asks for it in
    meta.k8s.io/v1, else "" (whole objects). Media types not served here (protobuf) are skipped, as
    kube-apiserver's negotiation skips what it cannot serve."""
    for clause in accept.split(","):
        media, *params = (part.strip() for part in clause.split(";"))
        if media not in ("application/json", "application/*", "*/*"):
            continue
        options = dict(param.partition("=")[::2] for param in params)
        if "as" not in options:
            return ""
        if options["as"] in (PARTIAL, PARTIAL_LIST) and (options.get("g"), options.get("v")) == ("meta.k8s.io", "v1"):
            return options["as"]
    return ""


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """What kube-apiserver's `asPartialObjectMetadata` makes of an object: its metadata, whole."""
    return {"kind": PARTIAL, "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


class ApiServer:
    def __init__(
        self, types: list[Kind] | None = None, bookmark_interval: float = 1.0, eviction_version: str = "v1"
    ) -> None:
        self.store = Store()
        self.eviction_version = eviction_version
        self.types = {(t.group, t.version, t.plural): t for t in (types or default_types())}
        self.by_kind = {t.kind: t for t in self.types.values()}
        self.bookmark_interval = bookmark_interval
        self.requests: Counter[str] = Counter()  # "GET list Namespace", "GET watch Namespace", ...
        self.evictions: list[tuple[str, str]] = []  # (namespace, name) of every pod evicted
        #: (namespace, name, DeleteOptions sent) of every pod deleted through the API (not evicted)
        self.pod_deletions: list[tuple[str, str, dict[str, Any]]] = []
        self._failures = 0
        self._failure_status = 500
        self._runner: web.AppRunner | None = None
        self._dir = tempfile.TemporaryDirectory(prefix="apiserver-")
        self.certs = CertPaths(Path(self._dir.name))
        self.port = 0

    # Test controls -----------------------------------------------------------------------------
    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace `obj` (like `kubectl apply`, without the three-way merge)."""
        obj = dict(obj)
        obj.setdefault("metadata", {}).pop("resourceVersion", None)
        return self.store.put(self.by_kind[obj["kind"]], obj)

    def delete(self, kind: str, name: str, namespace: str = "") -> None:
        self.store.delete(self.by_kind[kind], namespace, name)

    def drop_watches(self) -> None:
        """Cut every open watch connection, as an API server restart or a load balancer would."""
        for watcher in list(self.store.watchers):
            watcher.queue.put_nowait(None)

    def fail_requests(self, count: int, status: int = 500) -> None:
        self._failures, self._failure_status = count, status

    def writes(self, kind: str) -> int:
        """Create, replace, patch and delete requests received for `kind` (idempotence checks count them)."""
        return sum(
            count
            for key, count in self.requests.items()
            if key.split()[0] in ("POST", "PUT", "PATCH", "DELETE") and key.split()[-1] == kind
        )

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def write_kubeconfig(self, path: Path, context: str = "stand-in") -> Path:
        ca = base64.b64encode(self.certs.ca.read_bytes()).decode()
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": context,
                    "clusters": [
                        {"name": "stand-in", "cluster": {"server": self.url, "certificate-authority-data": ca}}
                    ],
                    "users": [{"name": "colocate", "user": {"token": TOKEN}}],
                    "contexts": [{"name": context, "context": {"cluster": "stand-in", "user": "colocate"}}],
                }
            )
        )
        return path

    # Lifecycle ---------------------------------------------------------------------------------
    async def start(self, port: int = 0) -> ApiServer:
        ensure_serving_certs(self.certs.directory, ())
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, ssl_context=tls_context(self.certs))
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def go_down(self) -> None:
        """Stop answering, as a restarting kube-apiserver does: every connection cut, every new
        one refused. The objects (etcd) and the certificates stay for `come_back`."""
        self.drop_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def come_back(self) -> None:
        """Answer again on the same port, with the same objects and certificates."""
        await self.start(self.port)

    async def stop(self) -> None:
        self.drop_watches()
        if self._runner is not None:
            await self._runner.cleanup()
        self._dir.cleanup()

    async def __aenter__(self) -> ApiServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # HTTP --------------------------------------------------------------------------------------
    def _route(self, path: str) -> tuple[Kind, str, str, str] | None:
        """(resource type, namespace, name, subresource) of a REST path."""
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            return None
        resource = self.types.get((group, version, rest[0]))
        name, subresource = (rest[1:] + ["", ""])[:2]
        return (resource, namespace, name, subresource) if resource else None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _error(401, "Unauthorized", "Unauthorized")
        if request.method == "GET" and request.path in ("/readyz", "/api/v1", "/apis/policy"):
            self.requests[f"GET {request.path}"] += 1
            return self._discovery(request.path)
        route = self._route(request.path)
        if route is None:
            return _error(404, "NotFound", f"the server could not find the requested resource {request.path}")
        resource, namespace, name, subresource = route
        watch = request.query.get("watch") in ("1", "true")
        verb = subresource or ("watch" if watch else "list" if not name else "get")
        self.requests[f"{request.method} {verb} {resource.kind}"] += 1
        if self._failures > 0:
            self._failures -= 1
            return _error(self._failure_status, "InternalError", "injected failure")
        try:
            if subresource:
                if (resource.kind, subresource, request.method) == ("Pod", "binding", "POST"):
                    return self._bind(namespace, name, await request.json())
                if (resource.kind, subresource, request.method) == ("Pod", "eviction", "POST"):
                    return self._evict(namespace, name, await request.json())
                if subresource == "status" and request.method in ("PUT", "PATCH"):  # only status changes
                    return web.json_response(
                        self._put_status(
                            request.method, resource, namespace, name, request.content_type, await request.text()
                        )
                    )
                return _error(404, "NotFound", f"the server could not find the requested resource {request.path}")
            if request.method == "GET" and watch:
                return await self._watch(request, resource, namespace)
            if request.method == "GET":
                return (
                    self._list(request, resource, namespace)
                    if not name
                    else web.json_response(self.store.get(resource, namespace, name))
                )
            if request.method in ("POST", "PUT"):
                obj = await request.json()
                if resource.namespaced:
                    obj.setdefault("metadata", {}).setdefault("namespace", namespace)
                return web.json_response(
                    self.store.put(resource, obj, create_only=request.method == "POST"),
                    status=201 if request.method == "POST" else 200,
                )
            if request.method == "PATCH":
                patch_type = PATCH_TYPES.get(request.content_type, "merge")
                body = await request.text()
                patch = yaml.safe_load(body) if request.content_type.endswith("yaml") else json.loads(body)
                return web.json_response(self.store.patch(resource, namespace, name, patch, patch_type))
            if request.method == "DELETE":
                body = await request.text()
                options = json.loads(body) if body else {}
                deleted = self.store.delete(resource, namespace, name)
                if resource.kind == "Pod":
                    self.pod_deletions.append((namespace, name, options))
                return web.json_response(deleted)
        except NotFound as exc:
            return _error(404, "NotFound", str(exc))
        except Conflict as exc:
            return _error(409, "Conflict", str(exc))
        except Invalid as exc:
            return _error(422, "Invalid", str(exc))
        except jsonpatch.JsonPatchTestFailed as exc:
            return _error(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}")
        return _error(405, "MethodNotAllowed", request.method)

    def _bind(self, namespace: str, name: str, binding: dict[str, Any]) -> web.Response:
        """kube-apiserver's BindingREST.Create: assign the pod to the target node, once."""
        meta = binding.get("metadata") or {}
        target = (binding.get("target") or {}).get("name")
        if binding.get("kind") != "Binding" or meta.get("name") != name or not target:
            return _error(
                400, "BadRequest", "a Binding with metadata.name matching the pod and a target node is required"
            )
        pod = copy.deepcopy(self.store.get(self.by_kind["Pod"], namespace, name))
        uid = meta.get("uid")
        if uid and uid != pod["metadata"].get("uid"):
            return _error(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {pod['metadata'].get('uid')}",
            )
        if (pod.get("spec") or {}).get("nodeName"):
            return _error(409, "Conflict", f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"')
        pod.setdefault("spec", {})["nodeName"] = target
        conditions = pod.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()})
        pod["metadata"].pop("resourceVersion", None)
        self.store.put(self.by_kind["Pod"], pod)
        return web.json_response(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, status=201
        )

    def _put_status(
        self, method: str, resource: Kind, namespace: str, name: str, content_type: str, body: str
    ) -> dict[str, Any]:
        """The `status` subresource: the request (a whole object, or a patch of one) decides the new
        status; everything else it says is ignored, as kube-apiserver's status strategy does."""
        if method == "PUT":
            sent = json.loads(body)
        else:
            current = copy.deepcopy(self.store.get(resource, namespace, name))
            patch = json.loads(body)
            sent = (
                jsonpatch.apply_patch(current, patch)
                if PATCH_TYPES.get(content_type) == "json"
                else merge_patch(current, patch)
            )
        status = sent.get("status") if isinstance(sent, dict) else None
        return self.store.patch(
            resource, namespace, name, [{"op": "add", "path": "/status", "value": status or {}}], "json"
        )

    def _discovery(self, path: str) -> web.Response:
        """`/readyz`, and the discovery documents of the core API (its `pods/eviction` names the
        Eviction's version) and of the `policy` group."""
        if path == "/readyz":
            return web.Response(text="ok")
        version = f"policy/{self.eviction_version}"
        if path == "/apis/policy":
            preferred = {"groupVersion": version, "version": self.eviction_version}
            return web.json_response({"kind": "APIGroup", "name": "policy", "preferredVersion": preferred})
        eviction = {"name": "pods/eviction", "kind": "Eviction", "group": "policy", "version": self.eviction_version}
        pods = {"name": "pods", "kind": "Pod", "namespaced": True}
        return web.json_response({"kind": "APIResourceList", "groupVersion": "v1", "resources": [pods, eviction]})

    def _evict(self, namespace: str, name: str, eviction: dict[str, Any]) -> web.Response:
        """kube-apiserver's EvictionREST.Create (policy/v1): refuse with 429 when a matching
        PodDisruptionBudget allows no disruption, else delete the pod. The budget's allowance is
        computed here from the healthy pods it selects, as the disruption controller would."""
        meta = eviction.get("metadata") or {}
        if eviction.get("apiVersion") != f"policy/{self.eviction_version}":
            return _error(
                400,
                "BadRequest",
                f"the API version in the data ({eviction.get('apiVersion')}) does not match the expected "
                f"API version (policy/{self.eviction_version})",
            )
        if eviction.get("kind") != "Eviction" or meta.get("name") != name:
            return _error(400, "BadRequest", "an Eviction with metadata.name matching the pod is required")
        pod = self.store.get(self.by_kind["Pod"], namespace, name)
        phase = (pod.get("status") or {}).get("phase")
        if phase not in ("Succeeded", "Failed"):  # terminal pods are evicted without a budget check
            budgets = [
                b
                for b in self.store.list(self.by_kind["PodDisruptionBudget"], namespace)
                if _selects((b.get("spec") or {}).get("selector"), pod)
            ]
            if len(budgets) > 1:
                return _error(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                )
            if budgets and self._disruptions_allowed(budgets[0], namespace) <= 0:
                return _error(
                    429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget."
                )
        self.store.delete(self.by_kind["Pod"], namespace, name)
        self.evictions.append((namespace, name))
        return web.json_response(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, status=201
        )

    def _disruptions_allowed(self, budget: dict[str, Any], namespace: str) -> int:
        spec = budget.get("spec") or {}
        pods = [p for p in self.store.list(self.by_kind["Pod"], namespace) if _selects(spec.get("selector"), p)]
        healthy = sum(1 for p in pods if _ready(p))
        if spec.get("maxUnavailable") is not None:
            return healthy - (len(pods) - _scaled(spec["maxUnavailable"], len(pods)))
        return healthy - _scaled(spec.get("minAvailable", 0), len(pods))

    @staticmethod
    def _selected(obj: dict[str, Any], field_selector: str) -> bool:
        for term in filter(None, field_selector.split(",")):
            negate = "!=" in term
            key, _, value = term.partition("!=" if negate else "=")
            value = value.removeprefix("=")
            found: Any = obj
            for part in key.split("."):
                found = found.get(part) if isinstance(found, dict) else None
            if (str(found or "") == value) == negate:
                return False
        return True

    def _visible(self, event: Event, selector: str) -> tuple[str, dict[str, Any]] | None:
        """What a watch with `selector` sees of one change (kube-apiserver's cacheWatcher rules)."""
        now = self._selected(event.obj, selector)
        before = event.prev is not None and self._selected(event.prev, selector)
        if event.type != "MODIFIED" or now == before:
            return (event.type, event.obj) if now else None
        if now:
            return "ADDED", event.obj
        gone = copy.deepcopy(event.prev)
        gone["metadata"]["resourceVersion"] = event.obj["metadata"]["resourceVersion"]
        return "DELETED", gone

    def _list(self, request: web.Request, resource: Kind, namespace: str) -> web.Response:
        target = metadata_target(request.headers.get("Accept", ""))
        if target == PARTIAL:
            return _error(
                406,
                "NotAcceptable",
                f"you requested {PARTIAL}, but the requested object is a list (*v1.{resource.kind}List)",
            )
        selector = request.query.get("fieldSelector", "")
        items = [o for o in self.store.list(resource, namespace) if self._selected(o, selector)]
        offset = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or 0) or len(items) or 1
        page, rest = items[offset : offset + limit], items[offset + limit :]
        metadata = {"resourceVersion": str(self.store.version)}
        if rest:
            metadata["continue"] = str(offset + limit)
        if target == PARTIAL_LIST:
            return web.json_response(
                {
                    "kind": PARTIAL_LIST,
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": metadata,
                    "items": [partial_metadata(o) for o in page],
                }
            )
        return web.json_response(
            {"kind": f"{resource.kind}List", "apiVersion": resource.api_version, "metadata": metadata, "items": page}
        )

    async def _watch(self, request: web.Request, resource: Kind, namespace: str) -> web.StreamResponse:
        selector = request.query.get("fieldSelector", "")
        timeout = float(request.query.get("timeoutSeconds") or 1800)
        bookmarks = request.query.get("allowWatchBookmarks") == "true"
        version = request.query.get("resourceVersion") or "0"
        target = metadata_target(request.headers.get("Accept", ""))
        if target == PARTIAL_LIST:
            return _error(
                406,
                "NotAcceptable",
                f"you requested {PARTIAL_LIST}, but the requested object is not a list (*v1.{resource.kind})",
            )
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)

        async def send(type_: str, obj: dict[str, Any]) -> None:
            if target and type_ != "ERROR":
                obj = partial_metadata(obj)
            await response.write(json.dumps({"type": type_, "object": obj}).encode() + b"\n")

        watcher = Watcher(resource, namespace)
        self.store.watchers.append(watcher)
        try:
            if version == "0":
                backlog = [Event(0, "ADDED", o) for o in self.store.list(resource, namespace)]
            else:
                try:
                    backlog = self.store.events_since(resource, int(version), namespace)
                except Conflict:
                    await send("ERROR", _status(410, "Expired", f"too old resource version: {version}"))
                    return response
            for event in backlog:
                if (seen := self._visible(event, selector)) is not None:
                    await send(*seen)
            deadline = asyncio.get_running_loop().time() + timeout
            while (left := deadline - asyncio.get_running_loop().time()) > 0:
                try:
                    event = await asyncio.wait_for(watcher.queue.get(), min(left, self.bookmark_interval))
                except TimeoutError:
                    if bookmarks:
                        await send(
                            "BOOKMARK",
                            {
                                "kind": resource.kind,
                                "apiVersion": resource.api_version,
                                "metadata": {"resourceVersion": str(self.store.version)},
                            },
                        )
                    continue
                if event is None:  # dropped by the test: cut the connection without ending the stream
                    if request.transport is not None:
                        request.transport.abort()
                    return response
                if event.version > int(version) and (seen := self._visible(event, selector)) is not None:
                    await send(*seen)
            await response.write_eof()
            return response
        except ConnectionResetError:
            return response
        finally:
            self.store.watchers.remove(watcher)
