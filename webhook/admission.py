"""Serving one admission request: the single chain both front doors use.

`run_route` runs a route's plugins over a request and a cluster snapshot (no I/O, no HTTP);
`serve_review` wraps it for the wire: bytes in, status and bytes out, metrics and one log record.
The webhook port (`webhook.server`) and `colocate apply` (`webhook.chain`) only call these.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import orjson

from policies.admission.plugin import (
    DELETE,
    UPDATE,
    AdmissionContext,
    AdmissionRequest,
    Denied,
    Effect,
    ProfileWarning,
    default_rand_int,
)
from policies.admission.snapshot import ClusterSnapshot
from policies.admission.warn_only import audit_annotations, warning_lines
from policies.apis.jsonpatch_diff import diff
from policies.apis.objects import json_copy, metadata_of
from policies.apis.shape import object_error
from webhook.registry import Route
from webhook.review import MalformedReview, build_review, parse_review

log = logging.getLogger("colocate.admission")

NO_CONTENT = "there is no content to decode"
_NOTHING: Final[dict[str, Any]] = {}


class PluginObserver(Protocol):
    def __call__(self, route: Route, plugin: str, operation: str, seconds: float, allowed: bool) -> None: ...


def _ignore(route: Route, plugin: str, operation: str, seconds: float, allowed: bool) -> None:
    return None


@dataclass
class Outcome:
    allowed: bool
    code: int = 200
    message: str = ""
    patch: list[dict[str, Any]] = field(default_factory=list)
    object: dict[str, Any] | None = None  # the object after this route (mutated, or as received)
    matched_profiles: list[str] = field(default_factory=list)
    effects: list[Effect] | None = None
    warnings: list[ProfileWarning] = field(default_factory=list)  # what warn-only profiles would have done
    refused: str = ""  # a REFUSALS reason when the request, not a policy, was at fault


#: why a request was refused before (or instead of) the policies: the closed set of metric labels
REFUSALS: Final = ("bad_review", "bad_object", "too_large", "encoding", "slow_body", "busy", "internal_error")


def _decode(route: Route, request: AdmissionRequest) -> dict[str, Any] | Outcome:
    obj = request.old_object if request.operation == DELETE else request.object
    if not obj:
        if request.operation == DELETE and route.admits_empty_delete:
            return Outcome(True)
        return Outcome(False, 400, NO_CONTENT)
    kind = obj.get("kind")
    if kind not in (None, "", route.kind):
        return Outcome(False, 400, f"{route.path} admits {route.kind} objects, got kind {kind!r}")
    if request.operation == UPDATE and not request.old_object:
        return Outcome(False, 400, f"oldObject: {NO_CONTENT}")
    malformed = object_error(route.kind, obj) or (
        object_error(route.kind, request.old_object, "oldObject") if request.old_object else None
    )
    if malformed:
        return Outcome(False, 400, malformed, refused="bad_object")
    return obj  # type: ignore[return-value]


def run_route(
    route: Route,
    request: AdmissionRequest,
    cluster: ClusterSnapshot,
    *,
    rand_int: Callable[[int], int] = default_rand_int,
    explain: bool = False,
    observe: PluginObserver = _ignore,
    audit: bool = False,
) -> Outcome:
    """Admit `request` through `route`'s plugins in one loop, timing each plugin."""
    if request.resource.resource != route.resource or request.sub_resource != route.sub_resource:
        return Outcome(True, object=dict(request.object) if request.object else None)  # not ours: allowed untouched
    decoded = _decode(route, request)
    if isinstance(decoded, Outcome):
        return decoded
    ctx = AdmissionContext(request, cluster, rand_int, effects=[] if explain else None, audit=audit)
    mutating, operation, clock = route.mutating, request.operation, time.perf_counter
    working = route.copy_for_mutation(decoded) if mutating else decoded
    for plugin in route.plugins:
        started = clock()
        explain_plugin = explain and mutating and not plugin.explains_itself  # type: ignore[union-attr]
        before = json_copy(working) if explain_plugin else None
        try:
            if mutating:
                plugin.mutate(working, ctx)  # type: ignore[union-attr]
            else:
                plugin.validate(working, ctx)  # type: ignore[union-attr]
        except Denied as denial:
            observe(route, plugin.name, operation, clock() - started, False)
            return Outcome(
                False, denial.code, denial.message, matched_profiles=ctx.matched_profiles, effects=ctx.effects
            )
        except Exception as exc:  # a bug must deny this request, not take the server down
            log.error("plugin %s failed on %s: %s", plugin.name, route.path, repr(exc)[:500], exc_info=exc)
            observe(route, plugin.name, operation, clock() - started, False)
            return Outcome(
                False,
                500,
                f"internal error in plugin {plugin.name}: {repr(exc)[:500]}",
                matched_profiles=ctx.matched_profiles,
                effects=ctx.effects,
                refused="internal_error",
            )
        observe(route, plugin.name, operation, clock() - started, True)
        if explain_plugin:
            ctx.record(f"plugin/{plugin.name}", True, before, working)
    patch = diff(decoded, working) if mutating else []
    return Outcome(
        True,
        patch=patch,
        object=working,
        matched_profiles=ctx.matched_profiles,
        effects=ctx.effects,
        warnings=ctx.warnings,
    )


@dataclass
class ServedReview:
    status: int
    body: bytes
    record: dict[str, Any]  # the structured log line
    outcome: Outcome | None = None
    refused: str = ""  # one of REFUSALS, or "" for a request the policies decided


def http_error(message: str, started: float, path: str, status: int = 400, refused: str = "bad_review") -> ServedReview:
    """A plain HTTP error (no AdmissionReview): for requests whose uid we cannot or will not read."""
    record = {
        "path": path,
        "allowed": False,
        "code": status,
        "message": message,
        "durationMs": round((time.perf_counter() - started) * 1000, 3),
    }
    return ServedReview(status, orjson.dumps({"error": message}), record, refused=refused)


def malformed_response(error: MalformedReview, path: str, started: float, refused: str = "bad_review") -> ServedReview:
    """An AdmissionReview denial when the uid is known, else HTTP 400 with the message."""
    if error.uid is None:
        return http_error(error.message, started, path, refused=refused)
    body = orjson.dumps(build_review(error.api_version, error.uid, False, code=400, message=error.message))
    record = {
        "uid": error.uid,
        "path": path,
        "allowed": False,
        "code": 400,
        "message": error.message,
        "durationMs": round((time.perf_counter() - started) * 1000, 3),
    }
    return ServedReview(200, body, record, refused=refused)


def serve_review(
    route: Route,
    body: bytes,
    cluster: ClusterSnapshot,
    *,
    rand_int: Callable[[int], int] = default_rand_int,
    observe: PluginObserver = _ignore,
) -> ServedReview:
    """Answer one AdmissionReview body for `route`. Never raises for bad input."""
    started = time.perf_counter()
    try:
        api_version, request = parse_review(body)
    except MalformedReview as error:
        return malformed_response(error, route.path, started)
    try:
        outcome = run_route(route, request, cluster, rand_int=rand_int, observe=observe)
    except Exception as exc:  # noqa: BLE001 - a bug outside the plugins: still one answer, one bounded line
        log.error("admission %s on %s failed: %s", request.uid[:128], route.path, repr(exc)[:500])
        outcome = Outcome(False, 500, f"internal error: {type(exc).__name__}", refused="internal_error")
    warnings = outcome.warnings
    review = build_review(
        api_version,
        request.uid,
        outcome.allowed,
        code=outcome.code,
        message=outcome.message,
        patch=outcome.patch,
        warnings=warning_lines(warnings) if warnings else (),
        audit_annotations=audit_annotations(warnings) if warnings else None,
    )
    metadata = metadata_of(request.object or request.old_object or _NOTHING)
    record: dict[str, Any] = {
        "uid": request.uid,
        "path": route.path,
        "operation": request.operation,
        "object": f"{metadata.get('namespace') or request.namespace}/"
        f"{metadata.get('name') or metadata.get('generateName') or request.name}",
        "allowed": outcome.allowed,
        "code": outcome.code,
        "matchedProfiles": outcome.matched_profiles,
        "patchOperations": len(outcome.patch),
        "durationMs": round((time.perf_counter() - started) * 1000, 3),
    }
    if outcome.message:
        record["message"] = outcome.message
    if warnings:
        record["warnOnlyProfiles"] = [w.profile for w in warnings]
    return ServedReview(200, orjson.dumps(review), record, outcome, refused=outcome.refused)
