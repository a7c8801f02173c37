"""BECPUIdle through `colocate koordlet plan`, with the package installed beside colocate."""

from __future__ import annotations

from pathlib import Path

from colocate.testing.builders import make_metric, make_node, make_node_slo, make_pod
from colocate.testing.commands import koordlet_plan

NODE = make_node("node-1", cpu="8", memory="16Gi", capacity={"cpu": "8", "memory": "16Gi"})


def objects() -> list[dict]:
    return [
        NODE,
        make_node_slo("node-1"),
        make_metric("node-1"),
        make_pod("batch", qos="BE", node="node-1", uid=True),  # the API server gives every pod a UID
        make_pod("web", qos="LS", node="node-1", requests={"cpu": "1"}, uid=True),
    ]


def test_plan_writes_cpu_idle_for_the_be_pods_only(tmp_path: Path) -> None:
    result = koordlet_plan(tmp_path, objects(), qos_extension_plugins="BECPUIdle=true")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert report["strategies"]["BECPUIdle"] == {"enabled": True, "idlePods": 1}
    writes = [a for a in report["actions"] if a["strategy"] == "BECPUIdle"]
    assert [(a["file"], a["value"]) for a in writes] == [("cpu.idle", "1")]
    assert "besteffort" in writes[0]["cgroup"]


def test_it_is_off_until_its_gate_is_on(tmp_path: Path) -> None:
    report = koordlet_plan(tmp_path, objects()).json()
    assert "BECPUIdle" not in report["strategies"]
