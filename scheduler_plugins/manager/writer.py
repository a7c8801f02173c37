"""Applying a round's writes: to the API server (`KubeWriter`), or to the in-memory store of a
directory run (`StoreWriter`). Node status goes to the `status` subresource as a merge patch of the
four extended resources only (nothing else in the status is touched); annotations by a merge patch
of the node's metadata; NodeSLOs and NodeMetrics are created owned by their Node (so the garbage
collector, not the manager, deletes them with it) and updated by replacing `spec` only.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from colocate.cluster.store import ClusterStore
from policies.apis.constants import NODE_RESOURCE_TOPOLOGY_KIND
from policies.apis.kinds import kind_named
from scheduler_plugins.manager.reconciler import Action, MetaPatch, NodeEvent, SpecWrite, StatusWrite, TopologyWrite

log = logging.getLogger("colocate.manager")

MERGE: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
COMPONENT: Final = "koord-manager"


@dataclass(frozen=True)
class Written:
    """A write the API server took; `stored` is the object it answered with (None when unknown)."""

    stored: Mapping[str, Any] | None = None


class Writer(Protocol):
    def apply(self, action: Action) -> Written | None:
        """Apply one write; None when it failed (logged)."""


def kind_of(action: Action) -> str:
    if isinstance(action, (StatusWrite, MetaPatch, NodeEvent)):
        return "Node"
    if isinstance(action, TopologyWrite):
        return NODE_RESOURCE_TOPOLOGY_KIND
    return action.kind


def new_object(action: SpecWrite) -> dict[str, Any]:
    kind = kind_named(action.kind)
    metadata: dict[str, Any] = {"name": action.node}
    if action.node_uid:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": action.node, "uid": action.node_uid}
        ]
    return {
        "apiVersion": kind.api_version,
        "kind": action.kind,
        "metadata": metadata,
        "spec": copy.deepcopy(dict(action.spec)),
    }


class KubeWriter:
    def __init__(self, api: Any, events: Callable[[Mapping[str, Any], str, str, str], None] | None = None) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.events = events

    def apply(self, action: Action) -> Written | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return Written(self._apply(action))
        except ApiException as exc:
            if isinstance(action, SpecWrite) and action.create and exc.status == 409:
                try:  # created meanwhile (the koordlet creates NodeMetrics too): update its spec
                    return Written(self._apply(SpecWrite(action.kind, action.node, action.spec, False)))
                except ApiException as again:
                    exc = again
            log.warning(
                "%s of %s failed: HTTP %s %s", type(action).__name__, action_name(action), exc.status, exc.reason
            )
            return None
        except Exception as exc:  # the API server is unreachable: the next round retries
            log.warning("%s of %s failed: %s", type(action).__name__, action_name(action), exc)
            return None

    def _apply(self, action: Action) -> Mapping[str, Any] | None:
        """Write; the object the API server answered with for a spec write."""
        if isinstance(action, StatusWrite):
            resources = dict(action.resources)
            body = {"status": {"capacity": resources, "allocatable": resources}}
            self.core.patch_node_status(action.node, body, _content_type=MERGE)
        elif isinstance(action, MetaPatch):
            self.core.patch_node(
                action.node, {"metadata": {"annotations": dict(action.annotations)}}, _content_type=MERGE
            )
        elif isinstance(action, TopologyWrite):
            kind = kind_named(NODE_RESOURCE_TOPOLOGY_KIND)
            self.custom.patch_cluster_custom_object(
                kind.group, kind.version, kind.plural, action.node, {"zones": action.zones}, _content_type=MERGE
            )
        elif isinstance(action, SpecWrite):
            kind = kind_named(action.kind)
            if action.create:
                return _object(
                    self.custom.create_cluster_custom_object(kind.group, kind.version, kind.plural, new_object(action))
                )
            patch = [{"op": "add", "path": "/spec", "value": dict(action.spec)}]
            return _object(
                self.custom.patch_cluster_custom_object(
                    kind.group, kind.version, kind.plural, action.node, patch, _content_type=JSON_PATCH
                )
            )
        elif isinstance(action, NodeEvent) and self.events is not None:
            self.events(action.node, "Warning", action.reason, action.message)
        return None


def _object(answer: Any) -> Mapping[str, Any] | None:
    return answer if isinstance(answer, Mapping) else None


def action_name(action: Action) -> str:
    if isinstance(action, NodeEvent):
        return str((action.node.get("metadata") or {}).get("name") or "")
    return action.node


class StoreWriter:
    """Writes into the in-memory store of a directory run (nothing reaches a cluster)."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def apply(self, action: Action) -> Written | None:
        if isinstance(action, NodeEvent):
            return Written()
        kind = kind_of(action)
        current = self.store.get(kind, ("", action.node))
        if isinstance(action, SpecWrite) and (action.create or current is None):
            created = new_object(action)
            self.store.put(kind, created)
            return Written(created)
        if current is None:
            return None
        # a new object sharing what the write leaves alone (stored objects are replaced, never edited)
        obj = dict(current)
        if isinstance(action, StatusWrite):
            status = obj["status"] = dict(obj.get("status") or {})
            for field in ("capacity", "allocatable"):
                values = status[field] = dict(status.get(field) or {})
                for name, value in action.resources.items():
                    if value is None:
                        values.pop(name, None)
                    else:
                        values[name] = value
        elif isinstance(action, MetaPatch):
            meta = obj["metadata"] = dict(obj.get("metadata") or {})
            annotations = meta["annotations"] = dict(meta.get("annotations") or {})
            for name, text in action.annotations.items():
                if text is None:
                    annotations.pop(name, None)
                else:
                    annotations[name] = text
        elif isinstance(action, TopologyWrite):
            obj["zones"] = action.zones
        elif isinstance(action, SpecWrite):
            obj["spec"] = copy.deepcopy(dict(action.spec))
        self.store.put(kind, obj)
        return Written(obj)
