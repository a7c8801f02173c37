"""BlkIOReconcile as Koordinator's `pkg/koordlet/qosmanager/plugins/blkio/blkio_reconcile.go`, on
fake /sys and cgroup trees in the kernel's formats and on this machine's real /sys/class/block:

* a `device` block resolves as `getDiskByDevice` with lsblk's table (`TestBlkIOReconcile_reconcile`
  gives `/dev/vdb1` the disk `/dev/vdb` through `PartitionDiskMap`): a partition counts as its disk,
  a device-mapper or loop device as no disk;
* `updateBlkIOConfig`: a block that cannot be resolved (a `volumegroup` block here) stops the
  cgroup's whole update; a disk any of the five blkio files lists and no block names any more is
  released (`getBlkIORecorder`);
* a pod's `koordinator.sh/blkioQOS` annotation limits that pod's cgroup, for pods with a QoS label
  that are Running.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_plugins.koordlet.cgroups.executor import ResourceExecutor
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.host import HostRoots, HostView
from scheduler_plugins.koordlet.strategies.base import StrategyOptions, StrategyResult
from scheduler_plugins.koordlet.strategies.blkio import BlkIOReconcile, BlockError, disk_number
from tests.scheduler_plugins.koordlet.rounds import round_input
from tests.support.builders import make_node, make_pod

NODE = make_node("n1", capacity={"cpu": "20", "memory": "64Gi"}, allocatable={"cpu": "20", "memory": "64Gi"})
OPTIONS = StrategyOptions(koordlet_gates("BlkIOReconcile=true"))
UID = "0f0e0d0c-0000-4000-8000-000000000001"
BE_DIR = "blkio/kubepods/besteffort"
POD_DIR = f"blkio/kubepods/besteffort/pod{UID}"
THROTTLE_FILES = (
    "blkio.throttle.read_iops_device",
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_iops_device",
    "blkio.throttle.write_bps_device",
)


def sysfs(root: Path) -> Path:
    """/sys as the kernel lays it out: class/block entries are links into devices/, a partition's
    directory sits inside its disk's and has a `partition` file; vdb is 253:16, vdb1 253:17, a
    device-mapper volume dm-0 252:0 and a loop device loop0 7:0."""
    devices = root / "devices/virtual/block"
    for path, number in (("vdb", "253:16"), ("vdb/vdb1", "253:17"), ("dm-0", "252:0"), ("loop0", "7:0")):
        (devices / path).mkdir(parents=True)
        (devices / path / "dev").write_text(number + "\n")
    (devices / "vdb/vdb1/partition").write_text("1\n")
    (root / "class/block").mkdir(parents=True)
    for name, path in (("vdb", "vdb"), ("vdb1", "vdb/vdb1"), ("dm-0", "dm-0"), ("loop0", "loop0")):
        (root / "class/block" / name).symlink_to(f"../../devices/virtual/block/{path}")
    return root


def cgroup_v1(root: Path, configured: dict[str, str] | None = None) -> CgroupLayout:
    for cgroup in (BE_DIR, POD_DIR):
        (root / cgroup).mkdir(parents=True, exist_ok=True)
        for name in THROTTLE_FILES:
            (root / cgroup / name).write_text((configured or {}).get(f"{cgroup}/{name}", ""))
    (root / "cpu").mkdir(exist_ok=True)
    return CgroupLayout(root, CgroupVersion.V1, CgroupDriver.CGROUPFS)


def be_blocks(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"beClass": {"blkioQOS": {"enable": True, "blocks": list(blocks)}}}


def reconcile(
    tmp_path: Path, layout: CgroupLayout, qos: dict[str, Any], pods: list[Any] | None = None
) -> StrategyResult:
    slo = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "n1"}}
    slo["spec"] = {"resourceQOSStrategy": qos}
    roots = HostRoots(tmp_path / "proc", tmp_path / "sys", cgroup=layout.root)
    executor = ResourceExecutor(layout, lambda: 0.0)
    inp = round_input(NODE, slo, pods or [], layout=layout, host=HostView(roots), reader=executor.read)
    result = BlkIOReconcile(OPTIONS).round(inp)
    stats = executor.apply(result.writes)
    assert stats.failed == 0, stats.errors
    return result


def read(layout: CgroupLayout, cgroup: str, name: str) -> str:
    return (layout.root / cgroup / name).read_text().strip()


def test_a_partition_is_throttled_as_its_disk(tmp_path: Path) -> None:
    """PartitionDiskMap: `/dev/vdb1` -> `/dev/vdb` (253:16), the number the kernel throttles."""
    sysfs(tmp_path / "sys")
    layout = cgroup_v1(tmp_path / "cgroup")
    result = reconcile(tmp_path, layout, be_blocks({"name": "/dev/vdb1", "type": "device", "ioCfg": {"readIOPS": 9}}))
    assert result.status["devices"] == ["253:16"]
    assert read(layout, BE_DIR, "blkio.throttle.read_iops_device") == "253:16 9"


@pytest.mark.parametrize("name", ["/dev/dm-0", "loop0", "/dev/vdz"])
def test_what_lsblk_does_not_call_a_disk_or_partition_stops_the_update(tmp_path: Path, name: str) -> None:
    """getDiskByDevice finds no disk: updateBlkIOConfig returns its error, nothing is written."""
    sysfs(tmp_path / "sys")
    layout = cgroup_v1(tmp_path / "cgroup", {f"{BE_DIR}/blkio.throttle.read_iops_device": "253:16 5\n"})
    qos = be_blocks(
        {"name": "/dev/vdb", "type": "device", "ioCfg": {"readIOPS": 9}},
        {"name": name, "type": "device", "ioCfg": {"readIOPS": 9}},
    )
    result = reconcile(tmp_path, layout, qos)
    assert result.writes == []
    assert result.status["beClass"].startswith("not updated: blocks[1]")
    assert read(layout, BE_DIR, "blkio.throttle.read_iops_device") == "253:16 5"  # untouched


def test_a_volumegroup_block_stops_the_update_and_is_named(tmp_path: Path) -> None:
    sysfs(tmp_path / "sys")
    layout = cgroup_v1(tmp_path / "cgroup")
    qos = be_blocks(
        {"name": "/dev/vdb", "type": "device", "ioCfg": {"readIOPS": 9}},
        {"name": "yoda-pool0", "type": "volumegroup", "ioCfg": {"readIOPS": 1024}},
    )
    result = reconcile(tmp_path, layout, qos)
    assert result.writes == [] and "volumegroup" in result.status["beClass"]


def test_a_disk_listed_in_any_blkio_file_is_released(tmp_path: Path) -> None:
    """getBlkIORecorder reads all the files: a disk only write_bps lists is released too."""
    sysfs(tmp_path / "sys")
    layout = cgroup_v1(tmp_path / "cgroup", {f"{BE_DIR}/blkio.throttle.write_bps_device": "253:0 2048\n"})
    result = reconcile(tmp_path, layout, be_blocks({"name": "vdb", "type": "device", "ioCfg": {"writeBPS": 4096}}))
    assert result.status["devices"] == ["253:16"]
    # the fake file keeps the last write; the kernel's would list 253:16 4096 and drop 253:0
    assert read(layout, BE_DIR, "blkio.throttle.write_bps_device") == "253:0 0"
    released = [w.value for w in result.writes if w.resource.v1_file == "blkio.throttle.write_bps_device"]
    assert released == ["253:16 4096", "253:0 0"]


def blkio_pod(annotation: Any, qos: str | None = "BE", phase: str = "Running") -> dict[str, Any]:
    pod = make_pod("job", qos=qos, requests={"kubernetes.io/batch-cpu": "1000"})
    pod["metadata"]["uid"] = UID
    pod["metadata"]["annotations"] = {"koordinator.sh/blkioQOS": json.dumps(annotation)}
    pod["status"] = {"phase": phase}
    return pod


def test_a_pod_annotation_limits_the_pods_cgroup(tmp_path: Path) -> None:
    """The pod loop of reconcile(): the annotation's blocks on the pod's own cgroup."""
    sysfs(tmp_path / "sys")
    layout = cgroup_v1(tmp_path / "cgroup")
    annotation = {"blocks": [{"name": "/dev/vdb", "type": "device", "ioCfg": {"readBPS": 10485760}}]}
    result = reconcile(tmp_path, layout, {}, [blkio_pod(annotation)])
    assert result.status["pods"] == {"default/job": "updated"}
    assert read(layout, POD_DIR, "blkio.throttle.read_bps_device") == "253:16 10485760"
    assert read(layout, BE_DIR, "blkio.throttle.read_bps_device") == ""


@pytest.mark.parametrize(
    "qos,phase,annotation",
    [
        (None, "Running", {"blocks": [{"name": "vdb", "type": "device", "ioCfg": {"readBPS": 1}}]}),
        ("BE", "Pending", {"blocks": [{"name": "vdb", "type": "device", "ioCfg": {"readBPS": 1}}]}),
        ("BE", "Running", {"blocks": [{"name": "data", "type": "podvolume", "ioCfg": {"readBPS": 1}}]}),
    ],
)
def test_pods_without_a_qos_label_not_running_or_with_a_podvolume_block_are_left_alone(
    tmp_path: Path, qos: str | None, phase: str, annotation: Any
) -> None:
    sysfs(tmp_path / "sys")
    layout = cgroup_v1(tmp_path / "cgroup")
    result = reconcile(tmp_path, layout, {}, [blkio_pod(annotation, qos, phase)])
    assert result.writes == []
    assert read(layout, POD_DIR, "blkio.throttle.read_bps_device") == ""


def test_this_machines_block_devices_resolve_as_lsblk_lists_them() -> None:
    """The real /sys/class/block: every disk resolves to its own `dev`, every partition to its
    disk's, every loop or device-mapper device to none."""
    block = Path("/sys/class/block")
    if not block.is_dir():
        pytest.skip("no /sys/class/block")
    host = HostView(HostRoots(sys=Path("/sys")))
    checked = 0
    for entry in sorted(block.iterdir()):
        name = entry.name
        if name.startswith(("loop", "dm-", "md")):
            with pytest.raises(BlockError):
                disk_number(host, f"/dev/{name}")
        elif (entry / "partition").is_file():
            parent = Path(os.path.realpath(entry)).parent
            assert disk_number(host, name) == (parent / "dev").read_text().strip()
        elif (entry / "device/type").is_file() and (entry / "device/type").read_text().strip() == "5":
            continue
        else:
            assert disk_number(host, f"/dev/{name}") == (entry / "dev").read_text().strip()
        checked += 1
    assert checked > 0


# --- this machine's real blkio controller ---------------------------------------------------------
HOST_BLKIO = Path("/sys/fs/cgroup/blkio")


def _real_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    if not (HOST_BLKIO / "blkio.throttle.read_bps_device").is_file():
        return f"no cgroup v1 blkio hierarchy with throttling at {HOST_BLKIO}"
    return None


@pytest.fixture
def real_pod_cgroup(tmp_path: Path) -> Iterator[tuple[CgroupLayout, str]]:
    """This test's own `kubepods/besteffort/pod<uid>` in the real blkio hierarchy, and a real disk."""
    reason = _real_reason()
    disks = [
        p.name
        for p in sorted(Path("/sys/class/block").glob("*"))
        if not p.name.startswith(("loop", "dm-", "md", "zram")) and not (p / "partition").exists()
    ]
    if reason or not disks:
        pytest.skip(reason or "no disk in /sys/class/block")
    top = HOST_BLKIO / f"colocate-test-{uuid.uuid4().hex[:8]}"
    pod = top / f"kubepods/besteffort/pod{UID}"
    try:
        pod.mkdir(parents=True)
    except OSError as exc:
        pytest.skip(f"blkio cgroups not writable here: {exc}")
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "blkio").symlink_to(top)
    (root / "cpu").mkdir()
    try:
        yield CgroupLayout(root, CgroupVersion.V1, CgroupDriver.CGROUPFS), disks[0]
    finally:
        for d in (pod, pod.parent, pod.parent.parent, top):
            with contextlib.suppress(OSError):
                d.rmdir()


def test_a_pod_annotation_throttles_the_pod_on_the_real_controller(
    tmp_path: Path, real_pod_cgroup: tuple[CgroupLayout, str]
) -> None:
    layout, disk = real_pod_cgroup
    number = Path(f"/sys/class/block/{disk}/dev").read_text().strip()
    annotation = {"blocks": [{"name": f"/dev/{disk}", "type": "device", "ioCfg": {"readBPS": 10485760}}]}
    slo = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "n1"}}
    slo["spec"] = {"resourceQOSStrategy": {}}
    roots = HostRoots(tmp_path / "proc", Path("/sys"), cgroup=layout.root)
    executor = ResourceExecutor(layout, lambda: 0.0)
    inp = round_input(NODE, slo, [blkio_pod(annotation)], layout=layout, host=HostView(roots), reader=executor.read)
    stats = executor.apply(BlkIOReconcile(OPTIONS).round(inp).writes)
    assert stats.failed == 0, stats.errors
    read_bps = layout.root / f"{POD_DIR}/blkio.throttle.read_bps_device"
    assert read_bps.read_text().split() == [number, "10485760"]
    # the annotation gone from the pod's blocks: the kernel's file is emptied by the release
    inp = round_input(NODE, slo, [blkio_pod({"blocks": []})], layout=layout, host=HostView(roots), reader=executor.read)
    executor.apply(BlkIOReconcile(OPTIONS).round(inp).writes)
    assert read_bps.read_text().strip() == ""
