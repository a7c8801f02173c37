"""The koordlet gates that act on host interfaces — BlkIOReconcile, SystemConfig, RdtResctrl — on
fake trees in the kernel's file formats, on this machine's real blkio controller where it has
one, and what `plan` and `run` say when a node lacks the interface.

Koordinator's references: `pkg/koordlet/qosmanager/plugins/{blkio,sysreconcile,resctrl}` and
`pkg/koordlet/util/system/resctrl.go` (`CalculateCatL3MaskValue`, `TestCalculateCatL3MaskValue`)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.store import ClusterStore
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.koordlet.agent import Agent, AgentSettings
from scheduler_plugins.koordlet.cgroups.executor import ResourceExecutor
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.host import HostFiles, HostRoots, HostView
from scheduler_plugins.koordlet.plan import PlanSettings, plan
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.blkio import BlkIOReconcile
from scheduler_plugins.koordlet.strategies.resctrl import ResctrlReconcile, l3_mask, mba_value
from scheduler_plugins.koordlet.strategies.systemconfig import SystemConfig
from tests.scheduler_plugins.koordlet.rounds import round_input
from tests.support.builders import make_node

NODE = make_node("n1", capacity={"cpu": "20", "memory": "64Gi"}, allocatable={"cpu": "20", "memory": "64Gi"})
OPTIONS = StrategyOptions(koordlet_gates("BlkIOReconcile=true,SystemConfig=true,RdtResctrl=true"))


def node_slo(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "n1"}, "spec": spec}


def files(root: Path, contents: dict[str, str]) -> Path:
    for path, text in contents.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


# --- SystemConfig ---------------------------------------------------------------------------------
SYSTEM = {"minFreeKbytesFactor": 100, "watermarkScaleFactor": 150, "memcgReapBackGround": 1}


def test_system_config_writes_the_vm_settings_under_the_proc_and_sys_roots(tmp_path: Path) -> None:
    roots = HostRoots(
        files(tmp_path / "proc", {"sys/vm/min_free_kbytes": "67584\n", "sys/vm/watermark_scale_factor": "10\n"}),
        files(tmp_path / "sys", {"kernel/mm/memcg_reaper/reap_background": "0\n"}),
    )
    result = SystemConfig(OPTIONS).round(round_input(NODE, node_slo(systemStrategy=SYSTEM), [], host=HostView(roots)))
    assert not result.unavailable
    stats = HostFiles(roots, lambda: 0.0).apply(result.host_writes)
    assert stats.written == 3 and not stats.errors
    # 64 GiB = 67108864 KiB; × 100 / 10000
    assert (roots.proc / "sys/vm/min_free_kbytes").read_text() == "671088"
    assert (roots.proc / "sys/vm/watermark_scale_factor").read_text() == "150"
    assert (roots.sys / "kernel/mm/memcg_reaper/reap_background").read_text() == "1"


def test_system_config_keeps_out_of_range_values_and_says_when_the_reaper_is_missing(tmp_path: Path) -> None:
    roots = HostRoots(
        files(tmp_path / "proc", {"sys/vm/min_free_kbytes": "67584\n", "sys/vm/watermark_scale_factor": "10\n"}),
        tmp_path / "sys",
    )
    spec = {"minFreeKbytesFactor": 1, "watermarkScaleFactor": 500, "memcgReapBackGround": 1}
    inp = round_input(NODE, node_slo(systemStrategy=spec), [], host=HostView(roots), checked_slo=False)
    result = SystemConfig(OPTIONS).round(inp)  # the agent refuses such a NodeSLO; the strategy checks too
    # 64 GiB × 1 / 10000 = 6710 KiB < 10 MiB; 500 > 400: neither is written (Koordinator's validators)
    assert result.host_writes == []
    assert "memcgReaper" in result.unavailable and "memcg reaper" in result.status["unavailable"]


# --- RdtResctrl -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cbm,start,end,want",
    [(0x3FF, 10, 80, "fe"), (0x7FF, 10, 50, "3c"), (0x7FF, 0, 30, "f"), (0x7FF, 0, 100, "7ff")],
)
def test_l3_mask_as_koordinator(cbm: int, start: int, end: int, want: str) -> None:
    """TestCalculateCatL3MaskValue's examples (the comments of CalculateCatL3MaskValue)."""
    assert l3_mask(cbm, start, end) == want


def test_mba_rounds_up_to_tens_on_intel_and_is_a_bandwidth_on_amd() -> None:
    assert [mba_value(p, "GenuineIntel") for p in (0, 35, 50, 100)] == [None, "40", "50", "100"]
    assert [mba_value(p, "AuthenticAMD") for p in (50, 100)] == ["80", "2048"]


RESCTRL_QOS = {
    "lsrClass": {"resctrlQOS": {"catRangeStartPercent": 0, "catRangeEndPercent": 100, "mbaPercent": 100}},
    "lsClass": {"resctrlQOS": {"catRangeStartPercent": 0, "catRangeEndPercent": 100, "mbaPercent": 100}},
    "beClass": {"resctrlQOS": {"catRangeStartPercent": 0, "catRangeEndPercent": 30, "mbaPercent": 35}},
}


#: /proc/cpuinfo of a CPU with both flags Koordinator's IsSupportResctrl wants
CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme cat_l3 cdp_l3 mba\n"


def resctrl_tree(root: Path) -> Path:
    """A resctrl mount with two L3 caches of 11 ways and MBA, the groups already made; and, beside
    it, `proc/cpuinfo` with the cat_l3 and mba flags."""
    files(root.parent / "proc", {"cpuinfo": CPUINFO})
    tree = {
        "schemata": "L3:0=7ff;1=7ff\nMB:0=100;1=100\n",
        "info/L3/cbm_mask": "7ff\n",
        "info/MB/min_bandwidth": "10\n",
    }
    for group in ("LSR", "LS", "BE"):
        tree[f"{group}/schemata"] = "L3:0=7ff;1=7ff\nMB:0=100;1=100\n"
    return files(root, tree)


def test_resctrl_writes_each_class_its_cache_ways_and_memory_bandwidth(tmp_path: Path) -> None:
    roots = HostRoots(tmp_path / "proc", tmp_path / "sys", resctrl_tree(tmp_path / "resctrl"))
    slo = node_slo(resourceQOSStrategy=RESCTRL_QOS)
    result = ResctrlReconcile(OPTIONS).round(round_input(NODE, slo, [], host=HostView(roots)))
    writes = [(w.path, w.value) for w in result.host_writes]
    assert ("BE/schemata", "L3:0=f;1=f;\n") in writes
    assert ("BE/schemata", "MB:0=40;1=40;\n") in writes
    assert ("LSR/schemata", "L3:0=7ff;1=7ff;\n") in writes
    assert HostFiles(roots, lambda: 0.0).apply(result.host_writes).written == 6
    assert result.status["groups"]["BE"] == "L3=f MB=40"


def test_without_a_resctrl_mount_plan_says_so(tmp_path: Path) -> None:
    node_dir = tmp_path / "node"
    node_dir.mkdir()
    (node_dir / "node.yaml").write_text(json.dumps(NODE))
    (node_dir / "nodeslo.yaml").write_text(json.dumps(node_slo(resourceQOSStrategy=RESCTRL_QOS)))
    proc = files(tmp_path / "proc", {"cpuinfo": CPUINFO})
    roots = HostRoots(proc, tmp_path / "sys", tmp_path / "no-resctrl", tmp_path / "cgroup")
    report = plan(node_dir, StrategyOptions(koordlet_gates("")), PlanSettings(host=roots), 0.0)
    assert report["unavailable"] == [
        {"strategy": "ResctrlReconcile", "interface": "resctrl", "reason": "no resctrl filesystem mounted"}
    ]
    assert report["strategies"]["ResctrlReconcile"]["unavailable"] == "resctrl: no resctrl filesystem mounted"


# --- BlkIOReconcile -------------------------------------------------------------------------------
BLKIO_QOS = {
    "beClass": {
        "blkioQOS": {
            "enable": True,
            "blocks": [
                {"name": "/dev/sdb", "type": "device", "ioCfg": {"readIOPS": 1000, "writeBPS": 10485760}},
            ],
        }
    }
}
V1_BE = "blkio/kubepods/besteffort"


def blkio_v1_tree(root: Path, configured: str = "") -> Path:
    return files(
        root,
        {
            f"{V1_BE}/blkio.throttle.read_iops_device": configured,
            f"{V1_BE}/blkio.throttle.read_bps_device": "",
            f"{V1_BE}/blkio.throttle.write_iops_device": "",
            f"{V1_BE}/blkio.throttle.write_bps_device": "",
            "cpu/kubepods/besteffort/cpu.shares": "2\n",
        },
    )


def test_blkio_v1_throttles_the_be_class_per_device(tmp_path: Path) -> None:
    cgroup = blkio_v1_tree(tmp_path / "cgroup", configured="8:0 500\n")  # sda configured before, no longer listed
    roots = HostRoots(tmp_path / "proc", files(tmp_path / "sys", {"class/block/sdb/dev": "8:16\n"}), cgroup=cgroup)
    layout = CgroupLayout(cgroup, CgroupVersion.V1, CgroupDriver.CGROUPFS)
    executor = ResourceExecutor(layout, lambda: 0.0)
    inp = round_input(
        NODE, node_slo(resourceQOSStrategy=BLKIO_QOS), [], layout=layout, host=HostView(roots), reader=executor.read
    )
    result = BlkIOReconcile(OPTIONS).round(inp)
    assert result.status["devices"] == ["8:16"]
    written = {(w.resource.file(CgroupVersion.V1), w.value) for w in result.writes}
    assert ("blkio.throttle.read_iops_device", "8:16 1000") in written
    assert ("blkio.throttle.write_bps_device", "8:16 10485760") in written
    assert ("blkio.throttle.read_bps_device", "8:16 0") in written
    assert ("blkio.throttle.read_iops_device", "8:0 0") in written  # the stale device is released
    stats = executor.apply(result.writes)
    assert stats.failed == 0


def test_blkio_v2_writes_one_io_max_line_and_the_weight(tmp_path: Path) -> None:
    cgroup = files(tmp_path / "cgroup", {"cgroup.controllers": "cpuset cpu io memory pids\n"})
    roots = HostRoots(tmp_path / "proc", files(tmp_path / "sys", {"class/block/sdb/dev": "8:16\n"}), cgroup=cgroup)
    layout = CgroupLayout(cgroup, CgroupVersion.V2, CgroupDriver.CGROUPFS)
    inp = round_input(NODE, node_slo(resourceQOSStrategy=BLKIO_QOS), [], layout=layout, host=HostView(roots))
    result = BlkIOReconcile(OPTIONS).round(inp)
    rendered = {(w.resource.file(CgroupVersion.V2), w.value) for w in result.writes}
    assert rendered == {
        ("io.max", "8:16 rbps=max wbps=10485760 riops=1000 wiops=max"),
        ("io.weight", "8:16 100"),
    }


def test_without_the_io_controller_blkio_says_so(tmp_path: Path) -> None:
    cgroup = files(tmp_path / "cgroup", {"cgroup.controllers": "cpuset cpu memory pids\n"})
    layout = CgroupLayout(cgroup, CgroupVersion.V2, CgroupDriver.CGROUPFS)
    roots = HostRoots(tmp_path / "proc", tmp_path / "sys", cgroup=cgroup)
    inp = round_input(NODE, node_slo(resourceQOSStrategy=BLKIO_QOS), [], layout=layout, host=HostView(roots))
    result = BlkIOReconcile(OPTIONS).round(inp)
    assert not result.writes and result.unavailable == {"io": "no io cgroup controller (cgroup v2)"}


def test_run_exports_the_missing_interface_as_a_metric(tmp_path: Path) -> None:
    cgroup = files(tmp_path / "cgroup", {"cpu/kubepods/besteffort/cpu.shares": "2\n"})
    files(tmp_path / "proc", {"cpuinfo": CPUINFO})
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    store.replace("Node", [NODE])
    both = {**RESCTRL_QOS, "beClass": {**RESCTRL_QOS["beClass"], **BLKIO_QOS["beClass"]}}
    store.replace("NodeSLO", [node_slo(resourceQOSStrategy=both)])
    settings = AgentSettings(
        "n1", cgroup, proc=tmp_path / "proc", sys_root=tmp_path / "sys", resctrl_root=tmp_path / "no-resctrl"
    )
    agent = Agent(settings, OPTIONS, store, processors=())
    agent.compute(["BlkIOReconcile", "ResctrlReconcile"])
    value = agent.registry.get_sample_value
    assert value("koordlet_interface_unavailable", {"strategy": "BlkIOReconcile", "interface": "blkio"}) == 1
    assert value("koordlet_interface_unavailable", {"strategy": "ResctrlReconcile", "interface": "resctrl"}) == 1
    assert value("koordlet_interface_unavailable", {"strategy": "BlkIOReconcile", "interface": "io"}) == 0


# --- the real blkio controller of this machine ----------------------------------------------------
HOST_BLKIO = Path("/sys/fs/cgroup/blkio")


def _real_blkio_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    if not (HOST_BLKIO / "blkio.throttle.read_iops_device").is_file():
        return f"no cgroup v1 blkio hierarchy with throttling at {HOST_BLKIO}"
    if not any(Path("/sys/class/block").glob("*/dev")):
        return "no block device in /sys/class/block"
    return None


@pytest.fixture
def real_blkio_root(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    reason = _real_blkio_reason()
    if reason:
        pytest.skip(reason)
    top = HOST_BLKIO / f"colocate-test-{uuid.uuid4().hex[:8]}"
    be = top / "kubepods" / "besteffort"
    try:
        be.mkdir(parents=True)
    except OSError as exc:
        pytest.skip(f"blkio cgroups not writable here: {exc}")
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "blkio").symlink_to(top)
    (root / "cpu").mkdir()  # detected as a v1 root
    device = next(p.parent.name for p in sorted(Path("/sys/class/block").glob("*/dev")) if "loop" not in p.parent.name)
    try:
        yield root, device
    finally:
        for d in (be, be.parent, top):
            if d.is_dir():
                d.rmdir()


def test_blkio_throttles_on_the_real_v1_controller(real_blkio_root: tuple[Path, str]) -> None:
    root, device = real_blkio_root
    number = Path(f"/sys/class/block/{device}/dev").read_text().strip()
    qos = {
        "beClass": {
            "blkioQOS": {"enable": True, "blocks": [{"name": device, "type": "device", "ioCfg": {"readIOPS": 1234}}]}
        }
    }
    layout = CgroupLayout(root, CgroupVersion.V1, CgroupDriver.CGROUPFS)
    executor = ResourceExecutor(layout, lambda: 0.0)
    roots = HostRoots(cgroup=root)
    inp = round_input(
        NODE, node_slo(resourceQOSStrategy=qos), [], layout=layout, host=HostView(roots), reader=executor.read
    )
    stats = executor.apply(BlkIOReconcile(OPTIONS).round(inp).writes)
    assert stats.failed == 0, stats.errors
    read_iops = root / "blkio/kubepods/besteffort/blkio.throttle.read_iops_device"
    assert read_iops.read_text().split() == [number, "1234"]
    # the block no longer listed: its limit is released
    off = {"beClass": {"blkioQOS": {"enable": False}}}
    inp = round_input(
        NODE, node_slo(resourceQOSStrategy=off), [], layout=layout, host=HostView(roots), reader=executor.read
    )
    executor.apply(BlkIOReconcile(OPTIONS).round(inp).writes)
    assert read_iops.read_text().strip() == ""


@pytest.mark.parametrize("flags", ["fpu cat_l3 cdp_l3", "fpu mba", "fpu"])
def test_resctrl_needs_both_the_cat_l3_and_mba_cpu_flags(tmp_path: Path, flags: str) -> None:
    """IsSupportResctrl (isCPUSupportResctrl): a CPU without both flags gets nothing, and is told."""
    roots = HostRoots(tmp_path / "proc", tmp_path / "sys", resctrl_tree(tmp_path / "resctrl"))
    (roots.proc / "cpuinfo").write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    result = ResctrlReconcile(OPTIONS).round(
        round_input(NODE, node_slo(resourceQOSStrategy=RESCTRL_QOS), [], host=HostView(roots))
    )
    assert result.host_writes == []
    assert "cat_l3 and mba" in result.unavailable["resctrl"]


def test_plan_on_this_machine_reports_its_resctrl_as_it_is(tmp_path: Path) -> None:
    """The real interface: with the default roots, plan says resctrl is missing exactly when this
    machine has no resctrl mount (this CI machine has none: no RDT in its CPUs)."""
    node_dir = tmp_path / "node"
    node_dir.mkdir()
    (node_dir / "node.yaml").write_text(json.dumps(NODE))
    (node_dir / "nodeslo.yaml").write_text(json.dumps(node_slo(resourceQOSStrategy=RESCTRL_QOS)))
    report = plan(node_dir, StrategyOptions(koordlet_gates("")), PlanSettings(), 0.0)
    mounted = Path("/sys/fs/resctrl/schemata").is_file() and Path("/sys/fs/resctrl/info/L3/cbm_mask").is_file()
    assert any(u["interface"] == "resctrl" for u in report["unavailable"]) is not mounted
