"""The NodeResourceTopology's zone batch resources (`batchresource/plugin_test.go` TestPreUpdate,
`plugins/util` UpdateNRTZoneListIfNeeded)."""

from __future__ import annotations

from typing import Any

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY
from scheduler_plugins.manager.noderesource.topology import updated_zones


def zone(name: str, *extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "type": "Node",
        "resources": [{"name": "cpu", "capacity": "50", "allocatable": "50", "available": "50"}, *extra],
    }


def batch(name: str, value: str) -> dict[str, str]:
    return {"name": name, "capacity": value, "allocatable": value, "available": value}


def test_add_numa_level_batch_resources_sorted_by_name() -> None:
    """TestPreUpdate "add NUMA-level batch resources"."""
    zones, changed = updated_zones([zone("node-0")], {"node-0": {BATCH_CPU: "10000", BATCH_MEMORY: "15300M"}}, 0.1)
    assert changed
    assert [r["name"] for r in zones[0]["resources"]] == ["cpu", BATCH_CPU, BATCH_MEMORY]
    assert zones[0]["resources"][1] == batch(BATCH_CPU, "10000")


def test_update_only_beyond_the_threshold() -> None:
    """TestPreUpdate "update NUMA-level batch resources": a field is replaced when it moved by more
    than the diff threshold."""
    current = [zone("node-0", batch(BATCH_CPU, "10000"), batch(BATCH_MEMORY, "15G"))]
    zones, changed = updated_zones(current, {"node-0": {BATCH_CPU: "10500", BATCH_MEMORY: "15G"}}, 0.1)
    assert not changed and zones[0]["resources"][1]["allocatable"] == "10000"
    zones, changed = updated_zones(current, {"node-0": {BATCH_CPU: "12000", BATCH_MEMORY: "15G"}}, 0.1)
    assert changed and zones[0]["resources"][1] == batch(BATCH_CPU, "12000")
    assert current[0]["resources"][1]["allocatable"] == "10000"  # the input is not modified


def test_a_zone_without_result_is_set_to_zero_not_removed() -> None:
    current = [zone("node-0", batch(BATCH_CPU, "10000")), zone("node-1", batch(BATCH_CPU, "10000"))]
    zones, changed = updated_zones(current, {"node-0": {BATCH_CPU: "10000", BATCH_MEMORY: "1G"}}, 0.1)
    assert changed and zones[1]["resources"][1] == batch(BATCH_CPU, "0")
