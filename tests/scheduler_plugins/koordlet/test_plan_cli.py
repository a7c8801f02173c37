"""`colocate koordlet plan` as a user meets it: the JSON shape, the table, the errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from colocate.main import main
from tests.support.paths import REPO

EXAMPLE = REPO / "manifests" / "koordlet" / "example-node"


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["koordlet", "plan", *argv, "-o", "json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)  # type: ignore[no-any-return]


def test_the_example_node_directory_plans_the_spec_example(capsys: pytest.CaptureFixture[str]) -> None:
    report = plan(capsys, "--node-dir", str(EXAMPLE), "--now", "2024-05-01T10:00:30Z")
    assert report["node"] == "n1"
    assert report["strategies"]["CPUSuppress"] == {  # type: ignore[index]
        "enabled": True,
        "policy": "cpuset",
        "suppressMilliCPU": 4000,
        "cpus": "0-3",
    }
    actions = report["actions"]
    assert {
        "strategy": "CPUSuppress",
        "cgroup": "kubepods/besteffort",
        "file": "cpuset.cpus",
        "value": "0-3",
    } in actions  # type: ignore[operator]
    assert report["evictions"] == []


def test_stdout_is_only_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["koordlet", "plan", "--node-dir", str(EXAMPLE), "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("node n1\n") and "CPUSuppress" in out


def test_gates_cgroup_version_and_driver_shape_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    report = plan(
        capsys,
        "--node-dir",
        str(EXAMPLE),
        "--cgroup-version",
        "v2",
        "--cgroup-driver",
        "systemd",
        "--feature-gates",
        "BECPUSuppress=false,BEMemoryEvict=true",
    )
    assert report["strategies"]["CPUSuppress"] == {"enabled": False}  # type: ignore[index]
    assert report["strategies"]["MemoryEvict"]["enabled"] is True  # type: ignore[index]
    assert all(a["cgroup"].startswith("kubepods.slice") for a in report["actions"])  # type: ignore[union-attr]


def test_cfs_quota_and_an_eviction_in_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    node_dir = tmp_path / "node"
    shutil.copytree(EXAMPLE, node_dir)
    docs = list(yaml.safe_load_all((node_dir / "node.yaml").read_text()))
    for doc in docs:
        if doc["kind"] == "NodeSLO":
            doc["spec"]["resourceUsedThresholdWithBE"].update(
                cpuSuppressPolicy="cfsQuota", memoryEvictThresholdPercent=30
            )
    (node_dir / "node.yaml").write_text(yaml.safe_dump_all(docs))
    report = plan(capsys, "--node-dir", str(node_dir), "--feature-gates", "BEMemoryEvict=true")
    assert report["strategies"]["CPUSuppress"]["cfsQuota"] == 400_000  # type: ignore[index]
    assert {
        "strategy": "CPUSuppress",
        "cgroup": "kubepods/besteffort",
        "file": "cpu.cfs_quota_us",
        "value": "400000",
    } in report["actions"]  # type: ignore[operator]
    assert [(e["strategy"], e["pod"]) for e in report["evictions"]] == [  # type: ignore[union-attr]
        ("MemoryEvict", "default/batch")
    ]


def test_a_node_without_capacity_suppresses_to_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    node_dir = tmp_path / "node"
    shutil.copytree(EXAMPLE, node_dir)
    docs = list(yaml.safe_load_all((node_dir / "node.yaml").read_text()))
    docs[0]["status"].pop("capacity")
    (node_dir / "node.yaml").write_text(yaml.safe_dump_all(docs))
    report = plan(capsys, "--node-dir", str(node_dir))
    assert report["strategies"]["CPUSuppress"]["suppressMilliCPU"] == 0  # type: ignore[index]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--node-dir", "/nonexistent"], "/nonexistent: not a directory"),
        (["--node-dir", str(EXAMPLE), "--feature-gates", "Bogus=true"], "unrecognized feature gate: Bogus"),
        (["--node-dir", str(EXAMPLE), "--now", "yesterday"], "--now: not an RFC 3339 time"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(["koordlet", "plan", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and captured.err.count("\n") == 1


def test_a_directory_without_exactly_one_node_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["koordlet", "plan", "--node-dir", str(tmp_path)]) == 2
    assert "expected exactly one Node, found 0" in capsys.readouterr().err


def test_a_bad_node_slo_names_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    node_dir = tmp_path / "node"
    shutil.copytree(EXAMPLE, node_dir)
    text = (node_dir / "node.yaml").read_text().replace("cpuSuppressPolicy: cpuset", "cpuSuppressPolicy: magic")
    (node_dir / "node.yaml").write_text(text)
    assert main(["koordlet", "plan", "--node-dir", str(node_dir)]) == 2
    assert "spec.resourceUsedThresholdWithBE.cpuSuppressPolicy" in capsys.readouterr().err


def test_plan_shows_the_skipped_system_key_and_the_applied_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A NodeSLO with one systemStrategy key the rules refuse (watermarkScaleFactor 500 > 400) is
    planned, not refused: the good key's write and the bad key's reason, side by side."""
    node_dir = tmp_path / "node"
    shutil.copytree(EXAMPLE, node_dir)
    docs = list(yaml.safe_load_all((node_dir / "node.yaml").read_text()))
    for doc in docs:
        if doc["kind"] == "NodeSLO":
            doc["spec"]["systemStrategy"] = {"watermarkScaleFactor": 500, "minFreeKbytesFactor": 100}
    (node_dir / "node.yaml").write_text(yaml.safe_dump_all(docs))
    proc = tmp_path / "proc"
    (proc / "sys/vm").mkdir(parents=True)
    for name in ("min_free_kbytes", "watermark_scale_factor"):
        (proc / "sys/vm" / name).write_text("10\n")
    report = plan(capsys, "--node-dir", str(node_dir), "--feature-gates", "SystemConfig=true", "--proc-root", str(proc))
    system = report["strategies"]["SystemConfig"]  # type: ignore[index]
    assert system["skipped"] == {"watermarkScaleFactor": "watermarkScaleFactor must be 400 or less"}
    written = [a for a in report["actions"] if a.get("strategy") == "SystemConfig"]  # type: ignore[union-attr]
    assert [a["file"] for a in written] == [str(proc / "sys/vm/min_free_kbytes")]
