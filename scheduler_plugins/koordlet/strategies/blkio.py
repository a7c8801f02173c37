"""BlkIOReconcile (Koordinator's `pkg/koordlet/qosmanager/plugins/blkio/blkio_reconcile.go`): the
BE class's disk I/O limits from `resourceQOSStrategy.beClass.blkioQOS` (Koordinator acts on the BE
class only), written into the BestEffort QoS cgroup.

Each block of type `device` (`name`: `sdb` or `/dev/sdb`; its `MAJ:MIN` from
`/sys/class/block/<name>/dev`) gets its `ioCfg`: on cgroup v1
`blkio.throttle.{read,write}_{iops,bps}_device` as `MAJ:MIN value` (0: no limit) and, where the
kernel has it, `blkio.cost.weight` as `MAJ:MIN ioWeightPercent` (default 100); on v2 one `io.max`
line `MAJ:MIN rbps=… wbps=… riops=… wiops=…` (0: `max`) and `io.weight` `MAJ:MIN weight`. A device
configured before and no longer listed (or `enable: false`) is set back to no limit.

A node without the blkio controller (v1) or the io controller (v2) is reported unavailable;
`volumegroup` and `podvolume` blocks (which need the node's local storage information) are
reported as not supported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from policies.constants import KubernetesQoSClass
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
from scheduler_plugins.koordlet.host import CGROUP, INTERFACE_BLKIO, INTERFACE_IO, SYS
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


def _amount(cfg: Mapping[str, Any], key: str, default: int) -> int:
    raw = cfg.get(key)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0 else default


def device_writes(
    version: CgroupVersion, cgroup: str, device: str, cfg: Mapping[str, Any], weight: bool
) -> list[CgroupWrite]:
    """getBlkIOUpdaterFromBlockCfg: the writes that give `device` the limits of `cfg`."""
    writes = []
    if version is CgroupVersion.V1:
        for key, (resource, _) in THROTTLES.items():
            writes.append(CgroupWrite(NAME, cgroup, resource, f"{device} {_amount(cfg, key, 0)}", Level.QOS))
    else:
        limits = " ".join(
            f"{v2_key}={_amount(cfg, key, 0) or 'max'}" for key, (_, v2_key) in sorted(THROTTLES.items(), key=_v2_order)
        )
        writes.append(CgroupWrite(NAME, cgroup, IO_MAX, f"{device} {limits}", Level.QOS))
    if weight:
        percent = _amount(cfg, "ioWeightPercent", DEFAULT_IO_WEIGHT_PERCENT) or DEFAULT_IO_WEIGHT_PERCENT
        writes.append(CgroupWrite(NAME, cgroup, BLKIO_WEIGHT, f"{device} {percent}", Level.QOS))
    return writes


def _v2_order(item: tuple[str, tuple[Resource, str]]) -> int:
    return ("rbps", "wbps", "riops", "wiops").index(item[1][1])


def configured_devices(text: str | int | None) -> set[str]:
    """The `MAJ:MIN` of every line of a throttle file (v1) or io.max (v2)."""
    if not isinstance(text, str):
        return set()
    return {line.split()[0] for line in text.splitlines() if line.split() and ":" in line.split()[0]}


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
        be = strategy.get("beClass") if isinstance(strategy, Mapping) else None
        qos = be.get("blkioQOS") if isinstance(be, Mapping) else None
        if not isinstance(qos, Mapping):
            result.status["reason"] = "the NodeSLO has no resourceQOSStrategy.beClass.blkioQOS"
            return result
        if not self._available(inp, result):
            return result
        cgroup = inp.layout.qos_dir(KubernetesQoSClass.BEST_EFFORT)
        version = inp.layout.version
        weight = version is CgroupVersion.V2 or inp.host.exists(CGROUP, f"blkio/{cgroup}/blkio.cost.weight")
        blocks = qos.get("blocks") if qos.get("enable") is True else []
        wanted: set[str] = set()
        for i, block in enumerate(blocks if isinstance(blocks, list) else []):
            if not isinstance(block, Mapping):
                continue
            kind, name = str(block.get("type") or ""), str(block.get("name") or "").rsplit("/", 1)[-1]
            if kind != "device":
                result.status[f"blocks[{i}]"] = f"type {kind!r} is not supported (only device)"
                continue
            number = (inp.host.read(SYS, f"class/block/{name}/dev") or "").strip()
            if not number:
                result.status[f"blocks[{i}]"] = f"no block device {name!r} (/sys/class/block/{name}/dev)"
                continue
            raw_cfg = block.get("ioCfg")
            cfg: Mapping[str, Any] = raw_cfg if isinstance(raw_cfg, Mapping) else {}
            wanted.add(number)
            result.writes.extend(device_writes(version, cgroup, number, cfg, weight))
        current = inp.read(cgroup, BLKIO_READ_IOPS if version is CgroupVersion.V1 else IO_MAX)
        for stale in sorted(configured_devices(current) - wanted):  # getBlkIORemoverFromDiskNumber
            result.writes.extend(device_writes(version, cgroup, stale, {}, weight))
        result.status["devices"] = sorted(wanted)
        return result
