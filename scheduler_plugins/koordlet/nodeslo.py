"""The NodeSLO (`slo.koordinator.sh/v1alpha1`), parsed once into frozen values with the defaults of
Koordinator's `sloconfig` (`pkg/util/sloconfig/nodeslo_config.go`,
`apis/slo/v1alpha1/nodeslo_types.go`). Absent fields take the defaults; a field of the wrong type is
a `ConfigError` naming it (the agent logs it and treats the NodeSLO as missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from policies.apis.constants import QoSClass
from policies.apis.field_errors import ConfigError
from policies.apis.slo_config.nodeslo_checks import node_slo_failures

CPU_SUPPRESS_POLICY_CPUSET: Final = "cpuset"
CPU_SUPPRESS_POLICY_CFS_QUOTA: Final = "cfsQuota"
CPU_EVICT_POLICY_REAL_LIMIT: Final = "evictByRealLimit"
CPU_EVICT_POLICY_ALLOCATABLE: Final = "evictByAllocatable"
HOST_APP_BASE_BESTEFFORT: Final = "KubepodsBesteffort"


def _opt_int(spec: Mapping[str, Any], key: str, path: str) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        raise ConfigError(f"{path}.{key}", f"must be an integer, got {value!r}")
    return int(value)


def _int(spec: Mapping[str, Any], key: str, path: str, default: int) -> int:
    value = _opt_int(spec, key, path)
    return default if value is None else value


def _bool(spec: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
    value = spec.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{path}.{key}", f"must be a boolean, got {value!r}")
    return value


def _map(spec: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = spec.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}.{key}", f"must be an object, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class ThresholdStrategy:
    """`spec.resourceUsedThresholdWithBE` (ResourceThresholdStrategy) with its defaults."""

    enable: bool = False
    cpu_suppress_threshold_percent: int = 65
    cpu_suppress_min_percent: int | None = None
    cpu_suppress_policy: str = CPU_SUPPRESS_POLICY_CPUSET
    memory_evict_threshold_percent: int | None = 70
    memory_evict_lower_percent: int | None = None
    memory_allocatable_evict_threshold_percent: int | None = None
    memory_allocatable_evict_lower_percent: int | None = None
    cpu_evict_be_satisfaction_upper_percent: int | None = None
    cpu_evict_be_satisfaction_lower_percent: int | None = None
    cpu_evict_be_usage_threshold_percent: int = 90
    cpu_evict_time_window_seconds: int | None = None
    cpu_evict_threshold_percent: int | None = None
    cpu_evict_lower_percent: int | None = None
    cpu_allocatable_evict_threshold_percent: int | None = None
    cpu_allocatable_evict_lower_percent: int | None = None
    cpu_evict_policy: str = CPU_EVICT_POLICY_REAL_LIMIT
    evict_enabled_priority_threshold: int | None = None
    allocatable_evict_priority_threshold: int | None = None

    @classmethod
    def parse(cls, spec: Mapping[str, Any], path: str) -> ThresholdStrategy:
        ints = {
            "cpu_suppress_threshold_percent": ("cpuSuppressThresholdPercent", 65),
            "memory_evict_threshold_percent": ("memoryEvictThresholdPercent", 70),
            "cpu_evict_be_usage_threshold_percent": ("cpuEvictBEUsageThresholdPercent", 90),
        }
        optional = {
            "cpu_suppress_min_percent": "cpuSuppressMinPercent",
            "memory_evict_lower_percent": "memoryEvictLowerPercent",
            "memory_allocatable_evict_threshold_percent": "memoryAllocatableEvictThresholdPercent",
            "memory_allocatable_evict_lower_percent": "memoryAllocatableEvictLowerPercent",
            "cpu_evict_be_satisfaction_upper_percent": "cpuEvictBESatisfactionUpperPercent",
            "cpu_evict_be_satisfaction_lower_percent": "cpuEvictBESatisfactionLowerPercent",
            "cpu_evict_time_window_seconds": "cpuEvictTimeWindowSeconds",
            "cpu_evict_threshold_percent": "cpuEvictThresholdPercent",
            "cpu_evict_lower_percent": "cpuEvictLowerPercent",
            "cpu_allocatable_evict_threshold_percent": "cpuAllocatableEvictThresholdPercent",
            "cpu_allocatable_evict_lower_percent": "cpuAllocatableEvictLowerPercent",
            "evict_enabled_priority_threshold": "evictEnabledPriorityThreshold",
            "allocatable_evict_priority_threshold": "allocatableEvictPriorityThreshold",
        }
        values: dict[str, Any] = {attr: _int(spec, key, path, default) for attr, (key, default) in ints.items()}
        values.update({attr: _opt_int(spec, key, path) for attr, key in optional.items()})
        policy = spec.get("cpuSuppressPolicy") or CPU_SUPPRESS_POLICY_CPUSET
        if policy not in (CPU_SUPPRESS_POLICY_CPUSET, CPU_SUPPRESS_POLICY_CFS_QUOTA):
            raise ConfigError(f"{path}.cpuSuppressPolicy", f"must be cpuset or cfsQuota, got {policy!r}")
        evict_policy = spec.get("cpuEvictPolicy") or CPU_EVICT_POLICY_REAL_LIMIT
        if evict_policy not in (CPU_EVICT_POLICY_REAL_LIMIT, CPU_EVICT_POLICY_ALLOCATABLE):
            raise ConfigError(
                f"{path}.cpuEvictPolicy", f"must be evictByRealLimit or evictByAllocatable, got {evict_policy!r}"
            )
        return cls(
            enable=_bool(spec, "enable", path, False),
            cpu_suppress_policy=str(policy),
            cpu_evict_policy=str(evict_policy),
            **values,
        )


@dataclass(frozen=True)
class CPUQOS:
    enable: bool = False
    group_identity: int = 0
    sched_idle: int = 0
    core_expeller: bool = False


@dataclass(frozen=True)
class MemoryQOS:
    enable: bool = False
    min_limit_percent: int = 0
    low_limit_percent: int = 0
    throttling_percent: int = 0
    wmark_ratio: int = 0
    wmark_scale_permill: int = 50
    wmark_min_adj: int = 0
    priority_enable: int = 0
    priority: int = 0
    oom_kill_group: int = 0
    page_cache_limit_size: int = 0
    page_cache_limit_percent: int = 0
    page_cache_enable: int = 0


#: MemoryQOS attribute -> its NodeSLO field name
MEMORY_QOS_KEYS: Final = {
    "min_limit_percent": "minLimitPercent",
    "low_limit_percent": "lowLimitPercent",
    "throttling_percent": "throttlingPercent",
    "wmark_ratio": "wmarkRatio",
    "wmark_scale_permill": "wmarkScalePermill",
    "wmark_min_adj": "wmarkMinAdj",
    "priority_enable": "priorityEnable",
    "priority": "priority",
    "oom_kill_group": "oomKillGroup",
    "page_cache_limit_size": "pageCacheLimitSize",
    "page_cache_limit_percent": "pageCacheLimitPercent",
    "page_cache_enable": "pageCacheEnable",
}


@dataclass(frozen=True)
class ClassQOS:
    cpu: CPUQOS
    memory: MemoryQOS


#: sloconfig's defaults per class (`pkg/util/sloconfig/nodeslo_config.go`); every `enable` is false
DEFAULT_CLASS_QOS: Final[Mapping[str, ClassQOS]] = {
    QoSClass.LSR: ClassQOS(
        CPUQOS(False, 2, 0, True), MemoryQOS(wmark_ratio=95, wmark_scale_permill=20, wmark_min_adj=-25)
    ),
    QoSClass.LS: ClassQOS(
        CPUQOS(False, 2, 0, True), MemoryQOS(wmark_ratio=95, wmark_scale_permill=20, wmark_min_adj=-25)
    ),
    QoSClass.BE: ClassQOS(
        CPUQOS(False, -1, 0, False), MemoryQOS(wmark_ratio=95, wmark_scale_permill=20, wmark_min_adj=50)
    ),
    QoSClass.SYSTEM: ClassQOS(
        CPUQOS(False, 0, 0, False), MemoryQOS(wmark_ratio=0, wmark_scale_permill=50, wmark_min_adj=0)
    ),
}
_CLASS_KEYS: Final = {
    QoSClass.LSR: "lsrClass",
    QoSClass.LS: "lsClass",
    QoSClass.BE: "beClass",
    QoSClass.SYSTEM: "systemClass",
}


def _class_qos(spec: Mapping[str, Any], default: ClassQOS, path: str) -> ClassQOS:
    cpu_spec, mem_spec = _map(spec, "cpuQOS", path), _map(spec, "memoryQOS", path)
    cpu_path, mem_path = f"{path}.cpuQOS", f"{path}.memoryQOS"
    cpu = CPUQOS(
        _bool(cpu_spec, "enable", cpu_path, False),
        _int(cpu_spec, "groupIdentity", cpu_path, default.cpu.group_identity),
        _int(cpu_spec, "schedIdle", cpu_path, default.cpu.sched_idle),
        _bool(cpu_spec, "coreExpeller", cpu_path, default.cpu.core_expeller),
    )
    memory = replace(
        default.memory,
        enable=_bool(mem_spec, "enable", mem_path, False),
        **{attr: _int(mem_spec, key, mem_path, getattr(default.memory, attr)) for attr, key in MEMORY_QOS_KEYS.items()},
    )
    return ClassQOS(cpu, memory)


@dataclass(frozen=True)
class CPUBurstStrategy:
    policy: str = "none"
    cpu_burst_percent: int = 1000
    cfs_quota_burst_percent: int = 300
    cfs_quota_burst_period_seconds: int = -1
    share_pool_threshold_percent: int = 50

    @classmethod
    def parse(cls, spec: Mapping[str, Any], path: str) -> CPUBurstStrategy:
        return cls(
            str(spec.get("policy") or "none"),
            _int(spec, "cpuBurstPercent", path, 1000),
            _int(spec, "cfsQuotaBurstPercent", path, 300),
            _int(spec, "cfsQuotaBurstPeriodSeconds", path, -1),
            _int(spec, "sharePoolThresholdPercent", path, 50),
        )


@dataclass(frozen=True)
class HostApplication:
    name: str
    priority: str = ""
    qos: str = ""
    cgroup_base: str = ""
    parent_dir: str = ""
    relative_path: str = ""

    @property
    def is_be(self) -> bool:
        """BE as the suppress formula counts it: qos BE and living under the besteffort QoS dir."""
        return self.qos == QoSClass.BE and self.cgroup_base == HOST_APP_BASE_BESTEFFORT


@dataclass(frozen=True)
class NodeSLO:
    threshold: ThresholdStrategy = field(default_factory=ThresholdStrategy)
    #: None: the NodeSLO has no resourceQOSStrategy (CgroupReconcile does nothing)
    resource_qos: Mapping[str, ClassQOS] | None = None
    cpu_burst: CPUBurstStrategy = field(default_factory=CPUBurstStrategy)
    host_applications: tuple[HostApplication, ...] = ()
    #: the whole spec, for the strategies that parse their own part (blkio, resctrl, systemStrategy);
    #: the `skipped` keys are left out of it
    spec: Mapping[str, Any] = field(default_factory=dict, compare=False)
    #: field path -> why: the `systemStrategy` keys the rules refused, each skipped alone
    skipped: Mapping[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, obj: Mapping[str, Any], *, checked: bool = True) -> NodeSLO:
        """The NodeSLO with its defaults; `ConfigError` for a field of the wrong type or a value
        the slo-controller-config rules refuse (`policies/apis/slo_config`, as the webhook does).
        A `systemStrategy` key they refuse is skipped instead, and the rest applies, as
        Koordinator's sysreconcile validates each key alone (`TestSystemConfig`): the key is left
        out of `spec` and named in `skipped`. `checked=False` skips those rules: only tests of a
        strategy's own handling of such values (Koordinator's strategy tests feed them) build one so."""
        spec = _map(obj, "spec", "")
        failures = node_slo_failures(spec) if checked else {}
        skipped = {where: why for where, why in failures.items() if where.startswith(_SYSTEM_KEY_PREFIX)}
        failures = {where: why for where, why in failures.items() if where not in skipped}
        if skipped:
            spec = _without_system_keys(spec, skipped)
        if failures:
            where, reason = sorted(failures.items())[0]
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            raise ConfigError(where, f"{reason}{more}")
        threshold = ThresholdStrategy.parse(
            _map(spec, "resourceUsedThresholdWithBE", "spec"), "spec.resourceUsedThresholdWithBE"
        )
        resource_qos: dict[str, ClassQOS] | None = None
        if spec.get("resourceQOSStrategy") is not None:
            qos_spec = _map(spec, "resourceQOSStrategy", "spec")
            resource_qos = {
                qos: _class_qos(
                    _map(qos_spec, key, "spec.resourceQOSStrategy"),
                    DEFAULT_CLASS_QOS[qos],
                    f"spec.resourceQOSStrategy.{key}",
                )
                for qos, key in _CLASS_KEYS.items()
            }
        apps = []
        raw_apps = spec.get("hostApplications") or []
        if not isinstance(raw_apps, list):
            raise ConfigError("spec.hostApplications", "must be a list")
        for i, app in enumerate(raw_apps):
            if not isinstance(app, Mapping) or not app.get("name"):
                raise ConfigError(f"spec.hostApplications[{i}].name", "Required value")
            raw_path = app.get("cgroupPath")
            path: Mapping[str, Any] = raw_path if isinstance(raw_path, Mapping) else {}
            for key in ("parentDir", "relativePath"):
                if ".." in str(path.get(key) or "").split("/"):
                    raise ConfigError(f"spec.hostApplications[{i}].cgroupPath.{key}", "must not contain '..'")
            apps.append(
                HostApplication(
                    str(app["name"]),
                    str(app.get("priority") or ""),
                    str(app.get("qos") or ""),
                    str(path.get("base") or ""),
                    str(path.get("parentDir") or ""),
                    str(path.get("relativePath") or ""),
                )
            )
        return cls(
            threshold,
            resource_qos,
            CPUBurstStrategy.parse(_map(spec, "cpuBurstStrategy", "spec"), "spec.cpuBurstStrategy"),
            tuple(apps),
            spec,
            skipped,
        )


#: the field paths of `systemStrategy`'s keys (a failure of the strategy itself, a value of the
#: wrong type, refuses the NodeSLO: Go could not decode it)
_SYSTEM_KEY_PREFIX: Final = "spec.systemStrategy."


def _without_system_keys(spec: Mapping[str, Any], skipped: Mapping[str, str]) -> dict[str, Any]:
    """`spec` with the skipped `systemStrategy` keys left out (a copy: the object stays as read)."""
    names = {where[len(_SYSTEM_KEY_PREFIX) :] for where in skipped}
    system = spec.get("systemStrategy")
    kept = {k: v for k, v in system.items() if k not in names} if isinstance(system, Mapping) else system
    return {**spec, "systemStrategy": kept}
