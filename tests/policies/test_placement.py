"""Whether a pod may go to a node by what the node says about itself (nodeSelector, affinity, taints)."""

from __future__ import annotations

from typing import Any

import pytest

from policies.apis.placement import matches_node_selector_and_affinity, untolerated_taint
from tests.support.builders import make_node, make_pod

NODE = make_node("n1", labels={"disk": "ssd", "cores": "16"})


def affinity(*expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields:
        term["matchFields"] = fields
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


@pytest.mark.parametrize(
    ("spec", "fits"),
    [
        ({}, True),
        ({"nodeSelector": {"disk": "ssd"}}, True),
        ({"nodeSelector": {"disk": "hdd"}}, False),
        ({"affinity": affinity({"key": "disk", "operator": "In", "values": ["ssd", "nvme"]})}, True),
        ({"affinity": affinity({"key": "disk", "operator": "NotIn", "values": ["ssd"]})}, False),
        ({"affinity": affinity({"key": "gpu", "operator": "DoesNotExist"})}, True),
        ({"affinity": affinity({"key": "cores", "operator": "Gt", "values": ["8"]})}, True),
        ({"affinity": affinity({"key": "cores", "operator": "Lt", "values": ["8"]})}, False),
        ({"affinity": affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["n2"]}])}, False),
    ],
)
def test_selector_and_required_affinity(spec: dict[str, Any], fits: bool) -> None:
    assert matches_node_selector_and_affinity(make_pod(**spec), NODE) is fits


def test_taints_need_a_matching_toleration() -> None:
    node = make_node("n1")
    node["spec"] = {
        "taints": [
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
            {"key": "soft", "effect": "PreferNoSchedule"},
        ]
    }
    assert untolerated_taint(make_pod(), node) == {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    equal = [{"key": "dedicated", "operator": "Equal", "value": "db"}]
    assert untolerated_taint(make_pod(tolerations=equal), node) is None
    wrong_value = [{"key": "dedicated", "operator": "Equal", "value": "web"}]
    assert untolerated_taint(make_pod(tolerations=wrong_value), node) is not None
    assert untolerated_taint(make_pod(tolerations=[{"operator": "Exists"}]), node) is None
