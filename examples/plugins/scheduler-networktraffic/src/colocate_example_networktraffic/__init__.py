"""NodeNetworkTraffic: prefer the nodes that received the fewest bytes lately.

The scheduler-plugins NetworkTraffic tutorial, as a package: instead of querying Prometheus, the
plugin reads the bytes a node received from an annotation a node exporter keeps current
(`args.annotation`). Score is that number; NormalizeScore inverts it, so the busiest node scores 0
and the idlest MAX_NODE_SCORE. A node without the annotation counts as idle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from colocate.api.scheduler import (
    MAX_NODE_SCORE,
    SUCCESS,
    ConfigError,
    CycleState,
    Fields,
    Handle,
    NodeInfo,
    NodeScore,
    PluginSpec,
    PodInfo,
    Status,
)

NAME = "NodeNetworkTraffic"
DEFAULT_ANNOTATION = "example.colocate.io/network-receive-bytes"


@dataclass(frozen=True)
class NodeNetworkTrafficArgs:
    annotation: str = DEFAULT_ANNOTATION


def parse_args(raw: Mapping[str, Any] | None, path: str) -> NodeNetworkTrafficArgs:
    """`pluginConfig[].args` of this plugin; a wrong field is a ConfigError naming it."""
    fields = Fields(raw, path)
    args = NodeNetworkTrafficArgs(annotation=fields.str("annotation", DEFAULT_ANNOTATION))
    if not args.annotation:
        raise ConfigError(fields.at("annotation"), "must not be empty")
    return args


class NodeNetworkTraffic:
    name = NAME

    def __init__(self, args: NodeNetworkTrafficArgs) -> None:
        self.args = args

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        annotations = ((node.node or {}).get("metadata") or {}).get("annotations") or {}
        try:
            return max(0, int(annotations.get(self.args.annotation, "0"))), SUCCESS
        except ValueError:
            return 0, SUCCESS  # an exporter's garbage: no data, no preference

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        highest = max((s.score for s in scores), default=0)
        for entry in scores:
            entry.score = MAX_NODE_SCORE if highest == 0 else MAX_NODE_SCORE - entry.score * MAX_NODE_SCORE // highest
        return SUCCESS


def new(args: NodeNetworkTrafficArgs, handle: Handle) -> NodeNetworkTraffic:
    return NodeNetworkTraffic(args)


#: what the `colocate.scheduler.plugins` entry point names
SPEC = PluginSpec(NAME, new, parse_args)
