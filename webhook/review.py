"""AdmissionReview (`admission.k8s.io/v1` and `v1beta1`) in and out.

Payloads stay plain JSON dicts typed with TypedDicts, as in kopf. Parsing turns the wire request into
a `policies.admission.plugin.AdmissionRequest` or raises `MalformedReview`, which carries the uid when one
could be read, so the caller can answer with a proper AdmissionReview rather than a bare HTTP error.
"""

from __future__ import annotations

import re
from binascii import b2a_base64
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, NotRequired, TypedDict

import orjson

from policies.admission.plugin import OPERATIONS, AdmissionRequest, GroupVersionResource
from policies.apis.shape import depth_error

SUPPORTED_API_VERSIONS: Final = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
DEFAULT_API_VERSION: Final = SUPPORTED_API_VERSIONS[0]
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})
_UID_PREFIX_RE: Final = re.compile(rb'"request"\s*:\s*\{\s*"uid"\s*:\s*"([^"\\]{1,128})"')


class StatusDict(TypedDict):
    code: int
    message: str


class ResponseDict(TypedDict):
    uid: str
    allowed: bool
    status: NotRequired[StatusDict]
    patchType: NotRequired[str]
    patch: NotRequired[str]
    warnings: NotRequired[list[str]]  # kubectl prints each as "Warning: ..."
    auditAnnotations: NotRequired[dict[str, str]]  # the API server adds them to its audit event


class ReviewDict(TypedDict):
    apiVersion: str
    kind: str
    response: ResponseDict


class MalformedReview(ValueError):
    """The request body is not a usable AdmissionReview."""

    def __init__(self, message: str, uid: str | None = None, api_version: str = DEFAULT_API_VERSION) -> None:
        super().__init__(message)
        self.message = message
        self.uid = uid
        self.api_version = api_version


def uid_from_prefix(body_prefix: bytes) -> str | None:
    """Best-effort uid from the start of a body too large to parse (the API server writes it first)."""
    match = _UID_PREFIX_RE.search(body_prefix)
    return match.group(1).decode("utf-8", "replace") if match else None


def _string(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    return value if type(value) is str else ""


def _object(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key)
    return value if type(value) is dict else _EMPTY


def _checked_object(request: dict[str, Any], key: str, uid: str, reply_version: str) -> dict[str, Any] | None:
    """`request[key]`: absent, null or a JSON object within `MAX_DEPTH`, else MalformedReview."""
    value = request.get(key)
    if value is None:
        return None
    if type(value) is not dict:
        raise MalformedReview(f"request.{key} must be a JSON object", uid, reply_version)
    too_deep = depth_error(value, f"request.{key}") if value else None
    if too_deep:  # before anything walks it recursively
        raise MalformedReview(too_deep, uid, reply_version)
    return value


def parse_review(body: bytes) -> tuple[str, AdmissionRequest]:
    """(apiVersion, request) of an AdmissionReview body.

    Every admission pays this: `orjson.loads` only yields plain `dict`, `list` and `str`, so exact
    type tests stand in for `isinstance` and each field is read once.
    """
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedReview(f"request body is not valid JSON: {exc}", uid_from_prefix(body[:65536])) from exc
    if type(review) is not dict:
        raise MalformedReview("request body must be a JSON object (an AdmissionReview)")
    request: Any = review.get("request")
    is_object = type(request) is dict
    uid = request.get("uid") if is_object else None
    if type(uid) is not str:
        uid = None
    api_version = review.get("apiVersion")
    reply_version = api_version if api_version in SUPPORTED_API_VERSIONS else DEFAULT_API_VERSION
    if review.get("kind") != "AdmissionReview":
        raise MalformedReview(f"expected kind AdmissionReview, got {review.get('kind')!r}", uid, reply_version)
    if api_version not in SUPPORTED_API_VERSIONS:
        raise MalformedReview(
            f"unsupported AdmissionReview apiVersion {api_version!r}; supported: {', '.join(SUPPORTED_API_VERSIONS)}",
            uid,
            reply_version,
        )
    if not is_object:
        raise MalformedReview("AdmissionReview has no request", None, reply_version)
    if not uid:
        raise MalformedReview("AdmissionReview request has no uid", None, reply_version)
    operation = _string(request, "operation")
    if not operation:
        raise MalformedReview("AdmissionReview request has no operation", uid, reply_version)
    if operation not in OPERATIONS:  # also what keeps metric labels a closed set
        raise MalformedReview(
            f"request.operation must be one of {', '.join(sorted(OPERATIONS))}, got {operation[:64]!r}",
            uid,
            reply_version,
        )
    obj = _checked_object(request, "object", uid, reply_version)
    old_object = _checked_object(request, "oldObject", uid, reply_version)
    resource = _object(request, "resource")
    return reply_version, AdmissionRequest(
        uid,
        operation,
        GroupVersionResource(_string(resource, "group"), _string(resource, "version"), _string(resource, "resource")),
        _string(request, "subResource"),
        _string(_object(request, "kind"), "kind"),
        _string(request, "namespace"),
        _string(request, "name"),
        obj,
        old_object,
        bool(request.get("dryRun")),
    )


def encode_patch(operations: list[dict[str, Any]]) -> str:
    return b2a_base64(orjson.dumps(operations), newline=False).decode()  # what base64.b64encode calls


def build_review(
    api_version: str,
    uid: str,
    allowed: bool,
    *,
    code: int = 200,
    message: str = "",
    patch: list[dict[str, Any]] | None = None,
    warnings: Sequence[str] = (),
    audit_annotations: Mapping[str, str] | None = None,
) -> ReviewDict:
    response: ResponseDict = {"uid": uid, "allowed": allowed}
    if not allowed or message:
        response["status"] = {"code": code, "message": message}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = encode_patch(patch)
    if warnings:
        response["warnings"] = list(warnings)
    if audit_annotations:
        response["auditAnnotations"] = dict(audit_annotations)
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}
