"""SystemConfig (Koordinator's `pkg/koordlet/qosmanager/plugins/sysreconcile/system_config.go`):
the node-wide memory settings of the NodeSLO's `spec.systemStrategy`.

* `minFreeKbytesFactor` → `/proc/sys/vm/min_free_kbytes` = memory capacity (KiB) × factor / 10000,
  written only within [10 MiB, 10 GiB] (Koordinator's validator);
* `watermarkScaleFactor` → `/proc/sys/vm/watermark_scale_factor`, within [10, 400];
* `memcgReapBackGround` → `/sys/kernel/mm/memcg_reaper/reap_background` (0 or 1), only where the
  kernel has the memcg reaper (Alibaba Cloud Linux); elsewhere the status says so;
* `schedGroupIdentityEnabled` → `/proc/sys/kernel/sched_group_identity_enabled` (0 or 1) and
  `schedIdleSaverWmark` → `/proc/sys/kernel/sched_idle_saver_wmark` (any value: Koordinator has no
  validator for it), where the kernel has them (Alibaba Cloud Linux group identity);
* `pageCacheLimitEnabled` → `/sys/kernel/mm/pagecache_limit/enabled` (0 or 1, Anolis OS);
* `schedFeatures` (`{NAME: bool}`) → `/sys/kernel/debug/sched_features`: the file is read
  (`NAME` on, `NO_NAME` off; a feature listed both ways is an error and nothing is written), and
  each feature whose state differs is written alone, `NAME` or `NO_NAME` (GetSchedFeatures /
  SetSchedFeatures), in name order.

A value outside its range is not written, as Koordinator's validators (`system_resource.go`) do,
and the others are: each key is judged alone. A key the slo-controller-config rules refuse is left
out of the NodeSLO the agent reads (`NodeSLO.skipped`, told with an Event and
`koordlet_node_slo_skipped_keys_total`); both kinds are listed under the status's `skipped`
(`koordlet plan` shows it). Nothing without a `systemStrategy`. A node without one of these files is reported
(`unavailable`), not skipped in silence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from policies.apis.objects import status_of
from policies.apis.quantity import QuantityError, value
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.host import (
    INTERFACE_MEMCG_REAPER,
    INTERFACE_PAGE_CACHE_LIMIT,
    INTERFACE_PROC_SYS_KERNEL,
    INTERFACE_PROC_SYS_VM,
    INTERFACE_SCHED_FEATURES,
    PROC,
    SYS,
    HostWrite,
)
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult

NAME: Final = "SystemConfig"
MIN_FREE_KBYTES: Final = "sys/vm/min_free_kbytes"
WATERMARK_SCALE_FACTOR: Final = "sys/vm/watermark_scale_factor"
MEMCG_REAP_BACKGROUND: Final = "kernel/mm/memcg_reaper/reap_background"
SCHED_GROUP_IDENTITY_ENABLED: Final = "sys/kernel/sched_group_identity_enabled"
SCHED_IDLE_SAVER_WMARK: Final = "sys/kernel/sched_idle_saver_wmark"
PAGE_CACHE_LIMIT_ENABLED: Final = "kernel/mm/pagecache_limit/enabled"
SCHED_FEATURES: Final = "kernel/debug/sched_features"
MIN_FREE_KBYTES_RANGE: Final = (10 * 1024, 10 * 1024 * 1024)
WATERMARK_SCALE_FACTOR_RANGE: Final = (10, 400)
REAP_BACKGROUND_RANGE: Final = (0, 1)
SWITCH_RANGE: Final = (0, 1)
INT64_RANGE: Final = (-(2**63), 2**63 - 1)
#: the settings copied as they are: key -> (root, file, valid range)
PLAIN_SETTINGS: Final[dict[str, tuple[str, str, tuple[int, int]]]] = {
    "watermarkScaleFactor": (PROC, WATERMARK_SCALE_FACTOR, WATERMARK_SCALE_FACTOR_RANGE),
    "memcgReapBackGround": (SYS, MEMCG_REAP_BACKGROUND, REAP_BACKGROUND_RANGE),
    "schedGroupIdentityEnabled": (PROC, SCHED_GROUP_IDENTITY_ENABLED, SWITCH_RANGE),
    "schedIdleSaverWmark": (PROC, SCHED_IDLE_SAVER_WMARK, INT64_RANGE),
    "pageCacheLimitEnabled": (SYS, PAGE_CACHE_LIMIT_ENABLED, SWITCH_RANGE),
}
#: file -> the interface a node lacks without it, and why
MISSING: Final[dict[str, tuple[str, str]]] = {
    MIN_FREE_KBYTES: (INTERFACE_PROC_SYS_VM, f"no {MIN_FREE_KBYTES} under the proc root"),
    WATERMARK_SCALE_FACTOR: (INTERFACE_PROC_SYS_VM, f"no {WATERMARK_SCALE_FACTOR} under the proc root"),
    MEMCG_REAP_BACKGROUND: (INTERFACE_MEMCG_REAPER, "the kernel has no memcg reaper (kernel/mm/memcg_reaper)"),
    SCHED_GROUP_IDENTITY_ENABLED: (INTERFACE_PROC_SYS_KERNEL, f"no {SCHED_GROUP_IDENTITY_ENABLED} under the proc root"),
    SCHED_IDLE_SAVER_WMARK: (INTERFACE_PROC_SYS_KERNEL, f"no {SCHED_IDLE_SAVER_WMARK} under the proc root"),
    PAGE_CACHE_LIMIT_ENABLED: (
        INTERFACE_PAGE_CACHE_LIMIT,
        "the kernel has no page cache limit (kernel/mm/pagecache_limit)",
    ),
}


class SchedFeaturesError(ValueError):
    pass


def parse_sched_features(text: str) -> dict[str, bool]:
    """GetSchedFeatures: `NAME` on, `NO_NAME` off; a feature both on and off is an error."""
    out: dict[str, bool] = {}
    for word in text.split():
        name, on = (word[3:], False) if word.startswith("NO_") else (word, True)
        if out.get(name, on) is not on:
            raise SchedFeaturesError(f"conflicting sched_features entries for {name}")
        out[name] = on
    return out


def sched_feature_writes(current: Mapping[str, bool], wanted: Mapping[str, Any]) -> list[str]:
    """SetSchedFeatures: one `NAME`/`NO_NAME` text a feature whose state differs, in name order."""
    out = []
    for name in sorted(wanted):
        on = wanted[name]
        if not isinstance(on, bool) or current.get(name) is on:
            continue
        out.append(f"{name}\n" if on else f"NO_{name}\n")
    return out


def _int(spec: Mapping[str, Any], key: str) -> int | None:
    raw = spec.get(key)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _within(amount: int, bounds: tuple[int, int]) -> bool:
    return bounds[0] <= amount <= bounds[1]


def memory_config(
    strategy: Mapping[str, Any], memory_capacity: int, skipped: dict[str, str] | None = None
) -> dict[str, tuple[str, int]]:
    """calculateMemoryConfig: file -> (root, value) for each setting present and valid; each one
    present and out of its range is named in `skipped` (key -> why) and not written."""
    out: dict[str, tuple[str, int]] = {}
    skipped = {} if skipped is None else skipped
    factor = _int(strategy, "minFreeKbytesFactor")
    if factor is not None and memory_capacity // 1024 > 0:
        kbytes = memory_capacity // 1024 * factor // 10000
        if _within(kbytes, MIN_FREE_KBYTES_RANGE):
            out[MIN_FREE_KBYTES] = (PROC, kbytes)
        else:
            skipped["minFreeKbytesFactor"] = f"min_free_kbytes {kbytes} is outside {list(MIN_FREE_KBYTES_RANGE)}"
    for key, (root, path, bounds) in PLAIN_SETTINGS.items():
        amount = _int(strategy, key)
        if amount is None:
            continue
        if _within(amount, bounds):
            out[path] = (root, amount)
        else:
            skipped[key] = f"{amount} is outside {list(bounds)}"
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
        raw = status_of(inp.state.node or {}).get("capacity") or {}
        try:
            memory = value(raw["memory"]) if "memory" in raw else 0
        except QuantityError:
            memory = 0
        if memory <= 0:
            result.status["reason"] = "the node's memory capacity is not valid"
            return result
        skipped = {where.rpartition(".")[2]: why for where, why in slo.skipped.items()} if slo is not None else {}
        for path, (root, amount) in memory_config(strategy, memory, skipped).items():
            if not inp.host.exists(root, path):
                result.lacks(*MISSING[path])
                continue
            result.host_writes.append(HostWrite(NAME, root, path, str(amount)))
        if skipped:
            result.status["skipped"] = dict(sorted(skipped.items()))
        wanted = strategy.get("schedFeatures")
        if isinstance(wanted, Mapping) and wanted:
            self._sched_features(inp, wanted, result)
        return result

    def _sched_features(self, inp: RoundInput, wanted: Mapping[str, Any], result: StrategyResult) -> None:
        text = inp.host.read(SYS, SCHED_FEATURES)
        if text is None:
            result.lacks(INTERFACE_SCHED_FEATURES, f"no {SCHED_FEATURES} under the sys root (debugfs)")
            return
        try:
            current = parse_sched_features(text)
        except SchedFeaturesError as exc:
            result.status["schedFeatures"] = str(exc)
            return
        for line in sched_feature_writes(current, wanted):
            result.host_writes.append(HostWrite(NAME, SYS, SCHED_FEATURES, line, cached=False))
