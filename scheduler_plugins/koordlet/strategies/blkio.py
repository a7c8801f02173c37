"""BlkIOReconcile (Koordinator's `pkg/koordlet/qosmanager/plugins/blkio/blkio_reconcile.go`): disk
I/O limits from `resourceQOSStrategy.beClass.blkioQOS` on the BestEffort QoS cgroup (Koordinator
acts on the BE class only), and from a pod's own `koordinator.sh/blkioQOS` annotation
(`{"blocks": [...]}`) on that pod's cgroup — for pods with a Koordinator QoS label, Running.

Each block of type `device` (`name`: `/dev/sdb` or `sdb`) is resolved as Koordinator's
`getDiskByDevice` does with its lsblk table: a disk is itself, a partition counts as its disk (the
kernel throttles whole disks only), anything else (device-mapper, loop, md, a CD-ROM) is no disk;
its `MAJ:MIN` is the disk's `/sys/class/block/<disk>/dev`. (lsblk's types from sysfs: a `partition`
file makes a partition; a `dm-`, `loop` or `md` name, or SCSI type 5 (`device/type`), no disk.)
It gets its `ioCfg`: on cgroup v1 `blkio.throttle.{read,write}_{iops,bps}_device` as
`MAJ:MIN value` (0: no limit) and, where the kernel has it, `blkio.cost.weight` as
`MAJ:MIN ioWeightPercent` (default 100); on v2 one `io.max` line
`MAJ:MIN rbps=… wbps=… riops=… wiops=…` (0: `max`) and `io.weight` `MAJ:MIN weight`. A disk any of
those files lists that is no longer configured (or `enable: false`) is set back to no limit
(`getBlkIORecorder`, `getBlkIORemoverFromDiskNumber`).

As `updateBlkIOConfig`, a block that cannot be resolved stops the whole cgroup's update: nothing
is written for it that round, and the status names the block. `volumegroup` and `podvolume` blocks
are such blocks here: Koordinator resolves them through its node storage collector (lsblk, vgs,
lvs, findmnt), which colocate does not have. A node without the blkio controller (v1) or the io
controller (v2) is reported unavailable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from policies.apis.constants import ANNOTATION_BLKIO_QOS, KubernetesQoSClass, QoSClass
from policies.apis.objects import annotations_of, status_of
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite
from scheduler_plugins.koordlet.cgroups.layout import Level
from scheduler_plugins.koordlet.cgroups.resources import (
    BLKIO_READ_BPS,
    BLKIO_READ_IOPS,
    BLKIO_WEIGHT,
    BLKIO_WRITE_BPS,
    BLKIO_WRITE_IOPS,
    IO_MAX,
    CgroupVersion,
    Resource,
)
from scheduler_plugins.koordlet.host import CGROUP, INTERFACE_BLKIO, INTERFACE_IO, SYS, HostView
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult

NAME: Final = "BlkIOReconcile"
DEFAULT_IO_WEIGHT_PERCENT: Final = 100
#: ioCfg key -> (v1 resource, v2 io.max key)
THROTTLES: Final[dict[str, tuple[Resource, str]]] = {
    "readIOPS": (BLKIO_READ_IOPS, "riops"),
    "readBPS": (BLKIO_READ_BPS, "rbps"),
    "writeIOPS": (BLKIO_WRITE_IOPS, "wiops"),
    "writeBPS": (BLKIO_WRITE_BPS, "wbps"),
}
#: the name prefixes of the block devices lsblk gives another type than disk (dm, loop, raid)
NOT_DISKS: Final = ("dm-", "loop", "md")


class BlockError(ValueError):
    """A block that names no disk this node can resolve."""


def _amount(cfg: Mapping[str, Any], key: str, default: int) -> int:
    raw = cfg.get(key)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0 else default


def disk_number(host: HostView, raw_name: object) -> str:
    """getDiskNumberFromDevice: the `MAJ:MIN` of the disk `raw_name` is or is a partition of."""
    name = str(raw_name or "").rsplit("/", 1)[-1]
    base = f"class/block/{name}"
    if not name or name in (".", "..") or host.read(SYS, f"{base}/dev") is None:
        raise BlockError(f"no block device {name!r} (/sys/{base})")
    if host.exists(SYS, f"{base}/partition"):  # a partition's directory sits in its disk's
        number = host.read(SYS, f"{base}/../dev")
    elif name.startswith(NOT_DISKS) or (host.read(SYS, f"{base}/device/type") or "").strip() == "5":
        raise BlockError(f"{name!r} is neither a disk nor a partition")
    else:
        number = host.read(SYS, f"{base}/dev")
    if not (number or "").strip():
        raise BlockError(f"no device number for {name!r}")
    return str(number).strip()


def device_writes(
    version: CgroupVersion, cgroup: str, device: str, cfg: Mapping[str, Any], weight: bool, level: Level = Level.QOS
) -> list[CgroupWrite]:
    """getBlkIOUpdaterFromBlockCfg: the writes that give `device` the limits of `cfg`."""
    writes = []
    if version is CgroupVersion.V1:
        for key, (resource, _) in THROTTLES.items():
            writes.append(CgroupWrite(NAME, cgroup, resource, f"{device} {_amount(cfg, key, 0)}", level))
    else:
        limits = " ".join(
            f"{v2_key}={_amount(cfg, key, 0) or 'max'}" for key, (_, v2_key) in sorted(THROTTLES.items(), key=_v2_order)
        )
        writes.append(CgroupWrite(NAME, cgroup, IO_MAX, f"{device} {limits}", level))
    if weight:
        percent = _amount(cfg, "ioWeightPercent", DEFAULT_IO_WEIGHT_PERCENT) or DEFAULT_IO_WEIGHT_PERCENT
        writes.append(CgroupWrite(NAME, cgroup, BLKIO_WEIGHT, f"{device} {percent}", level))
    return writes


def _v2_order(item: tuple[str, tuple[Resource, str]]) -> int:
    return ("rbps", "wbps", "riops", "wiops").index(item[1][1])


def configured_devices(text: str | int | None) -> set[str]:
    """The `MAJ:MIN` of every line of a throttle file (v1) or io.max (v2)."""
    if not isinstance(text, str):
        return set()
    return {line.split()[0] for line in text.splitlines() if line.split() and ":" in line.split()[0]}


def recorded_devices(inp: RoundInput, cgroup: str, weight: bool) -> set[str]:
    """getBlkIORecorder: the disks any of the cgroup's blkio files lists."""
    if inp.layout.version is CgroupVersion.V1:
        files = [resource for resource, _ in THROTTLES.values()]
    else:
        files = [IO_MAX]
    files += [BLKIO_WEIGHT] if weight else []
    return set().union(*(configured_devices(inp.read(cgroup, resource)) for resource in files))


def cgroup_writes(inp: RoundInput, cgroup: str, level: Level, blocks: list[Any]) -> tuple[list[CgroupWrite], set[str]]:
    """updateBlkIOConfig: the writes that give `cgroup` exactly `blocks`, and the disks configured;
    BlockError on the first block that cannot be resolved (then nothing is written for the cgroup)."""
    version = inp.layout.version
    weight = version is CgroupVersion.V2 or inp.host.exists(CGROUP, f"blkio/{cgroup}/blkio.cost.weight")
    writes: list[CgroupWrite] = []
    wanted: set[str] = set()
    for i, block in enumerate(blocks):
        if not isinstance(block, Mapping):
            raise BlockError(f"blocks[{i}] is not an object")
        kind = str(block.get("type") or "")
        if kind != "device":
            raise BlockError(f"blocks[{i}]: type {kind!r} is not supported (only device)")
        try:
            number = disk_number(inp.host, block.get("name"))
        except BlockError as exc:
            raise BlockError(f"blocks[{i}]: {exc}") from None
        raw_cfg = block.get("ioCfg")
        wanted.add(number)
        writes += device_writes(version, cgroup, number, raw_cfg if isinstance(raw_cfg, Mapping) else {}, weight, level)
    for stale in sorted(recorded_devices(inp, cgroup, weight) - wanted):  # getBlkIORemoverFromDiskNumber
        writes += device_writes(version, cgroup, stale, {}, weight, level)
    return writes, wanted


def pod_blocks(raw: str) -> list[Any]:
    """parseBlkIOResult: the `blocks` of the pod annotation (BlockError when it is not JSON)."""
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        raise BlockError(f"{ANNOTATION_BLKIO_QOS} is not JSON") from None
    blocks = parsed.get("blocks") if isinstance(parsed, Mapping) else None
    return blocks if isinstance(blocks, list) else []


class BlkIOReconcile:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.options = options
        self.interval = options.reconcile_interval

    def enabled(self) -> bool:
        return self.options.gates.enabled(features.BLKIO_RECONCILE) and self.interval > 0

    def setup(self, ctx: object) -> None:
        pass

    def _available(self, inp: RoundInput, result: StrategyResult) -> bool:
        if inp.layout.version is CgroupVersion.V1:
            if not inp.host.is_dir(CGROUP, "blkio"):
                result.lacks(INTERFACE_BLKIO, "no blkio cgroup controller (cgroup v1)")
                return False
            return True
        if "io" not in (inp.host.read(CGROUP, "cgroup.controllers") or "").split():
            result.lacks(INTERFACE_IO, "no io cgroup controller (cgroup v2)")
            return False
        return True

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        slo = inp.state.node_slo
        strategy = slo.spec.get("resourceQOSStrategy") if slo is not None else None
        if not isinstance(strategy, Mapping):
            result.status["reason"] = "the NodeSLO has no resourceQOSStrategy"
            return result
        if not self._available(inp, result):
            return result
        be = strategy.get("beClass")
        qos = be.get("blkioQOS") if isinstance(be, Mapping) else None
        if isinstance(qos, Mapping):
            blocks = qos.get("blocks") if qos.get("enable") is True else []
            cgroup = inp.layout.qos_dir(KubernetesQoSClass.BEST_EFFORT)
            try:
                writes, wanted = cgroup_writes(inp, cgroup, Level.QOS, blocks if isinstance(blocks, list) else [])
            except BlockError as exc:
                result.status["beClass"] = f"not updated: {exc}"
            else:
                result.writes += writes
                result.status["devices"] = sorted(wanted)
        else:
            result.status["beClass"] = "no blkioQOS"
        pods: dict[str, str] = {}
        for pod in inp.pods:
            raw = annotations_of(pod.pod).get(ANNOTATION_BLKIO_QOS)
            if raw is None or pod.raw_qos is QoSClass.NONE or status_of(pod.pod).get("phase") != "Running":
                continue
            try:
                result.writes += cgroup_writes(inp, pod.dir, Level.POD, pod_blocks(raw))[0]
            except BlockError as exc:
                pods[pod.key] = f"not updated: {exc}"
            else:
                pods[pod.key] = "updated"
        if pods:
            result.status["pods"] = pods
        return result
