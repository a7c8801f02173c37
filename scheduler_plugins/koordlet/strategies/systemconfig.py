"""SystemConfig (Koordinator's `pkg/koordlet/qosmanager/plugins/sysreconcile/system_config.go`):
the node-wide memory settings of the NodeSLO's `spec.systemStrategy`.

* `minFreeKbytesFactor` → `/proc/sys/vm/min_free_kbytes` = memory capacity (KiB) × factor / 10000,
  written only within [10 MiB, 10 GiB] (Koordinator's validator);
* `watermarkScaleFactor` → `/proc/sys/vm/watermark_scale_factor`, within [10, 400];
* `memcgReapBackGround` → `/sys/kernel/mm/memcg_reaper/reap_background` (0 or 1), only where the
  kernel has the memcg reaper (Alibaba Cloud Linux); elsewhere the status says so.

Nothing without a `systemStrategy`. A node without `/proc/sys/vm` or without the reaper is
reported (`unavailable`), not skipped in silence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from policies.quantity import QuantityError, value
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.host import (
    INTERFACE_MEMCG_REAPER,
    INTERFACE_PROC_SYS_VM,
    PROC,
    SYS,
    HostWrite,
)
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult

NAME: Final = "SystemConfig"
MIN_FREE_KBYTES: Final = "sys/vm/min_free_kbytes"
WATERMARK_SCALE_FACTOR: Final = "sys/vm/watermark_scale_factor"
MEMCG_REAP_BACKGROUND: Final = "kernel/mm/memcg_reaper/reap_background"
MIN_FREE_KBYTES_RANGE: Final = (10 * 1024, 10 * 1024 * 1024)
WATERMARK_SCALE_FACTOR_RANGE: Final = (10, 400)
REAP_BACKGROUND_RANGE: Final = (0, 1)


def _int(spec: Mapping[str, Any], key: str) -> int | None:
    raw = spec.get(key)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _within(amount: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= amount <= bounds[1]


def memory_config(strategy: Mapping[str, Any], memory_capacity: int) -> dict[str, tuple[str, int]]:
    """calculateMemoryConfig: file -> (root, value) for each setting present and valid."""
    out: dict[str, tuple[str, int]] = {}
    factor = _int(strategy, "minFreeKbytesFactor")
    if factor is not None and memory_capacity // 1024 > 0:
        kbytes = memory_capacity // 1024 * factor // 10000
        if _within(kbytes, MIN_FREE_KBYTES_RANGE):
            out[MIN_FREE_KBYTES] = (PROC, kbytes)
    watermark = _int(strategy, "watermarkScaleFactor")
    if watermark is not None and _within(watermark, WATERMARK_SCALE_FACTOR_RANGE):
        out[WATERMARK_SCALE_FACTOR] = (PROC, watermark)
    reap = _int(strategy, "memcgReapBackGround")
    if reap is not None and _within(reap, REAP_BACKGROUND_RANGE):
        out[MEMCG_REAP_BACKGROUND] = (SYS, reap)
    return out


class SystemConfig:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.options = options
        self.interval = options.reconcile_interval

    def enabled(self) -> bool:
        return self.options.gates.enabled(features.SYSTEM_CONFIG) and self.interval > 0

    def setup(self, ctx: object) -> None:
        pass

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        slo = inp.state.node_slo
        strategy = slo.spec.get("systemStrategy") if slo is not None else None
        if not isinstance(strategy, Mapping):
            result.status["reason"] = "the NodeSLO has no systemStrategy"
            return result
        raw = ((inp.state.node or {}).get("status") or {}).get("capacity") or {}
        try:
            memory = value(raw["memory"]) if "memory" in raw else 0
        except QuantityError:
            memory = 0
        if memory <= 0:
            result.status["reason"] = "the node's memory capacity is not valid"
            return result
        for path, (root, amount) in memory_config(strategy, memory).items():
            if root == PROC and not inp.host.exists(PROC, path):
                result.lacks(INTERFACE_PROC_SYS_VM, f"no {path} under the proc root")
                continue
            if root == SYS and not inp.host.exists(SYS, path):
                result.lacks(INTERFACE_MEMCG_REAPER, "the kernel has no memcg reaper (kernel/mm/memcg_reaper)")
                continue
            result.host_writes.append(HostWrite(NAME, root, path, str(amount)))
        return result
