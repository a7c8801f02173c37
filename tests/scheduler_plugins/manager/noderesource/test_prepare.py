"""What lands on the node: removed (not zeroed) resources, rounding, the originExtendedAllocatable
annotation and third-party allocations (Koordinator's `batchresource/plugin_test.go` TestPrepare,
TestPrepareWithThirdParty, `plugins/util` PrepareNodeForResource)."""

from __future__ import annotations

import json

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY
from policies.apis.quantity import QuantityFormat
from tests.scheduler_plugins.manager.noderesource.builders import Calculated, prepare_node

ORIGIN = "node.koordinator.sh/originExtendedAllocatable"
THIRD_PARTY = "node.koordinator.sh/thirdPartyAllocations"
GI = 2**30


def the_node(annotations: dict[str, str] | None = None, **extended: str) -> dict[str, object]:
    resources = {"cpu": "100", "memory": "400Gi", **extended}
    return {
        "metadata": {"name": "test-node", "annotations": annotations or {}},
        "status": {"capacity": dict(resources), "allocatable": {**resources, "memory": "380Gi"}},
    }


def yarn(cpu: str, memory: str) -> dict[str, str]:
    allocation = {"name": "hadoop-yarn", "priority": "koord-batch", "resources": {BATCH_CPU: cpu, BATCH_MEMORY: memory}}
    return {THIRD_PARTY: json.dumps({"allocations": [allocation]})}


def test_update_batch_resources_with_third_party() -> None:
    """TestPrepareWithThirdParty "update batch resources with third party"."""
    prepared = prepare_node(
        the_node(yarn("10000", "10Gi")), Calculated((50000, 120 * GI * 1000), None, QuantityFormat.BINARY_SI)
    )
    assert prepared["allocatable"][BATCH_CPU] == prepared["capacity"][BATCH_CPU] == "40000"
    assert prepared["allocatable"][BATCH_MEMORY] == "110Gi"
    assert json.loads(prepared["annotations"][ORIGIN]) == {"resources": {BATCH_CPU: "50k", BATCH_MEMORY: "120Gi"}}


def test_third_party_max_zero() -> None:
    """TestPrepareWithThirdParty "update batch resources with third party max zero"."""
    prepared = prepare_node(
        the_node(yarn("60000", "120Gi")), Calculated((50000, 120 * GI * 1000), None, QuantityFormat.BINARY_SI)
    )
    assert (prepared["allocatable"][BATCH_CPU], prepared["allocatable"][BATCH_MEMORY]) == ("0", "0")


def test_reset_removes_resources_and_records_zero_origin() -> None:
    """TestPrepareWithThirdParty "reset batch resources with third party allocation" and TestPrepare
    "reset batch resources": removed, not set to 0; the annotation records 0 / 0."""
    node = the_node(
        yarn("10000", "10Gi"), **{BATCH_CPU: "50000", BATCH_MEMORY: "120G", MID_CPU: "1000", MID_MEMORY: "1G"}
    )
    prepared = prepare_node(node, Calculated(None, None))
    for name in (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY):
        assert name not in prepared["allocatable"] and name not in prepared["capacity"]
    assert json.loads(prepared["annotations"][ORIGIN]) == {"resources": {BATCH_CPU: "0", BATCH_MEMORY: "0"}}


def test_non_integer_memory_is_rounded_up() -> None:
    """Extended resources must be integers: 1.5 bytes are written 2."""
    prepared = prepare_node(the_node(), Calculated((1000, 1500), (0, 0), QuantityFormat.DECIMAL_SI))
    assert prepared["allocatable"][BATCH_MEMORY] == "2"


def test_normalization_ratio_multiplies_batch_cpu_only() -> None:
    """PrepareNodeForResource: a ratio above 1 multiplies batch-cpu (not mid-cpu) and is written as the annotation."""
    prepared = prepare_node(the_node(), Calculated((10000, 0), (10000, 0), QuantityFormat.BINARY_SI, "1.50"))
    assert prepared["allocatable"][BATCH_CPU] == "15000"
    assert prepared["allocatable"][MID_CPU] == "10000"
    assert prepared["annotations"]["node.koordinator.sh/cpu-normalization-ratio"] == "1.50"


def test_other_resources_untouched() -> None:
    prepared = prepare_node(the_node(), Calculated((1000, 1000), None))
    assert prepared["allocatable"]["cpu"] == "100" and prepared["allocatable"]["memory"] == "380Gi"


def test_the_origin_annotation_is_the_compact_sorted_json_whatever_it_held() -> None:
    """The manager's own annotation is rewritten without a JSON encoder; other resources it held are kept."""
    for held in ({}, {BATCH_CPU: "1"}, {BATCH_MEMORY: "2Gi", BATCH_CPU: "3"}, {"a/b": "1", BATCH_CPU: "9"}):
        annotations = {ORIGIN: json.dumps({"resources": held})}
        calc = Calculated((12_345, 3 * GI * 1000 + 7000), None, QuantityFormat.BINARY_SI)
        text = prepare_node(the_node(annotations), calc)["annotations"][ORIGIN]
        wanted = {**held, BATCH_CPU: "12345", BATCH_MEMORY: str(3 * GI + 7)}
        assert text == json.dumps({"resources": dict(sorted(wanted.items()))}, separators=(",", ":"))
