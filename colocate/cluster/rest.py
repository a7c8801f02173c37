"""Reading and writing objects of any kind in `policies.apis.kinds` through the API server, as dicts.

The typed clients of `kubernetes` know no custom resources and would round-trip objects through
models; this is the handful of REST verbs a controller needs (get, list, create, replace, replace
status, merge patch, delete with options), each one bounded by a timeout and answering an
`ApiError` with the HTTP code on failure (0: no answer). Calls block: run them off the event loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from policies.apis.kinds import kind_named

TIMEOUT = (5.0, 30.0)  # connect, read


class ApiError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def object_path(kind: str, namespace: str, name: str) -> str:
    table = kind_named(kind)
    return f"{table.collection_path(namespace if table.namespaced else '')}/{quote(name, safe='')}"


def request(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    timeout: tuple[float, float] = TIMEOUT,
) -> tuple[int, Any]:
    """One API request: its HTTP status and decoded JSON body (None when there is none or it is not
    JSON). Only no answer at all is an `ApiError` (code 0, or the client's own status). The one
    place colocate speaks REST through the `kubernetes` client's ApiClient, so every caller gets the
    same headers, authentication, timeout and throttle (`colocate.cluster.throttle`)."""
    serialized = api.param_serialize(
        method,
        path,
        body=body,
        auth_settings=["BearerToken"],
        header_params={"Accept": "application/json", "Content-Type": content_type},
    )
    try:
        response = api.call_api(*serialized, _request_timeout=timeout)
        raw = response.read()
    except ApiException as exc:
        raise ApiError(exc.status or 0, f"{method} {path}: {exc.reason}") from exc
    except (HTTPError, OSError) as exc:
        raise ApiError(0, f"{method} {path}: {exc}") from exc
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = None
    return int(response.status), data


def message_of(data: Any) -> str:
    """The `message` of a Status body, or ""."""
    return str(data.get("message") or "") if isinstance(data, dict) else ""


def call(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    timeout: tuple[float, float] = TIMEOUT,
) -> dict[str, Any]:
    """`request`, with any answer but 2xx an `ApiError` carrying the server's message."""
    status, data = request(api, method, path, body, content_type, timeout)
    if not 200 <= status < 300:
        raise ApiError(status, message_of(data) or f"{method} {path}: HTTP {status}")
    return data if isinstance(data, dict) else {}


class ObjectClient:
    def __init__(self, api: ApiClient, timeout: tuple[float, float] = TIMEOUT) -> None:
        self.api, self.timeout = api, timeout

    def _call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> dict[str, Any]:
        return call(self.api, method, path, body, content_type, self.timeout)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return self._call("GET", object_path(kind, namespace, name))
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def list(self, kind: str, namespace: str = "") -> list[dict[str, Any]]:
        table = kind_named(kind)
        items = self._call("GET", table.collection_path(namespace)).get("items") or []
        return [{"apiVersion": table.api_version, "kind": kind, **item} for item in items]

    def create(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        table = kind_named(kind)
        namespace = str((obj.get("metadata") or {}).get("namespace") or "") if table.namespaced else ""
        return self._call("POST", table.collection_path(namespace), dict(obj))

    def replace(self, kind: str, obj: Mapping[str, Any], *, status: bool = False) -> dict[str, Any]:
        """PUT the object (or, with `status`, its status subresource)."""
        meta = obj.get("metadata") or {}
        path = object_path(kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        return self._call("PUT", path + ("/status" if status else ""), dict(obj))

    def patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386) of the object: only the fields it names change."""
        return self._call("PATCH", object_path(kind, namespace, name), dict(patch), "application/merge-patch+json")

    def delete(self, kind: str, namespace: str, name: str, options: Mapping[str, Any] | None = None) -> None:
        """Delete (with `DeleteOptions`, e.g. `gracePeriodSeconds`); an object already gone is not
        an error."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", **options} if options else None
        try:
            self._call("DELETE", object_path(kind, namespace, name), body)
        except ApiError as exc:
            if exc.code != 404:
                raise
