"""The upstream extender wire types (`k8s.io/kube-scheduler/extender/v1`).

The Go types carry no JSON tags, so keys on the wire are Go field names; Go's decoder matches
them case-insensitively, and so does `field()`. Payloads stay plain dicts, typed for readers.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, TypedDict

import orjson

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


#: `,"Score":N}` for every score an extender may give
_SCORE_TAILS = [b'"Score":%d}' % score for score in range(MAX_EXTENDER_PRIORITY + 1)]


def host_fragment(name: str) -> bytes:
    """The start of one HostPriority's JSON, up to its score: `{"Host":"<name>",`."""
    return orjson.dumps({"Host": name})[:-1] + b","


@dataclass(frozen=True)
class HostPriorities:
    """A prioritize answer (a HostPriorityList) kept as hosts and scores: for thousands of nodes,
    `encode` writes the JSON from per-host fragments (remembered by the caller across requests)
    instead of building and encoding a dict per host."""

    hosts: Sequence[str]
    scores: Sequence[int]
    fragments: Sequence[bytes] | None = None

    def as_list(self) -> list[HostPriority]:
        return [{"Host": host, "Score": score} for host, score in zip(self.hosts, self.scores, strict=True)]

    def encode(self) -> bytes:
        if self.fragments is None or not all(0 <= s <= MAX_EXTENDER_PRIORITY for s in self.scores):
            return orjson.dumps(self.as_list())
        tails = map(_SCORE_TAILS.__getitem__, self.scores)
        return b"[" + b",".join(map(bytes.__add__, self.fragments, tails)) + b"]"


class ExtenderBindingArgs(TypedDict, total=False):
    PodName: str
    PodNamespace: str
    PodUID: str
    Node: str


class ExtenderBindingResult(TypedDict):
    Error: str


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
    if not isinstance(pod, dict) or not isinstance((pod.get("metadata") or {}).get("name"), str):
        raise ArgsError("ExtenderArgs.Pod must be a Pod with metadata.name")
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
        for item in items:
            if not isinstance((item.get("metadata") or {}).get("name"), str):
                raise ArgsError("ExtenderArgs.Nodes.items[] must have metadata.name")
        return pod, items, None
    raise ArgsError("ExtenderArgs needs NodeNames (nodeCacheCapable) or Nodes")


def parse_binding_args(body: Any) -> tuple[str, str, str, str]:
    if not isinstance(body, dict):
        raise ArgsError("ExtenderBindingArgs must be a JSON object")
    values = [field(body, k) for k in ("PodNamespace", "PodName", "PodUID", "Node")]
    if not all(isinstance(v, str) for v in values) or not values[1] or not values[3]:
        raise ArgsError("ExtenderBindingArgs needs string PodName, PodNamespace, PodUID and Node")
    return values[0] or "default", values[1], values[2], values[3]
