"""The NodeSLO spec of one node (`pkg/slo-controller/nodeslo/resource_strategy.go`,
`nodeslo_controller.go` getNodeSLOSpec).

Threshold, QoS, CPU burst and system strategies: the first node strategy whose selector matches
the node's labels, else the cluster strategy. The node's `network-bandwidth` annotation replaces
`totalNetworkBandwidth`; an unparsable one drops `systemStrategy` altogether (Koordinator's
behaviour). Host applications: the first matching node entry's list replaces the cluster list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.apis.constants import (
    ANNOTATION_NETWORK_BANDWIDTH,
    CPU_BURST_CONFIG_KEY,
    RESOURCE_QOS_CONFIG_KEY,
    RESOURCE_THRESHOLD_CONFIG_KEY,
    SYSTEM_CONFIG_KEY,
)
from policies.apis.objects import json_copy
from policies.apis.quantity import Quantity, QuantityError
from policies.apis.slo_config.nodeslo_config import SLO_DOCUMENTS, SLOConfig


def _bandwidth(value: Any) -> Any:
    try:
        return Quantity.parse(value).canonical()
    except QuantityError:
        return value


def render_nodeslo_spec(
    config: SLOConfig,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    extensions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The spec the nodeslo controller writes for this node (a fresh dict)."""
    spec: dict[str, Any] = {}
    for key in (RESOURCE_THRESHOLD_CONFIG_KEY, RESOURCE_QOS_CONFIG_KEY, CPU_BURST_CONFIG_KEY):
        spec[SLO_DOCUMENTS[key][0]] = json_copy(dict(config.strategies[key].for_node(labels)))
    system = json_copy(dict(config.strategies[SYSTEM_CONFIG_KEY].for_node(labels)))
    include_system = True
    if "totalNetworkBandwidth" in system:
        system["totalNetworkBandwidth"] = _bandwidth(system["totalNetworkBandwidth"])
    text = annotations.get(ANNOTATION_NETWORK_BANDWIDTH)
    if text is not None:
        try:
            system["totalNetworkBandwidth"] = Quantity.parse(text).canonical()
        except QuantityError:
            include_system = False
    if include_system:
        spec["systemStrategy"] = system
    spec["extensions"] = json_copy(dict(extensions or {}))
    applications = config.host_applications.for_node(labels)
    if applications:
        spec["hostApplications"] = json_copy(applications)
    return spec
