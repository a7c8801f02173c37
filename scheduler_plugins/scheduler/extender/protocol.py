"""The upstream extender wire types (`k8s.io/kube-scheduler/extender/v1`).

The Go types carry no JSON tags, so keys on the wire are Go field names; Go's decoder matches
them case-insensitively, and so does `field()`. Payloads stay plain dicts, typed for readers.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat
from typing import Any, TypedDict

from policies.apis.objects import metadata_of
from policies.apis.shape import depth_error, object_error

MAX_EXTENDER_PRIORITY = 10


class NodeList(TypedDict, total=False):
    items: list[dict[str, Any]]


class ExtenderArgs(TypedDict, total=False):
    Pod: dict[str, Any]
    Nodes: NodeList | None
    NodeNames: list[str] | None


class ExtenderFilterResult(TypedDict):
    Nodes: NodeList | None
    NodeNames: list[str] | None
    FailedNodes: dict[str, str]
    FailedAndUnresolvableNodes: dict[str, str]
    Error: str


class HostPriority(TypedDict):
    Host: str
    Score: int


class ExtenderBindingArgs(TypedDict, total=False):
    PodName: str
    PodNamespace: str
    PodUID: str
    Node: str


class ExtenderBindingResult(TypedDict):
    Error: str


class MetaPod(TypedDict):
    UID: str


class MetaVictims(TypedDict):
    Pods: list[MetaPod]
    NumPDBViolations: int


class ExtenderPreemptionResult(TypedDict):
    NodeNameToMetaVictims: dict[str, MetaVictims]


class ArgsError(ValueError):
    """The request body is not a well-formed ExtenderArgs / ExtenderBindingArgs."""


def field(obj: Mapping[str, Any], name: str) -> Any:
    """`obj[name]` matched case-insensitively, as Go's encoding/json does; None when absent."""
    if name in obj:
        return obj[name]
    lowered = name.lower()
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() == lowered:
            return value
    return None


def parse_extender_args(body: Any) -> tuple[dict[str, Any], list[dict[str, Any]] | None, list[str] | None]:
    """(pod, node objects or None, node names or None); exactly one of the last two is set."""
    if not isinstance(body, dict):
        raise ArgsError("ExtenderArgs must be a JSON object")
    pod = field(body, "Pod")
    if not isinstance(pod, dict) or not isinstance(metadata_of(pod).get("name"), str):
        raise ArgsError("ExtenderArgs.Pod must be a Pod with metadata.name")
    shape = depth_error(pod, "ExtenderArgs.Pod") or object_error("Pod", pod, "ExtenderArgs.Pod")
    if shape:  # what the API server would never send: the plugins read it as core/v1 shapes it
        raise ArgsError(shape)
    names = field(body, "NodeNames")
    nodes = field(body, "Nodes")
    if names is not None:
        if not isinstance(names, list) or not all(map(isinstance, names, repeat(str))):
            raise ArgsError("ExtenderArgs.NodeNames must be a list of strings")
        return pod, None, names
    if nodes is not None:
        items = field(nodes, "items") if isinstance(nodes, dict) else None
        if not isinstance(items, list) or not all(isinstance(n, dict) for n in items):
            raise ArgsError("ExtenderArgs.Nodes must be a NodeList with items")
        for index, item in enumerate(items):
            if not isinstance(metadata_of(item).get("name"), str):
                raise ArgsError("ExtenderArgs.Nodes.items[] must have metadata.name")
            shape = depth_error(item, f"ExtenderArgs.Nodes.items[{index}]") or object_error(
                "Node", item, f"ExtenderArgs.Nodes.items[{index}]"
            )
            if shape:
                raise ArgsError(shape)
        return pod, items, None
    raise ArgsError("ExtenderArgs needs NodeNames (nodeCacheCapable) or Nodes")


def parse_binding_args(body: Any) -> tuple[str, str, str, str]:
    if not isinstance(body, dict):
        raise ArgsError("ExtenderBindingArgs must be a JSON object")
    values = [field(body, k) for k in ("PodNamespace", "PodName", "PodUID", "Node")]
    if not all(isinstance(v, str) for v in values) or not values[1] or not values[3]:
        raise ArgsError("ExtenderBindingArgs needs string PodName, PodNamespace, PodUID and Node")
    return values[0] or "default", values[1], values[2], values[3]


def parse_preemption_args(body: Any) -> tuple[dict[str, Any], dict[str, tuple[list[str], list[dict[str, Any]]]]]:
    """ExtenderPreemptionArgs: (pod, node -> (victim UIDs, victim pods)). `NodeNameToMetaVictims`
    (nodeCacheCapable: UIDs only) wins over `NodeNameToVictims` (whole pods)."""
    if not isinstance(body, dict):
        raise ArgsError("ExtenderPreemptionArgs must be a JSON object")
    pod = field(body, "Pod")
    if not isinstance(pod, dict) or not isinstance(metadata_of(pod).get("name"), str):
        raise ArgsError("ExtenderPreemptionArgs.Pod must be a Pod with metadata.name")
    meta = field(body, "NodeNameToMetaVictims")
    full = field(body, "NodeNameToVictims")
    table = meta if meta is not None else full
    if not isinstance(table, dict):
        raise ArgsError("ExtenderPreemptionArgs needs NodeNameToMetaVictims or NodeNameToVictims")
    out: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
    for node, victims in table.items():
        pods = field(victims, "Pods") if isinstance(victims, dict) else None
        if not isinstance(pods, list) or not all(isinstance(p, dict) for p in pods):
            raise ArgsError(f"victims of node {node!r} must be an object with a Pods list")
        if meta is not None:
            uids = [field(p, "UID") for p in pods]
            if not all(isinstance(u, str) and u for u in uids):
                raise ArgsError(f"victims of node {node!r}: every MetaPod needs a UID")
            out[str(node)] = (uids, [])
        else:
            out[str(node)] = ([str(metadata_of(p).get("uid") or "") for p in pods], pods)
    return pod, out
